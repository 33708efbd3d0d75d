package core

import (
	"context"
	"io"
	"time"
)

// Host owns terminal panes: the embedded pty host, a dedicated tmux server, or a named
// herdr session. Every implementation passes the same conformance suite (core/hosttest).
// Pane ids are opaque strings chosen by the host and stable across a server restart
// for hosts whose panes survive one (tmux, herdr).
type Host interface {
	// Name is "pty", "tmux" or "herdr".
	Name() string
	// Launch starts argv in a new pane. Env is the complete environment of the process.
	Launch(ctx context.Context, spec LaunchSpec) (PaneInfo, error)
	// SendText types text literally (no key names are interpreted).
	SendText(ctx context.Context, pane, text string) error
	// SendKeys presses named keys: enter, esc, tab, backspace, up, down, left, right,
	// home, end, pgup, pgdn, space, ctrl-a … ctrl-z, f1 … f12.
	SendKeys(ctx context.Context, pane string, keys ...string) error
	// Read returns the rendered screen; with Lines > 0 the last Lines lines of
	// scrollback plus screen; with ANSI its styles as SGR sequences in the text.
	Read(ctx context.Context, pane string, opts ReadOpts) (Screen, error)
	Resize(ctx context.Context, pane string, cols, rows int) error
	// Close kills the pane's process (if alive) and removes the pane.
	Close(ctx context.Context, pane string) error
	// List returns the panes this host owns, for adoption after a restart.
	List(ctx context.Context) ([]PaneInfo, error)
	// Events delivers pane exits and screen activity. The channel is closed by Shutdown.
	Events() <-chan HostEvent
	// Attach connects a terminal to the pane. Native hosts return an argv to exec
	// (tmux attach …); the embedded host returns nil argv and serves Stream instead.
	AttachCommand(pane string) []string
	// Stream attaches a raw byte stream to the pane (embedded host): output written to w,
	// input read from r, until ctx ends or the pane exits. Hosts with a native attach
	// return ErrNoStream.
	Stream(ctx context.Context, pane string, r io.Reader, w io.Writer) error
	// Shutdown releases the host connection. Panes of hosts that outlive the server
	// (tmux, herdr) keep running; the embedded host's panes end with it.
	Shutdown(ctx context.Context) error
}

// LaunchSpec is what a host needs to start a pane.
type LaunchSpec struct {
	Name string   // a display name (the agent path)
	Argv []string // argv[0] is looked up in PATH of Env
	Cwd  string
	Env  []string // complete environment, KEY=VALUE
	Cols int      // default 200
	Rows int      // default 50
	// Confine, when set, is the agent's sandbox in the form a host that forks the
	// program itself can apply without a launcher process (§16); a host that cannot
	// runs Argv, which starts the launcher.
	Confine *ThreadConfine
}

// ThreadConfine confines one program from inside the server: the host calls Run
// with the function that starts Argv (forks it), and Run calls it on an OS thread of
// the server confined to the agent's policy — the child inherits the confinement;
// the server's other threads never have it.
type ThreadConfine struct {
	// Argv is the program's own command, without the launcher in front.
	Argv []string
	// Run calls start on a confined thread and returns its error; notice is to be
	// shown on the pane before the program's output (what the sandbox could not
	// grant or confine).
	Run func(start func(notice string) error) error
	// Started is told the program's pid once it runs.
	Started func(pid int)
}

// PaneInfo describes one pane.
type PaneInfo struct {
	ID       string
	Name     string
	PID      int
	Dead     bool
	ExitCode *int
}

// ReadOpts selects what Read returns.
type ReadOpts struct {
	Lines int  // >0: last N lines including scrollback
	ANSI  bool // lines carry SGR sequences for their styles (wire.ReadParams.ANSI)
}

// Screen is a rendered screen.
type Screen struct {
	Text    string // lines joined by "\n", trailing spaces trimmed
	Cols    int
	Rows    int
	CursorX int
	CursorY int
}

// HostEventKind says what a HostEvent reports.
type HostEventKind int

// Host event kinds.
const (
	PaneOutput HostEventKind = iota + 1 // the screen changed (coalesced by the host)
	PaneExited                          // the process ended; ExitCode set when known
	PaneGone                            // the pane vanished (closed from outside)
)

// HostEvent is a pane notification.
type HostEvent struct {
	Pane     string
	Kind     HostEventKind
	ExitCode *int
	At       time.Time
}

// ErrNoStream is returned by Host.Stream on hosts with a native attach command.
var ErrNoStream = errorString("host has a native attach command; use AttachCommand")

type errorString string

func (e errorString) Error() string { return string(e) }

// IntegrationChecker is implemented by hosts that need an integration per provider
// (herdr). The engine asks before queueing an agent, so a missing integration fails
// fast with the exact fix instead of producing a pane nobody can read state from.
type IntegrationChecker interface {
	RequireIntegration(ctx context.Context, provider string) error
}

// Paster is implemented by hosts that can give a pane text as a bracketed paste
// (ESC[200~ … ESC[201~) when its program has asked for that mode (ESC[?2004h), and
// type it as SendText does otherwise. A pasted text's end is explicit, so a key that
// follows is never taken as part of it.
type Paster interface {
	Paste(ctx context.Context, pane, text string) error
}

// SilentHost is implemented by hosts that cannot report screen activity (herdr has
// no output event). The engine then polls each live pane's screen once a second and
// treats a change as output.
type SilentHost interface {
	SilentOutput() bool
}

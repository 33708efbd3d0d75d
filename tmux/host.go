// Package tmux is the tmux host: core.Host on a dedicated tmux server of orcr's own
// (`tmux -S $ORCR_HOME/tmux.sock`), never the user's default server. Each agent is one
// window (named by its path) of the session "orcr". All commands and notifications go
// through one long-lived control-mode client (`tmux -C attach`): commands are
// pipelined and their %begin/%end replies matched in order; %output marks panes as
// active (and pauses the pane's output for the client for a moment, pacer.go), a
// pidfd per pane process (exitwatch.go) and a format subscription on #{pane_dead}
// report exits, and %window-close, confirmed by a list of the session's panes, reports
// panes closed from outside. No tmux process is forked per call or per poll. An
// attach is a session of its own grouped with "orcr" (AttachCommand).
package tmux

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"orcr/core"
)

// session is the tmux session holding every orcr window.
const session = "orcr"

// placeholderOption marks the window that keeps the session alive; it is no agent's.
const placeholderOption = "@orcr-placeholder"

// deadSub is the name of the control-mode subscription that reports pane exits.
const deadSub = "orcr-dead"

// historyLimit is the scrollback kept per pane.
const historyLimit = 10000

// ErrNoPane reports a pane id the tmux server does not know.
var ErrNoPane = errors.New("no such pane")

// Options configure a Host.
type Options struct {
	// Socket is the tmux server socket, e.g. $ORCR_HOME/tmux.sock. Required.
	Socket string
	// Bin is the tmux binary; default "tmux" from PATH.
	Bin string
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// Memory hears of every program's end before that end is reported, with how
	// many still run; the server's memory policy decides from it when memory goes
	// back to the OS. Nil reports nowhere.
	Memory core.MemoryReport
	// NoSpare: confined launches never use a spare launcher (spare.go); each pane
	// starts its launcher.
	NoSpare bool
	// Spares is how many spare launchers are kept waiting (0: DefaultSpares).
	Spares int
}

// DefaultSpares is how many spare launchers a tmux host keeps by default (spare.go:
// refillSpare says why two).
const DefaultSpares = 2

// paneState is what the host knows about one pane.
type paneState struct {
	window   string // @N
	name     string
	pid      int
	mine     bool // launched by, or listed alive to, this host
	dead     bool
	exitCode *int
	exitSent bool
	watch    *exitWatch // the pidfd watch of its process, once started; never restarted
}

// Host is core.Host on a dedicated tmux server.
type Host struct {
	bin    string
	socket string
	log    *slog.Logger
	events *eventQueue
	pacer  *pacer // keeps pane output from crossing the control client (pacer.go)

	connMu sync.Mutex // serializes connecting

	mu      sync.Mutex // guards the fields below
	c       *control
	panes   map[string]*paneState
	windows map[string]string // window id → pane id
	closed  bool
	// unreaped holds panes whose pty closed before tmux had their exit status.
	unreaped map[string]bool
	// closing holds windows tmux said closed, until the confirmer has asked tmux
	// whether their panes are really gone (notify.go).
	closing map[string]bool
	confirm chan struct{}     // wakes the confirmer
	sweep   bool              // the confirmer looks for attach sessions without a client
	mem     core.MemoryReport // Options.Memory, never nil

	wg   sync.WaitGroup // watch, reaper, confirmer and exit-watch goroutines
	stop chan struct{}
	reap chan struct{} // wakes the reaper

	// spares are the launchers waiting for a confined launch (started, ready or
	// not), oldest first; spareStarting while more start; wantSpares how many are
	// kept (spare.go).
	spares        []*spare
	spareStarting bool
	noSpare       bool
	wantSpares    int

	pidfd  bool            // exits are also watched through pidfds
	ctx    context.Context // parent of the exit watches' contexts; cancelled by Shutdown
	cancel context.CancelFunc
}

var _ core.Host = (*Host)(nil)

// New connects to the tmux server on opts.Socket, starting it if it is not running.
func New(ctx context.Context, opts Options) (*Host, error) {
	if opts.Socket == "" {
		return nil, errors.New("tmux: no socket path")
	}
	if len(opts.Socket) > 100 {
		return nil, fmt.Errorf("tmux: socket path too long for a unix socket: %s", opts.Socket)
	}
	bin := opts.Bin
	if bin == "" {
		bin = "tmux"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("tmux: find binary: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(opts.Socket), 0o700); err != nil {
		return nil, fmt.Errorf("tmux: socket dir: %w", err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	mem := opts.Memory
	if mem == nil {
		mem = core.NoMemoryReport{}
	}
	h := &Host{
		bin: path, socket: opts.Socket, log: log, mem: mem,
		events:     newEventQueue(mem),
		pacer:      newPacer(),
		panes:      map[string]*paneState{},
		windows:    map[string]string{},
		unreaped:   map[string]bool{},
		stop:       make(chan struct{}),
		reap:       make(chan struct{}, 1),
		confirm:    make(chan struct{}, 1),
		pidfd:      pidfdSupported(),
		noSpare:    opts.NoSpare,
		wantSpares: opts.Spares,
	}
	if h.wantSpares <= 0 {
		h.wantSpares = DefaultSpares
	}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	if _, err := h.conn(ctx); err != nil {
		_ = h.Shutdown(ctx)
		return nil, err
	}
	h.clearSpares(ctx) // a spare a previous server left is no agent
	h.wg.Add(3)
	go h.reaper()
	go h.pace()
	go h.confirmer()
	h.onSessionsChanged() // attaches a previous server left behind
	return h, nil
}

// Name is "tmux".
func (h *Host) Name() string { return "tmux" }

// Socket is the server socket this host uses.
func (h *Host) Socket() string { return h.socket }

// Events delivers pane exits, disappearances and coalesced output activity.
func (h *Host) Events() <-chan core.HostEvent { return h.events.ch }

// AttachCommand is the argv that attaches a terminal to the pane's window; the user
// detaches with the tmux prefix and d. Each attach gets a session of its own, grouped
// with orcr's (`new-session -t orcr`): the group shares the windows, but every session
// has its own current window, so two terminals attached to two agents each keep showing
// their own (attaching to orcr's one session would switch every attached terminal to
// whichever agent was attached last). The session ends when its client detaches or
// dies, by its client-detached hook (`kill-session`); the panes live on in orcr's
// session. Not `destroy-unattached`: with it, tmux 3.3a's server crashed on a detach
// now and then (1 in 6 in TestTwoAttachesEachShowTheirOwn), taking every agent with
// it. An attach that never got a client (no terminal) is ended by the host's sweep
// (sweepAttachSessions).
//
// orcr's server runs without a status line (its panes keep their full size while
// nobody looks); the attach's own session turns one on, saying whose window this is
// and how to get out — "orcr · PATH · detach: prefix d" (the window's name is the
// agent's path; the server reads no ~/.tmux.conf, so the prefix is tmux's C-b) — and
// its status-format is that text alone: no window list, which would name every agent.
// (window-status-format is a window option: set through a session it reached only the
// current window, and every other agent's name showed in the list.)
func (h *Host) AttachCommand(pane string) []string {
	window := h.windowOf(pane)
	name := attachSessionName(pane)
	set := func(opt, value string) []string { return []string{"set-option", "-t", name, opt, value, ";"} }
	// -u: the terminal is taken as UTF-8 even when the attach's environment names no
	// UTF-8 locale (an `ssh -t` to a node passes none unless sshd accepts LANG): the
	// agents draw UTF-8, and tmux would put "_" for each of their characters.
	argv := []string{h.bin, "-S", h.socket, "-u"}
	argv = append(argv, "new-session", "-d", "-t", "="+session, "-s", name, ";")
	argv = append(argv, set("status", "on")...)
	argv = append(argv, set("status-left", AttachStatus)...)
	argv = append(argv, set("status-left-length", "200")...)
	argv = append(argv, set("status-right", "")...)
	argv = append(argv, set("status-format[0]", "#[align=left]#{T;=/#{status-left-length}:status-left}")...)
	argv = append(argv, "select-window", "-t", name+":"+window, ";")
	argv = append(argv, "set-hook", "-t", name, "client-detached", "kill-session -t "+name, ";")
	return append(argv, "attach-session", "-t", name)
}

// attachPrefix starts the name of every attach's session. It does not start with
// "orcr": tmux resolves `-t orcr` by prefix when no session is named exactly that.
const attachPrefix = "attach-"

// attachSessionName is a fresh session name for one attach of pane: its number and
// random bytes, unique across orcr servers sharing the tmux server and their restarts.
func attachSessionName(pane string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s%s-%x", attachPrefix, strings.TrimPrefix(pane, "%"), b)
}

// windowOf is the window id (@N) of pane: known from its launch or listing, else asked
// of tmux; the pane id itself when neither knows it (the attach then fails with tmux's
// own "can't find window").
func (h *Host) windowOf(pane string) string {
	h.mu.Lock()
	p := h.panes[pane]
	h.mu.Unlock()
	if p != nil && p.window != "" {
		return p.window
	}
	if checkPane(pane) != nil {
		return pane
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := h.call(ctx, "display-message -p -t "+pane+` "#{window_id}"`)
	if err != nil || len(out) != 1 || !strings.HasPrefix(out[0], "@") {
		return pane
	}
	return out[0]
}

// AttachStatus is the status line an attached terminal shows (#W: the agent's path).
const AttachStatus = " orcr · #W · detach: prefix d (C-b d) "

// Stream is not served: tmux has a native attach.
func (h *Host) Stream(context.Context, string, io.Reader, io.Writer) error {
	return core.ErrNoStream
}

// Shutdown detaches the control client; the server and its panes keep running.
func (h *Host) Shutdown(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	c := h.c
	if c != nil {
		// A spare's launcher would end by itself once this server is gone; not left
		// waiting (nor a dead one that ended idle).
		for _, s := range h.spares {
			_, _ = c.send("kill-session -t =" + s.sess)
		}
	}
	for _, s := range h.spares {
		s.close()
	}
	h.spares = nil
	h.c = nil
	close(h.stop)
	h.cancel()
	for _, p := range h.panes {
		p.stopWatch()
	}
	h.mu.Unlock()
	if c != nil {
		grace := 2 * time.Second
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < grace {
			grace = max(time.Until(dl), 0)
		}
		c.close(grace)
	}
	h.wg.Wait()
	h.events.close()
	return nil
}

// conn returns the live control client, connecting (and starting the server) if the
// previous one ended.
func (h *Host) conn(ctx context.Context) (*control, error) {
	h.mu.Lock()
	closed, c := h.closed, h.c
	h.mu.Unlock()
	if closed {
		return nil, errors.New("tmux: host is shut down")
	}
	if c != nil && c.alive() {
		return c, nil
	}
	h.connMu.Lock()
	defer h.connMu.Unlock()
	h.mu.Lock()
	c = h.c
	h.mu.Unlock()
	if c != nil && c.alive() {
		return c, nil
	}
	started, err := h.ensureServer(ctx)
	if err != nil {
		return nil, err
	}
	// A new client has no pane paused.
	h.pacer.reset()
	c, err = startControl(ctx, h.bin, h.socket, session, h.notify)
	if err != nil {
		return nil, fmt.Errorf("tmux: attach control client: %w", err)
	}
	if err := h.configure(ctx, c); err != nil {
		c.close(time.Second)
		return nil, err
	}
	if !started {
		h.closeStaleClients(ctx, c)
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		c.close(time.Second)
		return nil, errors.New("tmux: host is shut down")
	}
	h.c = c
	if started {
		h.forgetAllLocked()
	}
	h.wg.Add(1)
	h.mu.Unlock()
	go h.watch(c)
	h.log.Debug("tmux control client attached", "socket", h.socket, "new_server", started)
	return c, nil
}

// ensureServer starts the server with orcr's settings unless it already runs. It
// reports whether it started one.
func (h *Host) ensureServer(ctx context.Context) (bool, error) {
	if err := h.tmuxCmd(ctx, "has-session", "-t", session); err == nil {
		return false, nil
	}
	// -f /dev/null: the user's ~/.tmux.conf never shapes orcr's panes. The placeholder
	// window keeps the session (and so the server) alive with no agents.
	args := []string{"-f", "/dev/null", "new-session", "-d", "-s", session, "-n", "orcr", "-x", "200", "-y", "50",
		"tail", "-f", "/dev/null", ";",
		"set-option", "-w", placeholderOption, "1", ";",
		"set-option", "-g", "exit-empty", "off", ";",
		"set-option", "-g", "status", "off", ";",
		"set-option", "-g", "history-limit", fmt.Sprint(historyLimit), ";",
		"set-option", "-g", "escape-time", "10", ";",
		"set-option", "-gw", "remain-on-exit", "on", ";",
		"set-option", "-gw", "remain-on-exit-format", "", ";",
		"set-option", "-gw", "automatic-rename", "off", ";",
		"set-option", "-gw", "allow-rename", "off",
	}
	if err := h.tmuxCmd(ctx, args...); err != nil {
		// Another process may have started it between the check and now.
		if h.tmuxCmd(ctx, "has-session", "-t", session) == nil {
			return false, nil
		}
		return false, fmt.Errorf("tmux: start server: %w", err)
	}
	return true, nil
}

// tmuxCmd runs one tmux client process; only used to start or probe the server.
func (h *Host) tmuxCmd(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, h.bin, append([]string{"-u", "-S", h.socket}, args...)...)
	cmd.Env = clientEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// configure prepares a fresh control client: the exit subscription, an empty global
// environment, and this process's environment as orcr's session's (sessionenv.go), so
// a pane gets exactly its LaunchSpec.Env (plus tmux's own TMUX and TMUX_PANE) with
// only what differs on its window line.
func (h *Host) configure(ctx context.Context, c *control) error {
	shown, err := c.send("show-environment -g", "show-environment -t "+session)
	if err != nil {
		return fmt.Errorf("tmux: show environment: %w", err)
	}
	var envs [2][]string
	for i, r := range shown {
		if envs[i], err = r.wait(ctx); err != nil {
			return fmt.Errorf("tmux: show environment: %w", err)
		}
	}
	var lines []string
	for _, kv := range envs[0] {
		name, _, _ := strings.Cut(strings.TrimPrefix(kv, "-"), "=")
		if name != "" {
			lines = append(lines, "set-environment -g -u "+quote(name))
		}
	}
	want := sessionEnv()
	lines = append(lines, sessionEnvLines(envs[1], want)...)
	c.env = want
	lines = append(lines, "refresh-client -B "+quote(deadSub+":%*:"+deadFormat))
	reqs, err := c.send(lines...)
	if err != nil {
		return fmt.Errorf("tmux: configure: %w", err)
	}
	for i, r := range reqs {
		if _, err := r.wait(ctx); err != nil {
			if i == len(reqs)-1 {
				return fmt.Errorf("tmux: subscribe to pane exits (tmux 3.2 or newer needed): %w", err)
			}
			return fmt.Errorf("tmux: configure: %w", err)
		}
	}
	return nil
}

// Version returns the version line of the tmux binary (e.g. "tmux 3.3a"), for doctor.
// An empty bin means "tmux" from PATH.
func Version(ctx context.Context, bin string) (string, error) {
	if bin == "" {
		bin = "tmux"
	}
	cmd := exec.CommandContext(ctx, bin, "-V")
	cmd.Env = clientEnv()
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("tmux: version: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// watch owns one control client's lifetime: when it ends while the host is open it
// checks whether the server is gone and, if so, reports every known pane gone.
func (h *Host) watch(c *control) {
	defer h.wg.Done()
	select {
	case <-h.stop:
		return
	case <-c.done:
	}
	h.log.Warn("tmux control client ended", "err", c.closedErr())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if h.tmuxCmd(ctx, "has-session", "-t", session) == nil {
		return
	}
	h.mu.Lock()
	if h.c == c {
		h.forgetAllLocked()
	}
	h.mu.Unlock()
}

// forgetAllLocked reports every known pane gone: the server they lived in is gone.
func (h *Host) forgetAllLocked() {
	now := time.Now()
	for id, p := range h.panes {
		p.stopWatch()
		if p.mine {
			h.events.push(core.HostEvent{Pane: id, Kind: core.PaneGone, At: now})
		}
	}
	h.panes = map[string]*paneState{}
	h.windows = map[string]string{}
}

// call runs one command on the current control client.
func (h *Host) call(ctx context.Context, line string) ([]string, error) {
	c, err := h.conn(ctx)
	if err != nil {
		return nil, err
	}
	return c.run(ctx, line)
}

// callAll sends lines in one write and waits for all replies; the first error wins.
func (h *Host) callAll(ctx context.Context, lines ...string) ([][]string, error) {
	c, err := h.conn(ctx)
	if err != nil {
		return nil, err
	}
	reqs, err := c.send(lines...)
	if err != nil {
		return nil, err
	}
	out := make([][]string, len(reqs))
	var first error
	for i, r := range reqs {
		out[i], err = r.wait(ctx)
		if err != nil && first == nil {
			first = err
		}
	}
	return out, first
}

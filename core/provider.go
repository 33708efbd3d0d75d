package core

import (
	"context"
	"time"

	"orcr/core/wire"
)

// Provider is the adapter for one kind of agent program (claude, codex, opencode, pi,
// shell). It knows how to launch it, how to tell its state and how to read its
// transcript. Adapters live in adapters/<name>; core only sees this interface.
type Provider interface {
	// Name is the provider name used in paths, caps and the CLI.
	Name() string
	// Detect looks for the program and reports version and what is missing.
	Detect(ctx context.Context) ProviderStatus
	// Prepare turns a run request into what the host launches.
	Prepare(ctx context.Context, req LaunchRequest) (LaunchPlan, error)
	// Observe returns the state/usage observer for one launched agent. It is called
	// once per agent run and again after a server restart (re-adoption).
	Observe(a wire.Agent) Observer
}

// TurnOnSend is implemented by providers whose observer learns of a turn only from
// the screen (shell). For them a send ending in Enter starts a turn at once: the
// agent is working when the send returns, and the next settled screen is a new
// `done`, even when the program answers too fast or too quietly for the screen to
// show it working. (Without it `agent send X … && agent wait X --until done` could
// return on the previous turn's done, and a run never saw a shell coder's fix round
// end.) Providers with hooks or a transcript learn the turn's start from those.
type TurnOnSend interface {
	TurnOnSend() bool
}

// SessionChecker is implemented by providers whose sessions live where no recorded
// file shows them (opencode keeps them in its SQLite store): before a resume or a
// wake the kernel asks whether a's session is still there. env is the
// environment a pane of a would get. An error the check cannot decide on is not one:
// the checker returns nil and the CLI's own resume has the last word.
type SessionChecker interface {
	CheckSession(ctx context.Context, a wire.Agent, env []string) error
}

// ProviderStatus is what doctor shows for a provider.
type ProviderStatus struct {
	Name    string
	Found   bool
	Path    string
	Version string
	Notes   []string // e.g. "orcr hooks ok"
	Fix     string   // exact install commands when something is missing
}

// LaunchRequest is the agent as the queue admits it, plus the server's facts the adapter
// needs to wire its integration (hook command, socket).
type LaunchRequest struct {
	Agent wire.Agent
	// Self is the absolute path of the orcr binary, for hook commands.
	Self string
	// Socket is the server socket (also in ORCR_SOCKET).
	Socket string
	// StateDir is a per-agent directory under ORCR_HOME the adapter may write to
	// (settings files, config homes); an adapter that writes there creates it, so
	// agents that need none (shell) cost no directory.
	StateDir string
	// Env is the clean base environment the pane will get, KEY=VALUE; the adapter may
	// add to it through LaunchPlan.Env.
	Env []string
}

// LaunchPlan is what the host starts.
type LaunchPlan struct {
	Argv []string
	Env  []string // extra KEY=VALUE added after the base environment
	Cwd  string   // empty: the agent's cwd
	// SessionID is known before launch when the CLI takes one (claude --session-id).
	SessionID string
	// Transcript is known before launch when the adapter can compute it.
	Transcript string
	// Confine is what the program needs when the agent is confined
	// (Agent.Sandbox.On()); an adapter that confines itself switches that off then.
	Confine Confinement
}

// Observer turns the signals of one running agent into state and usage. All methods
// are called from one goroutine per agent; they must not block for long.
type Observer interface {
	// Screen applies the adapter's screen rules. quiet is how long the screen has not
	// changed. Return nil when the screen says nothing new.
	Screen(s Screen, quiet time.Duration) *Signal
	// Hook handles a hook report (orcr hook <provider> <event>).
	Hook(event string, payload []byte) (*Signal, error)
	// Poll reads new transcript lines; called on a timer and after hooks.
	Poll(ctx context.Context) (*Signal, error)
	// Close releases files.
	Close() error
}

// Unpolled is an Observer whose Poll never has news (it has no transcript to read; it
// learns from the screen and hooks only). Its agent's loop keeps no poll timer: an
// idle agent then costs the server no wake-up at all, where the 1 s ticks of 100 idle
// shell agents were 100 wake-ups a second of an otherwise idle process. Poll is still
// called after a hook.
type Unpolled interface {
	Observer
	Unpolled()
}

// Signal is an observation. Zero fields mean "no news"; State "" leaves the state alone.
type Signal struct {
	State       wire.State
	Source      string // "hook" | "transcript" | "host" | "screen"
	Reason      string
	Blocked     *wire.Blocked
	Usage       *wire.Usage // absolute totals for the agent, not deltas
	Model       string
	SessionID   string
	Transcript  string
	LastMessage string
	// Reading is a usage-limit reading (5h/weekly windows) for the usage view and queue.
	Reading *wire.LimitReading
}

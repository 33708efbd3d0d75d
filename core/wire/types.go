// Package wire holds the versioned JSON types of orcr's socket API: requests, responses,
// events, the agent record as clients see it, and the stable error codes. Every surface
// (CLI, dashboard, socket clients in other languages) speaks these types and nothing else.
package wire

import "time"

// Version is the socket protocol version. A client and server with different major
// versions refuse each other with code "version_mismatch".
const Version = 1

// State is an agent's lifecycle state (DESIGN §7).
type State string

// The states of DESIGN §7. Terminal states never change again.
const (
	StateQueued   State = "queued"
	StateStarting State = "starting"
	StateIdle     State = "idle"    // running, no prompt given yet / waiting for first input
	StateWorking  State = "working" // busy on a turn
	StateBlocked  State = "blocked" // waiting on a permission, a question or a usage limit
	StateDone     State = "done"    // turn finished, ready for input
	StateExited   State = "exited"  // process ended, with exit code
	StateKilled   State = "killed"
	StateFailed   State = "failed" // could not start
	StateLost     State = "lost"   // pane vanished while nobody watched
	// StateHibernated: the process was stopped while idle but its session is kept; a
	// send resumes it (§12). Not terminal: it still holds its path.
	StateHibernated State = "hibernated"
)

// AllStates lists every state in lifecycle order.
var AllStates = []State{StateQueued, StateStarting, StateIdle, StateWorking, StateBlocked,
	StateDone, StateExited, StateKilled, StateFailed, StateLost, StateHibernated}

// Terminal reports whether no further transition can happen.
func (s State) Terminal() bool {
	switch s {
	case StateExited, StateKilled, StateFailed, StateLost:
		return true
	}
	return false
}

// Live reports whether the agent has (or is about to have) a running process.
func (s State) Live() bool {
	switch s {
	case StateStarting, StateIdle, StateWorking, StateBlocked, StateDone:
		return true
	}
	return false
}

// Blocked says what a blocked agent waits for (DESIGN §7).
type Blocked struct {
	Kind   string `json:"kind"`   // permission | question | plan | limit | dialog | setup (Blocked* constants)
	Detail string `json:"detail"` // one line: "Bash(rm -rf build)", the question, "plan"
	// Question is the prompt's own line as shown ("Do you want to proceed?").
	Question string `json:"question"`
	// Text is the question or plan in full (a plan's markdown), when known.
	Text string `json:"text"`
	// Options are the answers exactly as the program shows them, in order.
	Options  []Option   `json:"options"`
	ResetsAt *time.Time `json:"resetsAt"` // usage limit reset instant
}

// Usage is token and cost accounting for one agent (or a roll-up).
type Usage struct {
	InputTokens      int64    `json:"inputTokens"`
	OutputTokens     int64    `json:"outputTokens"`
	CacheReadTokens  int64    `json:"cacheReadTokens"`
	CacheWriteTokens int64    `json:"cacheWriteTokens"`
	CostUSD          *float64 `json:"costUsd"` // null when the model is unpriced
	Priced           bool     `json:"priced"`
}

// Agent is the record of one agent as the API exposes it.
type Agent struct {
	ID         string            `json:"id"`
	Path       string            `json:"path"`
	ParentID   string            `json:"parentId"`
	ParentPath string            `json:"parentPath"`
	Provider   string            `json:"provider"`
	Model      string            `json:"model"`
	Argv       []string          `json:"argv"`
	Cwd        string            `json:"cwd"`
	Env        map[string]string `json:"env"` // --env and the role's env: names, each value "<redacted>" (ORCR_* shown)
	Prompt     string            `json:"prompt"`
	Priority   int               `json:"priority"`
	Keep       bool              `json:"keep"`
	Worktree   string            `json:"worktree"`
	// Role is the role template the agent was made from ("" for none, §12); RoleNotes
	// say how it resolved: the provider chosen and why earlier ones were skipped.
	Role      string   `json:"role"`
	RoleNotes []string `json:"roleNotes"`
	// SystemPrompt is appended to the provider's own system prompt through its flag.
	SystemPrompt string      `json:"systemPrompt"`
	Limits       AgentLimits `json:"limits"`
	// Hooks are the per-repo hook runs (.orcr/hooks), each attempt, oldest first.
	Hooks []HookRun `json:"hooks"`
	// ResumedFrom is the id of the record this one continues (agent resume).
	ResumedFrom string `json:"resumedFrom"`
	// Account is the auth source admission placed the agent on (§10): the label of an
	// [[accounts.<provider>]] entry, "default" for a provider's implicit account, "" for
	// providers without accounts (shell) and agents not admitted yet.
	Account string `json:"account"`
	// Identity is the identity the agent acts as (§18): its standing instructions are
	// in SystemPrompt and its memory directory is named there; "" for none.
	Identity string `json:"identity"`
	// Spawn is what the agent may itself spawn from its pane (§18), its parent's policy
	// narrowed by its own; null when nothing bounds it.
	Spawn *SpawnPolicy `json:"spawn"`
	// Sandbox is the confinement asked for (§16); nil or mode "off": unconfined. The
	// policy in force is `orcr agent get --explain`'s (sandbox.explain).
	Sandbox *Sandbox `json:"sandbox"`

	State       State    `json:"state"`
	StateSource string   `json:"stateSource"` // hook | transcript | host | screen | server
	StateReason string   `json:"stateReason"` // why the current state was decided
	Blocked     *Blocked `json:"blocked"`
	QueuePos    int      `json:"queuePos"` // 1-based while queued, 0 otherwise

	Host string `json:"host"`
	// Node is the machine the agent runs on (DESIGN §14): "" for this one, else a
	// node's name. Its pane is there and its state is what that node reports.
	Node string `json:"node,omitempty"`
	// Unreachable: its node stopped answering; the state is the last one it reported.
	Unreachable bool   `json:"unreachable,omitempty"`
	PaneID      string `json:"paneId"`
	PID         int    `json:"pid"`
	ExitCode    *int   `json:"exitCode"`
	Error       string `json:"error"` // why it failed to start

	SessionID   string `json:"sessionId"`
	Transcript  string `json:"transcript"`
	LastMessage string `json:"lastMessage"`
	LastScreen  string `json:"lastScreen"` // kept when the pane closes
	Usage       Usage  `json:"usage"`

	CreatedAt time.Time  `json:"createdAt"`
	StartedAt *time.Time `json:"startedAt"`
	StateAt   time.Time  `json:"stateAt"`
	EndedAt   *time.Time `json:"endedAt"`
	UpdatedAt time.Time  `json:"updatedAt"`
}

// Sandbox modes.
const (
	SandboxOn  = "on"
	SandboxOff = "off"
)

// Sandbox is an agent's Landlock confinement (DESIGN §16): Mode SandboxOn confines it
// to its worktree or cwd, /tmp, its provider's state and the toolchain, with TCP
// connects to 443 and its model server's port; RW, ROX and Ports widen that (a
// role's or a run's [sandbox], --sandbox-rw). SandboxOff runs it unconfined.
type Sandbox struct {
	Mode  string   `json:"mode"`
	RW    []string `json:"rw,omitempty" maxItems:"256"`
	ROX   []string `json:"rox,omitempty" maxItems:"256"`
	Ports []int    `json:"ports,omitempty" maxItems:"256"`
}

// On reports whether s asks for confinement.
func (s *Sandbox) On() bool { return s != nil && s.Mode == SandboxOn }

// Event kinds.
const (
	EventAgentSpawned = "agent.spawned"
	EventAgentState   = "agent.state"
	EventAgentUpdated = "agent.updated" // usage, model, last message changed
	EventAgentKilled  = "agent.killed"
	EventAgentRemoved = "agent.removed" // record pruned
	// EventAgentScreen says the screen changed. It is transient: not stored, seq 0, rate
	// limited per agent, so previews refresh without polling every pane.
	EventAgentScreen = "agent.screen"
)

// Event is one entry of the event log. Stored events have seq > 0 and arrive in seq order.
type Event struct {
	Event string    `json:"event"`
	Seq   uint64    `json:"seq"`
	At    time.Time `json:"at"`
	Agent *Agent    `json:"agent,omitempty"`
	From  State     `json:"from,omitempty"`
	To    State     `json:"to,omitempty"`
	// Rule names what caused a collection or a transition (e.g. "gc.idle_after").
	Rule string         `json:"rule,omitempty"`
	Data map[string]any `json:"data,omitempty"`
}

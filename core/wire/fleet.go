package wire

import "time"

// Methods for the queue, usage and schedules views.
const (
	MethodQueue = "queue.get"
	MethodUsage = "usage.get"
)

// QueueResult shows the admission queue against its caps.
type QueueResult struct {
	Global    int            `json:"global"`    // global cap (0: unlimited)
	Caps      map[string]int `json:"caps"`      // per-provider caps
	MinFreeMB int            `json:"minFreeMb"` // memory guard
	FreeMB    int            `json:"freeMb"`    // free memory now
	Running   map[string]int `json:"running"`   // live agents per provider
	Total     int            `json:"total"`     // live agents in all
	Entries   []QueueEntry   `json:"entries"`   // queued, in admission order
	// Launching is how many admitted agents are being launched now (their pane made);
	// admission takes no more while MaxLaunching are.
	Launching    int `json:"launching"`
	MaxLaunching int `json:"maxLaunching,omitempty"`
	// Origins says where each cap's value came from, by cap name ("global",
	// "min_free_mb", a provider): "config", "runtime: orcr queue caps", or how a default
	// was derived ("default: 23.5 GiB ÷ 500 MB, within [2, 64]").
	Origins map[string]string `json:"origins,omitempty"`
}

// QueueEntry is one queued agent.
type QueueEntry struct {
	Pos      int       `json:"pos"`
	AgentID  string    `json:"agentId"`
	Path     string    `json:"path"`
	Provider string    `json:"provider"`
	Priority int       `json:"priority"`
	QueuedAt time.Time `json:"queuedAt"`
	Waiting  string    `json:"waiting"` // why it is not admitted yet
}

// UsageParams selects a usage report.
type UsageParams struct {
	Provider string `json:"provider,omitempty"`
}

// UsageResult is tokens and cost by provider, model and window, with limit readings.
type UsageResult struct {
	Rows     []UsageRow     `json:"rows"`
	Readings []LimitReading `json:"readings"`
}

// UsageRow is one provider/model/window line of the usage report.
type UsageRow struct {
	Provider string `json:"provider"`
	Account  string `json:"account"` // the account the agents ran on ("" before admission)
	Model    string `json:"model"`
	Window   string `json:"window"` // "total" | "5h" | "weekly"
	Agents   int    `json:"agents"`
	Usage    Usage  `json:"usage"`
}

// LimitReading is a provider's rate-limit reading at one instant.
type LimitReading struct {
	Provider string `json:"provider"`
	// Account is the account the reading is of (the reporting agent's); "" when the
	// reading came from an agent placed on no account.
	Account string `json:"account,omitempty"`
	Window  string `json:"window"` // "5h" | "weekly"
	// Family scopes the window to one model family ("opus", "sonnet"); "" for a
	// window every model of the account counts against.
	Family     string     `json:"family,omitempty"`
	UsedPct    float64    `json:"usedPct"`
	ResetsAt   *time.Time `json:"resetsAt"`
	LimitHit   bool       `json:"limitHit"`
	ObservedAt time.Time  `json:"observedAt"`
}

// Methods for queue caps, lifecycle GC and schedule management.
const (
	MethodQueueCaps     = "queue.caps"
	MethodQueuePriority = "queue.priority"
	MethodGC            = "gc.run"
)

// Events of the queue, GC and schedules.
const (
	// EventGCCollected says GC acted on an agent; Rule names the rule and Data["action"]
	// says what was done ("close_pane", "stop", "remove").
	EventGCCollected = "gc.collected"
	// EventEventsPruned says GC pruned the event log up to Data["upTo"] (rule gc.retain).
	EventEventsPruned = "gc.events_pruned"
)

// CodeNotQueued: queue.priority on an agent that is not waiting in the queue (a
// priority only orders the queue; an admitted agent has left it).
const CodeNotQueued = "not_queued"

// PriorityParams reprioritises one queued agent (queue.priority): To sets its
// priority, By adds to it (negative lowers it); one of them.
type PriorityParams struct {
	Target string `json:"target"`
	To     *int   `json:"to,omitempty" range:"-1000000,1000000"`
	By     int    `json:"by,omitempty" range:"-1000000,1000000"`
}

// CodeNameTaken: a schedule (or other named object) with that name exists already.
const CodeNameTaken = "name_taken"

// CapsParams changes admission caps at runtime (queue.caps). Absent fields keep their
// value; a provider cap of 0 removes that cap. Changes apply at the next admission and
// last until the server restarts or reloads its config.
type CapsParams struct {
	Global       *int           `json:"global,omitempty" range:"0,100000"`
	Provider     map[string]int `json:"provider,omitempty" range:"0,100000" maxItems:"256"`
	MinFreeMB    *int           `json:"minFreeMb,omitempty" range:"0,100000000"`
	AgingSeconds *int           `json:"agingSeconds,omitempty" range:"0,31622400"`
}

// GCParams runs lifecycle collection now (gc.run).
type GCParams struct {
	DryRun bool `json:"dryRun,omitempty"`
}

// GCAction is one thing GC did (or would do).
type GCAction struct {
	Rule    string `json:"rule"`   // gc.exited_grace | gc.idle_after | gc.retain
	Action  string `json:"action"` // close_pane | stop | remove | prune_events
	AgentID string `json:"agentId"`
	Path    string `json:"path"`
	Detail  string `json:"detail"`
}

// GCResult answers gc.run.
type GCResult struct {
	DryRun  bool       `json:"dryRun"`
	Actions []GCAction `json:"actions"`
	// Rules are the rules in force, as durations in seconds (0: rule off).
	ExitedGraceSeconds int `json:"exitedGraceSeconds"`
	IdleAfterSeconds   int `json:"idleAfterSeconds"`
	RetainSeconds      int `json:"retainSeconds"`
}

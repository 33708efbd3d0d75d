package wire

import "time"

// Methods for the queue, usage and schedules views.
const (
	MethodQueue        = "queue.get"
	MethodUsage        = "usage.get"
	MethodScheduleList = "schedule.list"
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
	Model    string `json:"model"`
	Window   string `json:"window"` // "total" | "5h" | "weekly"
	Agents   int    `json:"agents"`
	Usage    Usage  `json:"usage"`
}

// LimitReading is a provider's rate-limit reading at one instant.
type LimitReading struct {
	Provider   string     `json:"provider"`
	Window     string     `json:"window"` // "5h" | "weekly"
	UsedPct    float64    `json:"usedPct"`
	ResetsAt   *time.Time `json:"resetsAt"`
	LimitHit   bool       `json:"limitHit"`
	ObservedAt time.Time  `json:"observedAt"`
}

// Schedule is a command the server runs on a cadence.
type Schedule struct {
	Name         string            `json:"name"`
	EverySeconds int               `json:"everySeconds"` // 0 when Cron is set
	Cron         string            `json:"cron"`
	Command      []string          `json:"command"`
	Cwd          string            `json:"cwd"`
	Env          map[string]string `json:"env"`
	MissedPolicy string            `json:"missedPolicy"` // "skip" | "run-once"
	Owner        string            `json:"owner"`
	CreatedAt    time.Time         `json:"createdAt"`
	NextAt       *time.Time        `json:"nextAt"`
	LastRun      *ScheduleRun      `json:"lastRun"`
}

// ScheduleRun records one run of a schedule.
type ScheduleRun struct {
	StartedAt  time.Time  `json:"startedAt"`
	EndedAt    *time.Time `json:"endedAt"`
	ExitCode   *int       `json:"exitCode"`
	OutputTail string     `json:"outputTail"`
	Error      string     `json:"error"`
}

// ScheduleListResult answers schedule.list.
type ScheduleListResult struct {
	Schedules []Schedule `json:"schedules"`
}

package api

import (
	"time"

	"orcr/core/wire"
)

// The API, one declaration per method.
var (
	RoleList     = wire.Declare[wire.Empty, RoleListResult](MethodRoleList, "Role templates ($XDG_CONFIG_HOME/orcr/roles), broken ones with their error.", wire.ReadOnly)
	RoleGet      = wire.Declare[RoleNameParams, RoleResult](MethodRoleGet, "One role: its values, where each came from, and its file's text.", wire.ReadOnly)
	RolePut      = wire.Declare[RolePutParams, RoleResult](MethodRolePut, "Write a role file (refused with its line when it does not load).")
	AgentHistory = wire.Declare[AgentHistoryParams, AgentHistoryResult](MethodHistoryList, "Finished agents, newest first: role, duration, tokens, cost, result.", wire.ReadOnly)
)

// Role is a role template (DESIGN §12) as the API shows it.
type Role struct {
	Name               string            `json:"name"`
	File               string            `json:"file"`
	Providers          []string          `json:"providers"` // provider:model, fallback order
	Prompt             string            `json:"prompt"`
	SystemPrompt       string            `json:"systemPrompt"`
	Skills             []string          `json:"skills"`
	Env                map[string]string `json:"env"`
	Worktree           string            `json:"worktree"`
	Keep               bool              `json:"keep"`
	Priority           int               `json:"priority"`
	BudgetUSD          float64           `json:"budgetUsd"`
	BudgetAction       string            `json:"budgetAction"`
	MaxTurns           int               `json:"maxTurns"`
	SoftTimeoutSeconds int               `json:"softTimeoutSeconds"`
	HardTimeoutSeconds int               `json:"hardTimeoutSeconds"`
	// Identity is the identity the role's agents act as ("" for none); Spawn what
	// they may spawn from their panes (null: not bounded by the role).
	Identity string            `json:"identity"`
	Spawn    *wire.SpawnPolicy `json:"spawn"`
	// Vars are the {{var}} names the prompt needs.
	Vars []string `json:"vars"`
	// Sources says where each key's value came from ("reviewer.toml:3", "default").
	Sources map[string]string `json:"sources"`
	// Error is why the file does not load (the role is listed but cannot run).
	Error string `json:"error"`
}

// Methods of roles and history.
const (
	MethodRoleList    = "role.list"
	MethodRoleGet     = "role.get"
	MethodRolePut     = "role.put"
	MethodHistoryList = "history.list"
)

// Events of role limits (hook.ran is the kernel's: the agent record carries its hooks).
const (
	// EventRoleLimit says a role bound acted; Data has "limit" (soft_timeout,
	// hard_timeout, max_turns, budget) and "action" (wrap_up, stop).
	EventRoleLimit = "role.limit"
)

var _ = wire.DeclareEvents(EventRoleLimit)

// RoleListResult answers role.list.
type RoleListResult struct {
	Roles []Role `json:"roles"`
}

// RoleNameParams names one role.
type RoleNameParams struct {
	Name string `json:"name"`
}

// RoleResult answers role.get and role.put: the role and its file's text.
type RoleResult struct {
	Role Role   `json:"role"`
	Text string `json:"text"`
}

// RolePutParams writes a role file (checked first; a bad one is refused with its line).
type RolePutParams struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

// AgentHistoryParams selects finished agents (history.list).
type AgentHistoryParams struct {
	Glob         string `json:"glob,omitempty"`
	SinceSeconds int    `json:"sinceSeconds,omitempty" range:"0,315360000"` // ended at most this long ago (0: all)
	// Text asks for the aligned table as one text instead of entries: at 10,000
	// agents a terminal client then decodes one string, not 90,000.
	Text bool `json:"text,omitempty"`
	// Limit asks for one page of at most this many entries (0: all of them); the
	// result's next is then the after of the following page. A text page has the
	// header only when it is the first, and columns as wide as the whole history's,
	// so pages printed one after another make one table.
	Limit int `json:"limit,omitempty" range:"0,1000000"`
	// After is the next of the previous page: the history goes on after that entry
	// (older ones). Agents that finished since are not listed.
	After string `json:"after,omitempty"`
}

// AgentHistoryEntry is one finished agent.
type AgentHistoryEntry struct {
	ID              string     `json:"id"`
	Path            string     `json:"path"`
	Role            string     `json:"role"`
	Provider        string     `json:"provider"`
	Model           string     `json:"model"`
	State           wire.State `json:"state"`
	Result          string     `json:"result"` // exit code, kill or failure reason
	EndedAt         time.Time  `json:"endedAt"`
	DurationSeconds int        `json:"durationSeconds"`
	Tokens          int64      `json:"tokens"`
	CostUSD         *float64   `json:"costUsd"`
	ResumedFrom     string     `json:"resumedFrom"`
	// Resumable says the agent recorded a session its provider can resume (agent.resume
	// still checks that the session file and folder are there).
	Resumable bool `json:"resumable"`
}

// AgentHistoryResult answers history.list, newest first.
type AgentHistoryResult struct {
	Entries []AgentHistoryEntry `json:"entries"`
	Text    string              `json:"text"` // set when AgentHistoryParams.Text
	// Next is set when a Limit left entries out: pass it as After for the next page.
	Next string `json:"next,omitempty"`
}

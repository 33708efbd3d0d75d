package api

import (
	"time"

	"orcr/core/wire"
)

// Accounts, usage windows and budgets (DESIGN §10), served by package accounts.
const (
	MethodAccountList  = "account.list"
	MethodUsageSelect  = "usage.select"
	MethodUsageHistory = "usage.history"
	MethodBudgetList   = "budget.list"
	MethodBudgetSet    = "budget.set"
	MethodBudgetRemove = "budget.rm"
)

// Events of accounts and budgets.
const (
	// EventBudgetReached says a budget's bound was reached; Data has "glob",
	// "action" and "spent".
	EventBudgetReached = "budget.reached"
	// EventAccountResumed says a limit-blocked agent was told to continue after its
	// window reset; Agent is the agent, Data["account"] the account.
	EventAccountResumed = "account.resumed"
)

// Account is one auth source of a provider and what admission knows of it.
type Account struct {
	Provider string `json:"provider"`
	Label    string `json:"label"`
	// Implicit: no accounts are configured for the provider; this is the user's own login.
	Implicit  bool     `json:"implicit"`
	ConfigDir string   `json:"configDir,omitempty"` // claude: CLAUDE_CONFIG_DIR
	Home      string   `json:"home,omitempty"`      // codex: CODEX_HOME
	EnvKeys   []string `json:"envKeys,omitempty"`   // names of the extra env (values are never shown)
	// PerToken: billed per token (an API key): no windows apply.
	PerToken bool `json:"perToken"`
	LoggedIn bool `json:"loggedIn"`
	// Problem says why admission skips the account ("" when usable), with the fix.
	Problem string   `json:"problem,omitempty"`
	Live    int      `json:"live"` // agents running on it
	Windows []Window `json:"windows"`
}

// Window is an account's newest reading of one usage window.
type Window struct {
	Window     string     `json:"window"` // "5h" | "weekly"
	Family     string     `json:"family,omitempty"`
	UsedPct    float64    `json:"usedPct"`
	ResetsAt   *time.Time `json:"resetsAt"`
	ObservedAt time.Time  `json:"observedAt"`
	// BurnPctPerHour is the rise of the last 30 minutes, in percent per hour.
	BurnPctPerHour float64 `json:"burnPctPerHour"`
	// State: "ok", "throttled" (over headroom or burning out before the reset: only
	// priority ≥ hold_below runs), "exhausted" (holds all work until the reset).
	State string `json:"state"`
	// Held is how many queued agents this window holds now.
	Held int `json:"held"`
}

// AccountListResult answers account.list.
type AccountListResult struct {
	Mode     string    `json:"mode"`
	Headroom float64   `json:"headroom"`
	Accounts []Account `json:"accounts"`
}

// SelectParams asks which account a spawn now would get (usage.select).
type SelectParams struct {
	Provider string `json:"provider"`
	Model    string `json:"model,omitempty"`
	Priority int    `json:"priority,omitempty" range:"-1000000,1000000"`
	Account  string `json:"account,omitempty"`
}

// SelectResult says which account a spawn would get, or why none.
type SelectResult struct {
	Account  string    `json:"account"` // "" when the spawn would wait
	Reason   string    `json:"reason"`
	RetryAt  time.Time `json:"retryAt,omitzero"`
	Accounts []Choice  `json:"accounts"` // every account considered, in order
}

// Choice is one account as admission weighed it.
type Choice struct {
	Account string `json:"account"`
	OK      bool   `json:"ok"`
	Why     string `json:"why"`
}

// HistoryParams selects window history (usage.history).
type HistoryParams struct {
	Provider string `json:"provider,omitempty"`
	Account  string `json:"account,omitempty"`
	// Limit asks for one page of at most this many peaks (0: all of them, as
	// agent.list); the result's next is then the after of the following page.
	Limit int `json:"limit,omitempty" range:"0,1000000"`
	// After is the next of the previous page: the list goes on after that peak.
	After string `json:"after,omitempty"`
}

// WindowPeak is one past (or the current) window of a series at its peak.
type WindowPeak struct {
	Provider string     `json:"provider"`
	Account  string     `json:"account"`
	Window   string     `json:"window"`
	Family   string     `json:"family,omitempty"`
	ResetsAt *time.Time `json:"resetsAt"`
	PeakPct  float64    `json:"peakPct"`
	PeakAt   time.Time  `json:"peakAt"`
}

// HistoryResult answers usage.history, newest window first per series.
type HistoryResult struct {
	Peaks []WindowPeak `json:"peaks"`
	// Next is set when a Limit left peaks out: pass it as After for the next page.
	Next string `json:"next,omitempty"`
}

// Budget bounds the cost or tokens of every agent under a glob.
type Budget struct {
	Glob   string   `json:"glob"`
	USD    *float64 `json:"usd,omitempty"`
	Tokens *int64   `json:"tokens,omitempty"`
	Action string   `json:"action"` // "hold" | "stop"
	// Spent is what the agents under the glob have used, rolled up along the tree.
	SpentUSD    float64    `json:"spentUsd"`
	SpentTokens int64      `json:"spentTokens"`
	Agents      int        `json:"agents"`
	Reached     bool       `json:"reached"`
	ReachedAt   *time.Time `json:"reachedAt,omitempty"`
	CreatedAt   time.Time  `json:"createdAt"`
	// Role and Since are as BudgetSetParams gave them.
	Role  string     `json:"role,omitempty"`
	Since *time.Time `json:"since,omitempty"`
}

// BudgetSetParams creates or replaces a budget (budget.set); exactly one of USD and
// Tokens is set.
type BudgetSetParams struct {
	Glob   string   `json:"glob"`
	USD    *float64 `json:"usd,omitempty" range:"0,1000000"`
	Tokens *int64   `json:"tokens,omitempty" range:"0,1000000000000"`
	Action string   `json:"action,omitempty"` // default "hold"
	// Role, when set, says a role's budget_usd made this budget for the agent at Glob.
	Role string `json:"role,omitempty"`
	// Since, when set, counts only agents created from then on (a role's budget is
	// its agent's, not that of earlier agents at the same path).
	Since *time.Time `json:"since,omitempty"`
}

// BudgetResult wraps one budget.
type BudgetResult struct {
	Budget Budget `json:"budget"`
}

// BudgetListResult answers budget.list.
type BudgetListResult struct {
	Budgets []Budget `json:"budgets"`
}

// BudgetGlobParams names one budget.
type BudgetGlobParams struct {
	Glob string `json:"glob"`
}

// The API, one declaration per method.
var (
	AccountList  = wire.Declare[wire.Empty, AccountListResult](MethodAccountList, "Accounts per provider with their usage windows.", wire.ReadOnly)
	UsageSelect  = wire.Declare[SelectParams, SelectResult](MethodUsageSelect, "Which account a spawn now would get, and why.", wire.ReadOnly)
	UsageHistory = wire.Declare[HistoryParams, HistoryResult](MethodUsageHistory, "One record per past usage window at its peak.", wire.ReadOnly)
	BudgetList   = wire.Declare[wire.Empty, BudgetListResult](MethodBudgetList, "Budgets with what their subtrees have spent.", wire.ReadOnly)
	BudgetSet    = wire.Declare[BudgetSetParams, BudgetResult](MethodBudgetSet, "Create or replace a budget on a glob.")
	BudgetRemove = wire.Declare[BudgetGlobParams, wire.Empty](MethodBudgetRemove, "Remove a budget.")
)

package wire

import "time"

// Types and methods of roles, per-repo hooks and history (DESIGN §12).

// AgentLimits are an agent's turn, time and cost bounds (from its role or agent.run)
// and what the roles feature has counted against them.
type AgentLimits struct {
	MaxTurns           int     `json:"maxTurns"`
	SoftTimeoutSeconds int     `json:"softTimeoutSeconds"`
	HardTimeoutSeconds int     `json:"hardTimeoutSeconds"`
	BudgetUSD          float64 `json:"budgetUsd"`
	// BudgetAction is the budget's action ("stop" or "hold"; "" is stop).
	BudgetAction string `json:"budgetAction,omitempty"`
	// Turns is how many turns the agent has finished.
	Turns int `json:"turns"`
	// WrapUpAt is when the soft timeout's one wrap-up message was sent.
	WrapUpAt *time.Time `json:"wrapUpAt"`
}

// Any reports whether a bound is set.
func (l AgentLimits) Any() bool {
	return l.MaxTurns > 0 || l.SoftTimeoutSeconds > 0 || l.HardTimeoutSeconds > 0 || l.BudgetUSD > 0
}

// Hook names of .orcr/hooks/NAME.sh.
const (
	HookInit     = "init"
	HookBefore   = "before"
	HookValidate = "validate"
	HookAfter    = "after"
)

// Hook run results.
const (
	HookPassed        = "passed"
	HookFailed        = "failed"         // non-zero exit
	HookTimeout       = "timeout"        // killed at its timeout
	HookNotExecutable = "not_executable" // the file exists but cannot be run
	HookError         = "error"          // could not start for another reason
)

// HookRun is one run of a per-repo hook.
type HookRun struct {
	Hook      string    `json:"hook"`
	Attempt   int       `json:"attempt"`
	StartedAt time.Time `json:"startedAt"`
	Seconds   float64   `json:"seconds"`
	ExitCode  *int      `json:"exitCode"`
	Result    string    `json:"result"`
	Output    string    `json:"output"` // its output's tail
}

// Events of hooks and role limits.
const (
	// EventHookRan says a per-repo hook ran; Data has "hook", "attempt", "result",
	// "exitCode" and "output".
	EventHookRan = "hook.ran"
)

// Error codes of roles and resume.
const (
	CodeUnknownRole = "unknown_role" // no such role file
	CodeBadRole     = "bad_role"     // the role does not load or cannot resolve (its line, the fix)
	CodeNoSession   = "no_session"   // resume: the provider keeps no session, or its file is gone
)

// MethodAgentResume brings an ended or hibernated agent back by its session.
const MethodAgentResume = "agent.resume"

// ResumeParams resumes an agent (agent.resume): the provider's own resume of the
// recorded session, in the same folder, as a new record linked to the old one.
type ResumeParams struct {
	Target string `json:"target"`
	Prompt string `json:"prompt,omitempty"` // the first message after resuming
}

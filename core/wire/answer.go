package wire

import (
	"fmt"
	"strings"

	"0orcr/fast"
)

// What a blocked agent waits for (Blocked.Kind).
const (
	BlockedPermission = "permission" // a tool wants to run
	BlockedQuestion   = "question"   // the program asks something (AskUserQuestion, "Proceed? [y/N]")
	BlockedPlan       = "plan"       // a plan waits for approval (claude's plan mode)
	BlockedLimit      = "limit"      // a usage limit; ResetsAt says until when
	BlockedDialog     = "dialog"     // a startup dialog (trust this folder, use this API key)
	// BlockedSetup: the CLI is not set up (not signed in, onboarding unfinished, no
	// model configured, no connection to its service) and waits for something done
	// outside orcr; Detail says what to do.
	BlockedSetup = "setup"
)

// BlockedKinds lists every Blocked.Kind (the schema names them).
var BlockedKinds = []string{BlockedPermission, BlockedQuestion, BlockedPlan, BlockedLimit, BlockedDialog, BlockedSetup}

// What choosing an option means (Option.Meaning). --allow, --always and --deny pick
// by these, never by position.
const (
	MeaningAllowOnce   = "allow_once"
	MeaningAllowAlways = "allow_always"
	MeaningDeny        = "deny"
	MeaningOther       = "other" // anything else: switch to auto mode, a choice among answers
)

// Option is one answer a prompt offers, as the program shows it.
type Option struct {
	Label   string `json:"label"`   // as on screen, without the key hint
	Key     string `json:"key"`     // what selects it: "1", "y", "esc"
	Meaning string `json:"meaning"` // allow_once | allow_always | deny | other
	// Text is true when choosing it takes typed text along (claude's "Tell Claude what
	// to change", "No" amended with what to do instead).
	Text bool `json:"text,omitempty"`
}

// UnmarshalJSON also reads the plain strings older records stored as options (as
// meaning "other"): fast.Option's, the one reader, which `agent get` on the fast path uses.
func (o *Option) UnmarshalJSON(b []byte) error { return (*fast.Option)(o).UnmarshalJSON(b) }

// FormatOptions lists options one per line as "  1. Yes  [key 1, allow_once]", for
// error messages and the CLI.
func FormatOptions(opts []Option) string {
	var b strings.Builder
	for i, o := range opts {
		fmt.Fprintf(&b, "  %d. %s  [key %s, %s]\n", i+1, o.Label, o.Key, o.Meaning)
	}
	return strings.TrimRight(b.String(), "\n")
}

// MethodAgentAnswer answers what a blocked agent waits for.
const MethodAgentAnswer = "agent.answer"

// AnswerParams picks one answer: exactly one of Allow, Always, Deny, Option; Text
// alone answers a free-form question, and with Deny (or an option that takes text) it
// says why / what to do instead.
type AnswerParams struct {
	Target string `json:"target"` // id, id prefix, path or glob
	Allow  bool   `json:"allow,omitempty"`
	Always bool   `json:"always,omitempty"`
	Deny   bool   `json:"deny,omitempty"`
	Option int    `json:"option,omitempty" range:"0,1000"` // 1-based, as shown
	Text   string `json:"text,omitempty"`
	// All answers every blocked agent a glob matches; without it a glob matching
	// several is refused.
	All bool `json:"all,omitempty"`
	// TimeoutSeconds bounds the wait for the state to leave blocked (default 5).
	TimeoutSeconds int `json:"timeoutSeconds,omitempty" range:"0,3600"`
}

// AnswerResult lists what was answered.
type AnswerResult struct {
	Answers []Answered `json:"answers"`
}

// Answered is one agent's answer: the option chosen (nil for free text), and the
// agent as it was once its state left blocked.
type Answered struct {
	Agent  Agent   `json:"agent"`
	Option *Option `json:"option"`
	Text   string  `json:"text"`
	// Keys is what was typed, in order, for --explain style diagnostics.
	Keys []string `json:"keys"`
}

// Error codes of agent.answer. Each error's data carries "options" or "agents".
const (
	CodeNotBlocked     = "not_blocked"    // the target waits for nothing
	CodeNotAnswerable  = "not_answerable" // blocked on a usage limit: nothing to press
	CodeNoSuchOption   = "no_such_option" // no option has that meaning (--allow/--always/--deny)
	CodeOptionRange    = "option_out_of_range"
	CodeSeveralBlocked = "several_blocked"  // a glob matches several blocked agents; use --all
	CodePromptGone     = "prompt_gone"      // the screen no longer shows the prompt; nothing sent
	CodeAnswerNotTaken = "answer_not_taken" // sent, but the agent stayed blocked on it
	// CodeAgentBlocked: agent.send refused text (or Enter) for an agent that waits for
	// a choice; data carries "blocked" (what it waits for) and "answer" (the command).
	CodeAgentBlocked = "agent_blocked"
)

// ErrAgentBlocked matches a send refused because the agent waits for a choice.
var ErrAgentBlocked = &Error{Code: CodeAgentBlocked}

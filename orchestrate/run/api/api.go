package api

import (
	"time"

	"orcr/core/wire"
)

// Run methods.
const (
	MethodRunStart    = "run.start"
	MethodRunList     = "run.list"
	MethodRunStatus   = "run.status"
	MethodRunEvents   = "run.events"
	MethodRunStop     = "run.stop"
	MethodRunFinish   = "run.finish"
	MethodRunDispatch = "run.dispatch"
	MethodRunHold     = "run.hold"
	MethodRunRetry    = "run.retry"
	MethodRunAnswer   = "run.answer"
	MethodRunFix      = "run.fix"
	MethodRunDone     = "run.done"
	MethodRunAsk      = "run.ask"
)

// Run events published on the event stream.
const (
	// EventRun is one entry of a run's log (Data: run, seq, type, kind, m, text).
	EventRun = "run.event"
	// EventRunNotify is something the user must see (Data: run, m, text).
	EventRunNotify = "run.notify"
)

// The run API, one declaration per method.
var (
	RunStartM    = wire.Declare[RunStartParams, RunResult](MethodRunStart, "Start the run of an approved plan: feature/NAME from the base branch, the lead, the autopilot.")
	RunListM     = wire.Declare[wire.Empty, RunListResult](MethodRunList, "Every run, newest state.", wire.ReadOnly)
	RunStatusM   = wire.Declare[RunNameParams, RunResult](MethodRunStatus, "One run: per milestone its state, coder and model, rounds and time; what waits on whom.", wire.ReadOnly)
	RunEventsM   = wire.Declare[RunEventsParams, RunEventsResult](MethodRunEvents, "A run's stored event log after a cursor.", wire.ReadOnly)
	RunStopM     = wire.Declare[RunNameParams, RunResult](MethodRunStop, "Stop a run: every open milestone is held, its coders stopped.")
	RunFinishM   = wire.Declare[RunNameParams, RunFinishResult](MethodRunFinish, "Remove the run's worktrees and refs but feature/NAME, push it, open the pull request.")
	RunDispatchM = wire.Declare[RunMilestonesParams, RunResult](MethodRunDispatch, "Start ready milestones.")
	RunHoldM     = wire.Declare[RunMilestonesParams, RunResult](MethodRunHold, "Hold milestones (their coders are freed).")
	RunRetryM    = wire.Declare[RunMilestonesParams, RunResult](MethodRunRetry, "A fresh start of held or failed milestones, optionally at another tier.")
	RunAnswerM   = wire.Declare[RunTextParams, RunResult](MethodRunAnswer, "Answer the question of a milestone's coder.")
	RunFixM      = wire.Declare[RunTextParams, RunResult](MethodRunFix, "A follow-up job for a merged milestone, checked and reviewed.")
	RunDoneM     = wire.Declare[RunCallerParams, RunMilestone](MethodRunDone, "From a coder's pane: the milestone is committed and ready for its check.")
	RunAskM      = wire.Declare[RunCallerParams, RunMilestone](MethodRunAsk, "From a coder's pane: a question that pauses the milestone and wakes the lead.")
)

// RunStartParams starts a run (run.start).
type RunStartParams struct {
	Name   string `json:"name"`
	Coders int    `json:"coders,omitempty" range:"0,64"` // pool size (default 2; shared mode: 1)
	Mode   string `json:"mode,omitempty"`                // worktree | shared (default: the plan's)
	Check  string `json:"check,omitempty"`               // overrides the plan's check command
	// CheckTimeoutSeconds bounds one check run (default 600).
	CheckTimeoutSeconds int `json:"checkTimeoutSeconds,omitempty" range:"0,2592000"`
	// Reviewer is provider[:model] of the reviewer; empty for no review.
	Reviewer string `json:"reviewer,omitempty"`
	// Coder, when set, is provider[:model] every coder runs on instead of the
	// catalog's pick for the tier; CoderArgv is the shell provider's program.
	Coder     string   `json:"coder,omitempty"`
	CoderArgv []string `json:"coderArgv,omitempty" maxItems:"4096"`
	// Nodes are the nodes the coders run on (DESIGN §14), in turn: coder-N on
	// Nodes[(N-1) mod len]. Such a coder works in a clone on its node; its branch comes
	// back by git fetch, and merging stays on this machine.
	Nodes []string `json:"nodes,omitempty" maxItems:"64"`
	// Lead is provider[:model] of the run's lead (default: the plan's lead); "none"
	// starts no lead (the user dispatches; ready work starts by itself).
	Lead string `json:"lead,omitempty"`
	Base string `json:"base,omitempty"` // the base branch (default: the repository's current branch)
	// Fresh starts a run whose name has one (stopped or finished) anew: the old
	// run's record, log, worktrees and branches (feature/NAME too) are removed
	// first. Without it, a stopped run is resumed and a finished one refused.
	Fresh bool `json:"fresh,omitempty"`
}

// RunNameParams names a run.
type RunNameParams struct {
	Name string `json:"name"`
}

// RunMilestonesParams names milestones of a run (dispatch, hold, retry).
type RunMilestonesParams struct {
	Name       string   `json:"name"`
	Milestones []string `json:"milestones" maxItems:"256"` // a name given twice is acted on once
	Tier       string   `json:"tier,omitempty"`            // retry: the tier of the fresh round
	Reason     string   `json:"reason,omitempty"`
}

// RunTextParams carries text for one milestone (answer, fix).
type RunTextParams struct {
	Name      string `json:"name"`
	Milestone string `json:"milestone"`
	Text      string `json:"text"`
}

// RunCallerParams is run done / run ask from inside a coder's pane: the run and the
// coder are the caller's (ORCR_ID).
type RunCallerParams struct {
	Milestone string `json:"milestone"`
	Text      string `json:"text,omitempty"`
	// Call names one report: the CLI sends the same call on every retry of one
	// `orcr run done` or `run ask` (a server killed during the call is called again
	// once it is back), and the run takes a report once; a retry is a note. Without
	// it, a retried done after its check had failed started the check again at the
	// same commit and cost the milestone a round.
	Call string `json:"call,omitempty"`
}

// RunEventsParams reads a run's log.
type RunEventsParams struct {
	Name string `json:"name"`
	// After is a seq: the log goes on with the entries after it (the next of the
	// previous page).
	After uint64 `json:"after,omitempty"`
	// Limit asks for one page of at most this many entries (0: all of them, as
	// agent.list); the result's next is then the after of the following page.
	Limit int `json:"limit,omitempty" range:"0,1000000"`
}

// RunView is a run as clients see it.
type RunView struct {
	Name       string         `json:"name"`
	State      string         `json:"state"` // running | finishing | done | failed | stopped | waiting
	Repo       string         `json:"repo"`
	Base       string         `json:"base"`
	Feature    string         `json:"feature"` // feature/NAME
	Tip        string         `json:"tip"`     // its commit as the run left it
	Check      string         `json:"check"`
	Mode       string         `json:"mode"`
	Reviewer   string         `json:"reviewer"`
	Coders     int            `json:"coders"`
	Milestones []RunMilestone `json:"milestones"`
	Pool       []RunCoder     `json:"pool"`
	// Inbox is what waits for the lead (not yet delivered).
	Inbox   []string `json:"inbox"`
	Summary string   `json:"summary"` // the summary file, once written
	// PlanEdit says what the last edit of the plan file did to the run ("" when the
	// file is as approved).
	PlanEdit string    `json:"planEdit,omitempty"`
	Created  time.Time `json:"createdAt"`
	// Updated is when the run's log last moved (for a closed run: when it closed).
	Updated time.Time `json:"updatedAt"`
	Seq     uint64    `json:"seq"`
}

// RunMilestone is one milestone of a run.
type RunMilestone struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	State    string `json:"state"`
	Tier     string `json:"tier"`    // planned
	TierNow  string `json:"tierNow"` // working on it now
	Coder    string `json:"coder"`
	Model    string `json:"model"`
	Rounds   Rounds `json:"rounds"`
	Question string `json:"question"`
	Reason   string `json:"reason"`
	// Waits says what the milestone waits on, in words ("coder-2", "the reviewer",
	// "an answer", "M1 to merge", "a free coder").
	Waits string `json:"waits"`
	// Undispatched is set while the milestone is ready and a turn of the lead ended
	// without dispatching it: what happened and what to do, in one sentence.
	Undispatched    string `json:"undispatched,omitempty"`
	ElapsedSeconds  int    `json:"elapsedSeconds"`
	EstimateSeconds int    `json:"estimateSeconds"`
	Commit          string `json:"commit"`
}

// Rounds counts a milestone's failed rounds by kind.
type Rounds struct {
	Check    int `json:"check"`
	Review   int `json:"review"`
	Conflict int `json:"conflict"`
}

// RunCoder is one coder of a run's pool.
type RunCoder struct {
	Name         string     `json:"name"`
	Tier         string     `json:"tier"`
	Model        string     `json:"model"`
	Milestone    string     `json:"milestone"`
	BenchedUntil *time.Time `json:"benchedUntil"`
}

// RunResult wraps one run.
type RunResult struct {
	Run RunView `json:"run"`
}

// RunListResult answers run.list.
type RunListResult struct {
	Runs []RunView `json:"runs"`
}

// RunEntry is one entry of a run's log.
type RunEntry struct {
	Seq  uint64    `json:"seq"`
	At   time.Time `json:"at"`
	Type string    `json:"type"` // start | fact | did | refused
	Kind string    `json:"kind"` // the fact's or the action's kind
	M    string    `json:"m"`
	Text string    `json:"text"`
}

// RunEventsResult answers run.events.
type RunEventsResult struct {
	Entries []RunEntry `json:"entries"`
	// Next is set when a Limit left entries out: pass it as After for the next page.
	Next uint64 `json:"next,omitempty"`
}

// RunFinishResult says what finish did and what it did not do, and why.
type RunFinishResult struct {
	Run     RunView  `json:"run"`
	Done    []string `json:"done"`
	NotDone []string `json:"notDone"`
	PRURL   string   `json:"prUrl"`
}

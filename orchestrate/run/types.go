package run

import (
	"time"
)

// State is where a milestone is (DESIGN §8):
//
//	planned → ready → building ⇄ asking → checking → reviewing → merging → merged
//
// with fixing (a round back to a coder), benched (its coder hit a usage limit or
// vanished; the work waits for another), held (a person or a contradiction stopped
// it), escalated (out of rounds; one fresh round a tier up waits for a coder) and
// failed (out of rounds after that; the lead decides).
type State string

// The milestone states.
const (
	Planned   State = "planned"
	Ready     State = "ready"
	Building  State = "building"
	Asking    State = "asking"
	Checking  State = "checking"
	Reviewing State = "reviewing"
	Merging   State = "merging"
	Merged    State = "merged"
	Fixing    State = "fixing"
	Benched   State = "benched"
	Held      State = "held"
	Escalated State = "escalated"
	Failed    State = "failed"
)

// AtPrompt is no state: it is the key of Milestone.Spent for the time its coder
// waited at a permission prompt, taken out of the state it waited in (building or
// fixing), so the summary's columns still add up to the elapsed time.
const AtPrompt State = "at-prompt"

// States lists every milestone state.
var States = []State{Planned, Ready, Building, Asking, Checking, Reviewing, Merging, Merged, Fixing, Benched, Held, Escalated, Failed}

// Round limits (DESIGN §8): how many failures of each kind a milestone takes before it
// is out of rounds. "checks ≤ 3 rounds" counts check runs: fail, fix, fail, fix, fail
// is out of rounds.
const (
	MaxCheckRounds    = 3
	MaxReviewRounds   = 2
	MaxConflictRounds = 2
)

// Timings of DESIGN §8.
const (
	AutoStartAfter = 15 * time.Minute // a ready milestone the lead did not dispatch starts by itself
	LimitBench     = 60 * time.Minute // a coder at a usage limit, when the reset is not known
	VanishedBench  = 10 * time.Minute // a coder whose agent vanished
)

// Round kinds: what a fix round is for.
const (
	RoundCheck    = "check"
	RoundReview   = "review"
	RoundConflict = "conflict"
)

// Rounds counts the failures of a milestone by kind.
type Rounds struct {
	Check    int `json:"check"`
	Review   int `json:"review"`
	Conflict int `json:"conflict"`
}

// Milestone is one milestone's part of the run record.
type Milestone struct {
	ID      string   `json:"id"`
	Title   string   `json:"title"`
	Depends []string `json:"depends"`
	Tier    string   `json:"tier"`    // as planned
	TierNow string   `json:"tierNow"` // the tier working on it now (one up after escalation)

	State State `json:"state"`
	// Prev is the state to go back to after asking, benched or escalated.
	Prev State `json:"prev,omitempty"`
	// Want is set when the milestone waits for a coder (dispatched, or its coder was
	// benched, or a fix round's author is busy).
	Want bool `json:"want,omitempty"`
	// Coder is the coder working on it now; Author the last coder that did.
	Coder  string `json:"coder,omitempty"`
	Author string `json:"author,omitempty"`
	// Coders lists every coder that worked on it, in order.
	Coders []string `json:"coders,omitempty"`

	Rounds Rounds `json:"rounds"`
	// Fix is the kind of the current fix round; Pending the message it carries, kept
	// so a coder that takes the work over gets it too.
	Fix     string `json:"fix,omitempty"`
	Pending string `json:"pending,omitempty"`
	// Asked: the coder's turn ended without `orcr run done` and it was asked once.
	Asked bool `json:"asked,omitempty"`
	// TierUp: the one fresh round a tier up has been used.
	TierUp bool `json:"tierUp,omitempty"`
	// FollowUp: a `run fix` job after the milestone was merged.
	FollowUp bool `json:"followUp,omitempty"`
	// Removed: taken out of the plan while under way; it is held and no longer
	// keeps the run from finishing.
	Removed bool `json:"removed,omitempty"`
	// Passed is when a turn of the lead ended with no `run dispatch` while the lead
	// had been told this milestone is ready (zero: none since it became ready).
	Passed time.Time `json:"passed,omitzero"`

	// Head is the commit of the milestone branch under check, review or merge;
	// Checked the one whose check passed; MergeHead the milestone branch with the
	// feature tip merged in, under its re-check; MergeChecked the one that passed.
	Head         string `json:"head,omitempty"`
	Checked      string `json:"checked,omitempty"`
	MergeHead    string `json:"mergeHead,omitempty"`
	MergeChecked string `json:"mergeChecked,omitempty"`
	ReviewRetry  bool   `json:"reviewRetry,omitempty"`
	Question     string `json:"question,omitempty"`
	// Answered: the answer to Question went to the coder; the milestone stays
	// asking until the coder's next turn ends (or it reports done), so the end of
	// the turn that asked is never taken for a turn without `run done`.
	Answered bool `json:"answered,omitempty"`
	// Call is the call of the last report (done, ask) taken from a coder: the same
	// report again is a retry of it, not a new one.
	Call string `json:"call,omitempty"`
	// QA is every question asked and answer given on the milestone, in order; a
	// brief to a new coder (work handed on, a tier up) carries them.
	QA     []string `json:"qa,omitempty"`
	Reason string   `json:"reason,omitempty"` // why held or failed
	Commit string   `json:"commit,omitempty"` // the feature commit it was merged as

	ReadyAt   time.Time `json:"readyAt,omitzero"`
	StartedAt time.Time `json:"startedAt,omitzero"`
	StateAt   time.Time `json:"stateAt,omitzero"`
	MergedAt  time.Time `json:"mergedAt,omitzero"`
	// Spent is the time spent in each state, in seconds, for the summary.
	Spent map[State]float64 `json:"spent,omitempty"`
	// PromptAt is when its coder began to wait at a permission prompt (zero: it
	// does not); the wait is moved to Spent[AtPrompt] when it ends or the
	// milestone moves.
	PromptAt time.Time `json:"promptAt,omitzero"`
}

// Coder is one coder of the run's pool: the agent runs/NAME/<Name>.
type Coder struct {
	Name string `json:"name"` // coder-N
	Tier string `json:"tier"`
	M    string `json:"m,omitempty"` // the milestone it works on; "" when free
	// BenchedUntil: not given work before this instant (usage limit, vanished).
	BenchedUntil time.Time `json:"benchedUntil,omitzero"`
	// Gone: stopped for good (replaced by a coder of another tier).
	Gone bool `json:"gone,omitempty"`
}

// Run is the state of a run that Step advances. It is what the run record stores.
type Run struct {
	Name      string `json:"name"`
	MaxCoders int    `json:"maxCoders"`
	Reviewer  bool   `json:"reviewer"`
	// Shared says the coders work in the repository's own folder (`mode: shared`):
	// one milestone at a time from its brief through its merge, since a second
	// milestone's checkout would pull the folder from under the first one's check,
	// review or merge.
	Shared bool `json:"shared,omitempty"`
	// Feature is the tip of feature/NAME as the run last set or found it; every merge
	// moves it by compare-and-swap from this value.
	Feature string `json:"feature"`

	Milestones []Milestone `json:"milestones"`
	Coders     []Coder     `json:"coders"`
	NextCoder  int         `json:"nextCoder"`
	// MergeQueue and ReviewQueue hold milestone ids in arrival order; the first of
	// each is the one merging (one at a time) or under review (one reviewer).
	MergeQueue  []string `json:"mergeQueue,omitempty"`
	ReviewQueue []string `json:"reviewQueue,omitempty"`

	// Finish: "" while milestones are open; "checking" while the final check runs on
	// feature/NAME; "done" when it passed (the summary is written); "failed".
	Finish  string `json:"finish,omitempty"`
	Stopped bool   `json:"stopped,omitempty"`
	// PlanHash is the sha256 of the plan file as the run last took it in (an edit
	// applied or refused); "" until the first edit (the approved hash holds).
	PlanHash string `json:"planHash,omitempty"`
	// PlanNote says what the last edit of the plan did, for `run status`.
	PlanNote string `json:"planNote,omitempty"`
	// LeadTurn is the end of the lead's last turn the run took in; Dispatched says
	// a dispatch came since then.
	LeadTurn   time.Time `json:"leadTurn,omitzero"`
	Dispatched bool      `json:"dispatched,omitempty"`

	// Lead says the run has a lead agent; without one (`--lead none`) what the lead
	// would hear goes to the user as a notification.
	Lead bool `json:"lead,omitempty"`
	// Inbox is what the lead must hear and has not taken up; LeadSent the batch on
	// its way (taken up when the lead's next turn starts); LeadIdle says the lead's
	// turn ended (or it never started one) and nothing was typed into it since.
	Inbox    []string  `json:"inbox,omitempty"`
	LeadSent *LeadSend `json:"leadSent,omitempty"`
	LeadIdle bool      `json:"leadIdle,omitempty"`
	// LeadRestarts counts the restarts of a lead that ended: it is restarted once;
	// ended again, the user is the lead from then on.
	LeadRestarts int `json:"leadRestarts,omitempty"`
	// ReviewTurn is the end of the reviewer's last turn the run took in, so a
	// verdict seen twice (its event again after a restart) is applied once.
	ReviewTurn time.Time `json:"reviewTurn,omitzero"`
	// Timers are the run's timed rules waiting for their instant (timer.go).
	Timers []Timer `json:"timers,omitempty"`
}

// LeadSend is a batch sent to the lead and not yet seen taken up.
type LeadSend struct {
	N     int       `json:"n"` // how many inbox entries it carried
	At    time.Time `json:"at"`
	Tries int       `json:"tries"`
	Told  bool      `json:"told,omitempty"` // the user was told it did not get through
}

// FactKind names a fact.
type FactKind string

// Facts: what happened (observed by the autopilot, or the outcome of an action) and
// what a person or the lead asked for (requests, which Step may refuse).
const (
	// Requests.
	FDispatch FactKind = "dispatch" // the lead (or the 15-minute auto-start) starts M
	FAnswer   FactKind = "answer"   // an answer to M's question, for its coder
	FHold     FactKind = "hold"     // stop work on M (Text: why)
	FRetry    FactKind = "retry"    // a fresh start of a held or failed M (Tier: optional)
	FFollowUp FactKind = "follow-up"
	FStop     FactKind = "stop" // stop the run: everything open is held
	// FResume takes a stopped run up again (`run start` of a stopped run).
	FResume FactKind = "resume"

	// From coders (the autopilot stamps them with what git says about the branch).
	FDone       FactKind = "done"        // `orcr run done M`: Commits, Dirty, Head
	FTurnEnded  FactKind = "turn-ended"  // the coder's turn ended without done; Text: its last message
	FAsk        FactKind = "ask"         // `orcr run ask M "…"`
	FLimited    FactKind = "limited"     // Coder hit a usage limit; Until when its window resets (zero: unknown)
	FVanished   FactKind = "vanished"    // Coder's agent is gone
	FLost       FactKind = "lost"        // Coder's agent ended while the server was down: handed on, no bench
	FCoderFault FactKind = "coder-fault" // Coder could not be started (Text: why)
	// FPrompt: Coder, on M, waits for the user at a permission prompt; FPromptDone:
	// it no longer does (answered, or its agent went). Only the summary's time
	// columns use them.
	FPrompt     FactKind = "prompt"
	FPromptDone FactKind = "prompt-done"

	// FLeadTurn: the lead's turn ended at TurnAt; Until is when orcr last typed into
	// it (what was ready by then, the lead had been told).
	FLeadTurn FactKind = "lead-turn-ended"

	// Outcomes of actions.
	FChecked    FactKind = "checked"     // a check ran on Head: OK, Text = last lines; Merge for the re-check
	FReviewed   FactKind = "reviewed"    // the reviewer's Verdict on Head
	FMergedIn   FactKind = "merged-in"   // the feature tip merged into M's branch cleanly: Head
	FConflict   FactKind = "conflict"    // merging the feature tip into M's branch conflicted: Paths
	FAdvanced   FactKind = "advanced"    // feature/NAME moved to Head by compare-and-swap
	FMoved      FactKind = "moved"       // feature/NAME was not where the run left it (Head: where it is)
	FFinalCheck FactKind = "final-check" // the check on feature/NAME after all merged: OK, Text

	// FPlanEdited: the plan file changed after the run started (Hash: its sha256).
	// Plan is the new plan's milestones when it parses; Text the errors when it does
	// not (the run keeps the plan it had).
	FPlanEdited FactKind = "plan-edited"

	// FTick lets time pass: the timers due fire (timer.go).
	FTick FactKind = "tick"

	// The run's own bookkeeping.
	FBranched    FactKind = "branched"     // feature/NAME was created at Head
	FLeadWorking FactKind = "lead-working" // the lead's turn started at TurnAt (a batch sent before is taken up)
	FLeadIdle    FactKind = "lead-idle"    // the lead waits for input with no turn end to take in
	FLeadUnsent  FactKind = "lead-unsent"  // the batch was not typed (a prompt is up on the lead; Until: the try before)
	// FLeadLost: the lead's agent ended (it exited, was killed, or went with the
	// server) and the run did not stop it; Text says how. OK: it went with the
	// server (not the lead's doing), which does not use up its one restart.
	FLeadLost FactKind = "lead-lost"
	// FLeadResumed: the run's self lead (--lead self) is back as a new agent — the
	// user resumed the session (`orcr agent resume`), which gave it a new id — and
	// waits for input; Text says how.
	FLeadResumed FactKind = "lead-resumed"
)

// PlanItem is one milestone of an edited plan, as the run takes it in.
type PlanItem struct {
	ID      string   `json:"id"`
	Title   string   `json:"title"`
	Depends []string `json:"depends,omitempty"`
	Tier    string   `json:"tier"`
	// Estimate is the edited plan's estimate; Was the one in the plan the run
	// followed before the edit (Step keeps no estimates, the views read the plan).
	Estimate time.Duration `json:"estimate,omitempty"`
	Was      time.Duration `json:"was,omitempty"`
}

// Fact is one input of Step. It is a flat value so the event log stores it as is.
type Fact struct {
	Kind    FactKind  `json:"kind"`
	M       string    `json:"m,omitempty"`
	Coder   string    `json:"coder,omitempty"`
	Head    string    `json:"head,omitempty"`
	OK      bool      `json:"ok,omitempty"`
	Merge   bool      `json:"merge,omitempty"`
	Commits int       `json:"commits,omitempty"`
	Dirty   bool      `json:"dirty,omitempty"`
	Text    string    `json:"text,omitempty"`
	Paths   []string  `json:"paths,omitempty"`
	Tier    string    `json:"tier,omitempty"`
	Verdict *Verdict  `json:"verdict,omitempty"`
	Until   time.Time `json:"until,omitzero"`
	// TurnAt is the instant the coder's (turn-ended) or the lead's (lead-turn-ended)
	// turn ended: logged with the fact, so a turn end is handled exactly once across
	// a crash.
	TurnAt time.Time  `json:"turnAt,omitzero"`
	Hash   string     `json:"hash,omitempty"`
	Plan   []PlanItem `json:"plan,omitempty"`
	// Check and Mode (plan-edited) are the edited plan's `check:` when the run takes
	// it (it differs from the run's and no --check was given at start) and its `mode:`
	// when it differs from the run's (never taken: a run keeps its mode).
	Check string `json:"check,omitempty"`
	Mode  string `json:"mode,omitempty"`
	// Call names the coder's report (done, ask) across the CLI's retries of it
	// (runapi.RunCallerParams.Call).
	Call string `json:"call,omitempty"`
}

// Verdict is what the reviewer said (ParseReview).
type Verdict struct {
	// Decision is "approve", "changes", or "" when no verdict line was found.
	Decision string    `json:"decision"`
	Blockers []Blocker `json:"blockers,omitempty"`
}

// Blocker is one `BLOCKER: file:line — what — why` line.
type Blocker struct {
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	What string `json:"what"`
	Why  string `json:"why,omitempty"`
}

// Approved reports a verdict that lets work merge: approve and no blockers. Silence
// and an approval that lists blockers are never approval.
func (v *Verdict) Approved() bool {
	return v != nil && v.Decision == "approve" && len(v.Blockers) == 0
}

// ActionKind names a side effect.
type ActionKind string

// Actions Step asks for. The autopilot stores the fact and the new run first, then
// performs them (intent before effect) and feeds each outcome back as a fact.
const (
	ABrief      ActionKind = "brief"       // give Coder (spawning it at Tier if needed) milestone M: Text is the brief
	ASendCoder  ActionKind = "send-coder"  // type Text into Coder (M's coder)
	AStopCoder  ActionKind = "stop-coder"  // stop Coder's agent for good (also "lead" and "reviewer" when the run stops)
	ABenchCoder ActionKind = "bench-coder" // Coder is benched until Until
	ACheck      ActionKind = "check"       // run the check on M's branch at Head (Merge: the re-check)
	AReview     ActionKind = "review"      // ask the reviewer about M at Head
	AMergeIn    ActionKind = "merge-in"    // merge feature tip Base into M's branch at Head
	AAdvance    ActionKind = "advance"     // move feature/NAME from Base to one squash commit of M's Head
	ALead       ActionKind = "lead"        // the lead must hear Text: Step puts it in the inbox (a record, nothing to perform)
	ABranch     ActionKind = "branch"      // create feature/NAME at Head (the base's tip at start)
	AStartLead  ActionKind = "start-lead"  // start the lead agent (Text: set when it restarts one that ended: what it must know)
	ADeliver    ActionKind = "deliver"     // type the inbox batch Text into the lead
	ANotify     ActionKind = "notify"      // tell the user (Text)
	ANote       ActionKind = "note"        // nothing to do; Text goes to the event log (an ignored fact)
	AFinalCheck ActionKind = "final-check" // run the check on feature/NAME
	ASummary    ActionKind = "summary"     // write summary.md
)

// Action is one side effect.
type Action struct {
	Kind  ActionKind `json:"kind"`
	M     string     `json:"m,omitempty"`
	Coder string     `json:"coder,omitempty"`
	Tier  string     `json:"tier,omitempty"`
	Head  string     `json:"head,omitempty"`
	Base  string     `json:"base,omitempty"`
	Merge bool       `json:"merge,omitempty"`
	Text  string     `json:"text,omitempty"`
	Until time.Time  `json:"until,omitzero"`
}

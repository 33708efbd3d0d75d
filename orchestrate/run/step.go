package run

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ErrRefused is what a request Step does not allow wraps (answer for a milestone that
// is not asking, dispatch of one that is not ready, …).
var ErrRefused = errors.New("refused")

// RefusedError says why a request was refused and what to do instead.
type RefusedError struct {
	Run, M string
	State  State
	Op     string
	Hint   string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("cannot %s %s of run %s: it is %s; %s", e.Op, e.M, e.Run, e.State, e.Hint)
}

func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// stepper carries one Step: the run being changed, the clock, the actions so far.
type stepper struct {
	r   Run
	now time.Time
	out []Action
	err error // a move the state machine refuses (machine.go)
}

// Step applies fact f to run r at instant now and returns the new run and the actions
// to perform, or an error (a *RefusedError for a request the state does not allow, or
// a malformed fact) leaving r unchanged. It is pure: r is not modified, there is no
// I/O and no clock but now. Facts that do not fit the state (a stale done from a coder
// the work was taken from, a check result for an older commit) are accepted and
// ignored with an ANote saying so.
func Step(r Run, f Fact, now time.Time) (Run, []Action, error) {
	s := &stepper{r: r.clone(), now: now}
	s.migrateTimers()
	if err := s.apply(f); err != nil {
		return r, nil, err
	}
	s.fire()
	s.assign()
	s.drain(r)
	s.finish()
	s.inbox()
	s.deliver()
	if s.err != nil {
		return r, nil, s.err
	}
	return s.r, s.out, nil
}

func (s *stepper) emit(a Action) { s.out = append(s.out, a) }

func (s *stepper) note(format string, args ...any) {
	s.emit(Action{Kind: ANote, Text: fmt.Sprintf(format, args...)})
}

func (s *stepper) refuse(m *Milestone, op, hint string) error {
	return &RefusedError{Run: s.r.Name, M: m.ID, State: m.State, Op: op, Hint: hint}
}

// ms returns milestone id, or nil.
func (s *stepper) ms(id string) *Milestone {
	for i := range s.r.Milestones {
		if s.r.Milestones[i].ID == id {
			return &s.r.Milestones[i]
		}
	}
	return nil
}

func (s *stepper) coder(name string) *Coder {
	for i := range s.r.Coders {
		if s.r.Coders[i].Name == name {
			return &s.r.Coders[i]
		}
	}
	return nil
}

func (s *stepper) apply(f Fact) error {
	switch f.Kind {
	case FTick:
		return nil // assign and drain do the work
	case FStop:
		s.stop()
		return nil
	case FResume:
		return s.resume()
	case FFinalCheck:
		s.finalCheck(f)
		return nil
	case FLimited, FVanished, FCoderFault, FLost:
		s.coderTrouble(f)
		return nil
	case FPlanEdited:
		s.planEdited(f)
		return nil
	case FLeadTurn:
		s.r.LeadIdle = true
		s.leadTurn(f)
		return nil
	case FLeadWorking:
		s.leadWorking(f)
		return nil
	case FLeadIdle:
		s.r.LeadIdle = true
		return nil
	case FLeadUnsent:
		s.leadUnsent(f)
		return nil
	case FLeadLost:
		s.leadLost(f)
		return nil
	case FLeadResumed:
		s.leadResumed(f)
		return nil
	case FBranched:
		s.branched(f)
		return nil
	}
	m := s.ms(f.M)
	if m == nil {
		if isRequest(f.Kind) {
			return fmt.Errorf("run %s has no milestone %q", s.r.Name, f.M)
		}
		s.note("%s for unknown milestone %q ignored", f.Kind, f.M)
		return nil
	}
	switch f.Kind {
	case FPrompt, FPromptDone:
		s.prompt(m, f)
		return nil
	case FDispatch:
		return s.dispatch(m)
	case FAnswer:
		return s.answer(m, f)
	case FHold:
		return s.hold(m, f.Text)
	case FRetry:
		return s.retry(m, f.Tier)
	case FFollowUp:
		return s.followUp(m, f.Text)
	case FDone, FTurnEnded, FAsk:
		s.fromCoder(m, f)
	case FChecked:
		s.checked(m, f)
	case FReviewed:
		s.reviewed(m, f)
	case FMergedIn:
		s.mergedIn(m, f)
	case FConflict:
		s.conflict(m, f)
	case FAdvanced:
		s.advanced(m, f)
	case FMoved:
		s.moved(m, f)
	default:
		return fmt.Errorf("run %s: unknown fact %q", s.r.Name, f.Kind)
	}
	return nil
}

func isRequest(k FactKind) bool {
	switch k {
	case FDispatch, FAnswer, FHold, FRetry, FFollowUp:
		return true
	}
	return false
}

// ---- requests ----

func (s *stepper) dispatch(m *Milestone) error {
	switch m.State {
	case Ready:
		s.r.Dispatched = true
		if m.Want {
			s.note("%s is dispatched already and waits for a free coder", m.ID)
			return nil
		}
		m.Want = true
		s.cancel(TimerAutoStart, m.ID)
		return nil
	case Planned:
		return s.refuse(m, "dispatch", "it waits for "+strings.Join(s.openDeps(m), ", ")+" to merge")
	case Held, Failed:
		return s.refuse(m, "dispatch", "start it again with `orcr run retry "+s.r.Name+" "+m.ID+"`")
	case Merged:
		return s.refuse(m, "dispatch", "it is merged; send a follow-up with `orcr run fix "+s.r.Name+" "+m.ID+" \"…\"`")
	}
	return s.refuse(m, "dispatch", "it is under way already"+s.byCoder(m))
}

// leadTurn takes in the end of a turn of the lead. A turn in which no dispatch came,
// ending while milestones the lead had been told are ready wait undispatched, is a
// lead that forgot or believes it dispatched (its `run dispatch` failed in its shell:
// "command not found"): those milestones are marked, so the run's view says so at
// once and not when the auto-start fires.
func (s *stepper) leadTurn(f Fact) {
	if !f.TurnAt.After(s.r.LeadTurn) {
		s.note("the lead's turn end at %s is taken in already", f.TurnAt.Format(time.RFC3339Nano))
		return
	}
	dispatched := s.r.Dispatched
	s.r.LeadTurn, s.r.Dispatched = f.TurnAt, false
	if dispatched || s.r.Stopped || f.Until.IsZero() {
		return
	}
	var passed []string
	for i := range s.r.Milestones {
		m := &s.r.Milestones[i]
		if m.State != Ready || m.Want || !m.Passed.IsZero() || m.ReadyAt.After(f.Until) {
			continue
		}
		m.Passed = f.TurnAt
		passed = append(passed, m.ID)
	}
	if len(passed) == 0 {
		return
	}
	s.emit(Action{Kind: ANotify, M: passed[0], Text: fmt.Sprintf(
		"run %s: %s ready, not dispatched: the lead's turn ended without `orcr run dispatch` (`orcr run dispatch %s %s` to start now; else %s after ready)",
		s.r.Name, strings.Join(passed, ", "), s.r.Name, strings.Join(passed, " "), AutoStartAfter)})
}

func (s *stepper) byCoder(m *Milestone) string {
	if m.Coder != "" {
		return " (" + m.Coder + ")"
	}
	return ""
}

func (s *stepper) answer(m *Milestone, f Fact) error {
	if m.State != Asking {
		return s.refuse(m, "answer", "only a milestone whose coder asked takes an answer (see `orcr run status "+s.r.Name+"`)")
	}
	text := strings.TrimSpace(f.Text)
	if text == "" {
		return fmt.Errorf("answer %s: the answer is empty", m.ID)
	}
	// The milestone stays asking: the turn that asked may end after the answer
	// went out, and only the coder's next turn end (or its `run done`) moves it
	// back to work.
	m.Answered = true
	m.QA = append(m.QA, "Answer: "+text)
	if m.Coder == "" {
		// Its coder left (benched): the answer goes with the brief of the next.
		return nil
	}
	s.emit(Action{Kind: ASendCoder, M: m.ID, Coder: m.Coder, Text: "Answer to your question about " + m.ID + ": " + text})
	return nil
}

// resumeFromAsking moves an answered milestone back to where it asked from.
func (s *stepper) resumeFromAsking(m *Milestone) {
	back := m.Prev
	if back == "" {
		back = Building
	}
	m.Question, m.Asked, m.Answered, m.Prev = "", false, false, ""
	s.to(m, back)
}

func (s *stepper) hold(m *Milestone, why string) error {
	switch m.State {
	case Merged:
		return s.refuse(m, "hold", "it is merged already")
	case Held:
		s.note("%s is held already", m.ID)
		return nil
	}
	if why == "" {
		why = "held by request"
	}
	s.holdNow(m, why)
	return nil
}

// holdNow stops work on m: its coder is freed, it leaves the review and merge queues.
func (s *stepper) holdNow(m *Milestone, why string) {
	m.Prev = m.State
	m.Reason = why
	m.Want = false
	s.release(m)
	s.dequeue(m.ID)
	s.to(m, Held)
	s.emit(Action{Kind: ALead, M: m.ID, Text: fmt.Sprintf("%s is held: %s", m.ID, why)})
}

func (s *stepper) retry(m *Milestone, tier string) error {
	if m.State != Held && m.State != Failed {
		return s.refuse(m, "retry", "only a held or failed milestone can be retried")
	}
	if m.Removed {
		return s.refuse(m, "retry", "it was removed from the plan; put it back in the plan file first")
	}
	if tier != "" {
		if !validTier(tier) {
			return fmt.Errorf("retry %s: unknown tier %q: tiers are small, medium, high", m.ID, tier)
		}
		m.TierNow = tier
	}
	m.Rounds, m.TierUp, m.ReviewRetry, m.Asked = Rounds{}, false, false, false
	m.Reason, m.Fix, m.Prev = "", "", ""
	m.Head, m.Checked, m.MergeHead, m.MergeChecked = "", "", "", ""
	if len(s.openDeps(m)) > 0 {
		s.to(m, Planned)
		return nil
	}
	s.to(m, Ready)
	m.Want = true
	if m.Pending == "" && len(m.Coders) > 0 {
		m.Pending = "Earlier work on this milestone is on its branch; continue from it."
	}
	return nil
}

func (s *stepper) followUp(m *Milestone, text string) error {
	if m.State != Merged {
		return s.refuse(m, "fix", "a follow-up job is for a merged milestone; `orcr run answer` talks to a working coder")
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return fmt.Errorf("fix %s: say what to change", m.ID)
	}
	m.Rounds, m.TierUp, m.ReviewRetry, m.Asked = Rounds{}, false, false, false
	m.FollowUp, m.Fix = true, "follow-up"
	m.Pending = "Follow-up for " + m.ID + ": " + text
	m.Head, m.Checked, m.MergeHead, m.MergeChecked = "", "", "", ""
	s.to(m, Fixing)
	m.Want = true
	// The run is at work again (its header must not say done), and once the
	// follow-up merges the final check runs on the new tip and the summary is
	// written again.
	if s.r.Finish == "done" || s.r.Finish == "failed" {
		s.r.Finish = ""
	}
	return nil
}

// stoppedReason is why `run stop` held a milestone; `run start` of the stopped run
// takes those (and only those) up again.
const stoppedReason = "the run was stopped"

// resume takes a stopped run up again: what the stop held goes on — work a coder had
// is handed to a coder again (from its branch), what was only ready is ready for the
// lead's dispatch — and the lead is started again (it was stopped with the run).
func (s *stepper) resume() error {
	if !s.r.Stopped {
		return fmt.Errorf("run %s is not stopped: it goes on by itself", s.r.Name)
	}
	s.r.Stopped = false
	var back []string
	for i := range s.r.Milestones {
		m := &s.r.Milestones[i]
		if m.State != Held || m.Reason != stoppedReason {
			continue
		}
		back = append(back, m.ID)
		if len(m.Coders) > 0 {
			if err := s.retry(m, ""); err != nil {
				return err
			}
			continue
		}
		m.Reason = ""
		if len(s.openDeps(m)) > 0 {
			s.to(m, Planned)
			continue
		}
		s.to(m, Ready)
		s.emit(Action{Kind: ALead, M: m.ID, Text: readyText(s.r.Name, m.ID)})
	}
	if s.r.Lead {
		s.emit(Action{Kind: AStartLead}) // a lead that is still there is kept
	}
	s.emit(Action{Kind: ALead, Text: fmt.Sprintf("Run %s is resumed after a stop: %s go on.", s.r.Name, orNoneList(back))})
	s.finish()
	return nil
}

func orNoneList(ids []string) string {
	if len(ids) == 0 {
		return "no held milestones"
	}
	return strings.Join(ids, ", ")
}

func (s *stepper) stop() {
	s.r.Stopped = true
	for i := range s.r.Milestones {
		m := &s.r.Milestones[i]
		switch m.State {
		case Merged, Held, Failed:
		default:
			s.holdNow(m, stoppedReason)
		}
	}
	for i := range s.r.Coders {
		c := &s.r.Coders[i]
		if !c.Gone {
			c.Gone, c.M = true, ""
			s.emit(Action{Kind: AStopCoder, Coder: c.Name})
		}
	}
	// The lead's and the reviewer's work ends with the run's: no idle agent
	// outlives it.
	if s.r.Lead {
		s.emit(Action{Kind: AStopCoder, Coder: "lead"})
	}
	if s.r.Reviewer {
		s.emit(Action{Kind: AStopCoder, Coder: "reviewer"})
	}
}

// ---- from coders ----

// fromCoder handles done, turn-ended and ask: each counts only from the coder the
// milestone is with now, in a state where that coder works on it.
func (s *stepper) fromCoder(m *Milestone, f Fact) {
	if f.Coder == "" || f.Coder != m.Coder {
		s.note("%s from %s about %s ignored: the work is with %s", f.Kind, orNone(f.Coder), m.ID, orNone(m.Coder))
		return
	}
	if f.Call != "" && (f.Kind == FDone || f.Kind == FAsk) {
		if f.Call == m.Call {
			// The CLI called again: the server went during the call, after the
			// report was logged. Taken once: a second done after its check failed
			// would check the same commit again and cost the milestone a round.
			s.note("%s from %s about %s taken already (the same call again after a restart)", f.Kind, f.Coder, m.ID)
			return
		}
		m.Call = f.Call
	}
	if m.State == Asking && m.Answered && (f.Kind == FTurnEnded || f.Kind == FAsk) {
		// The coder's turn after the answer: the milestone is back at work, and
		// the turn end (or the new question) is taken as from a working coder.
		s.resumeFromAsking(m)
	}
	working := m.State == Building || m.State == Fixing
	switch f.Kind {
	case FAsk:
		if !working {
			s.note("question from %s about %s ignored: it is %s", f.Coder, m.ID, m.State)
			return
		}
		s.ask(m, f.Text)
	case FTurnEnded:
		if !working {
			return // the turn that called `run done`, or one while it waits for an answer
		}
		if q, ok := question(f.Text); ok {
			s.ask(m, q)
			return
		}
		if !m.Asked {
			m.Asked = true
			s.emit(Action{Kind: ASendCoder, M: m.ID, Coder: m.Coder, Text: fmt.Sprintf(
				"Your turn ended without `%[2]s run done %[1]s`. If the work is finished, commit it and run `%[2]s run done %[1]s`; if you need a decision, run `%[2]s run ask %[1]s \"your question\"`.",
				m.ID, Bin)})
			return
		}
		// Asked once already: what is on the branch is taken as its answer.
		s.done(m, f, "turn ended again without `run done`")
	case FDone:
		if !working && m.State != Asking {
			s.note("done from %s about %s ignored: it is %s", f.Coder, m.ID, m.State)
			return
		}
		s.done(m, f, "")
	}
}

func (s *stepper) ask(m *Milestone, q string) {
	q = strings.TrimSpace(q)
	m.Prev, m.Question, m.Answered = m.State, q, false
	m.QA = append(m.QA, "Question ("+m.Coder+"): "+q)
	s.to(m, Asking)
	s.emit(Action{Kind: ALead, M: m.ID, Text: fmt.Sprintf("%s asks (%s): %s — answer with `%s run answer %s %s \"…\"`", m.ID, m.Coder, q, Bin, s.r.Name, m.ID)})
}

// question is the question of a last message that starts with QUESTION:.
func question(last string) (string, bool) {
	t := strings.TrimSpace(last)
	if len(t) >= 9 && strings.EqualFold(t[:9], "QUESTION:") {
		return strings.TrimSpace(t[9:]), true
	}
	return "", false
}

func (s *stepper) done(m *Milestone, f Fact, why string) {
	if m.State == Asking {
		s.resumeFromAsking(m)
	}
	m.Asked, m.Question = false, ""
	switch {
	case f.Dirty:
		s.round(m, RoundCheck, fmt.Sprintf("%s has uncommitted changes. Commit everything (`git add -A && git commit -m \"%s: …\"`), then run `%s run done %s`.", m.ID, m.ID, Bin, m.ID))
		return
	case f.Commits <= 0 || f.Head == "":
		s.round(m, RoundCheck, fmt.Sprintf("%s has no commits on its branch yet. Do the work, commit it, then run `%s run done %s`.", m.ID, Bin, m.ID))
		return
	}
	if why != "" {
		s.note("%s: %s; the commits on the branch are taken as done", m.ID, why)
	}
	m.Head, m.Fix = f.Head, ""
	s.to(m, Checking)
	s.emit(Action{Kind: ACheck, M: m.ID, Coder: m.Coder, Head: f.Head})
}

// coderTrouble benches a coder (usage limit, vanished) or drops one that could not
// start, and hands its milestone on.
func (s *stepper) coderTrouble(f Fact) {
	c := s.coder(f.Coder)
	if c == nil || c.Gone {
		s.note("%s for unknown coder %q ignored", f.Kind, f.Coder)
		return
	}
	var m *Milestone
	if c.M != "" {
		m = s.ms(c.M)
	}
	switch f.Kind {
	case FCoderFault:
		c.Gone, c.M = true, ""
		s.emit(Action{Kind: AStopCoder, Coder: c.Name})
		if m != nil && m.Coder == c.Name {
			m.Coder = ""
			s.holdNow(m, fmt.Sprintf("coder %s could not start: %s", c.Name, f.Text))
		}
		return
	case FLimited:
		until := f.Until
		if until.IsZero() || !until.After(s.now) {
			until = s.now.Add(LimitBench)
		}
		c.BenchedUntil = until
	case FVanished:
		c.BenchedUntil = s.now.Add(VanishedBench)
	case FLost:
		// Not the coder's doing (the server and with it the panes were gone): the
		// coder is replaced by a fresh one, nobody is benched.
		c.Gone = true
	}
	if f.Kind != FLost {
		s.after(TimerBenchEnd, c.Name, c.BenchedUntil)
		s.emit(Action{Kind: ABenchCoder, Coder: c.Name, Until: c.BenchedUntil, Text: string(f.Kind)})
	}
	c.M = ""
	if m == nil || m.Coder != c.Name {
		return
	}
	m.Coder, m.Asked = "", false
	switch m.State {
	case Building, Fixing, Asking:
		back := m.State
		if back == Asking {
			back = m.Prev
			if !m.Answered {
				m.Pending = joinText(m.Pending, "Your predecessor asked: "+m.Question+" (no answer yet; decide or ask again with `"+Bin+" run ask`).")
			}
			m.Question, m.Answered = "", false
		}
		m.Prev, m.Want = back, true
		if m.Pending == "" {
			m.Pending = "Another coder started this milestone; its work is on the branch. Continue from it."
		}
		s.to(m, Benched)
	case Checking:
		// The check runs without the coder; whoever fixes a failure is found then.
	}
}

func joinText(a, b string) string {
	if a == "" {
		return b
	}
	return a + " " + b
}

// ---- outcomes ----

func (s *stepper) checked(m *Milestone, f Fact) {
	if f.Merge {
		if m.State != Merging || !s.first(s.r.MergeQueue, m.ID) || f.Head == "" || f.Head != m.MergeHead {
			s.note("re-check of %s at %s ignored: not the merge under way", m.ID, short(f.Head))
			return
		}
		if !f.OK {
			s.dequeue(m.ID)
			m.MergeHead = ""
			s.round(m, RoundCheck, checkMessage(m.ID, "after merging the tip of feature/"+s.r.Name+" into your branch", f.Text))
			return
		}
		m.MergeChecked = f.Head
		s.emit(Action{Kind: AAdvance, M: m.ID, Head: f.Head, Base: s.r.Feature})
		return
	}
	if m.State != Checking || f.Head == "" || f.Head != m.Head {
		s.note("check of %s at %s ignored: it is %s at %s", m.ID, short(f.Head), m.State, short(m.Head))
		return
	}
	if !f.OK {
		s.round(m, RoundCheck, checkMessage(m.ID, "", f.Text))
		return
	}
	m.Checked = f.Head
	s.release(m)
	if s.r.Reviewer {
		m.ReviewRetry = false
		s.to(m, Reviewing)
		s.r.ReviewQueue = append(s.r.ReviewQueue, m.ID)
		return
	}
	s.toMerge(m)
}

func checkMessage(id, when, out string) string {
	if when != "" {
		when = " " + when
	}
	return fmt.Sprintf("The check failed for %s%s. The last lines of its output:\n\n%s\n\nFix it, commit, and run `%s run done %s`.", id, when, strings.TrimRight(out, "\n"), Bin, id)
}

func (s *stepper) toMerge(m *Milestone) {
	m.MergeHead, m.MergeChecked = "", ""
	s.to(m, Merging)
	s.r.MergeQueue = append(s.r.MergeQueue, m.ID)
}

func (s *stepper) reviewed(m *Milestone, f Fact) {
	if !f.TurnAt.IsZero() {
		// A verdict is the end of one turn of the reviewer: seen again (its event
		// replayed after a restart), it is not applied again.
		if !f.TurnAt.After(s.r.ReviewTurn) {
			s.note("review of %s ending at %s ignored: taken in already", m.ID, f.TurnAt.Format(time.RFC3339Nano))
			return
		}
		s.r.ReviewTurn = f.TurnAt
	}
	if m.State != Reviewing || !s.first(s.r.ReviewQueue, m.ID) || f.Head != m.Checked {
		s.note("review of %s at %s ignored: not the review under way", m.ID, short(f.Head))
		return
	}
	v := f.Verdict
	switch {
	case v.Approved():
		s.dequeue(m.ID)
		s.toMerge(m)
	case v == nil || v.Decision == "" && len(v.Blockers) == 0:
		if !m.ReviewRetry {
			m.ReviewRetry = true
			s.note("the reviewer gave no verdict on %s; asked once more", m.ID)
			s.emit(Action{Kind: AReview, M: m.ID, Head: m.Checked, Text: "retry"})
			return
		}
		s.dequeue(m.ID)
		s.holdNow(m, "the reviewer gave no verdict twice (silence is never approval); review it yourself, then `orcr run retry`")
	default:
		s.dequeue(m.ID)
		s.round(m, RoundReview, reviewMessage(m.ID, v))
	}
}

func reviewMessage(id string, v *Verdict) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The review of %s asks for changes:\n", id)
	if len(v.Blockers) == 0 {
		b.WriteString("- (the reviewer named no blockers; read its last message with `" + Bin + " agent read` on the reviewer)\n")
	}
	for _, bl := range v.Blockers {
		b.WriteString("- " + bl.String() + "\n")
	}
	fmt.Fprintf(&b, "Fix each, commit, and run `%s run done %s`.", Bin, id)
	return b.String()
}

// String is the blocker as the reviewer wrote it.
func (b Blocker) String() string {
	loc := b.File
	if b.Line > 0 {
		loc = fmt.Sprintf("%s:%d", b.File, b.Line)
	}
	parts := []string{}
	for _, p := range []string{loc, b.What, b.Why} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, " — ")
}

func (s *stepper) mergedIn(m *Milestone, f Fact) {
	if m.State != Merging || !s.first(s.r.MergeQueue, m.ID) || m.MergeHead != "" || f.Head == "" {
		s.note("merge of %s ignored: not the merge under way", m.ID)
		return
	}
	m.MergeHead = f.Head
	if f.Head == m.Checked {
		// The feature tip was in the branch already: the commit checked is the result.
		m.MergeChecked = f.Head
		s.emit(Action{Kind: AAdvance, M: m.ID, Head: f.Head, Base: s.r.Feature})
		return
	}
	s.emit(Action{Kind: ACheck, M: m.ID, Head: f.Head, Merge: true})
}

func (s *stepper) conflict(m *Milestone, f Fact) {
	if m.State != Merging || !s.first(s.r.MergeQueue, m.ID) || m.MergeHead != "" {
		s.note("conflict of %s ignored: not the merge under way", m.ID)
		return
	}
	s.dequeue(m.ID)
	s.round(m, RoundConflict, fmt.Sprintf(
		"Merging the tip of feature/%s into the branch of %s conflicts in: %s. Run `git merge feature/%s` in your worktree, resolve the conflicts, commit, and run `%s run done %s`.",
		s.r.Name, m.ID, strings.Join(f.Paths, ", "), s.r.Name, Bin, m.ID))
}

func (s *stepper) advanced(m *Milestone, f Fact) {
	if m.State != Merging || !s.first(s.r.MergeQueue, m.ID) || m.MergeChecked == "" || f.Head == "" {
		s.note("advance for %s ignored: not the merge under way", m.ID)
		return
	}
	s.dequeue(m.ID)
	s.r.Feature, m.Commit = f.Head, f.Head
	m.Want, m.Pending, m.Fix, m.FollowUp = false, "", "", false
	s.release(m)
	s.to(m, Merged)
	s.emit(Action{Kind: ALead, M: m.ID, Text: fmt.Sprintf("%s is merged into feature/%s as %s", m.ID, s.r.Name, short(f.Head))})
	for i := range s.r.Milestones {
		d := &s.r.Milestones[i]
		if d.State == Planned && len(s.openDeps(d)) == 0 {
			s.to(d, Ready)
			s.emit(Action{Kind: ALead, M: d.ID, Text: readyText(s.r.Name, d.ID)})
		}
	}
}

// branched takes in feature/NAME, created at the run's start.
func (s *stepper) branched(f Fact) {
	if s.r.Feature != "" || f.Head == "" {
		s.note("feature/%s is created already", s.r.Name)
		return
	}
	s.r.Feature = f.Head
}

func (s *stepper) moved(m *Milestone, f Fact) {
	if m.State != Merging || !s.first(s.r.MergeQueue, m.ID) {
		s.note("moved for %s ignored: not the merge under way", m.ID)
		return
	}
	s.holdNow(m, fmt.Sprintf("feature/%s is at %s, not at %s where the run left it: someone moved it by hand. Put it back (`git update-ref refs/heads/feature/%s %s`) and `orcr run retry %s %s`",
		s.r.Name, short(f.Head), short(s.r.Feature), s.r.Name, s.r.Feature, s.r.Name, m.ID))
	s.emit(Action{Kind: ANotify, M: m.ID, Text: m.Reason})
}

func (s *stepper) finalCheck(f Fact) {
	if s.r.Finish != "checking" {
		s.note("final check ignored: the run is not finishing")
		return
	}
	if f.OK {
		s.r.Finish = "done"
		s.emit(Action{Kind: ASummary})
		s.emit(Action{Kind: ALead, Text: fmt.Sprintf("All milestones are merged and the check passes on feature/%s. The summary is written; `%s run finish %s` pushes it and opens the pull request.", s.r.Name, Bin, s.r.Name)})
		s.emit(Action{Kind: ANotify, Text: fmt.Sprintf("run %s is done: `orcr run finish %s`", s.r.Name, s.r.Name)})
		return
	}
	s.r.Finish = "failed"
	s.emit(Action{Kind: ASummary})
	s.emit(Action{Kind: ALead, Text: fmt.Sprintf("All milestones are merged but the check fails on feature/%s:\n%s", s.r.Name, f.Text)})
	s.emit(Action{Kind: ANotify, Text: fmt.Sprintf("run %s: the check fails on feature/%s after all merges", s.r.Name, s.r.Name)})
}

// ---- rounds ----

// round sends a failure of kind back to a coder, or escalates once a tier up, or fails.
func (s *stepper) round(m *Milestone, kind, text string) {
	n, max := m.Rounds.of(kind)
	*n = *n + 1
	m.Fix, m.Pending = kind, text
	if *n < max {
		s.to(m, Fixing)
		if m.Coder != "" {
			s.emit(Action{Kind: ASendCoder, M: m.ID, Coder: m.Coder, Text: text})
			return
		}
		m.Want = true
		return
	}
	if !m.TierUp {
		m.TierUp = true
		*n = max - 1 // one fresh round
		from := m.TierNow
		m.TierNow = tierUp(m.TierNow)
		m.Prev, m.Want = Fixing, true
		s.release(m)
		s.to(m, Escalated)
		m.Pending = fmt.Sprintf("%s is out of %s rounds at tier %s; you get one fresh round. %s", m.ID, kind, from, text)
		s.emit(Action{Kind: ALead, M: m.ID, Text: fmt.Sprintf("%s is out of %s rounds; one fresh round at tier %s", m.ID, kind, m.TierNow)})
		return
	}
	m.Want = false
	m.Reason = fmt.Sprintf("out of %s rounds, also after a round at tier %s", kind, m.TierNow)
	s.release(m)
	s.to(m, Failed)
	s.emit(Action{Kind: ALead, M: m.ID, Text: fmt.Sprintf("%s failed: %s. Decide: `%[3]s run retry %[4]s %[1]s --tier T` or `%[3]s run hold %[4]s %[1]s`", m.ID, m.Reason, Bin, s.r.Name)})
}

func (r *Rounds) of(kind string) (*int, int) {
	switch kind {
	case RoundReview:
		return &r.Review, MaxReviewRounds
	case RoundConflict:
		return &r.Conflict, MaxConflictRounds
	}
	return &r.Check, MaxCheckRounds
}

var tiers = []string{"small", "medium", "high"}

func validTier(t string) bool { return slices.Contains(tiers, t) }

// tierUp is the next tier; high stays high (the fresh round is then a fresh coder).
func tierUp(t string) string {
	if i := slices.Index(tiers, t); i >= 0 && i+1 < len(tiers) {
		return tiers[i+1]
	}
	return "high"
}

// ---- coders, queues ----

// release frees m's coder (it stays in the pool for other work).
func (s *stepper) release(m *Milestone) {
	if m.Coder == "" {
		return
	}
	if c := s.coder(m.Coder); c != nil && c.M == m.ID {
		c.M = ""
	}
	m.Author, m.Coder = m.Coder, ""
}

func (s *stepper) dequeue(id string) {
	s.r.MergeQueue = slices.DeleteFunc(s.r.MergeQueue, func(x string) bool { return x == id })
	s.r.ReviewQueue = slices.DeleteFunc(s.r.ReviewQueue, func(x string) bool { return x == id })
}

func (s *stepper) first(q []string, id string) bool { return len(q) > 0 && q[0] == id }

// openDeps lists m's dependencies that are not merged.
func (s *stepper) openDeps(m *Milestone) []string {
	var out []string
	for _, d := range m.Depends {
		if dm := s.ms(d); dm == nil || dm.State != Merged {
			out = append(out, d)
		}
	}
	return out
}

// assign gives waiting milestones coders, in plan order: a free coder of the tier
// (the author first), else a new one while the pool has room, else a free coder of
// another tier is replaced by one of this tier.
func (s *stepper) assign() {
	if s.r.Stopped {
		return
	}
	if s.r.Feature == "" {
		return // feature/NAME is not created yet: work starts from its tip
	}
	for i := range s.r.Milestones {
		m := &s.r.Milestones[i]
		if !m.Want || m.Coder != "" {
			continue
		}
		switch m.State {
		case Ready, Fixing, Benched, Escalated:
		default:
			continue
		}
		if s.r.Shared && s.underWay(m) != "" {
			continue // the repository's folder is another milestone's until it merges
		}
		c := s.pick(m)
		if c == nil {
			continue
		}
		c.M, m.Coder, m.Want = m.ID, c.Name, false
		known := slices.Contains(m.Coders, c.Name)
		if !known {
			m.Coders = append(m.Coders, c.Name)
		}
		back := Building
		switch m.State {
		case Fixing:
			back = Fixing
		case Benched, Escalated:
			back = m.Prev
			if back == "" || back == Ready {
				back = Building
			}
		}
		if m.StartedAt.IsZero() {
			m.StartedAt = s.now
		}
		m.Prev = ""
		s.to(m, back)
		if known && c.Name == m.Author && back == Fixing && m.Pending != "" {
			s.emit(Action{Kind: ASendCoder, M: m.ID, Coder: c.Name, Text: m.Pending})
			continue
		}
		s.emit(Action{Kind: ABrief, M: m.ID, Coder: c.Name, Tier: c.Tier, Text: withQA(m.Pending, m.QA)})
	}
}

// underWay is, in shared mode, the milestone other than m whose work holds the
// repository's folder: briefed and not yet merged, held or failed.
func (s *stepper) underWay(m *Milestone) string {
	for i := range s.r.Milestones {
		o := &s.r.Milestones[i]
		if o.ID == m.ID {
			continue
		}
		switch o.State {
		case Building, Asking, Checking, Fixing, Reviewing, Merging, Benched, Escalated:
			return o.ID
		}
	}
	return ""
}

// withQA is a brief's extra text with every question and answer on the milestone
// so far: a coder that takes the work on knows what was decided.
func withQA(text string, qa []string) string {
	if len(qa) == 0 {
		return text
	}
	var b strings.Builder
	b.WriteString(text)
	if text != "" {
		b.WriteString("\n\n")
	}
	b.WriteString("Questions asked on this milestone so far, and the answers:\n")
	for _, l := range qa {
		b.WriteString("- " + l + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

func (s *stepper) pick(m *Milestone) *Coder {
	usable := func(c *Coder) bool {
		return !c.Gone && c.M == "" && !s.now.Before(c.BenchedUntil) && c.Tier == m.TierNow
	}
	fresh := m.State == Escalated && m.TierUp // a fresh round: not the coder that ran out
	if !fresh && m.Author != "" {
		if c := s.coder(m.Author); c != nil && usable(c) {
			return c
		}
	}
	for i := range s.r.Coders {
		c := &s.r.Coders[i]
		if usable(c) && !(fresh && c.Name == m.Author) {
			return c
		}
	}
	// Benched coders do not hold a place in the pool (the work they had is handed
	// on), but they count against twice its size, so a run of usage limits cannot
	// grow the pool without end.
	live, kept := 0, 0
	var other *Coder
	for i := range s.r.Coders {
		c := &s.r.Coders[i]
		if c.Gone {
			continue
		}
		kept++
		if s.now.Before(c.BenchedUntil) {
			continue
		}
		live++
		// A free coder of another tier can make room; so can the author itself in
		// a fresh round (a new session, not the one that ran out of rounds).
		if other == nil && c.M == "" && (c.Tier != m.TierNow || fresh && c.Name == m.Author) {
			other = c
		}
	}
	if kept >= 2*s.r.maxCoders() && other == nil {
		return nil
	}
	if live >= s.r.maxCoders() {
		if other == nil {
			return nil
		}
		other.Gone = true
		s.emit(Action{Kind: AStopCoder, Coder: other.Name, Text: "replaced by a " + m.TierNow + " coder"})
	}
	s.r.NextCoder++
	s.r.Coders = append(s.r.Coders, Coder{Name: fmt.Sprintf("coder-%d", s.r.NextCoder), Tier: m.TierNow})
	return &s.r.Coders[len(s.r.Coders)-1]
}

func (r *Run) maxCoders() int {
	if r.MaxCoders <= 0 {
		return 2
	}
	return r.MaxCoders
}

// drain starts the head of the review and merge queues when it changed in this step:
// the one before it finished or left, or it joined an empty queue. (After a restart
// the head's action is re-issued by Resume.)
func (s *stepper) drain(before Run) {
	if h := head(s.r.ReviewQueue); h != "" && h != head(before.ReviewQueue) {
		if m := s.ms(h); m != nil {
			s.emit(Action{Kind: AReview, M: h, Head: m.Checked})
		}
	}
	if h := head(s.r.MergeQueue); h != "" && h != head(before.MergeQueue) {
		if m := s.ms(h); m != nil {
			s.emit(Action{Kind: AMergeIn, M: h, Head: m.Checked, Base: s.r.Feature})
		}
	}
}

func head(q []string) string {
	if len(q) == 0 {
		return ""
	}
	return q[0]
}

func (s *stepper) finish() {
	if s.r.Finish != "" || s.r.Stopped || len(s.r.Milestones) == 0 {
		return
	}
	for _, m := range s.r.Milestones {
		if m.State != Merged && !(m.Removed && (m.State == Held || m.State == Failed)) {
			return
		}
	}
	s.r.Finish = "checking"
	s.emit(Action{Kind: AFinalCheck, Head: s.r.Feature})
}

func orNone(s string) string {
	if s == "" {
		return "no coder"
	}
	return s
}

func short(h string) string {
	if len(h) > 10 {
		return h[:10]
	}
	if h == "" {
		return "none"
	}
	return h
}

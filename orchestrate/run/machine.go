package run

import (
	"fmt"
	"slices"
	"time"
)

// The milestone state machine in one place (DESIGN §8): every state a milestone may
// go to from each state, and why. stepper.to is the one place a milestone's state
// changes, and it refuses a move this table does not list, so a rule cannot move a
// milestone where the design does not let it go: Step then fails and leaves the run
// as it was.
var transitions = map[State][]State{
	// Its dependencies merged (or a plan edit dropped the last open one); held by
	// request or by a plan edit.
	Planned: {Ready, Held},
	// Given to a coder (dispatched, or by itself after AutoStartAfter); back to
	// planned when a plan edit adds a dependency that is not merged.
	Ready: {Building, Planned, Held},
	// The coder asks, reports done (checking), or fails a round at once (no commits,
	// uncommitted changes: fixing, escalated, failed); its coder is benched.
	Building: {Asking, Checking, Fixing, Escalated, Failed, Benched, Held},
	// The answer goes back to the coder (building or fixing, where it asked from);
	// its coder is benched.
	Asking: {Building, Fixing, Benched, Held},
	// A passing check goes to review (with a reviewer) or the merge queue; a failing
	// one is a round.
	Checking: {Reviewing, Merging, Fixing, Escalated, Failed, Held},
	// Approved: to the merge queue; changes asked: a round; silence twice: held.
	Reviewing: {Merging, Fixing, Escalated, Failed, Held},
	// Advanced: merged; a conflict or a failed re-check: a round; feature/NAME moved
	// by hand: held.
	Merging: {Merged, Fixing, Escalated, Failed, Held},
	// A follow-up job (`run fix`) after the summary.
	Merged: {Fixing},
	// Like building: the fix is reported done, or asks, or fails a round again.
	Fixing: {Asking, Checking, Escalated, Failed, Benched, Held},
	// Another coder takes the work on where it was.
	Benched: {Building, Fixing, Held},
	// The fresh round a tier up goes to a coder.
	Escalated: {Building, Fixing, Held},
	// `run retry`: ready again (planned when a dependency is open).
	Held: {Ready, Planned},
	// `run retry`, or held by request.
	Failed: {Ready, Planned, Held},
}

// CanMove reports whether a milestone may go from state from to state to.
func CanMove(from, to State) bool { return from == to || slices.Contains(transitions[from], to) }

// to moves m to state st, accounting the time spent in the state it leaves and
// setting the timers the new state waits on. A move the table refuses changes
// nothing and fails the step.
func (s *stepper) to(m *Milestone, st State) {
	if m.State == st {
		return
	}
	if !CanMove(m.State, st) {
		if s.err == nil {
			s.err = fmt.Errorf("run %s: %s cannot go from %s to %s", s.r.Name, m.ID, m.State, st)
		}
		return
	}
	s.leavePrompt(m)
	if !m.StateAt.IsZero() && s.now.After(m.StateAt) {
		if m.Spent == nil {
			m.Spent = map[State]float64{}
		}
		m.Spent[m.State] += s.now.Sub(m.StateAt).Seconds()
	}
	if m.State == Ready {
		s.cancel(TimerAutoStart, m.ID)
	}
	m.State, m.StateAt = st, s.now
	switch st {
	case Ready:
		m.ReadyAt, m.Passed = s.now, time.Time{}
		s.after(TimerAutoStart, m.ID, s.now.Add(AutoStartAfter))
	case Merged:
		m.MergedAt = s.now
	}
}

// leavePrompt ends the wait of m's coder at a permission prompt: the time moves
// from the state m waited in to Spent[AtPrompt]. A milestone that moves on ends
// the wait (its coder answered, or was stopped); a coder still at a prompt is
// reported again.
func (s *stepper) leavePrompt(m *Milestone) {
	if m.PromptAt.IsZero() {
		return
	}
	from := m.PromptAt
	if m.StateAt.After(from) {
		from = m.StateAt
	}
	if s.now.After(from) {
		if m.Spent == nil {
			m.Spent = map[State]float64{}
		}
		d := s.now.Sub(from).Seconds()
		m.Spent[AtPrompt] += d
		m.Spent[m.State] -= d
	}
	m.PromptAt = time.Time{}
}

// prompt applies FPrompt and FPromptDone: the wait of M's coder at a permission
// prompt begins or ends. A report about a coder no longer on M, or a wait already
// known (the agent's state is seen again after a restart), changes nothing.
func (s *stepper) prompt(m *Milestone, f Fact) {
	switch {
	case f.Kind == FPromptDone && m.PromptAt.IsZero():
		s.note("%s from %s about %s ignored: no wait at a prompt under way", f.Kind, orNone(f.Coder), m.ID)
	case f.Kind == FPromptDone:
		s.leavePrompt(m)
	case m.Coder != f.Coder || m.State != Building && m.State != Fixing:
		s.note("%s from %s about %s ignored: it is %s with %s", f.Kind, orNone(f.Coder), m.ID, m.State, orNone(m.Coder))
	case !m.PromptAt.IsZero():
		s.note("%s from %s about %s ignored: its wait began at %s", f.Kind, f.Coder, m.ID, m.PromptAt.Format(time.TimeOnly))
	default:
		m.PromptAt = s.now
	}
}

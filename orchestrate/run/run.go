package run

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"orcr/planning"
)

// New is the run of an approved plan at its start: milestones with no dependencies
// are ready (and the lead hears so), the rest planned. feature is the tip
// feature/NAME was created at.
func New(name string, p *planning.Plan, coders int, reviewer bool, feature string, now time.Time) (Run, []Action, error) {
	if _, err := p.Order(); err != nil {
		return Run{}, nil, err
	}
	r := Run{Name: name, MaxCoders: coders, Reviewer: reviewer, Feature: feature}
	if r.MaxCoders <= 0 {
		r.MaxCoders = 2
	}
	if p.Mode == "shared" {
		r.MaxCoders = 1 // one coder in the repo's folder, one milestone at a time
		r.Shared = true
	}
	for _, pm := range p.Milestones {
		st := Planned
		if pm.State == string(Merged) {
			st = Merged // a plan resumed by a new run: what is merged stays merged
		}
		r.Milestones = append(r.Milestones, Milestone{ID: pm.ID, Title: pm.Title, Depends: slices.Clone(pm.Depends), Tier: pm.Tier, TierNow: pm.Tier,
			State: st, StateAt: now})
	}
	s := &stepper{r: r, now: now}
	for i := range s.r.Milestones {
		m := &s.r.Milestones[i]
		if m.State == Planned && len(s.openDeps(m)) == 0 {
			s.to(m, Ready)
			s.emit(Action{Kind: ALead, M: m.ID, Text: readyText(name, m.ID)})
		}
	}
	return s.r, s.out, s.err
}

// Begin is the run a server starts for an approved plan: New, whose first actions
// create feature/NAME at base (the base branch's tip, read before the run's record
// is stored: the branch is created after the record, so a crash in between leaves a
// run whose restart creates it) and start the lead (lead: the run has one). No
// coder is given work before the branch exists.
func Begin(name string, p *planning.Plan, coders int, reviewer, lead bool, base string, now time.Time) (Run, []Action, error) {
	r, out, err := New(name, p, coders, reviewer, "", now)
	if err != nil {
		return Run{}, nil, err
	}
	r.Lead = lead
	first := []Action{{Kind: ABranch, Head: base}}
	if lead {
		first = append(first, Action{Kind: AStartLead})
	}
	s := &stepper{r: r, now: now, out: append(first, out...)}
	s.inbox()
	if lead {
		// The lead's first prompt names the milestones ready at the start
		// (LeadPrompt): delivered again from the inbox after its first turn, each
		// was dispatched twice ("refused dispatch … under way already").
		s.r.Inbox = nil
	}
	return s.r, s.out, nil
}

// readyText tells the lead that milestone m of run name can start.
func readyText(name, m string) string {
	return fmt.Sprintf("%s is ready: dispatch it with `%s run dispatch %s %s` (it starts by itself in %d minutes)", m, Bin, name, m, int(AutoStartAfter/time.Minute))
}

// Bin is how the texts the run gives its agents call orcr, as Step writes them
// (and the run's log and inbox keep them): "$ORCR_BIN", the absolute path of the
// running orcr that every pane carries (DESIGN §4). The CLIs' tool shells may be
// login shells whose PATH lacks orcr (a lead whose `orcr run dispatch` was "command
// not found" left its milestones waiting 15 minutes). When a text is typed into an
// agent, the service writes the path itself in its place (Service.toAgent): claude
// asks before running a command with a variable in it ("A variable in this command
// can't be checked before it runs"), which no allow-list can pre-approve.
const Bin = `"$ORCR_BIN"`

// forUser is text meant for an agent, made for a person at their own shell, where
// ORCR_BIN is not set: its calls become plain `orcr`.
func forUser(text string) string { return strings.ReplaceAll(text, Bin+" ", "orcr ") }

// forAgent is text written for a person (a hold's reason, a plan edit's note), made
// for an agent: its quoted `orcr …` commands call Bin.
func forAgent(text string) string { return strings.ReplaceAll(text, "`orcr ", "`"+Bin+" ") }

func (r *Run) milestone(id string) *Milestone {
	for i := range r.Milestones {
		if r.Milestones[i].ID == id {
			return &r.Milestones[i]
		}
	}
	return nil
}

// Milestone returns a copy of milestone id.
func (r Run) Milestone(id string) (Milestone, bool) {
	if m := r.milestone(id); m != nil {
		return *m, true
	}
	return Milestone{}, false
}

// CoderOf returns the milestone coder name works on, or "".
func (r Run) CoderOf(name string) string {
	for _, c := range r.Coders {
		if c.Name == name && !c.Gone {
			return c.M
		}
	}
	return ""
}

// clone copies r deeply, so Step never changes its argument.
func (r Run) clone() Run {
	c := r
	c.Milestones = make([]Milestone, len(r.Milestones))
	for i, m := range r.Milestones {
		m.Depends = slices.Clone(m.Depends)
		m.Coders = slices.Clone(m.Coders)
		m.Spent = maps.Clone(m.Spent)
		c.Milestones[i] = m
	}
	c.Coders = slices.Clone(r.Coders)
	c.MergeQueue = slices.Clone(r.MergeQueue)
	c.ReviewQueue = slices.Clone(r.ReviewQueue)
	c.Inbox = slices.Clone(r.Inbox)
	c.Timers = slices.Clone(r.Timers)
	if r.LeadSent != nil {
		ls := *r.LeadSent
		c.LeadSent = &ls
	}
	return c
}

// NextWake is when the run's first timer comes due (timer.go), not before now;
// zero when no timer is set.
func (r Run) NextWake(now time.Time) time.Time {
	var at time.Time
	for _, t := range r.Timers {
		if at.IsZero() || t.At.Before(at) {
			at = t.At
		}
	}
	if !at.IsZero() && at.Before(now) {
		at = now
	}
	return at
}

// Open reports whether any milestone still has work ahead in the autopilot's hands
// (not merged, held or failed, nor waiting on one of those).
func (r Run) Open() bool {
	if r.Stopped {
		return false
	}
	for _, m := range r.Milestones {
		switch m.State {
		case Merged, Held, Failed, Planned:
		default:
			return true
		}
	}
	return r.Finish == "checking"
}

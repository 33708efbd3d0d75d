package run

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"orcr/orchestrate"
)

// New is the run of an approved plan at its start: milestones with no dependencies
// are ready (and the lead hears so), the rest planned. feature is the tip
// feature/NAME was created at.
func New(name string, p *orchestrate.Plan, coders int, reviewer bool, feature string, now time.Time) (Run, []Action, error) {
	if _, err := p.Order(); err != nil {
		return Run{}, nil, err
	}
	r := Run{Name: name, MaxCoders: coders, Reviewer: reviewer, Feature: feature}
	if r.MaxCoders <= 0 {
		r.MaxCoders = 2
	}
	if p.Mode == "shared" {
		r.MaxCoders = 1 // one coder in the repo's folder, one milestone at a time
	}
	var out []Action
	for _, pm := range p.Milestones {
		m := Milestone{ID: pm.ID, Title: pm.Title, Depends: slices.Clone(pm.Depends), Tier: pm.Tier, TierNow: pm.Tier,
			State: Planned, StateAt: now}
		if pm.State == string(Merged) {
			m.State = Merged // a plan resumed by a new run: what is merged stays merged
		}
		r.Milestones = append(r.Milestones, m)
	}
	for i := range r.Milestones {
		m := &r.Milestones[i]
		if m.State != Planned {
			continue
		}
		open := false
		for _, d := range m.Depends {
			if dm := r.milestone(d); dm == nil || dm.State != Merged {
				open = true
			}
		}
		if !open {
			m.State, m.ReadyAt = Ready, now
			out = append(out, Action{Kind: ALead, M: m.ID, Text: readyText(name, m.ID)})
		}
	}
	return r, out, nil
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
	return c
}

// NextWake is when a tick next changes something after now: ready work starts by
// itself, or a bench ends while work waits for a coder. Zero when nothing waits on
// time.
func (r Run) NextWake(now time.Time) time.Time {
	var at time.Time
	earlier := func(t time.Time) {
		if t.Before(now) {
			t = now
		}
		if at.IsZero() || t.Before(at) {
			at = t
		}
	}
	if r.Stopped {
		return at
	}
	waiting := false
	for _, m := range r.Milestones {
		if m.State == Ready && !m.Want && !m.ReadyAt.IsZero() {
			earlier(m.ReadyAt.Add(AutoStartAfter))
		}
		if m.Want && m.Coder == "" {
			waiting = true
		}
	}
	for _, c := range r.Coders {
		if waiting && !c.Gone && c.BenchedUntil.After(now) {
			earlier(c.BenchedUntil)
		}
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

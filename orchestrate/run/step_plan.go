package run

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// A plan edited mid-run (DESIGN §8 "Plan": a later edit is an event the lead hears
// about, never a silent change). The autopilot reads the plan file when its hash
// changes and feeds FPlanEdited; planEdited applies what can be applied and holds
// what cannot, and the lead hears every change in one inbox entry:
//
//   - a new milestone joins as planned, or ready when its dependencies are merged;
//   - a changed dependency or tier of a milestone not started yet applies (a ready
//     one whose new dependency is not merged goes back to planned);
//   - a started milestone whose new dependency is not merged is held (its work
//     cannot have been built on it);
//   - a removed milestone not started is dropped; one under way is held (and no
//     longer keeps the run from finishing); a merged one stays merged;
//   - an edited `check:` is the check from here on, unless the run was started with
//     --check; an edited `mode:` is not taken (worktrees or a shared folder are set
//     up at start) and the lead hears so;
//   - an edit that does not parse (a cycle, an unknown key) is refused with the
//     errors, each naming its line, and the run keeps the plan it had.

func (s *stepper) planEdited(f Fact) {
	if f.Hash != "" && f.Hash == s.r.PlanHash {
		s.note("plan unchanged")
		return
	}
	s.r.PlanHash = f.Hash
	if f.Text != "" {
		s.r.PlanNote = "edit refused: " + firstLine(strings.TrimSpace(f.Text))
		msg := fmt.Sprintf("The plan file of run %s was edited, but the edit is refused and the run keeps the plan it had: %s — fix the file; the run takes it in once it parses.",
			s.r.Name, strings.ReplaceAll(strings.TrimSpace(f.Text), "\n", "; "))
		s.emit(Action{Kind: ALead, Text: msg})
		s.emit(Action{Kind: ANotify, Text: msg})
		return
	}
	items := map[string]PlanItem{}
	for _, it := range f.Plan {
		items[it.ID] = it
	}
	var changes []string
	drop := map[string]bool{}
	for i := range s.r.Milestones {
		m := &s.r.Milestones[i]
		it, ok := items[m.ID]
		switch {
		case !ok && m.State == Merged:
			changes = append(changes, m.ID+" removed, but it is merged: it stays in feature/"+s.r.Name)
		case !ok && notStarted(m):
			drop[m.ID] = true
			changes = append(changes, m.ID+" removed before it started: dropped")
		case !ok:
			m.Removed = true
			changes = append(changes, fmt.Sprintf("%s removed while %s: held", m.ID, m.State))
			if m.State != Held && m.State != Failed {
				s.holdNow(m, "removed from the plan while under way (its branch is kept); put it back in the plan and `orcr run retry "+s.r.Name+" "+m.ID+"` to go on")
			}
		default:
			if m.Removed {
				m.Removed = false
				changes = append(changes, m.ID+" back in the plan (held: `orcr run retry "+s.r.Name+" "+m.ID+"`)")
			}
			if it.Title != m.Title {
				changes = append(changes, fmt.Sprintf("%s title now %q", m.ID, it.Title))
			}
			m.Title = it.Title
			if it.Estimate != it.Was {
				changes = append(changes, fmt.Sprintf("%s estimate %s → %s", m.ID, estimateText(it.Was), estimateText(it.Estimate)))
			}
			if it.Tier != "" && it.Tier != m.Tier {
				changes = append(changes, fmt.Sprintf("%s tier %s → %s", m.ID, m.Tier, it.Tier))
				if notStarted(m) {
					m.TierNow = it.Tier
				}
				m.Tier = it.Tier
			}
			if !slices.Equal(m.Depends, it.Depends) {
				m.Depends = slices.Clone(it.Depends)
				changes = append(changes, m.ID+" now depends on "+depsText(it.Depends))
			}
		}
	}
	s.r.Milestones = slices.DeleteFunc(s.r.Milestones, func(m Milestone) bool { return drop[m.ID] })
	for _, it := range f.Plan {
		if s.ms(it.ID) != nil {
			continue
		}
		s.r.Milestones = append(s.r.Milestones, Milestone{ID: it.ID, Title: it.Title, Depends: slices.Clone(it.Depends),
			Tier: it.Tier, TierNow: it.Tier, State: Planned, StateAt: s.now})
		changes = append(changes, it.ID+" added")
		if s.r.Finish == "done" || s.r.Finish == "failed" {
			s.r.Finish = "" // more work: the final check runs again after it
		}
	}
	// Dependencies as they are now: what waits and what is ready.
	for i := range s.r.Milestones {
		m := &s.r.Milestones[i]
		open := s.openDeps(m)
		switch {
		case m.State == Planned && len(open) == 0:
			s.to(m, Ready)
			s.emit(Action{Kind: ALead, M: m.ID, Text: readyText(s.r.Name, m.ID)})
		case m.State == Ready && m.Coder == "" && len(open) > 0:
			m.Want = false
			s.to(m, Planned)
		case len(open) > 0 && !notStarted(m) && m.State != Planned && m.State != Merged && m.State != Held && m.State != Failed:
			s.holdNow(m, "the plan now makes it depend on "+strings.Join(open, ", ")+", which is not merged, but it was started before; `orcr run retry "+s.r.Name+" "+m.ID+"` once that is merged")
		}
	}
	if f.Check != "" {
		changes = append(changes, "the check is now `"+f.Check+"` (for every check from here on)")
	}
	if f.Mode != "" {
		changes = append(changes, "mode "+f.Mode+" not taken: a run keeps the mode it started with")
	}
	if len(changes) == 0 {
		changes = append(changes, "no change to the milestones")
	}
	s.r.PlanNote = strings.Join(changes, "; ")
	s.emit(Action{Kind: ALead, Text: fmt.Sprintf("The plan file of run %s was edited: %s.", s.r.Name, s.r.PlanNote)})
}

// notStarted reports a milestone no coder has worked on yet.
func notStarted(m *Milestone) bool {
	return (m.State == Planned || m.State == Ready) && m.Coder == "" && len(m.Coders) == 0
}

func estimateText(d time.Duration) string {
	if d <= 0 {
		return "none"
	}
	return d.String()
}

func depsText(ids []string) string {
	if len(ids) == 0 {
		return "nothing"
	}
	return strings.Join(ids, ", ")
}

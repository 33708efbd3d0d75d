package run

import (
	"fmt"
	"time"
)

// Restart (DESIGN §8 "Durability"): the stored run says what should be; the git refs
// and the agents say what is. Reconcile compares them and returns the facts that
// bring the run up to date, in order: what happened while the server was down (a
// compare-and-swap that landed before its outcome was logged, a coder whose turn
// ended or whose agent vanished), and holds, with the reason, for what contradicts
// the record — never a guess.

// Observed is what the autopilot found at restart.
type Observed struct {
	// Feature is the tip of feature/NAME; "" when the branch does not exist.
	Feature string
	// Branches holds the tip of each milestone branch that exists.
	Branches map[string]string
	// Agents is what the kernel knows of each coder of the pool, by name.
	Agents map[string]AgentSeen
	// Advance is the commit the pending advance of the merging milestone makes (the
	// squash commit is deterministic, so it can be computed before it is made); ""
	// when no advance is pending.
	Advance string
}

// AgentSeen is a coder's agent as the kernel has it.
type AgentSeen struct {
	Exists bool      // a record exists
	Live   bool      // its process runs
	Idle   bool      // live and not working: its turn ended (done) or it never started one
	TurnAt time.Time // when it entered its current state
}

// Reconcile returns the facts that bring rec up to date with o. turns holds, per
// coder, the instant of the last turn end already handled, so a turn end is fed once.
func Reconcile(rec Record, o Observed, turns map[string]time.Time) []Fact {
	r := rec.Run
	var out []Fact
	open := func(m Milestone) bool {
		switch m.State {
		case Merged, Held, Failed, Planned, Ready:
			return false
		}
		return true
	}
	if r.Feature == "" {
		return nil // feature/NAME is not created yet (its action is pending): nothing started
	}
	if o.Feature == "" {
		for _, m := range r.Milestones {
			if m.State != Merged && m.State != Held && m.State != Failed {
				out = append(out, Fact{Kind: FHold, M: m.ID, Text: fmt.Sprintf("feature/%s does not exist any more; recreate it at %s and `orcr run retry %s %s`", r.Name, short(r.Feature), r.Name, m.ID)})
			}
		}
		return out
	}
	if o.Feature != r.Feature {
		if h := head(r.MergeQueue); h != "" {
			m, _ := r.Milestone(h)
			if m.MergeChecked != "" && o.Advance != "" && o.Feature == o.Advance {
				// The compare-and-swap landed; its outcome was not logged yet.
				out = append(out, Fact{Kind: FAdvanced, M: h, Head: o.Feature})
			} else {
				out = append(out, Fact{Kind: FMoved, M: h, Head: o.Feature})
			}
		}
		// With no merge under way, the next merge finds the ref moved and holds.
	}
	// A brief still to perform makes the branch and starts the coder (or finds the
	// one a server killed mid-brief started): neither is missing yet.
	briefing := map[string]bool{}
	for _, p := range rec.Outbox {
		if p.Action.Kind == ABrief {
			briefing[p.Action.M] = true
			briefing[p.Action.M+"/"+p.Action.Coder] = true
		}
	}
	for _, m := range r.Milestones {
		if !open(m) {
			continue
		}
		if _, ok := o.Branches[m.ID]; !ok && !briefing[m.ID] {
			out = append(out, Fact{Kind: FHold, M: m.ID, Text: fmt.Sprintf("its branch %s does not exist any more", MilestoneBranch(r.Name, m.ID))})
			continue
		}
		if m.Coder == "" || briefing[m.ID+"/"+m.Coder] {
			continue
		}
		a := o.Agents[m.Coder]
		switch {
		case !a.Exists || !a.Live:
			out = append(out, Fact{Kind: FLost, Coder: m.Coder})
		case a.Idle && (m.State == Building || m.State == Fixing) && a.TurnAt.After(turns[m.Coder]):
			out = append(out, Fact{Kind: FTurnEnded, M: m.ID, Coder: m.Coder, TurnAt: a.TurnAt})
		}
	}
	return out
}

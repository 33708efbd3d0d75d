package run

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// world plays everything around the machine with random outcomes: coders that commit,
// forget to call done, ask, hit limits and vanish; checks and reviews that pass or
// fail; merges that conflict; a lead that answers and dispatches; plus noise (stale
// and foreign facts). It checks the invariants after every step.
type world struct {
	t       *testing.T
	rnd     *rand.Rand
	r       Run
	now     time.Time
	pending []Action
	heads   int
	// okHeads are the commits of each milestone whose check passed, by the facts the
	// world sent; an advance of anything else would merge unchecked work.
	okHeads map[string]map[string]bool
	retries int
	steps   int
	log     []string
	// edits counts plan edits; lateDeps the milestones given a dependency after
	// they merged (an edit cannot unmerge them, so the order invariant skips them).
	edits    int
	lateDeps map[string]bool
}

func (w *world) head() string { w.heads++; return fmt.Sprintf("h%d", w.heads) }

func (w *world) feed(f Fact) {
	w.t.Helper()
	w.steps++
	w.now = w.now.Add(time.Duration(1+w.rnd.IntN(30)) * time.Second)
	before := w.r
	r, out, err := Step(w.r, f, w.now)
	w.log = append(w.log, fmt.Sprintf("%+v -> %d actions", f, len(out)))
	if err != nil {
		if !isRequest(f.Kind) {
			w.fail("fact %+v: %v", f, err)
		}
		return // a refused request changes nothing
	}
	w.r = r
	for _, a := range out {
		if a.Kind == AAdvance {
			if !w.okHeads[a.M][a.Head] {
				w.fail("advance of %s at %s, which no check passed", a.M, a.Head)
			}
			if a.Base != before.Feature {
				w.fail("advance of %s from %s, feature is at %s", a.M, a.Base, before.Feature)
			}
		}
		if a.Kind == ABrief || a.Kind == ASendCoder {
			m, _ := r.Milestone(a.M)
			if m.Coder != a.Coder {
				w.fail("message for %s to %s, but it is with %q", a.M, a.Coder, m.Coder)
			}
		}
		if a.Kind == ABrief {
			// A hand-on in the same step is fine: the coder that had it was benched,
			// stopped or released by this step. A brief to a coder that has the
			// milestone already, or while another still holds it, is a second dispatch.
			if prev, _ := before.Milestone(a.M); prev.Coder != "" && (prev.Coder == a.Coder || r.CoderOf(prev.Coder) == a.M) {
				w.fail("%s dispatched to %s while %s had it", a.M, a.Coder, prev.Coder)
			}
		}
	}
	w.pending = append(w.pending, out...)
	w.invariants()
}

func (w *world) fail(format string, args ...any) {
	w.t.Helper()
	tail := w.log
	if len(tail) > 30 {
		tail = tail[len(tail)-30:]
	}
	w.t.Fatalf(format+"\nlast facts:\n%s", append(args, strings.Join(tail, "\n"))...)
}

// invariants: one coder per milestone and one milestone per coder, consistent both
// ways; queues hold only milestones in the matching state; merged work is in order.
func (w *world) invariants() {
	w.t.Helper()
	holder := map[string]string{}
	for _, c := range w.r.Coders {
		if c.M == "" {
			continue
		}
		if c.Gone {
			w.fail("gone coder %s holds %s", c.Name, c.M)
		}
		if other, ok := holder[c.M]; ok {
			w.fail("%s held by %s and %s", c.M, other, c.Name)
		}
		holder[c.M] = c.Name
	}
	for _, m := range w.r.Milestones {
		if m.Coder != holder[m.ID] {
			w.fail("%s says coder %q, pool says %q", m.ID, m.Coder, holder[m.ID])
		}
		switch m.State {
		case Building, Asking:
			if m.Coder == "" {
				w.fail("%s is %s without a coder", m.ID, m.State)
			}
		case Merged, Held, Failed, Planned, Reviewing, Merging:
			if m.Coder != "" {
				w.fail("%s is %s and keeps coder %s", m.ID, m.State, m.Coder)
			}
		}
		if m.State == Merged && !w.lateDeps[m.ID] {
			for _, d := range m.Depends {
				if dm, _ := w.r.Milestone(d); dm.State != Merged && !dm.FollowUp {
					w.fail("%s merged before its dependency %s (%s)", m.ID, d, dm.State)
				}
			}
		}
	}
	for _, id := range w.r.MergeQueue {
		if m, _ := w.r.Milestone(id); m.State != Merging {
			w.fail("%s in the merge queue is %s", id, m.State)
		}
	}
	for _, id := range w.r.ReviewQueue {
		if m, _ := w.r.Milestone(id); m.State != Reviewing {
			w.fail("%s in the review queue is %s", id, m.State)
		}
	}
}

func (w *world) chance(p float64) bool { return w.rnd.Float64() < p }

// respond answers one action the way the world around the autopilot would.
func (w *world) respond(a Action) {
	switch a.Kind {
	case ABrief, ASendCoder:
		f := Fact{M: a.M, Coder: a.Coder}
		switch x := w.rnd.Float64(); {
		case x < 0.55:
			f.Kind, f.Commits, f.Head = FDone, 1+w.rnd.IntN(3), w.head()
			if w.chance(0.08) {
				f.Commits = 0
			}
			f.Dirty = w.chance(0.05)
		case x < 0.7:
			f.Kind, f.Commits, f.Head = FTurnEnded, w.rnd.IntN(2), w.head()
			if w.chance(0.2) {
				f.Text = "QUESTION: which way?"
			}
		case x < 0.8:
			f.Kind, f.Text = FAsk, "which file?"
		case x < 0.88:
			f = Fact{Kind: FLimited, Coder: a.Coder}
			if w.chance(0.5) {
				f.Until = w.now.Add(time.Duration(w.rnd.IntN(90)) * time.Minute)
			}
		case x < 0.96:
			f = Fact{Kind: FVanished, Coder: a.Coder}
		default:
			f = Fact{Kind: FLost, Coder: a.Coder}
		}
		w.feed(f)
	case ACheck:
		ok := w.chance(0.7)
		if ok {
			if w.okHeads[a.M] == nil {
				w.okHeads[a.M] = map[string]bool{}
			}
			w.okHeads[a.M][a.Head] = true
		}
		w.feed(Fact{Kind: FChecked, M: a.M, Head: a.Head, Merge: a.Merge, OK: ok, Text: "out"})
	case AReview:
		v := &Verdict{}
		switch x := w.rnd.Float64(); {
		case x < 0.6:
			v.Decision = "approve"
		case x < 0.7:
			v.Decision = "approve"
			v.Blockers = []Blocker{{What: "x"}}
		case x < 0.9:
			v.Decision = "changes"
			v.Blockers = []Blocker{{File: "a.go", Line: 1, What: "y"}}
		}
		w.feed(Fact{Kind: FReviewed, M: a.M, Head: a.Head, Verdict: v})
	case AMergeIn:
		switch x := w.rnd.Float64(); {
		case x < 0.4:
			w.feed(Fact{Kind: FMergedIn, M: a.M, Head: a.Head})
		case x < 0.85:
			w.feed(Fact{Kind: FMergedIn, M: a.M, Head: w.head()})
		default:
			w.feed(Fact{Kind: FConflict, M: a.M, Paths: []string{"a.go"}})
		}
	case AAdvance:
		if w.chance(0.03) {
			w.feed(Fact{Kind: FMoved, M: a.M, Head: "hand"})
			return
		}
		w.feed(Fact{Kind: FAdvanced, M: a.M, Head: "f-" + w.head()})
	case AFinalCheck:
		w.feed(Fact{Kind: FFinalCheck, OK: w.chance(0.8)})
	case ALead:
		switch {
		case strings.Contains(a.Text, "asks"):
			w.feed(Fact{Kind: FAnswer, M: a.M, Text: "this way"})
		case strings.Contains(a.Text, "is ready") && w.chance(0.8):
			w.feed(Fact{Kind: FDispatch, M: a.M})
		case (strings.Contains(a.Text, "failed") || strings.Contains(a.Text, "held")) && w.retries < 5 && w.chance(0.5):
			w.retries++
			w.feed(Fact{Kind: FRetry, M: a.M, Tier: tiers[w.rnd.IntN(3)]})
		}
	}
}

// noise is a fact nobody asked for: stale, foreign or out of order.
func (w *world) noise() {
	ms := w.r.Milestones
	m := ms[w.rnd.IntN(len(ms))].ID
	coder := fmt.Sprintf("coder-%d", 1+w.rnd.IntN(6))
	facts := []Fact{
		{Kind: FDone, M: m, Coder: coder, Commits: 1, Head: w.head()},
		{Kind: FChecked, M: m, Head: w.head(), OK: true},
		{Kind: FChecked, M: m, Head: w.head(), OK: true, Merge: true},
		{Kind: FReviewed, M: m, Head: w.head(), Verdict: &Verdict{Decision: "approve"}},
		{Kind: FMergedIn, M: m, Head: w.head()},
		{Kind: FAdvanced, M: m, Head: w.head()},
		{Kind: FConflict, M: m},
		{Kind: FDispatch, M: m},
		{Kind: FAnswer, M: m, Text: "noise"},
		{Kind: FTick},
	}
	if w.edits < 4 && w.chance(0.05) {
		w.planEdit()
		return
	}
	f := facts[w.rnd.IntN(len(facts))]
	if f.Kind == FChecked || f.Kind == FReviewed || f.Kind == FAdvanced || f.Kind == FMergedIn {
		// Noise results name commits no check passed, so an advance they caused
		// would be caught; but a result the machine is waiting for is not noise.
		if mm, _ := w.r.Milestone(m); mm.State == Checking || mm.State == Reviewing || mm.State == Merging {
			return
		}
	}
	w.feed(f)
}

// planEdit edits the plan as a person might: a new milestone, one removed, a new
// dependency (on an earlier milestone, so no cycle), or a file that does not parse.
func (w *world) planEdit() {
	w.edits++
	var items []PlanItem
	for _, m := range w.r.Milestones {
		if !m.Removed {
			items = append(items, PlanItem{ID: m.ID, Title: m.Title, Depends: append([]string(nil), m.Depends...), Tier: m.Tier})
		}
	}
	f := Fact{Kind: FPlanEdited, Hash: fmt.Sprintf("h-%d", w.steps)}
	switch x := w.rnd.IntN(4); {
	case x == 0 || len(items) < 2:
		it := PlanItem{ID: fmt.Sprintf("N%d", w.edits), Title: "new", Tier: tiers[w.rnd.IntN(3)]}
		for _, o := range items {
			if w.chance(0.3) {
				it.Depends = append(it.Depends, o.ID)
			}
		}
		items = append(items, it)
	case x == 1:
		gone := items[w.rnd.IntN(len(items))].ID
		var kept []PlanItem
		for _, it := range items {
			if it.ID == gone {
				continue
			}
			var deps []string
			for _, d := range it.Depends {
				if d != gone {
					deps = append(deps, d)
				}
			}
			it.Depends = deps
			kept = append(kept, it)
		}
		items = kept
	case x == 2:
		j := 1 + w.rnd.IntN(len(items)-1)
		i := w.rnd.IntN(j)
		if !slices.Contains(items[j].Depends, items[i].ID) {
			items[j].Depends = append(items[j].Depends, items[i].ID)
			if m, _ := w.r.Milestone(items[j].ID); m.State == Merged {
				if w.lateDeps == nil {
					w.lateDeps = map[string]bool{}
				}
				w.lateDeps[m.ID] = true
			}
		}
	default:
		f.Text = "plan.md:6: dependency cycle: M1 → M2 → M1"
	}
	if f.Text == "" {
		f.Plan = items
	}
	w.feed(f)
}

func randomPlan(rnd *rand.Rand) []string {
	n := 1 + rnd.IntN(6)
	var specs []string
	for i := 1; i <= n; i++ {
		var deps []string
		for j := 1; j < i; j++ {
			if rnd.IntN(3) == 0 {
				deps = append(deps, fmt.Sprintf("M%d", j))
			}
		}
		specs = append(specs, fmt.Sprintf("M%d:%s:%s", i, strings.Join(deps, "+"), tiers[rnd.IntN(3)]))
	}
	return specs
}

// TestPropertyRandomWorlds: random plans in random worlds (their plans edited now and
// then) never double-dispatch,
// never merge unchecked work, keep coders and milestones consistent, and always come
// to rest: every milestone merged, held or failed (or planned behind one of those),
// and a fully merged run finished.
func TestPropertyRandomWorlds(t *testing.T) {
	seeds := 400
	if testing.Short() {
		seeds = 50
	}
	edits := 0
	defer func() {
		t.Logf("%d plan edits in %d worlds", edits, seeds)
		if !t.Failed() && edits < seeds/10 {
			t.Errorf("only %d plan edits in %d worlds: the worlds hardly edit their plans", edits, seeds)
		}
	}()
	for seed := range seeds {
		rnd := rand.New(rand.NewPCG(uint64(seed), 7))
		w := &world{t: t, rnd: rnd, now: t0, okHeads: map[string]map[string]bool{}}
		w.r = newRun(t, 1+rnd.IntN(3), rnd.IntN(2) == 0, randomPlan(rnd)...)
		for _, m := range w.r.Milestones {
			if m.State == Ready {
				w.pending = append(w.pending, Action{Kind: ALead, M: m.ID, Text: m.ID + " is ready"})
			}
		}
		for {
			if w.steps > 20000 {
				t.Fatalf("seed %d: no rest after %d steps: %+v", seed, w.steps, w.r.Milestones)
			}
			if w.chance(0.1) {
				w.noise()
				continue
			}
			if len(w.pending) > 0 {
				i := w.rnd.IntN(len(w.pending))
				a := w.pending[i]
				w.pending = append(w.pending[:i], w.pending[i+1:]...)
				w.respond(a)
				continue
			}
			if at := w.r.NextWake(w.now); !at.IsZero() {
				if at.After(w.now) {
					w.now = at
				}
				w.feed(Fact{Kind: FTick})
				continue
			}
			break
		}
		edits += w.edits
		allMerged := true
		for _, m := range w.r.Milestones {
			switch m.State {
			case Merged:
			case Held, Failed, Planned:
				allMerged = false
			default:
				t.Fatalf("seed %d: at rest with %s %s: %+v\ncoders %+v\nall %+v", seed, m.ID, m.State, m, w.r.Coders, w.r.Milestones)
			}
		}
		if allMerged && w.r.Finish != "done" && w.r.Finish != "failed" {
			t.Fatalf("seed %d: all merged but finish is %q", seed, w.r.Finish)
		}
	}
}

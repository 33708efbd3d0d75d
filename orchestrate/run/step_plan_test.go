package run

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"orcr/planning"
)

// planFactOf is the FPlanEdited fact of plan text specs (planText's form), as the
// autopilot builds it from the file: the milestones when it parses, else the errors.
func planFactOf(t *testing.T, hash string, specs ...string) Fact {
	t.Helper()
	f := Fact{Kind: FPlanEdited, Hash: hash}
	p, err := planning.Parse([]byte(planText(specs...)), planning.Options{File: "plan.md"})
	if err != nil {
		f.Text = err.Error()
		return f
	}
	for _, m := range p.Milestones {
		f.Plan = append(f.Plan, PlanItem{ID: m.ID, Title: m.Title, Depends: m.Depends, Tier: m.Tier})
	}
	return f
}

// leadText is the text of the last step's inbox entries.
func (g *rig) leadText() string {
	var b []string
	for _, a := range g.out {
		if a.Kind == ALead {
			b = append(b, a.Text)
		}
	}
	return strings.Join(b, "\n")
}

func TestPlanEditNewDependencyOnANotStartedMilestone(t *testing.T) {
	g := newRig(t, 2, false, "A::small", "B::small", "C::small")
	g.build("A", "a1")
	// C (ready, not dispatched) now depends on B: back to planned, until B merges.
	g.step(planFactOf(t, "h2", "A::small", "B::small", "C:B:small"))
	g.state("C", Planned)
	if txt := g.leadText(); !strings.Contains(txt, "C now depends on B") {
		t.Fatalf("lead heard %q", txt)
	}
	if g.r.PlanHash != "h2" || !strings.Contains(g.r.PlanNote, "C now depends on B") {
		t.Fatalf("plan hash %q note %q", g.r.PlanHash, g.r.PlanNote)
	}
	// The same file again changes nothing.
	g.step(planFactOf(t, "h2", "A::small", "B::small", "C:B:small"))
	g.hasNo(ALead)
	// A started milestone (A, checking) given a dependency that is not merged is held.
	g.step(planFactOf(t, "h3", "A:B:small", "B::small", "C:B:small"))
	g.state("A", Held)
	if m := g.m("A"); !strings.Contains(m.Reason, "depend on B") {
		t.Fatalf("reason %q", m.Reason)
	}
}

func TestPlanEditAddsAndRemovesMilestones(t *testing.T) {
	g := newRig(t, 2, false, "A::small", "B::small", "C:A:small", "D:A:small")
	g.build("A", "a1") // A under way
	// D removed before it started: dropped. A removed while checking: held, and it
	// no longer keeps the run from finishing. E added with no dependencies: ready.
	// C's dependency on A is gone with A: C is ready.
	g.step(planFactOf(t, "h2", "B::small", "C::small", "E::medium"))
	if _, ok := g.r.Milestone("D"); ok {
		t.Fatal("D was not dropped")
	}
	g.state("A", Held)
	g.state("C", Ready)
	g.state("E", Ready)
	if m := g.m("A"); !m.Removed || !strings.Contains(m.Reason, "removed from the plan") {
		t.Fatalf("A %+v", m)
	}
	txt := g.leadText()
	for _, want := range []string{"D removed before it started: dropped", "A removed while checking: held", "E added", "E is ready"} {
		if !strings.Contains(txt, want) {
			t.Fatalf("lead heard %q, missing %q", txt, want)
		}
	}
	if e := g.m("E"); e.Tier != "medium" || e.TierNow != "medium" {
		t.Fatalf("E %+v", e)
	}
	// A retry of a removed milestone is refused until it is back in the plan.
	if err := g.refused(Fact{Kind: FRetry, M: "A"}); !strings.Contains(err.Error(), "removed from the plan") {
		t.Fatalf("retry of a removed milestone: %v", err)
	}
	g.step(planFactOf(t, "h3", "A::small", "B::small", "C::small", "E::medium"))
	if g.m("A").Removed {
		t.Fatal("A back in the plan is still marked removed")
	}
	g.step(Fact{Kind: FRetry, M: "A"})
	g.state("A", Building)
}

func TestPlanEditRefusedKeepsThePlan(t *testing.T) {
	g := newRig(t, 2, false, "A::small", "B:A:small")
	before := g.r
	// A cycle: A depends on B, B on A.
	f := planFactOf(t, "h2", "A:B:small", "B:A:small")
	if f.Text == "" || !strings.Contains(f.Text, "cycle") || !strings.Contains(f.Text, "plan.md:") {
		t.Fatalf("the parser's error should name the cycle and its line: %q", f.Text)
	}
	g.step(f)
	if g.m("A").State != before.Milestones[0].State || len(g.m("A").Depends) != 0 {
		t.Fatalf("a refused edit changed the plan: %+v", g.m("A"))
	}
	txt := g.leadText()
	if !strings.Contains(txt, "refused") || !strings.Contains(txt, "cycle") || !strings.Contains(txt, "plan.md:") {
		t.Fatalf("lead heard %q", txt)
	}
	g.has(ANotify, "")
	if !strings.HasPrefix(g.r.PlanNote, "edit refused") || g.r.PlanHash != "h2" {
		t.Fatalf("note %q hash %q", g.r.PlanNote, g.r.PlanHash)
	}
	// Fixed: taken in.
	g.step(planFactOf(t, "h3", "A::small", "B:A:small", "C::small"))
	g.state("C", Ready)
}

func TestPlanEditAfterAllMergedReopensTheRun(t *testing.T) {
	g := newRig(t, 1, false, "A::small")
	g.build("A", "a1")
	g.step(Fact{Kind: FChecked, M: "A", Head: "a1", OK: true})
	g.step(Fact{Kind: FMergedIn, M: "A", Head: "a1"})
	g.step(Fact{Kind: FAdvanced, M: "A", Head: "f1"})
	g.step(Fact{Kind: FFinalCheck, OK: true})
	if g.r.Finish != "done" {
		t.Fatalf("finish %q", g.r.Finish)
	}
	g.step(planFactOf(t, "h2", "A::small", "B:A:small"))
	g.state("B", Ready)
	if g.r.Finish != "" {
		t.Fatalf("a run given new work stays %q", g.r.Finish)
	}
}

// TestPlanEditOfAnEstimateSaysSo: an edit that changes only M1's estimate is taken
// (the views read it from the plan) and the note says so; it said "no change to the
// milestones" while applying it.
func TestPlanEditOfAnEstimateSaysSo(t *testing.T) {
	old := strings.Replace(planText("M1::small"), "tier: small\n", "tier: small\nestimate: 5m\n", 1)
	edited := strings.Replace(old, "estimate: 5m", "estimate: 20m", 1)
	prev, err := planning.Parse([]byte(old), planning.Options{})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "demo.md")
	if err := os.WriteFile(file, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	g := newRig(t, 1, false, "M1::small")
	f, _, ok := planFact(Record{Run: g.r, PlanFile: file, Check: "true", Mode: "worktree", PlanHash: planning.HashBytes([]byte(old))}, prev)
	if !ok {
		t.Fatal("the edit was not seen")
	}
	g.step(f)
	if !strings.Contains(g.r.PlanNote, "M1 estimate 5m0s → 20m0s") || strings.Contains(g.r.PlanNote, "no change") {
		t.Fatalf("plan note %q, want the estimate's change", g.r.PlanNote)
	}
}

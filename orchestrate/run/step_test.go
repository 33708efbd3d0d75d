package run

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"orcr/planning"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// planText builds a plan: each spec is "ID:deps:tier", deps joined by '+'.
func planText(specs ...string) string {
	var b strings.Builder
	b.WriteString("# Plan: demo\nrequest: r\ncheck: true\n\n")
	for _, sp := range specs {
		f := strings.Split(sp, ":")
		deps := "-"
		if f[1] != "" {
			deps = strings.ReplaceAll(f[1], "+", ", ")
		}
		fmt.Fprintf(&b, "## %s · Title %s\ndepends: %s\ntier: %s\n\n### Goal\nDo %s.\n\n### Acceptance\n- [ ] it works\n\n", f[0], f[0], deps, f[2], f[0])
	}
	return b.String()
}

func newRun(t testing.TB, coders int, reviewer bool, specs ...string) Run {
	t.Helper()
	p, err := planning.Parse([]byte(planText(specs...)), planning.Options{})
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	r, _, err := New("demo", p, coders, reviewer, "f0", t0)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// rig steps a run fact by fact, one second apart, failing the test on an error.
type rig struct {
	t   testing.TB
	r   Run
	now time.Time
	out []Action // the last step's actions
}

func (g *rig) step(f Fact) []Action {
	g.t.Helper()
	g.now = g.now.Add(time.Second)
	r, out, err := Step(g.r, f, g.now)
	if err != nil {
		g.t.Fatalf("step %+v: %v", f, err)
	}
	g.r, g.out = r, out
	return out
}

func (g *rig) refused(f Fact) error {
	g.t.Helper()
	r, out, err := Step(g.r, f, g.now)
	if err == nil {
		g.t.Fatalf("step %+v: want a refusal, got actions %v", f, out)
	}
	if r.Milestones[0].State != g.r.Milestones[0].State {
		g.t.Fatalf("a refused step changed the run")
	}
	return err
}

func (g *rig) m(id string) Milestone {
	m, ok := g.r.Milestone(id)
	if !ok {
		g.t.Fatalf("no milestone %s", id)
	}
	return m
}

func (g *rig) state(id string, want State) {
	g.t.Helper()
	if got := g.m(id).State; got != want {
		g.t.Fatalf("%s is %s, want %s (actions %v)", id, got, want, g.out)
	}
}

// has finds the action of kind for milestone m in the last step.
func (g *rig) has(kind ActionKind, m string) Action {
	g.t.Helper()
	for _, a := range g.out {
		if a.Kind == kind && (m == "" || a.M == m) {
			return a
		}
	}
	g.t.Fatalf("no %s action for %q in %v", kind, m, g.out)
	return Action{}
}

// toCoder is the last step's message to m's coder: a brief or a send.
func (g *rig) toCoder(m string) Action {
	g.t.Helper()
	for _, a := range g.out {
		if (a.Kind == ABrief || a.Kind == ASendCoder) && a.M == m {
			return a
		}
	}
	g.t.Fatalf("no message to %s's coder in %v", m, g.out)
	return Action{}
}

func (g *rig) hasNo(kind ActionKind) {
	g.t.Helper()
	for _, a := range g.out {
		if a.Kind == kind {
			g.t.Fatalf("unexpected %s action: %+v", kind, a)
		}
	}
}

func newRig(t testing.TB, coders int, reviewer bool, specs ...string) *rig {
	return &rig{t: t, r: newRun(t, coders, reviewer, specs...), now: t0}
}

// build dispatches m and reports it done with one commit at head.
func (g *rig) build(m, head string) string {
	g.t.Helper()
	g.step(Fact{Kind: FDispatch, M: m})
	coder := g.has(ABrief, m).Coder
	g.step(Fact{Kind: FDone, M: m, Coder: coder, Commits: 1, Head: head})
	g.state(m, Checking)
	return coder
}

func TestNewReadyAndPlanned(t *testing.T) {
	p, _ := planning.Parse([]byte(planText("M1::small", "M2:M1:medium", "M3::high")), planning.Options{})
	r, out, err := New("demo", p, 0, false, "f0", t0)
	if err != nil {
		t.Fatal(err)
	}
	if r.MaxCoders != 2 {
		t.Errorf("default coders %d, want 2", r.MaxCoders)
	}
	want := map[string]State{"M1": Ready, "M2": Planned, "M3": Ready}
	for id, st := range want {
		if m, _ := r.Milestone(id); m.State != st {
			t.Errorf("%s: %s, want %s", id, m.State, st)
		}
	}
	if len(out) != 2 || out[0].Kind != ALead || out[0].M != "M1" || out[1].M != "M3" {
		t.Errorf("the lead should hear M1 and M3 are ready: %v", out)
	}
}

func TestDispatch(t *testing.T) {
	g := newRig(t, 2, false, "M1::small", "M2:M1:small")
	g.step(Fact{Kind: FDispatch, M: "M1"})
	g.state("M1", Building)
	a := g.has(ABrief, "M1")
	if a.Coder != "coder-1" || a.Tier != "small" {
		t.Fatalf("brief %+v", a)
	}
	if err := g.refused(Fact{Kind: FDispatch, M: "M1"}); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "under way") {
		t.Errorf("second dispatch: %v", err)
	}
	if err := g.refused(Fact{Kind: FDispatch, M: "M2"}); !strings.Contains(err.Error(), "waits for M1") {
		t.Errorf("dispatch of planned: %v", err)
	}
	if _, _, err := Step(g.r, Fact{Kind: FDispatch, M: "M9"}, g.now); err == nil {
		t.Error("dispatch of an unknown milestone accepted")
	}
}

func TestPoolCapAndTiers(t *testing.T) {
	g := newRig(t, 2, false, "A::small", "B::small", "C::high")
	g.step(Fact{Kind: FDispatch, M: "A"})
	g.step(Fact{Kind: FDispatch, M: "B"})
	g.step(Fact{Kind: FDispatch, M: "C"})
	g.state("C", Ready)
	if !g.m("C").Want {
		t.Fatal("C should wait for a coder")
	}
	g.hasNo(ABrief)
	// A passes its check: its coder is free, but it is small and C is high; the pool
	// is full, so the free small coder is replaced by a high one.
	g.step(Fact{Kind: FDone, M: "A", Coder: "coder-1", Commits: 1, Head: "a1"})
	g.step(Fact{Kind: FChecked, M: "A", Head: "a1", OK: true})
	stop := g.has(AStopCoder, "")
	if stop.Coder != "coder-1" {
		t.Fatalf("stop %+v", stop)
	}
	b := g.has(ABrief, "C")
	if b.Coder != "coder-3" || b.Tier != "high" {
		t.Fatalf("C brief %+v", b)
	}
	g.state("C", Building)
}

func TestStaleAndForeignCoderFactsIgnored(t *testing.T) {
	g := newRig(t, 2, false, "M1::small")
	g.step(Fact{Kind: FDispatch, M: "M1"})
	for _, f := range []Fact{
		{Kind: FDone, M: "M1", Coder: "coder-7", Commits: 1, Head: "h"},
		{Kind: FDone, M: "M1", Coder: "", Commits: 1, Head: "h"},
		{Kind: FAsk, M: "M1", Coder: "coder-2", Text: "q?"},
		{Kind: FTurnEnded, M: "M1", Coder: "coder-2"},
		{Kind: FChecked, M: "M1", Head: "h", OK: true},
		{Kind: FReviewed, M: "M1", Head: "h", Verdict: &Verdict{Decision: "approve"}},
		{Kind: FAdvanced, M: "M1", Head: "x"},
		{Kind: FDone, M: "M9", Coder: "coder-1"},
	} {
		g.step(f)
		g.state("M1", Building)
		g.has(ANote, "")
	}
}

func TestDoneWithoutCommitsOrDirty(t *testing.T) {
	g := newRig(t, 2, false, "M1::small")
	g.step(Fact{Kind: FDispatch, M: "M1"})
	g.step(Fact{Kind: FDone, M: "M1", Coder: "coder-1", Commits: 0})
	g.state("M1", Fixing)
	if a := g.has(ASendCoder, "M1"); a.Coder != "coder-1" || !strings.Contains(a.Text, "no commits") {
		t.Fatalf("%+v", a)
	}
	g.step(Fact{Kind: FDone, M: "M1", Coder: "coder-1", Commits: 2, Dirty: true, Head: "h"})
	g.state("M1", Fixing)
	if a := g.has(ASendCoder, "M1"); !strings.Contains(a.Text, "uncommitted") {
		t.Fatalf("%+v", a)
	}
	if r := g.m("M1").Rounds.Check; r != 2 {
		t.Fatalf("rounds %d", r)
	}
	g.step(Fact{Kind: FDone, M: "M1", Coder: "coder-1", Commits: 2, Head: "h"})
	g.state("M1", Checking)
	if a := g.has(ACheck, "M1"); a.Head != "h" || a.Merge {
		t.Fatalf("%+v", a)
	}
}

func TestTurnEndedAskedOnceThenTaken(t *testing.T) {
	g := newRig(t, 2, false, "M1::small")
	g.step(Fact{Kind: FDispatch, M: "M1"})
	g.step(Fact{Kind: FTurnEnded, M: "M1", Coder: "coder-1", Text: "all good"})
	g.state("M1", Building)
	if a := g.has(ASendCoder, "M1"); !strings.Contains(a.Text, Bin+" run done M1") {
		t.Fatalf("%+v", a)
	}
	g.step(Fact{Kind: FTurnEnded, M: "M1", Coder: "coder-1", Commits: 1, Head: "h"})
	g.state("M1", Checking)
	// The turn that called run done ends while the check runs: nothing happens.
	g.step(Fact{Kind: FTurnEnded, M: "M1", Coder: "coder-1"})
	g.state("M1", Checking)
	if len(g.out) != 0 {
		t.Fatalf("actions %v", g.out)
	}
}

func TestAskAndAnswer(t *testing.T) {
	g := newRig(t, 2, false, "M1::small")
	g.step(Fact{Kind: FDispatch, M: "M1"})
	if err := g.refused(Fact{Kind: FAnswer, M: "M1", Text: "x"}); !strings.Contains(err.Error(), "only a milestone whose coder asked") {
		t.Fatal(err)
	}
	g.step(Fact{Kind: FTurnEnded, M: "M1", Coder: "coder-1", Text: "QUESTION: reject the file or skip bad rows?"})
	g.state("M1", Asking)
	if a := g.has(ALead, "M1"); !strings.Contains(a.Text, "reject the file or skip bad rows?") || !strings.Contains(a.Text, Bin+" run answer demo M1") {
		t.Fatalf("%+v", a)
	}
	if err := g.refused(Fact{Kind: FAnswer, M: "M1", Text: "  "}); err == nil {
		t.Fatal("empty answer accepted")
	}
	g.step(Fact{Kind: FAnswer, M: "M1", Text: "skip empty rows"})
	g.state("M1", Asking) // until the coder's next turn ends
	if a := g.has(ASendCoder, "M1"); a.Coder != "coder-1" || !strings.Contains(a.Text, "skip empty rows") {
		t.Fatalf("%+v", a)
	}
	// run ask while fixing returns to fixing.
	g.step(Fact{Kind: FDone, M: "M1", Coder: "coder-1"})
	g.state("M1", Fixing)
	g.step(Fact{Kind: FAsk, M: "M1", Coder: "coder-1", Text: "which file?"})
	g.state("M1", Asking)
	g.step(Fact{Kind: FAnswer, M: "M1", Text: "a.go"})
	g.state("M1", Asking)
	g.step(Fact{Kind: FTurnEnded, M: "M1", Coder: "coder-1", Text: "working on a.go"})
	g.state("M1", Fixing)
}

// TestAnswerDoesNotRaceTheAskingTurn: the lead answers before the turn that asked
// has ended. That turn's end is not a turn without `run done` (no nudge, no round);
// the milestone is asking until the answer went out and the coder's next turn ends.
// A brief after a hand-on or a tier-up carries every question and answer so far.
func TestAnswerDoesNotRaceTheAskingTurn(t *testing.T) {
	g := newRig(t, 2, false, "M1::small")
	g.step(Fact{Kind: FDispatch, M: "M1"})
	g.step(Fact{Kind: FAsk, M: "M1", Coder: "coder-1", Text: "reject the file or skip bad rows?"})
	g.state("M1", Asking)
	g.step(Fact{Kind: FAnswer, M: "M1", Text: "skip bad rows"})
	g.state("M1", Asking)
	// The asking turn ends now, while the coder takes the answer up.
	g.step(Fact{Kind: FTurnEnded, M: "M1", Coder: "coder-1", Text: "asked; waiting"})
	g.state("M1", Building)
	if n := g.m("M1").Rounds.Check; n != 0 {
		t.Fatalf("the asking turn's end cost a check round (%d)", n)
	}
	// Before the answer, a turn end changes nothing either.
	g.step(Fact{Kind: FAsk, M: "M1", Coder: "coder-1", Text: "and empty lines?"})
	g.step(Fact{Kind: FTurnEnded, M: "M1", Coder: "coder-1", Text: "asked"})
	g.state("M1", Asking)
	g.hasNo(ASendCoder)
	g.step(Fact{Kind: FAnswer, M: "M1", Text: "skip them too"})
	// Its coder vanishes: the next coder's brief carries both questions and answers.
	g.step(Fact{Kind: FVanished, Coder: "coder-1"})
	b := g.has(ABrief, "M1")
	for _, want := range []string{"reject the file or skip bad rows?", "Answer: skip bad rows", "and empty lines?", "Answer: skip them too"} {
		if !strings.Contains(b.Text, want) {
			t.Fatalf("the brief after a hand-on lacks %q:\n%s", want, b.Text)
		}
	}
	// Out of check rounds: the fresh coder a tier up hears them too.
	coder := b.Coder
	g.step(Fact{Kind: FTurnEnded, M: "M1", Coder: coder, Text: "x"})
	var up *Action
	for i := 0; i < 10 && up == nil; i++ {
		g.step(Fact{Kind: FDone, M: "M1", Coder: g.m("M1").Coder})
		for _, a := range g.out {
			if a.Kind == ABrief && a.Tier == "medium" {
				up = &a
			}
		}
	}
	if up == nil || !strings.Contains(up.Text, "Answer: skip them too") {
		t.Fatalf("the brief a tier up: %+v", up)
	}
}

func TestCheckRoundsEscalateThenFail(t *testing.T) {
	g := newRig(t, 2, false, "M1::small")
	g.build("M1", "h1")
	g.step(Fact{Kind: FChecked, M: "M1", Head: "h1", Text: "FAIL x_test.go:3"})
	g.state("M1", Fixing)
	if a := g.has(ASendCoder, "M1"); a.Coder != "coder-1" || !strings.Contains(a.Text, "FAIL x_test.go:3") {
		t.Fatalf("%+v", a)
	}
	// A check result for an older commit is ignored.
	g.step(Fact{Kind: FDone, M: "M1", Coder: "coder-1", Commits: 2, Head: "h2"})
	g.step(Fact{Kind: FChecked, M: "M1", Head: "h1", OK: true})
	g.state("M1", Checking)
	g.step(Fact{Kind: FChecked, M: "M1", Head: "h2"})
	g.state("M1", Fixing)
	g.step(Fact{Kind: FDone, M: "M1", Coder: "coder-1", Commits: 3, Head: "h3"})
	g.step(Fact{Kind: FChecked, M: "M1", Head: "h3"})
	// Third failure: out of rounds, one fresh round a tier up with another coder.
	g.state("M1", Medium(t, g))
	b := g.has(ABrief, "M1")
	if b.Tier != "medium" || b.Coder == "coder-1" || !strings.Contains(b.Text, "one fresh round") {
		t.Fatalf("escalation brief %+v", b)
	}
	g.step(Fact{Kind: FDone, M: "M1", Coder: b.Coder, Commits: 4, Head: "h4"})
	g.step(Fact{Kind: FChecked, M: "M1", Head: "h4"})
	g.state("M1", Failed)
	if a := g.has(ALead, "M1"); !strings.Contains(a.Text, "failed") || !strings.Contains(a.Text, "run retry demo M1 --tier") {
		t.Fatalf("%+v", a)
	}
	// The lead retries it at high.
	g.step(Fact{Kind: FRetry, M: "M1", Tier: "high"})
	g.state("M1", Building)
	if b := g.has(ABrief, "M1"); b.Tier != "high" {
		t.Fatalf("%+v", b)
	}
	if m := g.m("M1"); m.Rounds != (Rounds{}) || m.TierUp {
		t.Fatalf("retry keeps rounds %+v", m)
	}
}

// TestRetriedReportTakenOnce: `orcr run done` and `run ask` call again when the
// server went during the call (killed after the report was logged, before it
// answered). The retry carries the same call: it is a note, not a second report. A
// second done taken after the first one's check failed checked the same commit
// again, and each kill during the call cost the milestone a check round
// (TestRunSurvivesKill9: M2 out of rounds after 20 kills under load).
func TestRetriedReportTakenOnce(t *testing.T) {
	g := newRig(t, 2, false, "M1::small")
	g.step(Fact{Kind: FDispatch, M: "M1"})
	done := Fact{Kind: FDone, M: "M1", Coder: g.has(ABrief, "M1").Coder, Commits: 1, Head: "h1", Call: "c1"}
	g.step(done)
	g.state("M1", Checking)
	g.step(done) // while checking
	g.state("M1", Checking)
	g.step(Fact{Kind: FChecked, M: "M1", Head: "h1", Text: "FAIL"})
	g.state("M1", Fixing)
	for range 3 { // after the check failed: the server went three times during the call
		g.step(done)
		g.state("M1", Fixing)
		g.hasNo(ACheck)
		g.has(ANote, "")
	}
	if r := g.m("M1").Rounds; r.Check != 1 {
		t.Fatalf("rounds %+v after one failed check and retries of its done", r)
	}
	// The coder's next report is a new call: taken.
	g.step(Fact{Kind: FDone, M: "M1", Coder: done.Coder, Commits: 2, Head: "h2", Call: "c2"})
	g.state("M1", Checking)
	if a := g.has(ACheck, "M1"); a.Head != "h2" {
		t.Fatalf("check %+v", a)
	}
	// A question asked through a restart is asked once.
	g.step(Fact{Kind: FChecked, M: "M1", Head: "h2", Text: "FAIL"})
	ask := Fact{Kind: FAsk, M: "M1", Coder: done.Coder, Text: "which way?", Call: "c3"}
	g.step(ask)
	g.state("M1", Asking)
	g.step(Fact{Kind: FAnswer, M: "M1", Text: "this way"})
	g.step(ask)
	if qa := g.m("M1").QA; len(qa) != 2 {
		t.Fatalf("QA after a retried ask: %q", qa)
	}
	// Reports without a call (an older CLI) are taken each time, as before.
	g.step(Fact{Kind: FDone, M: "M1", Coder: done.Coder, Commits: 2, Head: "h2"})
	g.state("M1", Checking)
}

// Medium checks the escalation went straight to a coder: the state after an
// escalation with a free pool place is fixing.
func Medium(t *testing.T, g *rig) State {
	if m := g.m("M1"); m.TierNow != "medium" || !m.TierUp {
		t.Fatalf("escalated to %s (tierUp %v)", m.TierNow, m.TierUp)
	}
	return Fixing
}

func TestMergeOneAtATime(t *testing.T) {
	g := newRig(t, 2, false, "A::small", "B::small", "C:A+B:small")
	g.build("A", "a1")
	g.build("B", "b1")
	g.step(Fact{Kind: FChecked, M: "A", Head: "a1", OK: true})
	g.state("A", Merging)
	if a := g.has(AMergeIn, "A"); a.Head != "a1" || a.Base != "f0" {
		t.Fatalf("%+v", a)
	}
	g.step(Fact{Kind: FChecked, M: "B", Head: "b1", OK: true})
	g.state("B", Merging)
	g.hasNo(AMergeIn) // A is merging
	// A's branch already contains the feature tip: no re-check, straight to advance.
	g.step(Fact{Kind: FMergedIn, M: "A", Head: "a1"})
	if a := g.has(AAdvance, "A"); a.Head != "a1" || a.Base != "f0" {
		t.Fatalf("%+v", a)
	}
	// B's facts while A merges are ignored.
	g.step(Fact{Kind: FMergedIn, M: "B", Head: "b2"})
	g.has(ANote, "")
	g.step(Fact{Kind: FAdvanced, M: "A", Head: "f1"})
	g.state("A", Merged)
	if g.r.Feature != "f1" {
		t.Fatalf("feature %s", g.r.Feature)
	}
	if a := g.has(AMergeIn, "B"); a.Base != "f1" || a.Head != "b1" {
		t.Fatalf("B merge %+v", a)
	}
	g.state("C", Planned)
	// B: the feature tip merges in as a new commit, which is checked again.
	g.step(Fact{Kind: FMergedIn, M: "B", Head: "b2"})
	if a := g.has(ACheck, "B"); !a.Merge || a.Head != "b2" {
		t.Fatalf("%+v", a)
	}
	g.hasNo(AAdvance)
	g.step(Fact{Kind: FChecked, M: "B", Head: "b2", Merge: true, OK: true})
	if a := g.has(AAdvance, "B"); a.Head != "b2" || a.Base != "f1" {
		t.Fatalf("%+v", a)
	}
	g.step(Fact{Kind: FAdvanced, M: "B", Head: "f2"})
	g.state("B", Merged)
	g.state("C", Ready)
	if a := g.has(ALead, "C"); !strings.Contains(a.Text, "C is ready") {
		t.Fatalf("%+v", a)
	}
}

func TestMergeRecheckFailsAndConflicts(t *testing.T) {
	g := newRig(t, 2, false, "A::small", "B::small")
	g.build("A", "a1")
	g.step(Fact{Kind: FChecked, M: "A", Head: "a1", OK: true})
	g.step(Fact{Kind: FMergedIn, M: "A", Head: "a2"})
	g.step(Fact{Kind: FChecked, M: "A", Head: "a2", Merge: true, Text: "boom"})
	g.state("A", Fixing)
	if len(g.r.MergeQueue) != 0 {
		t.Fatalf("queue %v", g.r.MergeQueue)
	}
	// The coder was released at the check; the fix goes to the author, who is free.
	if a := g.toCoder("A"); a.Coder != "coder-1" {
		t.Fatalf("fix went to %+v", a)
	}
	g.step(Fact{Kind: FDone, M: "A", Coder: "coder-1", Commits: 2, Head: "a3"})
	g.step(Fact{Kind: FChecked, M: "A", Head: "a3", OK: true})
	g.step(Fact{Kind: FConflict, M: "A", Paths: []string{"go.mod", "x.go"}})
	g.state("A", Fixing)
	if a := g.has(ASendCoder, "A"); !strings.Contains(a.Text, "go.mod, x.go") {
		t.Fatalf("%+v", a)
	}
	g.step(Fact{Kind: FDone, M: "A", Coder: "coder-1", Commits: 3, Head: "a4"})
	g.step(Fact{Kind: FChecked, M: "A", Head: "a4", OK: true})
	g.step(Fact{Kind: FConflict, M: "A", Paths: []string{"x.go"}})
	g.state("A", Fixing)
	if m := g.m("A"); !m.TierUp || m.TierNow != "medium" {
		t.Fatalf("second conflict should escalate: %+v", m)
	}
}

func TestReview(t *testing.T) {
	g := newRig(t, 2, true, "A::small", "B::small")
	g.build("A", "a1")
	g.build("B", "b1")
	g.step(Fact{Kind: FChecked, M: "A", Head: "a1", OK: true})
	g.state("A", Reviewing)
	g.has(AReview, "A")
	g.step(Fact{Kind: FChecked, M: "B", Head: "b1", OK: true})
	g.hasNo(AReview) // one reviewer
	// An approval that lists blockers is not approval.
	g.step(Fact{Kind: FReviewed, M: "A", Head: "a1", Verdict: &Verdict{Decision: "approve", Blockers: []Blocker{{File: "a.go", Line: 3, What: "nil deref", Why: "crashes"}}}})
	g.state("A", Fixing)
	if a := g.toCoder("A"); !strings.Contains(a.Text, "a.go:3 — nil deref — crashes") {
		t.Fatalf("%+v", a)
	}
	g.has(AReview, "B")
	// Silence: asked once more, then held.
	g.step(Fact{Kind: FReviewed, M: "B", Head: "b1", Verdict: &Verdict{}})
	g.state("B", Reviewing)
	g.has(AReview, "B")
	g.step(Fact{Kind: FReviewed, M: "B", Head: "b1"})
	g.state("B", Held)
	if !strings.Contains(g.m("B").Reason, "never approval") {
		t.Fatal(g.m("B").Reason)
	}
	// A fixed and approved → merging.
	g.step(Fact{Kind: FDone, M: "A", Coder: g.m("A").Coder, Commits: 2, Head: "a2"})
	g.step(Fact{Kind: FChecked, M: "A", Head: "a2", OK: true})
	g.has(AReview, "A")
	g.step(Fact{Kind: FReviewed, M: "A", Head: "a2", Verdict: &Verdict{Decision: "approve"}})
	g.state("A", Merging)
	g.has(AMergeIn, "A")
}

func TestBenchedHandsOn(t *testing.T) {
	g := newRig(t, 1, false, "M1::small")
	g.step(Fact{Kind: FDispatch, M: "M1"})
	reset := g.now.Add(20 * time.Minute)
	g.step(Fact{Kind: FLimited, Coder: "coder-1", Until: reset})
	if a := g.has(ABenchCoder, ""); a.Coder != "coder-1" || !a.Until.Equal(reset) {
		t.Fatalf("%+v", a)
	}
	// The benched coder does not hold the one place: coder-2 takes the branch on.
	g.state("M1", Building)
	b := g.has(ABrief, "M1")
	if b.Coder != "coder-2" || !strings.Contains(b.Text, "branch") {
		t.Fatalf("%+v", b)
	}
	// A late done from coder-1 is stale.
	g.step(Fact{Kind: FDone, M: "M1", Coder: "coder-1", Commits: 1, Head: "h"})
	g.state("M1", Building)
	g.has(ANote, "")
	// coder-2 vanishes: benched 10 minutes; nobody is free (coder-1 benched till reset).
	g.step(Fact{Kind: FVanished, Coder: "coder-2"})
	g.state("M1", Benched)
	if a := g.has(ABenchCoder, ""); !a.Until.Equal(g.now.Add(VanishedBench)) {
		t.Fatalf("%+v", a)
	}
	if w := g.r.NextWake(g.now); !w.Equal(g.now.Add(VanishedBench)) {
		t.Fatalf("next wake %v", w)
	}
	g.now = g.now.Add(VanishedBench)
	g.step(Fact{Kind: FTick})
	g.state("M1", Building)
	if b := g.has(ABrief, "M1"); b.Coder != "coder-2" {
		t.Fatalf("%+v", b)
	}
	// Unknown reset: 60 minutes.
	g.step(Fact{Kind: FLimited, Coder: "coder-2"})
	if a := g.has(ABenchCoder, ""); !a.Until.Equal(g.now.Add(LimitBench)) {
		t.Fatalf("%+v", a)
	}
}

func TestMovedByHandHolds(t *testing.T) {
	g := newRig(t, 2, false, "M1::small")
	g.build("M1", "h")
	g.step(Fact{Kind: FChecked, M: "M1", Head: "h", OK: true})
	g.step(Fact{Kind: FMergedIn, M: "M1", Head: "h"})
	g.step(Fact{Kind: FMoved, M: "M1", Head: "zzz"})
	g.state("M1", Held)
	if a := g.has(ANotify, "M1"); !strings.Contains(a.Text, "moved it by hand") {
		t.Fatalf("%+v", a)
	}
	g.step(Fact{Kind: FRetry, M: "M1"})
	g.state("M1", Building)
}

func TestHoldRetryStop(t *testing.T) {
	g := newRig(t, 2, false, "A::small", "B::small")
	g.step(Fact{Kind: FDispatch, M: "A"})
	g.step(Fact{Kind: FHold, M: "A", Text: "wait for the API"})
	g.state("A", Held)
	if g.r.CoderOf("coder-1") != "" {
		t.Fatal("held milestone keeps its coder")
	}
	if err := g.refused(Fact{Kind: FDispatch, M: "A"}); !strings.Contains(err.Error(), "retry") {
		t.Fatal(err)
	}
	if err := g.refused(Fact{Kind: FRetry, M: "B"}); !errors.Is(err, ErrRefused) {
		t.Fatal(err)
	}
	g.step(Fact{Kind: FRetry, M: "A"})
	g.state("A", Building)
	g.step(Fact{Kind: FStop})
	g.state("A", Held)
	g.state("B", Held)
	g.has(AStopCoder, "")
	g.step(Fact{Kind: FTick})
	g.hasNo(ABrief)
}

func TestAutoStartAfter15Minutes(t *testing.T) {
	g := newRig(t, 2, false, "A::small")
	g.now = t0.Add(AutoStartAfter - 2*time.Second)
	g.step(Fact{Kind: FTick})
	g.state("A", Ready)
	g.step(Fact{Kind: FTick})
	g.state("A", Building)
	g.has(ABrief, "A")
}

func TestFinishAndFollowUp(t *testing.T) {
	g := newRig(t, 2, false, "A::small")
	g.build("A", "a1")
	g.step(Fact{Kind: FChecked, M: "A", Head: "a1", OK: true})
	g.step(Fact{Kind: FMergedIn, M: "A", Head: "a1"})
	g.step(Fact{Kind: FAdvanced, M: "A", Head: "f1"})
	if a := g.has(AFinalCheck, ""); a.Head != "f1" {
		t.Fatalf("%+v", a)
	}
	g.step(Fact{Kind: FFinalCheck, OK: true})
	g.has(ASummary, "")
	if g.r.Finish != "done" {
		t.Fatal(g.r.Finish)
	}
	if err := g.refused(Fact{Kind: FFollowUp, M: "A"}); err == nil {
		t.Fatal("empty follow-up accepted")
	}
	g.step(Fact{Kind: FFollowUp, M: "A", Text: "also trim whitespace"})
	g.state("A", Fixing)
	if a := g.has(ASendCoder, "A"); a.Coder != "coder-1" || !strings.Contains(a.Text, "trim whitespace") {
		t.Fatalf("follow-up goes to the coder who built it: %+v", a)
	}
	if m := g.m("A"); m.Spent[Checking] <= 0 || m.Spent[Building] <= 0 {
		t.Fatalf("time accounting %+v", m.Spent)
	}
}

// TestFollowUpChecksAndSummarisesAgain: `run fix` after the run is done puts the run
// back to work (its header no longer says done), and when the follow-up merges the
// final check runs on the new tip and the summary is written again. Before, Finish
// stayed "done": no final check, and summary.md kept the old run.
func TestFollowUpChecksAndSummarisesAgain(t *testing.T) {
	g := newRig(t, 1, false, "A::small")
	g.build("A", "a1")
	g.step(Fact{Kind: FChecked, M: "A", Head: "a1", OK: true})
	g.step(Fact{Kind: FMergedIn, M: "A", Head: "a1"})
	g.step(Fact{Kind: FAdvanced, M: "A", Head: "f1"})
	g.step(Fact{Kind: FFinalCheck, OK: true})
	g.step(Fact{Kind: FFollowUp, M: "A", Text: "also trim whitespace"})
	if g.r.Finish != "" || !g.r.Open() {
		t.Fatalf("during the follow-up the run is %q (open %v), want at work", g.r.Finish, g.r.Open())
	}
	g.step(Fact{Kind: FDone, M: "A", Coder: "coder-1", Commits: 1, Head: "a2"})
	g.step(Fact{Kind: FChecked, M: "A", Head: "a2", OK: true})
	g.step(Fact{Kind: FMergedIn, M: "A", Head: "a2"})
	g.step(Fact{Kind: FAdvanced, M: "A", Head: "f2"})
	if a := g.has(AFinalCheck, ""); a.Head != "f2" {
		t.Fatalf("the final check after the follow-up: %+v", a)
	}
	g.step(Fact{Kind: FFinalCheck, OK: true})
	g.has(ASummary, "")
}

// TestLeadTurnWithoutDispatch: a turn of the lead that ends with no dispatch while
// milestones it was told are ready wait marks them at once (and tells the user once);
// a turn that dispatched, a milestone that became ready after the lead was last
// written to, and a turn end taken in already mark nothing.
func TestLeadTurnWithoutDispatch(t *testing.T) {
	g := newRig(t, 1, false, "A::small", "B::small", "C:A:small")
	told := g.now.Add(time.Second)
	turn := t0.Add(30 * time.Second)
	g.step(Fact{Kind: FLeadTurn, TurnAt: turn, Until: told})
	if a := g.has(ANotify, "A"); !strings.Contains(a.Text, "A, B ready, not dispatched: the lead's turn ended without `orcr run dispatch`") ||
		!strings.Contains(a.Text, "`orcr run dispatch demo A B` to start now") {
		t.Fatalf("notify %q", a.Text)
	}
	if a, b := g.m("A"), g.m("B"); !a.Passed.Equal(turn) || !b.Passed.Equal(turn) || g.m("C").Passed != (time.Time{}) {
		t.Fatalf("passed: A %v B %v C %v", a.Passed, b.Passed, g.m("C").Passed)
	}
	// The same turn end again (a second event for it) changes nothing.
	g.step(Fact{Kind: FLeadTurn, TurnAt: turn, Until: told})
	g.hasNo(ANotify)
	// A later turn without dispatch does not tell the user again.
	g.step(Fact{Kind: FLeadTurn, TurnAt: turn.Add(time.Minute), Until: told})
	g.hasNo(ANotify)
	// A dispatch in the next turn: that turn marks nothing, and A is on its way.
	g.step(Fact{Kind: FDispatch, M: "A"})
	g.state("A", Building)
	g.step(Fact{Kind: FLeadTurn, TurnAt: turn.Add(2 * time.Minute), Until: told})
	g.hasNo(ANotify)
	if g.r.Dispatched {
		t.Fatal("the turn end did not reset Dispatched")
	}

	// A milestone that became ready after the lead was last written to is not one
	// the lead left: it has not heard of it yet.
	g = newRig(t, 1, false, "A::small")
	g.step(Fact{Kind: FLeadTurn, TurnAt: t0.Add(time.Minute), Until: t0.Add(-time.Second)})
	g.hasNo(ANotify)
	if !g.m("A").Passed.IsZero() {
		t.Fatal("A marked before the lead heard it is ready")
	}
}

// TestUndispatchedView: what the run's view says of a milestone a turn of the lead
// left undispatched, with the auto-start's time left rounded up to the minute.
func TestUndispatchedView(t *testing.T) {
	m := Milestone{ID: "M1", State: Ready, ReadyAt: t0, Passed: t0.Add(30 * time.Second)}
	w, says := undispatched("csv", m, false, t0.Add(50*time.Second))
	if want := "M1 ready, not dispatched: the lead's turn ended without `orcr run dispatch` (auto-start in 15m; `orcr run dispatch csv M1` to start it now)"; says != want {
		t.Fatalf("says %q, want %q", says, want)
	}
	if w != "the lead's dispatch: its turn ended without one (auto-start in 15m)" {
		t.Fatalf("waits %q", w)
	}
	if _, says := undispatched("csv", m, false, t0.Add(AutoStartAfter-time.Minute+time.Second)); !strings.Contains(says, "auto-start within a minute") {
		t.Fatalf("near the auto-start: %q", says)
	}
	for name, m := range map[string]Milestone{
		"dispatched": {ID: "M1", State: Ready, Want: true, ReadyAt: t0, Passed: t0},
		"not passed": {ID: "M1", State: Ready, ReadyAt: t0},
		"building":   {ID: "M1", State: Building, ReadyAt: t0, Passed: t0},
	} {
		if w, says := undispatched("csv", m, false, t0); w != "" || says != "" {
			t.Errorf("%s: %q %q", name, w, says)
		}
	}
	if _, says := undispatched("csv", m, true, t0); says != "" {
		t.Errorf("a run without a lead: %q", says)
	}
}

// TestLeadHearsOfTheFirstReadyOnce: at the start the lead's prompt names the ready
// milestones, and its inbox does not say it again — delivered after the first turn,
// "M1 is ready" made the lead dispatch M1 a second time, and every run logged
// `refused dispatch … under way already`.
func TestLeadHearsOfTheFirstReadyOnce(t *testing.T) {
	p, err := planning.Parse([]byte(planText("M1::small", "M2::small", "M3:M1:small")), planning.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := Begin("demo", p, 2, false, true, "b0", t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Inbox) != 0 {
		t.Fatalf("the lead's inbox at the start: %q", r.Inbox)
	}
	if prompt := LeadPrompt(Record{Run: r}); !strings.Contains(prompt, "M1, M2 ready: dispatch with `"+Bin+" run dispatch demo M1 M2`") {
		t.Fatalf("the lead's prompt does not name the ready milestones:\n%s", prompt)
	}
	// What comes later is delivered as before.
	r, _, _ = Step(r, Fact{Kind: FBranched, Head: "f0"}, t0.Add(time.Second))
	r, _, _ = Step(r, Fact{Kind: FLeadTurn, TurnAt: t0.Add(2 * time.Second)}, t0.Add(2*time.Second))
	r, out, err := Step(r, Fact{Kind: FHold, M: "M2", Text: "later"}, t0.Add(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(out, func(a Action) bool { return a.Kind == ADeliver && strings.Contains(a.Text, "M2 is held") }) {
		t.Fatalf("a later message is not delivered: %v (inbox %q)", out, r.Inbox)
	}
}

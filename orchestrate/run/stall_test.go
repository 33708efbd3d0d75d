package run

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
	"orcr/testutil/wait"
)

// stallRig is a Service over fake agents with a real repository, a real store and
// the plan file of run demo, for the tests of runs that must not stall.
func stallRig(t *testing.T, r Run, initial ...Action) (*Service, *fakeAgents, Record) {
	t.Helper()
	ctx := context.Background()
	repo, g := newRepo(t)
	feat, err := g.EnsureBranch(ctx, FeatureBranch("demo"), "main")
	if err != nil {
		t.Fatal(err)
	}
	r.Feature = feat
	plan := filepath.Join(repo, ".orcr", "plans", "demo.md")
	if err := os.MkdirAll(filepath.Dir(plan), 0o755); err != nil {
		t.Fatal(err)
	}
	var specs []string
	for _, m := range r.Milestones {
		specs = append(specs, m.ID+":"+strings.Join(m.Depends, "+")+":"+m.Tier)
	}
	if err := os.WriteFile(plan, []byte(planText(specs...)), 0o644); err != nil {
		t.Fatal(err)
	}
	fa := &fakeAgents{agents: map[string]wire.Agent{}}
	s := newFakeService(t, fa, t.TempDir())
	s.ctx, s.cancel = context.WithCancel(ctx)
	t.Cleanup(func() { _ = s.Close() })
	rec, err := s.runs.Create(ctx, Record{Run: r, Repo: repo, PlanFile: plan, Check: "true", Coder: "claude:m"}, initial, t0)
	if err != nil {
		t.Fatal(err)
	}
	return s, fa, rec
}

// TestRetryToTheSameCoderIsANewBrief: `run retry` of a milestone whose coder is
// still there (idle, in the milestone's worktree, started with its brief) gives it
// the new brief — a fresh agent — and is not taken for the old brief performed again
// after a restart. The old brief performed again starts nothing.
func TestRetryToTheSameCoderIsANewBrief(t *testing.T) {
	ctx := context.Background()
	r := newRun(t, 1, false, "M1::small")
	s, fa, rec := stallRig(t, r)
	first := Pending{Seq: 2, I: 0, Action: Action{Kind: ABrief, M: "M1", Coder: "coder-1", Tier: "small"}}
	if _, err := s.brief(ctx, rec, first); err != nil {
		t.Fatal(err)
	}
	rec, _ = s.runs.Get(ctx, "demo")
	id := rec.Agents["coder-1"]
	a := fa.agents[id]
	a.State, a.StateAt = wire.StateDone, time.Now()
	fa.agents[id] = a
	// The same brief again (a restart before its "did" was logged): nothing new.
	if _, err := s.brief(ctx, rec, first); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(fa.calls, ", "); got != "run runs/demo/coder-1" {
		t.Fatalf("the brief performed again: calls %q", got)
	}
	// The retry's brief: a new one, so the coder gets it.
	retry := Pending{Seq: 9, I: 0, Action: Action{Kind: ABrief, M: "M1", Coder: "coder-1", Tier: "small", Text: "Earlier work on this milestone is on its branch; continue from it."}}
	if _, err := s.brief(ctx, rec, retry); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(fa.calls, ", "); got != "run runs/demo/coder-1, kill "+id+", run runs/demo/coder-1" {
		t.Fatalf("the retry's brief did not reach the coder: calls %q", got)
	}
	rec, _ = s.runs.Get(ctx, "demo")
	if n := rec.Agents["coder-1"]; n == id || !strings.Contains(fa.agents[n].Prompt, "continue from it") {
		t.Fatalf("coder-1 is %s with prompt %q", n, fa.agents[n].Prompt)
	}
}

// TestPreviousTurnIsNotTheNewMilestones: one coder, M2 given to it right after M1
// left it. The M1 agent's turn ends (settling after `run done`) while M2's brief is
// still to go out, and again after M2's agent was started: neither counts for M2.
func TestPreviousTurnIsNotTheNewMilestones(t *testing.T) {
	ctx := context.Background()
	r := newRun(t, 1, false, "M1::small", "M2::small")
	var err error
	for _, f := range []Fact{{Kind: FDispatch, M: "M1"}, {Kind: FDispatch, M: "M2"}, {Kind: FHold, M: "M1", Text: "later"}} {
		if r, _, err = Step(r, f, t0); err != nil {
			t.Fatal(err)
		}
	}
	if r.CoderOf("coder-1") != "M2" {
		t.Fatalf("coder-1 works on %q", r.CoderOf("coder-1"))
	}
	s, fa, rec := stallRig(t, r, Action{Kind: ABrief, M: "M2", Coder: "coder-1", Tier: "small"})
	// The M1 agent, briefed before, and M2's brief in the outbox.
	fa.agents["old"] = wire.Agent{ID: "old", Path: AgentPath("demo", "coder-1"), State: wire.StateWorking, StateAt: time.Now()}
	rec, err = s.runs.Update(ctx, "demo", func(r *Record) {
		r.Agents = map[string]string{"coder-1": "old"}
		r.Sent = map[string]time.Time{"coder-1": time.Now().Add(-time.Minute)}
	})
	if err != nil {
		t.Fatal(err)
	}
	turnEnds := func() int {
		es, _ := s.runs.Events(ctx, "demo", 0, 0)
		n := 0
		for _, e := range es {
			if e.Fact != nil && e.Fact.Kind == FTurnEnded {
				n++
			}
		}
		return n
	}
	old := fa.agents["old"]
	old.State, old.StateAt = wire.StateDone, time.Now()
	s.onCoder(ctx, rec, "coder-1", old)
	if n := turnEnds(); n != 0 {
		t.Fatalf("the M1 agent's turn end counted for M2 before M2's brief went out (%d turn ends)", n)
	}
	// M2's agent is started; the old agent's turn end seen late is not its.
	if _, err := s.runs.Did(ctx, "demo", rec.Outbox[0], "", t0); err != nil {
		t.Fatal(err)
	}
	rec, _ = s.runs.Update(ctx, "demo", func(r *Record) { r.Agents["coder-1"] = "new" })
	fa.agents["new"] = wire.Agent{ID: "new", Path: AgentPath("demo", "coder-1"), State: wire.StateWorking, StateAt: time.Now()}
	old.StateAt = time.Now()
	s.onCoder(ctx, rec, "coder-1", old)
	if n := turnEnds(); n != 0 {
		t.Fatalf("the M1 agent's turn end counted for M2 after M2's brief (%d turn ends)", n)
	}
	// M2's own agent's turn end counts.
	nw := fa.agents["new"]
	nw.State, nw.StateAt = wire.StateDone, time.Now().Add(time.Millisecond)
	s.onCoder(ctx, rec, "coder-1", nw)
	if n := turnEnds(); n != 1 {
		t.Fatalf("M2's agent's turn end: %d turn ends, want 1", n)
	}
}

// TestLeadLostIsRestartedOnceAndTold: a lead that ends while the run needs it is
// restarted once with where the run is and the messages it has not taken up, and
// the user is told; ended again, the user is the lead. One that went with the server
// does not use up the restart. `run stop` ends the lead and the reviewer.
func TestLeadLostIsRestartedOnceAndTold(t *testing.T) {
	g := newRig(t, 2, true, "M1::small", "M2:M1:small")
	g.r.Lead = true
	g.step(Fact{Kind: FDispatch, M: "M1"})
	g.step(Fact{Kind: FAsk, M: "M1", Coder: "coder-1", Text: "which format?"})
	if len(g.r.Inbox) == 0 {
		t.Fatal("the question is not in the lead's inbox")
	}
	g.step(Fact{Kind: FLeadLost, Text: "its agent killed"})
	start := g.has(AStartLead, "")
	for _, want := range []string{"again", "M1 asking (coder-1)", "M2 planned", "which format?", "run answer"} {
		if !strings.Contains(start.Text, want) {
			t.Fatalf("the restarted lead is not told %q: %s", want, start.Text)
		}
	}
	if n := g.has(ANotify, ""); !strings.Contains(n.Text, "the lead of run demo ended (its agent killed); restarted") {
		t.Fatalf("the user is told %q", n.Text)
	}
	// The new lead's first turn takes the messages up.
	g.step(Fact{Kind: FLeadWorking, TurnAt: g.now.Add(time.Second)})
	if len(g.r.Inbox) != 0 || g.r.LeadSent != nil {
		t.Fatalf("inbox %q, on its way %+v after the new lead's turn started", g.r.Inbox, g.r.LeadSent)
	}
	// Gone with the server: restarted again, it does not count.
	g.step(Fact{Kind: FLeadLost, Text: "it ended while the server was down", OK: true})
	g.has(AStartLead, "")
	// Ended again on its own: the user is the lead from now on.
	g.step(Fact{Kind: FLeadLost, Text: "its agent exited"})
	for _, a := range g.out {
		if a.Kind == AStartLead {
			t.Fatal("the lead was restarted twice")
		}
	}
	if n := g.has(ANotify, ""); !strings.Contains(n.Text, "you are the lead now") || g.r.Lead {
		t.Fatalf("told %q; lead %v", n.Text, g.r.Lead)
	}
	g.step(Fact{Kind: FAnswer, M: "M1", Text: "csv"})
	g.step(Fact{Kind: FHold, M: "M1", Text: "wait"})
	if n := g.has(ANotify, ""); !strings.Contains(n.Text, "M1 is held") {
		t.Fatalf("what the lead would hear does not reach the user: %+v", g.out)
	}

	// `run stop` ends the lead and the reviewer with the coders.
	h := newRig(t, 2, true, "M1::small")
	h.r.Lead = true
	h.step(Fact{Kind: FDispatch, M: "M1"})
	h.step(Fact{Kind: FStop})
	stopped := map[string]bool{}
	for _, a := range h.out {
		if a.Kind == AStopCoder {
			stopped[a.Coder] = true
		}
	}
	if !stopped["lead"] || !stopped["reviewer"] || !stopped["coder-1"] {
		t.Fatalf("run stop stopped %v", stopped)
	}
	// A stopped run's lead that ends is not restarted.
	h.step(Fact{Kind: FLeadLost, Text: "its agent killed"})
	h.hasNo(AStartLead)
}

// TestSelfLeadResumedLeadsAgain: the user's own session that leads by --lead self
// ended twice (the user became the lead) and is resumed: it is the lead again, told
// where the run is with the messages not taken up, which count as on their way; a
// stopped run takes no lead back.
func TestSelfLeadResumedLeadsAgain(t *testing.T) {
	g := newRig(t, 2, true, "M1::small", "M2:M1:small")
	g.r.Lead = true
	g.step(Fact{Kind: FLeadLost, Text: "its agent killed"})
	g.step(Fact{Kind: FLeadLost, Text: "its agent killed"})
	if g.r.Lead {
		t.Fatal("ended twice, the session still leads")
	}
	g.step(Fact{Kind: FDispatch, M: "M1"})
	g.step(Fact{Kind: FAsk, M: "M1", Coder: "coder-1", Text: "which format?"})
	g.step(Fact{Kind: FLeadResumed, Text: "your session me was resumed as 0193"})
	start := g.has(AStartLead, "")
	for _, want := range []string{"again", "resumed as 0193", "M1 asking (coder-1)"} {
		if !strings.Contains(start.Text, want) {
			t.Fatalf("the resumed lead is not told %q: %s", want, start.Text)
		}
	}
	if !g.r.Lead || g.r.LeadRestarts != 0 || g.r.LeadIdle {
		t.Fatalf("lead %v restarts %d idle %v", g.r.Lead, g.r.LeadRestarts, g.r.LeadIdle)
	}
	// What it hears from now on goes to its inbox, not to the user.
	g.step(Fact{Kind: FHold, M: "M1", Text: "wait"})
	if len(g.r.Inbox) == 0 {
		t.Fatalf("the resumed lead's inbox is empty: %+v", g.out)
	}
	g.step(Fact{Kind: FLeadWorking, TurnAt: g.now.Add(time.Second)})
	g.step(Fact{Kind: FLeadLost, Text: "its agent exited"})
	g.has(AStartLead, "") // its one restart is its own again

	h := newRig(t, 2, true, "M1::small")
	h.r.Lead = true
	h.step(Fact{Kind: FStop})
	h.step(Fact{Kind: FLeadResumed, Text: "resumed"})
	h.hasNo(AStartLead)
}

// Resume is the kernel's agent.resume for these tests: the fake agents keep no
// sessions, so it fails and a new agent starts.
func (fakeKernel) Resume(context.Context, wire.ResumeParams) (wire.Agent, error) {
	return wire.Agent{}, wire.Errorf(wire.CodeNotFound, "no session")
}

// TestKilledLeadIsRestarted: the lead's agent is killed under a running run: the
// autopilot starts a new lead at the run's lead path with where the run is, and a
// run.notify tells the user.
func TestKilledLeadIsRestarted(t *testing.T) {
	ctx := context.Background()
	r := newRun(t, 1, false, "M1::small")
	r.Lead = true
	s, fa, rec := stallRig(t, r)
	fa.agents["l1"] = wire.Agent{ID: "l1", Path: AgentPath("demo", "lead"), State: wire.StateKilled, StateAt: time.Now()}
	rec, err := s.runs.Update(ctx, "demo", func(r *Record) {
		r.Lead = "claude:m"
		r.Agents = map[string]string{"lead": "l1"}
	})
	if err != nil {
		t.Fatal(err)
	}
	s.onAgent(ctx, "demo", "lead", fa.agents["l1"])
	wait.For(t, 10*time.Second, "a new lead", func() bool {
		rec, _ := s.runs.Get(ctx, "demo")
		return rec.Agents["lead"] != "l1" && rec.Agents["lead"] != ""
	})
	rec, _ = s.runs.Get(ctx, "demo")
	if p := fa.agents[rec.Agents["lead"]].Prompt; !strings.Contains(p, "You are the lead of orcr run demo") || !strings.Contains(p, "again") || !strings.Contains(p, "M1 ready") {
		t.Fatalf("the new lead's prompt: %q", p)
	}
	es, _ := s.runs.Events(ctx, "demo", 0, 0)
	told := false
	for _, e := range es {
		for _, a := range e.Actions {
			if a.Kind == ANotify && strings.Contains(a.Text, "restarted once") {
				told = true
			}
		}
	}
	if !told {
		t.Fatal("the user was not told the lead was restarted")
	}
}

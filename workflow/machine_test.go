package workflow

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

const threeSteps = `[vars]
prefix = "job"
[[steps]]
name = "pick"
provider = "shell"
argv = ["pick"]
outputs = { items = "list", count = "int" }
[[steps]]
name = "work"
provider = "shell"
for_each = "steps.pick.items"
max_parallel = 2
when = "steps.pick.count > 0"
argv = ["work", "{{vars.prefix}}-{{item}}"]
outputs = { name = "string" }
[[steps]]
name = "sum"
provider = "shell"
argv = ["sum", "{{steps.work.name}}"]
outputs = { all = "string" }
`

type rig struct {
	t   *testing.T
	r   Run
	now time.Time
	n   int // agents started
}

func newRig(t *testing.T, src string) *rig {
	t.Helper()
	d, err := Parse("w", "w.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	g := &rig{t: t, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	g.r = Run{ID: "w-1", Workflow: "w", Def: *d, Vars: d.Vars, Dir: "/out"}
	g.step(Fact{Kind: FBegin})
	return g
}

// step applies f and returns the actions to perform (notes left out). The run goes
// through JSON each time, as the store gives it back.
func (g *rig) step(f Fact) []Action {
	g.t.Helper()
	g.now = g.now.Add(time.Second)
	next, acts, err := Step(g.r, f, g.now)
	if err != nil {
		g.t.Fatalf("step %+v: %v", f, err)
	}
	b, _ := json.Marshal(next)
	g.r = Run{}
	if err := json.Unmarshal(b, &g.r); err != nil {
		g.t.Fatal(err)
	}
	var out []Action
	for _, a := range acts {
		if a.Kind != ANote {
			out = append(out, a)
		}
	}
	return out
}

// start answers every spawn in acts with an agent.
func (g *rig) start(acts []Action) []string {
	var ids []string
	for _, a := range acts {
		if a.Kind == ASpawn {
			g.n++
			id := fmt.Sprintf("ag%d", g.n)
			g.step(Fact{Kind: FStarted, Step: a.Step, I: a.I, Agent: id})
			ids = append(ids, id)
		}
	}
	return ids
}

func exited(step string, i int, agent, output string) Fact {
	zero := 0
	return Fact{Kind: FEnded, Step: step, I: i, Agent: agent, AgentState: "exited", ExitCode: &zero, Output: output}
}

func (g *rig) stepState(name string) StepRun {
	for _, s := range g.r.Steps {
		if s.Name == name {
			return s
		}
	}
	g.t.Fatalf("no step %s", name)
	return StepRun{}
}

func TestThreeStepsRunInOrderWithTheirOutputs(t *testing.T) {
	g := newRig(t, threeSteps)
	ids := g.startPending() // begin asked for pick
	acts := g.step(exited("pick", 0, ids[0], `{"items": ["a", "b", "c"], "count": 3}`))
	spawns := kinds(acts, ASpawn)
	if len(spawns) != 2 || spawns[0].Argv[1] != "job-a" || spawns[1].Argv[1] != "job-b" {
		t.Fatalf("work spawns (max_parallel 2): %+v", spawns)
	}
	w := g.start(acts)
	acts = g.step(exited("work", 1, w[1], `{"name": "B"}`))
	if s := kinds(acts, ASpawn); len(s) != 1 || s[0].I != 2 || s[0].Argv[1] != "job-c" {
		t.Fatalf("the third item after the second ended: %+v", acts)
	}
	w = append(w, g.start(acts)...)
	g.step(exited("work", 0, w[0], `{"name": "A"}`))
	acts = g.step(exited("work", 2, w[2], `{"name": "C", "extra": 1}`))
	s := kinds(acts, ASpawn)
	if len(s) != 1 || s[0].Step != "sum" || s[0].Argv[1] != `["A","B","C"]` {
		t.Fatalf("sum's spawn: %+v", acts)
	}
	if out := g.stepState("work").Outputs["name"]; fmt.Sprint(out) != "[A B C]" {
		t.Fatalf("work's outputs %v", out)
	}
	sid := g.start(acts)
	g.step(exited("sum", 0, sid[0], `{"all": "ABC"}`))
	if g.r.State != RunDone || g.stepState("sum").Outputs["all"] != "ABC" {
		t.Fatalf("run %s (%s), sum %+v", g.r.State, g.r.Why, g.stepState("sum"))
	}
}

// startPending answers the spawns the run asked for and has not had answered.
func (g *rig) startPending() []string {
	var acts []Action
	for _, sr := range g.r.Steps {
		for i, it := range sr.Items {
			if it.State == Starting {
				acts = append(acts, Action{Kind: ASpawn, Step: sr.Name, I: i})
			}
		}
	}
	return g.start(acts)
}

func kinds(acts []Action, k string) []Action {
	var out []Action
	for _, a := range acts {
		if a.Kind == k {
			out = append(out, a)
		}
	}
	return out
}

func TestWhenFalseSkipsAndDependentsSkip(t *testing.T) {
	g := newRig(t, threeSteps)
	ids := g.startPending()
	g.step(exited("pick", 0, ids[0], `{"items": [], "count": 0}`))
	if st := g.stepState("work"); st.State != Skipped || !strings.Contains(st.Why, "is false") {
		t.Fatalf("work %+v", st)
	}
	if st := g.stepState("sum"); st.State != Skipped || !strings.Contains(st.Why, "needs work") {
		t.Fatalf("sum %+v", st)
	}
	if g.r.State != RunDone {
		t.Fatalf("run %s", g.r.State)
	}
}

func TestInvalidOutputFailsAShellStep(t *testing.T) {
	g := newRig(t, threeSteps)
	ids := g.startPending()
	g.step(exited("pick", 0, ids[0], `{"items": "abc", "count": 1.5}`))
	st := g.stepState("pick")
	if st.State != Failed || !strings.Contains(st.Why, "count is a float, want int") || !strings.Contains(st.Why, "items is a string, want list") {
		t.Fatalf("pick %+v", st)
	}
	if g.r.State != RunFailed || g.stepState("sum").State != Skipped {
		t.Fatalf("run %s %+v", g.r.State, g.r.Steps)
	}
}

const agentStep = `[[steps]]
name = "ask"
provider = "claude"
prompt = "count things"
outputs = { n = "int" }
`

// An agent whose output does not validate is told once, then the step fails.
func TestInvalidOutputGoesBackOnceThenFails(t *testing.T) {
	g := newRig(t, agentStep)
	ids := g.startPending()
	done := func(out, no string) []Action {
		return g.step(Fact{Kind: FEnded, Step: "ask", Agent: ids[0], AgentState: "done", At: g.now.Add(time.Millisecond), Output: out, NoOutput: no})
	}
	acts := done("", "no output was written to $ORCR_OUTPUT (/out/ask/0.json)")
	if s := kinds(acts, ASend); len(s) != 1 || !strings.Contains(s[0].Text, "no output was written") || !strings.Contains(s[0].Text, "/out/ask/0.json") {
		t.Fatalf("the first invalid output: %+v", acts)
	}
	// The same turn seen again (a restart) is not a second answer.
	g.step(Fact{Kind: FEnded, Step: "ask", Agent: ids[0], AgentState: "done", At: g.now.Add(-time.Second), NoOutput: "no output"})
	if g.stepState("ask").State != Running {
		t.Fatalf("ask %+v after a stale turn end", g.stepState("ask"))
	}
	acts = done(`{"n": "seven"}`, "")
	if len(kinds(acts, ASend)) != 0 || len(kinds(acts, AStop)) != 1 {
		t.Fatalf("the second invalid output: %+v", acts)
	}
	if st := g.stepState("ask"); st.State != Failed || !strings.Contains(st.Why, "n is a string, want int") {
		t.Fatalf("ask %+v", st)
	}
}

func TestValidAgentOutputIsDoneAndFreesItsSlot(t *testing.T) {
	g := newRig(t, agentStep)
	ids := g.startPending()
	acts := g.step(Fact{Kind: FEnded, Step: "ask", Agent: ids[0], AgentState: "done", At: g.now, Output: `{"n": 7}`})
	if len(kinds(acts, AStop)) != 1 || g.r.State != RunDone || g.stepState("ask").Outputs["n"] != float64(7) {
		t.Fatalf("acts %+v run %+v", acts, g.r)
	}
}

func TestForEachOverTheLimitIsRefused(t *testing.T) {
	src := "max_items = 10\n" + threeSteps
	g := newRig(t, src)
	ids := g.startPending()
	items, _ := json.Marshal(make([]int, 11))
	acts := g.step(exited("pick", 0, ids[0], fmt.Sprintf(`{"items": %s, "count": 11}`, items)))
	if len(kinds(acts, ASpawn)) != 0 {
		t.Fatalf("spawned %+v", acts)
	}
	if st := g.stepState("work"); st.State != Failed || !strings.Contains(st.Why, "11 items, over the limit of 10") {
		t.Fatalf("work %+v", st)
	}
}

func TestExpressionsAreBounded(t *testing.T) {
	for _, c := range []struct{ when, want string }{
		{"len(map(1..100000000, #)) > 0", "memory budget"},
		// Bounded by the memory budget, or (slower, under the race detector) the clock.
		{"all(1..5000, {all(1..5000, {all(1..5000, {true})})})", "memory budget|ran longer than"},
		{"1 / 0 > 0", ""},
		{"steps.pick.items[99] == 1", "out of range"},
		{`"x" + 1 > 0`, ""},
	} {
		src := strings.Replace(threeSteps, `when = "steps.pick.count > 0"`, "when = '"+c.when+"'", 1)
		d, err := Parse("w", "w.toml", []byte(src))
		if err != nil {
			if c.want == "" {
				continue // refused at load: fine too
			}
			t.Fatalf("%s: %v", c.when, err)
		}
		g := &rig{t: t, now: time.Now()}
		g.r = Run{ID: "w-1", Def: *d, Vars: d.Vars}
		g.step(Fact{Kind: FBegin})
		ids := g.startPending()
		began := time.Now()
		g.step(exited("pick", 0, ids[0], `{"items": [1], "count": 1}`))
		if took := time.Since(began); took > exprTimeout+time.Second {
			t.Errorf("%s took %s", c.when, took)
		}
		st := g.stepState("work")
		if st.State != Failed && st.State != Skipped && st.State != Running {
			t.Fatalf("%s: work %+v", c.when, st)
		}
		if c.want != "" && (st.State != Failed || !containsAny(st.Why, strings.Split(c.want, "|"))) {
			t.Errorf("%s: work %s: %s (want %q)", c.when, st.State, st.Why, c.want)
		}
	}
}

func TestStopStopsTheAgents(t *testing.T) {
	g := newRig(t, threeSteps)
	ids := g.startPending()
	acts := g.step(Fact{Kind: FStop, Text: "by request"})
	if s := kinds(acts, AStop); len(s) != 1 || s[0].Agent != ids[0] {
		t.Fatalf("stop: %+v", acts)
	}
	if g.r.State != RunStopped || g.stepState("work").State != Skipped {
		t.Fatalf("run %+v", g.r)
	}
	// An agent asked for before the stop, started after it, is stopped.
	acts = g.step(Fact{Kind: FStarted, Step: "pick", Agent: "late"})
	if s := kinds(acts, AStop); len(s) != 1 || s[0].Agent != "late" {
		t.Fatalf("late start: %+v", acts)
	}
	if _, _, err := Step(g.r, Fact{Kind: FStop}, g.now); err == nil {
		t.Fatal("a stopped run stopped again")
	}
}

func TestNonZeroExitFails(t *testing.T) {
	g := newRig(t, threeSteps)
	ids := g.startPending()
	two := 2
	g.step(Fact{Kind: FEnded, Step: "pick", Agent: ids[0], AgentState: "exited", ExitCode: &two})
	if st := g.stepState("pick"); st.State != Failed || !strings.Contains(st.Why, "exited with code 2") {
		t.Fatalf("pick %+v", st)
	}
}

func TestContinueKeepsTheRunGoing(t *testing.T) {
	src := strings.Replace(threeSteps, "outputs = { items = \"list\", count = \"int\" }", "outputs = { items = \"list\", count = \"int\" }\non_failure = \"continue\"", 1) +
		"[[steps]]\nname = \"other\"\nprovider = \"shell\"\nargv = [\"x\"]\n"
	g := newRig(t, src)
	ids := g.startPending() // pick and other
	two := 2
	g.step(Fact{Kind: FEnded, Step: "pick", Agent: ids[0], AgentState: "exited", ExitCode: &two})
	if g.r.State != RunRunning || g.stepState("other").State != Running {
		t.Fatalf("run %s, other %+v", g.r.State, g.stepState("other"))
	}
	g.step(exited("other", 0, ids[1], ""))
	if g.r.State != RunFailed || g.stepState("other").State != Done {
		t.Fatalf("run %s (%s)", g.r.State, g.r.Why)
	}
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

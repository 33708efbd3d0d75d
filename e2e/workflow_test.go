package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"orcr/core/socket"
	"orcr/core/wire"
	"orcr/testutil/apiclient"
	"orcr/testutil/wait"
	"orcr/workflow"
	wfapi "orcr/workflow/api"
)

// threeSteps is a workflow of shell steps: pick lists items (typed outputs), work
// runs once per item (for_each, max_parallel, when), sum reads every work output,
// and never is skipped by its when. Each step appends its name to the file in
// vars.launches as it starts, so a step started twice shows twice.
func threeSteps(items, sleep string) string {
	list := make([]string, 0)
	for i := range atoi(items) {
		list = append(list, fmt.Sprintf(`\"i%02d\"`, i))
	}
	return `[vars]
prefix = "job"
launches = ""

[[steps]]
name = "pick"
provider = "shell"
argv = ["sh", "-c", "echo pick >> '{{vars.launches}}'; sleep ` + sleep + `; echo '{\"items\": [` + strings.Join(list, ",") + `], \"count\": ` + items + `}' > \"$ORCR_OUTPUT\""]
outputs = { items = "list", count = "int" }

[[steps]]
name = "work"
provider = "shell"
for_each = "steps.pick.items"
max_parallel = 3
when = "steps.pick.count > 0"
argv = ["sh", "-c", "echo work-{{item}} >> '{{vars.launches}}'; sleep ` + sleep + `; printf '{\"name\": \"%s\", \"n\": %d}' '{{vars.prefix}}-{{item}}' 1 > \"$ORCR_OUTPUT\""]
outputs = { name = "string", n = "int" }

[[steps]]
name = "sum"
provider = "shell"
argv = ["sh", "-c", "echo sum >> '{{vars.launches}}'; printf '{\"names\": %s, \"count\": %s}' \"$1\" \"$2\" > \"$ORCR_OUTPUT\"", "sum", "{{steps.work.name}}", "{{steps.pick.count}}"]
outputs = { names = "list", count = "int" }

[[steps]]
name = "never"
provider = "shell"
when = "steps.pick.count > 1000"
argv = ["sh", "-c", "echo never >> '{{vars.launches}}'"]
`
}

func atoi(s string) int {
	n := 0
	fmt.Sscan(s, &n)
	return n
}

func writeWorkflow(t *testing.T, repo, name, body string) {
	t.Helper()
	dir := filepath.Join(repo, ".orcr", "workflows")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".toml"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// launches reads the launch file: one line per step (or item) started.
func launches(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ls := strings.Fields(string(b))
	sort.Strings(ls)
	return ls
}

// wantLaunches is every step of threeSteps started once.
func wantLaunches(n int) []string {
	out := []string{"pick", "sum"}
	for i := range n {
		out = append(out, fmt.Sprintf("work-i%02d", i))
	}
	sort.Strings(out)
	return out
}

func workflowStatus(t *testing.T, e *env, id string) wfapi.RunView {
	t.Helper()
	var v wfapi.RunView
	out := e.must("workflow", "status", id, "--json")
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("workflow status --json: %v\n%s", err, out)
	}
	return v
}

func stepOf(v wfapi.RunView, name string) wfapi.StepView {
	for _, s := range v.Steps {
		if s.Name == name {
			return s
		}
	}
	return wfapi.StepView{}
}

// TestWorkflowShellStepsEndToEnd runs threeSteps through the CLI on a real `orcr
// serve`: each step once, typed outputs passed on, the for_each fanned out, the
// false when skipped, and the events stored and printed.
func TestWorkflowShellStepsEndToEnd(t *testing.T) {
	e := newEnv(t)
	e.serve()
	repo := t.TempDir()
	writeWorkflow(t, repo, "three", threeSteps("5", "0"))
	file := filepath.Join(t.TempDir(), "launches")

	show := e.must("workflow", "show", "three", "--repo", repo)
	if !strings.Contains(show, "[work] shell, needs pick") || !strings.Contains(show, "for_each  steps.pick.items (max_parallel 3)") {
		t.Errorf("workflow show:\n%s", show)
	}
	out := e.must("workflow", "run", "three", "--repo", repo, "--var", "launches="+file, "--wait")
	if !strings.Contains(out, "three-1  done") {
		t.Fatalf("workflow run --wait:\n%s", out)
	}
	v := workflowStatus(t, e, "three")
	names, _ := json.Marshal(stepOf(v, "sum").Outputs["names"])
	if v.State != "done" || string(names) != `["job-i00","job-i01","job-i02","job-i03","job-i04"]` || stepOf(v, "sum").Outputs["count"] != float64(5) {
		t.Fatalf("run %s, sum's outputs %v", v.State, stepOf(v, "sum").Outputs)
	}
	if s := stepOf(v, "never"); s.State != "skipped" || !strings.Contains(s.Why, "is false") {
		t.Errorf("never: %+v", s)
	}
	if w := stepOf(v, "work"); w.Items != 5 || w.Done != 5 {
		t.Errorf("work: %+v", w)
	}
	if got := launches(t, file); !slices.Equal(got, wantLaunches(5)) {
		t.Errorf("launches %v, want %v", got, wantLaunches(5))
	}
	// Each finished item's pane was closed once its output was read (not left for
	// gc.exited_grace): one gc.collected by the feature per agent of the run.
	closed := map[string]bool{}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	evs, err := e.client().Subscribe(ctx, wire.SubscribeParams{Paths: []string{"workflows/three-1/**"}})
	if err != nil {
		t.Fatal(err)
	}
	for ev := range evs {
		if ev.Event == wire.EventGCCollected && ev.Rule == "feature" && ev.Agent != nil {
			closed[ev.Agent.Path] = true
		}
		if len(closed) == 7 { // pick, 5 work items, sum
			break
		}
	}
	cancel()
	if len(closed) != 7 {
		t.Errorf("panes closed as their items ended: %v", closed)
	}
	ev := e.must("workflow", "events", "three-1")
	for _, want := range []string{"begin", "step work runs (5 agents)", "step never skipped", "workflow run three-1 done"} {
		if !strings.Contains(ev, want) {
			t.Errorf("workflow events lacks %q:\n%s", want, ev)
		}
	}
	if ls := e.must("workflow", "ls", "--repo", repo); !strings.Contains(ls, "three-1") {
		t.Errorf("workflow ls:\n%s", ls)
	}
	// A schedule starts one: its command is the CLI, and the run names the schedule.
	e.must("schedule", "add", "nightly", "--every", "1h", "--", "orcr", "workflow", "run", "three", "--repo", repo, "--var", "launches="+file+".2")
	e.must("schedule", "run", "nightly")
	wait.For(t, 30*time.Second, "the scheduled run to end", func() bool { return workflowStatus(t, e, "three-2").State != "running" })
	if v := workflowStatus(t, e, "three-2"); v.State != "done" || v.Trigger != "schedule nightly" {
		t.Errorf("the scheduled run: %s, trigger %q", v.State, v.Trigger)
	}
	// A var the file does not declare is refused before anything starts.
	if r := e.orcr("workflow", "run", "three", "--repo", repo, "--var", "nope=1"); r.Code == 0 || !strings.Contains(r.Err, "declares no such var") {
		t.Errorf("an undeclared var: exit %d: %s", r.Code, r.Err)
	}
}

// TestWorkflowSurvivesKill9 runs threeSteps on the tmux host (the steps' panes
// outlive the server) once undisturbed and once with `orcr serve` killed by SIGKILL
// at 20 random moments — a random instant after it answers, or right after the run's
// log reached a random seq — and started again each time. The killed run ends done
// with the same outputs, every step and item started exactly once (the launch file),
// and a log whose seqs are contiguous.
func TestWorkflowSurvivesKill9(t *testing.T) {
	e := newTmuxEnv(t)
	repo := t.TempDir()
	const n = 45
	writeWorkflow(t, repo, "three", threeSteps(fmt.Sprint(n), "0.5"))
	dir := t.TempDir()
	e.serve()

	runOnce := func(file string) string {
		out := e.must("workflow", "run", "three", "--repo", repo, "--var", "launches="+file, "--json")
		var v wfapi.RunView
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatal(err)
		}
		return v.ID
	}
	began := time.Now()
	ref := runOnce(filepath.Join(dir, "ref"))
	wait.For(t, 120*time.Second, "the undisturbed run to end", func() bool { return workflowStatus(t, e, ref).State != "running" })
	refView := workflowStatus(t, e, ref)
	t.Logf("undisturbed run: %s", time.Since(began).Round(time.Millisecond))

	began = time.Now()
	crash := runOnce(filepath.Join(dir, "crash"))
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 26))
	var c *apiclient.Client
	state := func() (wfapi.RunView, bool) {
		ctx, cancel := context.WithTimeout(context.Background(), wait.Scale(3*time.Second))
		defer cancel()
		if c == nil {
			var err error
			if c, err = apiclient.Dial(ctx, socket.SocketPath(e.home), ""); err != nil {
				return wfapi.RunView{}, false
			}
		}
		r, err := wire.Call(ctx, c, wfapi.WorkflowStatus, wfapi.StatusParams{Name: crash})
		if err != nil || len(r.Runs) != 1 {
			c.Close()
			c = nil
			return wfapi.RunView{}, false
		}
		return r.Runs[0], true
	}
	seqOf := func() uint64 {
		ctx, cancel := context.WithTimeout(context.Background(), wait.Scale(3*time.Second))
		defer cancel()
		if c == nil {
			return 0
		}
		r, err := wire.Call(ctx, c, wfapi.WorkflowEvents, wfapi.EventsParams{Name: crash, After: 0, Limit: 100000})
		if err != nil || len(r.Entries) == 0 {
			return 0
		}
		return r.Entries[len(r.Entries)-1].Seq
	}
	kills := 0
	for kills < 20 {
		at := time.Now().Add(time.Duration(rnd.IntN(350)) * time.Millisecond)
		target := seqOf() + uint64(1+rnd.IntN(4))
		byTime := rnd.IntN(2) == 0
		done := false
		wait.Every(30*time.Second, 2*time.Millisecond, func() bool {
			v, ok := state()
			if ok && v.State != "running" {
				done = true
				return true
			}
			if byTime {
				return time.Now().After(at)
			}
			return seqOf() >= target || time.Now().After(at.Add(2*time.Second))
		})
		if done {
			break
		}
		e.kill9()
		if c != nil {
			c.Close()
			c = nil
		}
		kills++
		e.serve()
	}
	wait.For(t, 120*time.Second, "the killed run to end", func() bool { v, ok := state(); return ok && v.State != "running" })
	if c != nil {
		c.Close()
	}
	v := workflowStatus(t, e, crash)
	t.Logf("killed run: %s with %d kills", time.Since(began).Round(time.Millisecond), kills)
	if kills < 20 {
		t.Errorf("the run ended after %d kills; the test wants 20 moments", kills)
	}
	if v.State != "done" || refView.State != "done" {
		t.Fatalf("killed run %s (%s), undisturbed run %s (%s)\n%s", v.State, v.Why, refView.State, refView.Why, e.must("workflow", "events", crash))
	}
	for _, s := range []string{"pick", "work", "sum"} {
		a, _ := json.Marshal(stepOf(refView, s).Outputs)
		b, _ := json.Marshal(stepOf(v, s).Outputs)
		if string(a) != string(b) {
			t.Errorf("step %s: killed run's outputs %s, undisturbed %s", s, b, a)
		}
	}
	for _, name := range []string{"ref", "crash"} {
		if got := launches(t, filepath.Join(dir, name)); !slices.Equal(got, wantLaunches(n)) {
			t.Errorf("%s: launches %v, want each of %v once", name, got, wantLaunches(n))
		}
	}
	var ev wfapi.EventsResult
	if err := json.Unmarshal([]byte(e.must("workflow", "events", crash, "--json")), &ev); err != nil {
		t.Fatal(err)
	}
	for i, en := range ev.Entries {
		if en.Seq != uint64(i+1) {
			t.Fatalf("log entry %d has seq %d: an entry is missing", i+1, en.Seq)
		}
	}
}

// TestWorkflowFaultPoints crashes the server (SIGKILL, by itself) at the two moments
// a kill from outside rarely hits: an item's agent started and its start not yet
// logged, and the start logged but the spawn not yet recorded as done. The restarted
// server finds the agent at its path and takes it: every step and item is started
// once and the run ends done.
func TestWorkflowFaultPoints(t *testing.T) {
	for _, point := range []string{workflow.FaultSpawned, workflow.FaultStarted} {
		t.Run(point, func(t *testing.T) {
			e := newTmuxEnv(t)
			repo := t.TempDir()
			writeWorkflow(t, repo, "three", threeSteps("3", "0.2"))
			file := filepath.Join(t.TempDir(), "launches")
			base := e.vars
			e.vars = append(append([]string{}, base...), workflow.FaultEnv+"="+point)
			e.serve()
			e.orcr("workflow", "run", "three", "--repo", repo, "--var", "launches="+file)
			<-e.srv.Exited()
			e.srv = nil
			e.vars = base
			e.serve()
			wait.For(t, 60*time.Second, "the run to end", func() bool { return workflowStatus(t, e, "three-1").State != "running" })
			if v := workflowStatus(t, e, "three-1"); v.State != "done" {
				t.Fatalf("run %s (%s)\n%s", v.State, v.Why, e.must("workflow", "events", "three-1"))
			}
			if got := launches(t, file); !slices.Equal(got, wantLaunches(3)) {
				t.Errorf("launches %v, want each of %v once", got, wantLaunches(3))
			}
		})
	}
}

// TestWorkflowFromAListener starts a workflow from a listener's action (workflow =
// "three"): the shell source's event carries prefix and launches, which fill the
// workflow's vars of those names; the run records the listener and the event as its
// trigger, and the event is dispatched once.
func TestWorkflowFromAListener(t *testing.T) {
	e := newEnv(t)
	repo := t.TempDir()
	writeWorkflow(t, repo, "three", threeSteps("2", "0"))
	file := filepath.Join(t.TempDir(), "launches")
	e.writeListener("wf", `interval = "1s"
[source]
type = "shell"
command = '''echo '{"id": "e1", "prefix": "evt", "launches": "`+file+`", "other": "x"}' '''
[action]
workflow = "three"
repo = "`+repo+`"
`)
	e.serve()
	wait.For(t, 30*time.Second, "the listener's workflow run", func() bool {
		r := e.orcr("workflow", "status", "three-1", "--json")
		return r.Code == 0 && workflowStatus(t, e, "three-1").State != "running"
	})
	v := workflowStatus(t, e, "three-1")
	names, _ := json.Marshal(stepOf(v, "sum").Outputs["names"])
	if v.State != "done" || v.Trigger != "listener wf event e1" || string(names) != `["evt-i00","evt-i01"]` {
		t.Fatalf("run %s (%s), trigger %q, names %s", v.State, v.Why, v.Trigger, names)
	}
	// Later polls find the same event: no second run.
	l := e.polledAfter("wf", time.Now())
	e.polledAfter("wf", *l.LastPoll)
	if r := e.orcr("workflow", "status", "three-2"); r.Code == 0 {
		t.Errorf("the event started a second run:\n%s", r.Out)
	}
}

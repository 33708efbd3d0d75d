package ui

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"orcr/core/socket"
	"orcr/core/wire"
	runapi "orcr/orchestrate/run/api"
	wfapi "orcr/workflow/api"
)

// fixtureWorkflows is a workflow run under way (a for_each step with items running)
// and a finished one.
func fixtureWorkflows(state string) []wfapi.RunView {
	started := t0.Add(-10 * time.Minute)
	return []wfapi.RunView{
		{ID: "triage-2", Workflow: "triage", State: state, Trigger: "cli", StartedAt: started, Steps: []wfapi.StepView{
			{Name: "pick", Kind: "shell", State: "done", Items: 1, Done: 1},
			{Name: "fix", Kind: "role implementor", State: "running", Items: 3, Done: 1, Running: 2,
				Agents: []wfapi.ItemView{{I: 1, State: "running", Agent: "a7"}, {I: 2, State: "running", Agent: "a8"}}},
			{Name: "sum", Kind: "shell", State: "waiting"},
		}},
		{ID: "triage-1", Workflow: "triage", State: "done", StartedAt: t0.Add(-3 * time.Hour), Steps: []wfapi.StepView{
			{Name: "pick", Kind: "shell", State: "done", Items: 1, Done: 1},
		}},
	}
}

// wfRecorder serves the runs view's calls: the fixture's runs and workflow runs, a
// workflow run's log, and records stops.
type wfRecorder struct {
	mu      sync.Mutex
	stopped []string
	events  int
}

func (r *wfRecorder) transport(t testing.TB) wire.Transport {
	ip, err := socket.NewInProcess([]wire.Handler{
		wire.Handle(runapi.RunListM, func(context.Context, *wire.Empty) (runapi.RunListResult, error) {
			return runapi.RunListResult{Runs: fixtureRuns()}, nil
		}),
		wire.Handle(wfapi.WorkflowStatus, func(context.Context, *wfapi.StatusParams) (wfapi.StatusResult, error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			state := "running"
			if len(r.stopped) > 0 {
				state = "stopped"
			}
			return wfapi.StatusResult{Runs: fixtureWorkflows(state)}, nil
		}),
		wire.Handle(wfapi.WorkflowEvents, func(_ context.Context, p *wfapi.EventsParams) (wfapi.EventsResult, error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.events++
			return wfapi.EventsResult{ID: p.Name, Entries: []wfapi.Entry{
				{Seq: 1, At: t0.Add(-10 * time.Minute), Type: "fact", Kind: "begin", Actions: []string{"spawn pick[0]"}},
				{Seq: 2, At: t0.Add(-9 * time.Minute), Type: "fact", Kind: "ended", Step: "pick", Agent: "a1", Text: "output valid: 3 issues"},
			}}, nil
		}),
		wire.Handle(wfapi.WorkflowStop, func(_ context.Context, p *wfapi.StopParams) (wfapi.RunResult, error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.stopped = append(r.stopped, p.Name)
			return wfapi.RunResult{Run: fixtureWorkflows("stopped")[0]}, nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	return ip
}

// TestWorkflowRunsInTheRunsView: the workflow runs are listed under the runs and the
// selection goes on into them; enter opens one (its steps, the agents under way,
// its log read from workflow.events); X asks and y stops it through workflow.stop,
// said in the view and the status bar; esc goes back to the list on its row. A
// finished workflow run is not stopped.
func TestWorkflowRunsInTheRunsView(t *testing.T) {
	rec := &wfRecorder{}
	m := newTestModel(t, 120, 40, Options{})
	m.svc = rec.transport(t)
	pressSettle(t, m, "O")
	if s := plain(screen(t, m)); !strings.Contains(s, "csv-import") || !strings.Contains(s, "triage-2") || !strings.Contains(s, "WORKFLOW RUN") {
		t.Fatalf("list:\n%s", s)
	}
	// csv-import, auth, then triage-2.
	pressSettle(t, m, "down", "down")
	if s := plain(screen(t, m)); !strings.Contains(s, "X stop") {
		t.Fatalf("a workflow run's hints:\n%s", s)
	}
	pressSettle(t, m, "enter")
	d := m.runsView()
	s := plain(screen(t, m))
	if d.mode != runWorkflow || d.open != "triage-2" || rec.events == 0 {
		t.Fatalf("enter on triage-2: mode %d open %q events read %d\n%s", d.mode, d.open, rec.events, s)
	}
	for _, want := range []string{"workflow run triage-2", "fix", "1/3 (2 running)", "fix[1] running a7", "output valid: 3 issues"} {
		if !strings.Contains(s, want) {
			t.Fatalf("workflow view lacks %q:\n%s", want, s)
		}
	}
	// X asks; any other key keeps it running.
	pressSettle(t, m, "X", "n")
	if len(rec.stopped) != 0 || !strings.Contains(plain(screen(t, m)), "left as it is") {
		t.Fatalf("n stopped it: %v", rec.stopped)
	}
	pressSettle(t, m, "X")
	if !strings.Contains(plain(screen(t, m)), "stop workflow run triage-2?") {
		t.Fatalf("no question:\n%s", plain(screen(t, m)))
	}
	pressSettle(t, m, "y")
	if len(rec.stopped) != 1 || rec.stopped[0] != "triage-2" {
		t.Fatalf("stopped %v", rec.stopped)
	}
	if !strings.Contains(m.status.notice, "stopped workflow run triage-2: now stopped") {
		t.Fatalf("status %q", m.status.notice)
	}
	pressSettle(t, m, "esc")
	if d = m.runsView(); d.mode != runList || d.sel != 2 {
		t.Fatalf("esc: mode %d sel %d", d.mode, d.sel)
	}
	// The finished triage-1 is not stopped.
	pressSettle(t, m, "down", "X")
	if len(rec.stopped) != 1 || !strings.Contains(plain(screen(t, m)), "triage-1 is done: nothing to stop") {
		t.Fatalf("stop of a finished run: %v\n%s", rec.stopped, plain(screen(t, m)))
	}
}

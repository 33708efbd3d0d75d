package ui

import (
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
	wfapi "orcr/workflow/api"
)

// The workflow runs are listed beside the runs: state, steps finished, the step under
// way with its for_each progress, or why a run ended.
func TestWorkflowRunsBesideRuns(t *testing.T) {
	m := openRunsView(t, 160, 48, Options{})
	wfs := []wfapi.RunView{
		{ID: "triage-2", Workflow: "triage", State: "running", StartedAt: t0.Add(-3 * time.Minute), Steps: []wfapi.StepView{
			{Name: "pick", State: "done", Items: 1, Done: 1}, {Name: "fix", State: "running", Items: 10, Done: 3}, {Name: "review", State: "waiting"}}},
		{ID: "audit-1", Workflow: "audit", State: "failed", Why: "step scan failed", StartedAt: t0.Add(-time.Hour),
			Steps: []wfapi.StepView{{Name: "scan", State: "failed"}}},
	}
	m.Update(runsMsg{runs: fixtureRuns(), workflows: wfs, at: t0})
	out := screen(t, m)
	for _, want := range []string{"WORKFLOW RUN", "triage-2", "1/3", "fix 3/10", "audit-1", "step scan failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("the runs view lacks %q:\n%s", want, out)
		}
	}
	// A workflow event re-reads the runs, as a run event does.
	d := m.runsView()
	d.inFlight = false
	if act := d.followEvents([]wire.Event{{Event: wfapi.EventWorkflowChanged}}); act == nil {
		t.Error("workflow.changed did not re-read the runs")
	}
}

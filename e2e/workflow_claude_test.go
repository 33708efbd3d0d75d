package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/testutil/clis"
	"orcr/testutil/modelserver"
	"orcr/testutil/wait"
)

// TestWorkflowStepDrivenByClaude runs a workflow whose one step is the real claude
// CLI against the scripted model server: the model writes the output file named in
// its prompt ($ORCR_OUTPUT) with the Write tool, first with a field of the wrong
// type; the validation error goes back to the agent (its next request carries it),
// it writes again, and the step is done with the typed output.
func TestWorkflowStepDrivenByClaude(t *testing.T) {
	ms, err := modelserver.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ms.Close)
	dir := settledTempDir(t)
	os.MkdirAll(filepath.Join(dir, "user"), 0o700)
	e := newTmuxEnv(t, append(clis.ScriptedClaude(t, dir, ms.URL), "HOME="+filepath.Join(dir, "user"))...)
	e.serve()
	t.Cleanup(func() { stopAgentProcs(t, e, "workflows/**") })
	repo := filepath.Join(dir, "repo")
	os.MkdirAll(repo, 0o755)
	writeWorkflow(t, repo, "count", `[vars]
what = "apples"
[[steps]]
name = "ask"
provider = "claude"
prompt = "Count the {{vars.what}}."
outputs = { n = "int", note = "string" }
`)
	out := filepath.Join(e.home, "workflows", "count-1", "ask", "0.json")
	ms.Push(
		when("Count the apples.", saying("Writing the count.", write(out, `{"n": "seven", "note": "first try"}`))),
		say("Written."),
		when("not accepted", saying("Fixing it.", write(out, `{"n": 7, "note": "second try"}`))),
		say("Fixed."),
	)
	e.must("workflow", "run", "count", "--repo", repo)
	var v = workflowStatus(t, e, "count-1")
	if !wait.Until(120*time.Second, func() bool { v = workflowStatus(t, e, "count-1"); return v.State != "running" }) {
		t.Fatalf("the workflow did not end:\n%s\nscreen:\n%s", e.must("workflow", "events", "count-1"), e.orcr("agent", "read", "workflows/count-1/ask").Out)
	}
	if v.State != "done" || stepOf(v, "ask").Outputs["n"] != float64(7) || stepOf(v, "ask").Outputs["note"] != "second try" {
		t.Fatalf("run %s (%s), outputs %v\n%s", v.State, v.Why, stepOf(v, "ask").Outputs, e.must("workflow", "events", "count-1"))
	}
	sawError := false
	for _, q := range ms.Requests() {
		if strings.Contains(q.LastUser(), "n is a string, want int") && strings.Contains(q.LastUser(), out) {
			sawError = true
		}
	}
	if !sawError {
		t.Errorf("no request carried the validation error back to the agent")
	}
	ev := e.must("workflow", "events", "count-1")
	if !strings.Contains(ev, "sent back to the agent once") || !strings.Contains(ev, "step ask done") {
		t.Errorf("events:\n%s", ev)
	}
}

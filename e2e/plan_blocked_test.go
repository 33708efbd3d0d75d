package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
	planapi "orcr/orchestrate/api"
	"orcr/testutil/modelserver"
	"orcr/testutil/wait"
)

// TestPlanRejectWhileLeadAsks: `plan reject` while the real claude lead waits on
// `Bash(rm -rf ../build)`. The reason is not typed into the prompt (its Enter said
// "Yes": build/ went and the reason was lost); it stays pending, and reaches the model
// once the user has answered the prompt and the lead's turn is over.
func TestPlanRejectWhileLeadAsks(t *testing.T) {
	e, srv, dir, repo := claudeLeadEnv(t)
	// Outside the repository: acceptEdits lets a removal inside it run unasked.
	keep := filepath.Join(dir, "build", "keep.o")
	os.MkdirAll(filepath.Dir(keep), 0o755)
	os.WriteFile(keep, []byte("obj"), 0o644)
	e.serveWithLeads()
	u := modelserver.Usage{Input: 10, Output: 5}
	file := filepath.Join(repo, ".orcr", "plans", "csv.md")
	srv.Push(modelserver.Turn{ToolCalls: []modelserver.ToolCall{{Name: "Write", Input: map[string]any{"file_path": file, "content": planV1}}}, Usage: u},
		modelserver.Turn{Text: "The plan is written.", Usage: u})
	e.must("plan", "new", "csv", "import CSV files into the contacts table", "--repo", repo, "--lead", "claude:claude-opus-5")
	waitPlan(t, e, 150*time.Second, "first draft", func(r planapi.PlanGetResult) bool { return r.Plan.State == "drafted" })

	// The lead goes on to something that asks.
	srv.Push(modelserver.Turn{ToolCalls: []modelserver.ToolCall{{Name: "Bash", Input: map[string]any{"command": "rm -rf ../build", "description": "clean"}}}, Usage: u})
	e.must("agent", "send", "plans/csv/lead", "clean the build dir")
	lead := func() wire.Agent {
		var r wire.AgentResult
		if err := json.Unmarshal([]byte(e.must("agent", "get", "plans/csv/lead", "--json")), &r); err != nil {
			t.Fatal(err)
		}
		return r.Agent
	}
	if !wait.Until(90*time.Second, func() bool {
		a := lead()
		return a.State == wire.StateBlocked && a.Blocked != nil && len(a.Blocked.Options) > 0
	}) {
		a := lead()
		t.Fatalf("the lead never asked: %s (%s) blocked %+v; screen:\n%s", a.State, a.StateReason, a.Blocked, e.orcr("agent", "read", "plans/csv/lead").Out)
	}

	reason := "split M1: parser and sink are independent"
	e.must("plan", "reject", "csv", reason)
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("build/ is gone: the rejection answered the prompt (%v)", err)
	}
	if a := lead(); a.State != wire.StateBlocked {
		t.Fatalf("after the rejection the lead is %s (%s), want still blocked", a.State, a.StateReason)
	}

	// The user says no; the lead's turn ends and the reason goes in.
	before := len(srv.Requests())
	srv.Push(modelserver.Turn{Text: "Redrafting.", Usage: u})
	e.must("agent", "answer", "plans/csv/lead", "--deny")
	if !wait.Until(90*time.Second, func() bool {
		for _, q := range modelserver.Conversation(srv.Requests()[before:]) {
			if strings.Contains(q.LastUser(), reason) {
				return true
			}
		}
		return false
	}) {
		t.Fatalf("the reason never reached the model; screen:\n%s", e.orcr("agent", "read", "plans/csv/lead").Out)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("build/ is gone: %v", err)
	}
}

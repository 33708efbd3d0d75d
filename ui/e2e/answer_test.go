package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/testutil/modelserver"
)

// TestDashboardAnswersBlockedAgent runs the real claude CLI against the scripted model
// server; the model asks to run a Bash command, claude asks permission, the engine
// reports the agent blocked through claude's hooks, and the operator jumps to it and
// answers from the dashboard.
func TestDashboardAnswersBlockedAgent(t *testing.T) {
	r := newRig(t)
	work, _, run := r.claudeSetup(t, "",
		modelserver.Turn{ToolCalls: []modelserver.ToolCall{{Name: "Bash", Input: map[string]any{
			"command": "rm -rf build", "description": "Remove the build directory"}}}},
		modelserver.Turn{Text: "The build directory is gone."},
	)
	if err := os.MkdirAll(filepath.Join(work, "build"), 0o755); err != nil {
		t.Fatal(err)
	}

	r.start()
	r.waitText(20*time.Second, "agents 0", "in-process")
	r.mustOrcr(append(append([]string{"agent", "run", "fix/clean"}, run...),
		"--prompt", "remove the build directory", "--", "--permission-mode", "default")...)
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := r.orcr("agent", "read", "fix/clean")
			t.Logf("claude's screen:\n%s", out)
			out, _ = r.orcr("agent", "get", "fix/clean", "--json")
			t.Logf("agent:\n%s", out)
		}
	})
	r.waitText(90*time.Second, "▲ 1 blocked")

	r.keys("b") // jump to the next blocked agent
	r.waitText(10*time.Second, "─ fix/clean ", "blocked on permission")
	r.keys("r")
	// The options as claude shows them (a hook can report the prompt before its menu
	// is drawn: the open dialog then gets them when the record does).
	r.waitText(10*time.Second, "fix/clean · permission", "1. Yes", "4. No")
	r.keys("Enter") // the first option: Yes
	r.waitScreen("the agent to go on and finish", 90*time.Second, func(s string) bool {
		return !strings.Contains(s, "blocked") && strings.Contains(treeLine(s, "clean"), "✓")
	})
	if _, err := os.Stat(filepath.Join(work, "build")); !os.IsNotExist(err) {
		t.Fatalf("the permitted command did not run: %v", err)
	}
}

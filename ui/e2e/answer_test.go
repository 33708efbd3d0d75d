package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/testutil/clis"

	"orcr/testutil/modelserver"
)

// claudeBin finds the real claude CLI that scripts/install-clis.sh installs, or skips.
func claudeBin(t *testing.T) string {
	t.Helper()
	return clis.Find(t, "claude", "ORCR_CLAUDE_BIN")
}

// TestDashboardAnswersBlockedAgent runs the real claude CLI against the scripted model
// server; the model asks to run a Bash command, claude asks permission, the engine
// reports the agent blocked through claude's hooks, and the operator jumps to it and
// answers from the dashboard.
func TestDashboardAnswersBlockedAgent(t *testing.T) {
	bin := claudeBin(t)
	r := newRig(t)
	work := filepath.Join(r.dir, "work")
	cfg := filepath.Join(r.dir, "claude")
	for _, d := range []string{work, filepath.Join(work, "build"), cfg, filepath.Join(r.dir, "config", "orcr")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Onboarding done, as on a machine where claude has been used before.
	if err := os.WriteFile(filepath.Join(cfg, ".claude.json"), []byte(`{"hasCompletedOnboarding":true,"theme":"dark"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := "[providers.claude]\nbin = \"" + bin + "\"\n"
	if err := os.WriteFile(filepath.Join(r.dir, "config", "orcr", "config.toml"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, err := modelserver.Start(
		modelserver.Turn{ToolCalls: []modelserver.ToolCall{{Name: "Bash", Input: map[string]any{
			"command": "rm -rf build", "description": "Remove the build directory"}}}},
		modelserver.Turn{Text: "The build directory is gone."},
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)

	r.start()
	r.waitText(20*time.Second, "agents 0", "in-process")
	r.mustOrcr("agent", "run", "fix/clean", "--provider", "claude", "--cwd", work,
		"--env", "CLAUDE_CONFIG_DIR="+cfg, "--env", "ANTHROPIC_BASE_URL="+srv.URL,
		"--env", "ANTHROPIC_AUTH_TOKEN=test-token", "--env", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"--env", "DISABLE_AUTOUPDATER=1", "--prompt", "remove the build directory", "--", "--permission-mode", "default")
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

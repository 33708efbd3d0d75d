package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sbapi "orcr/sandbox/api"
	"orcr/sandbox/confine"
	"orcr/testutil/clis"
	"orcr/testutil/modelserver"
	"orcr/testutil/wait"
)

// sandboxOf is what `orcr agent get --explain` is made from: the agent's policy and
// what the launcher in its pane applied.
func sandboxOf(t *testing.T, e *env, target string) sbapi.SandboxExplanation {
	t.Helper()
	a := agentJSON(t, e, target)
	var ex sbapi.SandboxExplanation
	if err := e.client().Call(t.Context(), sbapi.MethodExplain, sbapi.SandboxExplainParams{Target: a.ID}, &ex); err != nil {
		t.Fatal(err)
	}
	if ex.Mode != "on" || ex.Applied == nil || ex.Policy == nil || ex.Applied.PID != a.PID {
		b, _ := json.MarshalIndent(ex, "", "  ")
		t.Fatalf("%s (pid %d) is not confined by its launcher:\n%s", target, a.PID, b)
	}
	return ex
}

// TestRunSandboxedClaudeCoder: in a real run (coders confined by default) the real
// claude CLI, inside orcr's Landlock sandbox with its own bash sandbox off, writes a
// file with Write, commits with Bash and reports with `orcr run done`; the milestone
// merges.
func TestRunSandboxedClaudeCoder(t *testing.T) {
	if _, err := confine.KernelABI(); err != nil {
		clis.Missingf(t, "no Landlock: %v", err)
	}
	r := newRunRig(t, "solo")
	r.approvePlan(oneMilestone)
	m1 := r.worktree("M1")
	r.models.PushTo("M1", write(m1+"/greet.txt", "hello, world\nsigned-off\n"), commitDone("M1", "greeting"), say("Committed."))
	r.must("run", "start", "solo", "--coders", "1", "--coder", "claude", "--lead", "none")
	r.must("run", "dispatch", "solo", "M1")
	r.waitState("M1", "merged", 150*time.Second)
	wait.For(t, 60*time.Second, "the tool result of `orcr run done` at the model", func() bool {
		return r.saw("M1", "M1: checking; the check")
	})
	ex := sandboxOf(t, r.env, "runs/solo/coder-1")
	if !strings.Contains(strings.Join(ex.Policy.Notes, "\n"), "claude's own bash sandbox is off") {
		t.Errorf("notes %q", ex.Policy.Notes)
	}
	if !strings.Contains(strings.Join(ex.Policy.RW, " "), m1) && !strings.Contains(strings.Join(ex.Policy.RW, " "), filepath.Base(m1)) {
		t.Errorf("rw %q lacks the worktree %s", ex.Policy.RW, m1)
	}
	if got := r.git(r.repo, "show feature/solo:greet.txt"); got != "hello, world\nsigned-off" {
		t.Fatalf("greet.txt on feature/solo is %q", got)
	}
	out := r.must("agent", "get", "runs/solo/coder-1", "--explain")
	if !strings.Contains(out, "on: Landlock ABI") || !strings.Contains(out, fmt.Sprintf("TCP 443,%s", portOf(r.models.URL))) {
		t.Errorf("--explain:\n%s", out)
	}
}

// TestRunSandboxedCodexCoder: the same with the real codex CLI, whose own sandbox
// (asked for by the run: workspace-write) is switched to danger-full-access because
// orcr confines it.
func TestRunSandboxedCodexCoder(t *testing.T) {
	if _, err := confine.KernelABI(); err != nil {
		clis.Missingf(t, "no Landlock: %v", err)
	}
	codexHome := filepath.Join(t.TempDir(), "codex")
	r := newRunRig(t, "solo", "CODEX_HOME="+codexHome, modelserver.CodexKeyEnv+"=test-key",
		"ORCR_CODEX_BIN="+clis.Find(t, "codex", "ORCR_CODEX_BIN"))
	if err := modelserver.WriteCodexHome(codexHome, r.models.URL); err != nil {
		t.Fatal(err)
	}
	r.approvePlan(oneMilestone)
	m1 := r.worktree("M1")
	exec := func(cmd string) modelserver.Turn {
		return modelserver.Turn{ToolCalls: []modelserver.ToolCall{{Name: "exec_command", Input: map[string]any{"cmd": cmd, "workdir": m1}}}}
	}
	r.models.Push(
		exec("printf 'hello, world\\nsigned-off\\n' > greet.txt"),
		exec(`git add -A && git commit -qm "M1: greeting" && "$ORCR_BIN" run done M1`),
		modelserver.Turn{Text: "Committed."})
	r.must("run", "start", "solo", "--coders", "1", "--coder", "codex", "--lead", "none")
	r.must("run", "dispatch", "solo", "M1")
	r.waitState("M1", "merged", 150*time.Second)
	ex := sandboxOf(t, r.env, "runs/solo/coder-1")
	if !strings.Contains(strings.Join(ex.Policy.Notes, "\n"), "codex's own sandbox is off") {
		t.Errorf("notes %q", ex.Policy.Notes)
	}
	// The record keeps the run's flags (workspace-write); the process codex runs as
	// got danger-full-access in their place.
	a := agentJSON(t, r.env, "runs/solo/coder-1")
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", a.PID))
	if argv := strings.ReplaceAll(string(cmdline), "\x00", " "); err != nil || !strings.Contains(argv, "--sandbox danger-full-access") ||
		strings.Contains(argv, "workspace-write") {
		t.Errorf("codex runs as %q (%v)", argv, err)
	}
	// `orcr run done` reported from inside the sandbox (not the autopilot taking the
	// commits after a turn without it).
	if f := r.facts("M1"); !strings.HasPrefix(f, "dispatch done") {
		t.Errorf("M1's facts: %s", f)
	}
	if got := r.git(r.repo, "show feature/solo:greet.txt"); got != "hello, world\nsigned-off" {
		t.Fatalf("greet.txt on feature/solo is %q", got)
	}
}

func portOf(url string) string {
	i := strings.LastIndex(url, ":")
	return strings.TrimRight(url[i+1:], "/")
}

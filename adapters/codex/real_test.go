package codex

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/adapters/internal/clitest"
	"orcr/core"
	"orcr/core/wire"
	"orcr/testutil/modelserver"
)

type realRig struct {
	srv   *modelserver.Server
	home  string
	cwd   string
	hooks string
	prov  *Provider
	plan  core.LaunchPlan
	env   []string
	agent wire.Agent
	self  string // the hook recorder
}

func newRealRig(t *testing.T, prompt string, extra ...string) *realRig {
	t.Helper()
	bin := clitest.CLI(t, "codex", "ORCR_CODEX_BIN")
	self := clitest.HookRec(t)
	srv, err := modelserver.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	root := t.TempDir()
	r := &realRig{srv: srv, home: filepath.Join(root, "codex-home"), cwd: filepath.Join(root, "work"), hooks: filepath.Join(root, "hooks.jsonl")}
	if err := modelserver.WriteCodexHome(r.home, srv.URL); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(r.cwd, 0o755)
	r.cwd, _ = filepath.EvalSymlinks(r.cwd)
	r.prov = New(Options{Bin: bin, Home: r.home})
	r.self = self
	now := time.Now()
	r.agent = wire.Agent{ID: "agent-1", Provider: Name, Cwd: r.cwd, Prompt: prompt, CreatedAt: now, StartedAt: &now, Argv: extra}
	r.plan, err = r.prov.Prepare(context.Background(), core.LaunchRequest{Agent: r.agent, Self: self, StateDir: filepath.Join(root, "state")})
	if err != nil {
		t.Fatal(err)
	}
	r.env = clitest.BaseEnv(root, "ORCR_ID=agent-1", "ORCR_PATH=test/codex", "ORCR_PROVIDER=codex",
		"ORCR_HOOKREC="+r.hooks, "SCRIPTED_API_KEY=test-key")
	return r
}

func (r *realRig) start(t *testing.T) *clitest.Run {
	return clitest.Start(t, r.plan, r.env, r.cwd, r.agent, r.prov.Observe(r.agent), r.hooks)
}

func TestRealCodexTurnToolAndSteer(t *testing.T) {
	rig := newRealRig(t, "write hello.txt")
	target := filepath.Join(rig.cwd, "hello.txt")
	rig.srv.Push(
		modelserver.Turn{ToolCalls: []modelserver.ToolCall{{Name: "exec_command", Input: map[string]any{
			"cmd": "printf 'hello from orcr\\n' > " + target}}},
			Usage: modelserver.Usage{Input: 1500, CacheRead: 1000, Output: 40}},
		modelserver.Turn{Text: "I wrote hello.txt.", Usage: modelserver.Usage{Input: 1700, CacheRead: 1500, Output: 12}},
		modelserver.Turn{Text: "Second turn: cookie checked.", Usage: modelserver.Usage{Input: 1800, CacheRead: 1700, Output: 9}},
	)
	run := rig.start(t)
	v := run.Wait(90*time.Second, "first turn done", func(v clitest.View) bool {
		return v.State == wire.StateDone && v.LastMessage == "I wrote hello.txt."
	})
	if b, err := os.ReadFile(target); err != nil || string(b) != "hello from orcr\n" {
		t.Fatalf("tool did not write the file: %q %v", b, err)
	}
	// fresh input = input - cached, per response: 500 + 200; cached 1000 + 1500.
	v = run.Wait(10*time.Second, "usage", func(v clitest.View) bool { return v.Usage.OutputTokens == 52 })
	if v.Usage.InputTokens != 700 || v.Usage.CacheReadTokens != 2500 || !v.Usage.Priced || v.Model != "gpt-5.3-codex" {
		t.Fatalf("usage %+v model %q", v.Usage, v.Model)
	}
	if !strings.Contains(v.Transcript, filepath.Join(rig.home, "sessions")) || v.SessionID == "" {
		t.Fatalf("rollout %q session %q", v.Transcript, v.SessionID)
	}
	run.Wait(10*time.Second, "notify hook", func(v clitest.View) bool { return len(v.Hooks) > 0 })
	run.Send("also check the session cookie")
	run.Wait(60*time.Second, "second turn", func(v clitest.View) bool {
		return v.State == wire.StateDone && v.LastMessage == "Second turn: cookie checked." && v.Usage.OutputTokens == 61
	})
	if n := rig.srv.Played(); n != 3 {
		t.Fatalf("played %d turns", n)
	}
	if v := run.View(); len(v.HookErrors) > 0 {
		t.Fatalf("hook errors %v", v.HookErrors)
	}

	// A usage limit on the next turn blocks the agent with the reset time and stores
	// a reading. It runs in this session (a third message) rather than a fresh CLI:
	// the limit is the same to codex, and a start costs seconds.
	reset := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	rig.srv.Push(modelserver.Turn{Limit: &modelserver.LimitError{ResetsAt: reset}})
	run.Send("keep going")
	v = run.Wait(60*time.Second, "blocked on usage limit", func(v clitest.View) bool {
		return v.State == wire.StateBlocked && v.Blocked != nil && v.Blocked.Kind == wire.BlockedLimit &&
			v.Blocked.ResetsAt != nil && v.Blocked.ResetsAt.Equal(reset)
	})
	if v.Source != "transcript" || !strings.HasPrefix(v.Reason, "usage-limit: resets ") {
		t.Fatalf("source %q reason %q", v.Source, v.Reason)
	}
	v = run.Wait(5*time.Second, "limit reading", func(v clitest.View) bool {
		for _, r := range v.Readings {
			if r.LimitHit && r.Window == "5h" {
				return true
			}
		}
		return false
	})
}

func TestRealCodexApprovalBlocked(t *testing.T) {
	rig := newRealRig(t, "clean the build", "-a", "on-request")
	os.MkdirAll(filepath.Join(rig.cwd, "build"), 0o755)
	rig.srv.Push(
		modelserver.Turn{ToolCalls: []modelserver.ToolCall{{Name: "exec_command", Input: map[string]any{"cmd": "rm -rf build",
			"sandbox_permissions": "require_escalated", "justification": "Remove the build directory?"}}},
			Usage: modelserver.Usage{Input: 100, Output: 5}},
		modelserver.Turn{Text: "Removed build.", Usage: modelserver.Usage{Input: 120, Output: 4}},
	)
	run := rig.start(t)
	v := run.Wait(60*time.Second, "blocked on the approval", func(v clitest.View) bool {
		return v.State == wire.StateBlocked && v.Blocked != nil && v.Blocked.Kind == "permission"
	})
	if v.Reason != "permission: Bash(rm -rf build)" || v.Source != "screen" {
		t.Fatalf("reason %q source %q", v.Reason, v.Source)
	}
	if _, err := os.Stat(filepath.Join(rig.cwd, "build")); err != nil {
		t.Fatal("the command ran before it was approved")
	}
	// The state may come (from a hook) before the dialog is drawn: wait for the dialog.
	run.WaitScreen(30*time.Second, func(s string) bool { return strings.Contains(s, "Would you like to run the following command?") })
	run.PressUntil("enter", 30*time.Second, func(s string) bool {
		return !strings.Contains(s, "Would you like to run the following command?")
	})
	run.Wait(60*time.Second, "done after approval", func(v clitest.View) bool {
		return v.State == wire.StateDone && v.LastMessage == "Removed build."
	})
	if _, err := os.Stat(filepath.Join(rig.cwd, "build")); !os.IsNotExist(err) {
		t.Fatalf("build still there after approval: %v", err)
	}
}

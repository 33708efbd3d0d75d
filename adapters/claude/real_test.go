package claude

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
	"orcr/testutil/clis"
	"orcr/testutil/modelserver"
)

// realRig prepares a real claude launch against the scripted server.
type realRig struct {
	srv   *modelserver.Server
	cfg   string
	cwd   string
	hooks string
	prov  *Provider
	plan  core.LaunchPlan
	env   []string
	agent wire.Agent
}

func newRealRig(t *testing.T, agent wire.Agent, trust bool, script ...modelserver.Turn) *realRig {
	t.Helper()
	bin := clitest.CLI(t, "claude", "ORCR_CLAUDE_BIN")
	self := clitest.HookRec(t)
	srv, err := modelserver.Start(script...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	root := t.TempDir()
	r := &realRig{srv: srv, cfg: filepath.Join(root, "cfg"), cwd: filepath.Join(root, "work"), hooks: filepath.Join(root, "hooks.jsonl")}
	clis.ClaudeConfig(t, r.cfg)
	os.MkdirAll(r.cwd, 0o755)
	r.cwd = realPath(r.cwd)
	r.prov = New(Options{Bin: bin, ConfigDir: r.cfg, NoTrust: !trust})
	agent.Provider, agent.Cwd = Name, r.cwd
	r.plan, err = r.prov.Prepare(context.Background(), core.LaunchRequest{Agent: agent, Self: self, StateDir: filepath.Join(root, "state")})
	if err != nil {
		t.Fatal(err)
	}
	agent.SessionID, agent.Transcript = r.plan.SessionID, r.plan.Transcript
	r.agent = agent
	r.env = clitest.BaseEnv(root,
		"ORCR_ID=agent-1", "ORCR_PATH=test/claude", "ORCR_PROVIDER=claude", "ORCR_HOOKREC="+r.hooks,
		"ANTHROPIC_BASE_URL="+srv.URL, "ANTHROPIC_AUTH_TOKEN=test-token",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1")
	return r
}

func (r *realRig) start(t *testing.T) *clitest.Run {
	return clitest.Start(t, r.plan, r.env, r.cwd, r.agent, r.prov.Observe(r.agent), r.hooks)
}

func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

func TestRealClaudeTurnToolAndSteer(t *testing.T) {
	rig := newRealRig(t, wire.Agent{ID: "agent-1", Prompt: "write hello.txt"}, true)
	// The tool writes into the agent's cwd.
	target := filepath.Join(rig.cwd, "hello.txt")
	rig.srv.Push(
		modelserver.Turn{ToolCalls: []modelserver.ToolCall{{Name: "Write", Input: map[string]any{
			"file_path": target, "content": "hello from orcr\n"}}},
			Usage: modelserver.Usage{Input: 120, Output: 30, CacheRead: 1000, CacheWrite: 200}},
		modelserver.Turn{Text: "I wrote hello.txt.", Usage: modelserver.Usage{Input: 15, Output: 8, CacheRead: 1200}},
		modelserver.Turn{Text: "Second turn: cookie checked.", Usage: modelserver.Usage{Input: 7, Output: 5}},
	)
	run := rig.start(t)

	v := run.Wait(90*time.Second, "first turn done via hooks", func(v View) bool {
		return v.State == wire.StateDone && v.Source == "hook"
	})
	if b, err := os.ReadFile(target); err != nil || string(b) != "hello from orcr\n" {
		t.Fatalf("tool did not write the file: %q %v", b, err)
	}
	if !contains(v.States, "working/hook") {
		t.Errorf("no working state from hooks: %v", v.States)
	}
	v = run.Wait(10*time.Second, "transcript usage", func(v View) bool { return v.Usage.OutputTokens == 38 })
	if v.Usage.InputTokens != 135 || v.Usage.CacheReadTokens != 2200 || v.Usage.CacheWriteTokens != 200 {
		t.Fatalf("usage %+v, want in 135 out 38 read 2200 write 200", v.Usage)
	}
	if v.LastMessage != "I wrote hello.txt." || (v.SessionID != "" && v.SessionID != rig.plan.SessionID) {
		t.Fatalf("last %q session %q", v.LastMessage, v.SessionID)
	}
	if v.Transcript != "" && v.Transcript != rig.plan.Transcript {
		t.Fatalf("transcript from hook %q, Prepare said %q", v.Transcript, rig.plan.Transcript)
	}
	if _, err := os.Stat(rig.plan.Transcript); err != nil {
		t.Fatalf("transcript not where Prepare said: %v", err)
	}
	// Steer: a second message is a second turn.
	run.Send("also check the session cookie")
	v = run.Wait(60*time.Second, "second turn", func(v View) bool {
		return v.LastMessage == "Second turn: cookie checked." && v.State == wire.StateDone
	})
	run.Wait(10*time.Second, "second turn usage", func(v View) bool { return v.Usage.OutputTokens == 43 })
	reqs := rig.srv.Requests()
	if last := reqs[len(reqs)-1]; !last.Scripted || !strings.Contains(string(last.Body), "also check the session cookie") {
		t.Fatalf("steer text did not reach the model intact")
	}
	if n := rig.srv.Played(); n != 3 {
		t.Fatalf("server played %d turns, want 3", n)
	}
	if len(v.HookErrors) > 0 {
		t.Fatalf("hook errors: %v", v.HookErrors)
	}

	// A usage limit on the next turn blocks the agent with the reset time and stores
	// a reading. It runs in this session (a third message) rather than a fresh CLI:
	// the limit is the same to claude, and a start costs seconds.
	reset := time.Now().Add(3 * time.Hour).UTC().Truncate(time.Minute)
	msg := "You've hit your session limit · resets " + strings.ToLower(reset.Format("3:04pm")) + " (UTC)"
	rig.srv.Push(modelserver.Turn{Limit: &modelserver.LimitError{ResetsAt: reset, Message: msg}})
	run.Send("keep going")
	v = run.Wait(60*time.Second, "blocked on usage limit", func(v View) bool {
		return v.State == wire.StateBlocked && v.Blocked != nil && v.Blocked.Kind == wire.BlockedLimit
	})
	if v.Blocked.ResetsAt == nil || !v.Blocked.ResetsAt.Equal(reset) {
		t.Fatalf("reset %v, want %v (blocked %+v)", v.Blocked.ResetsAt, reset, v.Blocked)
	}
	if !strings.HasPrefix(v.Reason, "usage-limit: resets ") {
		t.Fatalf("reason %q", v.Reason)
	}
	v = run.Wait(5*time.Second, "limit reading", func(v View) bool { return len(v.Readings) > 0 })
	if r := v.Readings[len(v.Readings)-1]; !r.LimitHit || r.ResetsAt == nil || !r.ResetsAt.Equal(reset) || r.Provider != Name {
		t.Fatalf("reading %+v", r)
	}
}

func TestRealClaudeTrustDialogReported(t *testing.T) {
	rig := newRealRig(t, wire.Agent{ID: "agent-1", Prompt: "hi"}, false, modelserver.Turn{Text: "hi"})
	run := rig.start(t)
	v := run.Wait(60*time.Second, "trust dialog reported", func(v View) bool {
		return v.State == wire.StateBlocked && v.Blocked != nil && v.Blocked.Kind == "dialog"
	})
	if v.Reason != "dialog: trust folder" || v.Source != "screen" {
		t.Fatalf("reason %q source %q", v.Reason, v.Source)
	}
}

type View = clitest.View

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func TestRealClaudePermissionBlocked(t *testing.T) {
	rig := newRealRig(t, wire.Agent{ID: "agent-1", Prompt: "clean the build", Argv: []string{"--permission-mode", "default"}}, true)
	os.MkdirAll(filepath.Join(rig.cwd, "build"), 0o755)
	rig.srv.Push(
		modelserver.Turn{ToolCalls: []modelserver.ToolCall{{Name: "Bash", Input: map[string]any{"command": "rm -rf build", "description": "Remove the build dir"}}},
			Usage: modelserver.Usage{Input: 10, Output: 5}},
		modelserver.Turn{Text: "Removed build.", Usage: modelserver.Usage{Input: 12, Output: 4}},
	)
	run := rig.start(t)
	v := run.Wait(60*time.Second, "blocked on the permission", func(v View) bool {
		return v.State == wire.StateBlocked && v.Blocked != nil && v.Blocked.Kind == "permission"
	})
	if v.Reason != "permission: Bash(rm -rf build)" || v.Source != "hook" {
		t.Fatalf("reason %q source %q", v.Reason, v.Source)
	}
	if _, err := os.Stat(filepath.Join(rig.cwd, "build")); err != nil {
		t.Fatal("the command ran before it was approved")
	}
	// Approve (the first menu entry is "Yes"): the tool runs, the turn ends.
	// The state may come (from a hook) before the dialog is drawn: wait for the dialog.
	run.WaitScreen(30*time.Second, func(s string) bool { return strings.Contains(s, "Do you want to proceed?") })
	run.PressUntil("enter", 30*time.Second, func(s string) bool {
		return !strings.Contains(s, "Do you want to proceed?")
	})
	run.Wait(60*time.Second, "done after approval", func(v View) bool {
		return v.State == wire.StateDone && v.LastMessage == "Removed build."
	})
	if _, err := os.Stat(filepath.Join(rig.cwd, "build")); !os.IsNotExist(err) {
		t.Fatalf("build still there after approval: %v", err)
	}
	if v := run.View(); !contains(v.States, "working/hook") {
		t.Fatalf("no working state after the approval: %v", v.States)
	}
}

package e2e_test

import (
	"orcr/testutil/clis"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"orcr/core/wire"
	"orcr/testutil/modelserver"
)

func TestCodexThroughOrcr(t *testing.T) {
	bin := clis.Find(t, "codex", "ORCR_CODEX_BIN")
	srv, err := modelserver.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	e := newOrcr(t)
	home, work := e.scriptedCodexHome(srv.URL)
	e.vars = append(e.vars, "ORCR_CODEX_BIN="+bin, "CODEX_HOME="+home, "SCRIPTED_API_KEY=test-key")
	e.serve()

	target := filepath.Join(work, "hello.txt")
	srv.Push(
		modelserver.Turn{ToolCalls: []modelserver.ToolCall{{Name: "exec_command", Input: map[string]any{
			"cmd": "printf 'hello from orcr\\n' > " + target}}},
			Usage: modelserver.Usage{Input: 1500, CacheRead: 1000, Output: 40}},
		modelserver.Turn{Text: "I wrote hello.txt.", Usage: modelserver.Usage{Input: 1700, CacheRead: 1500, Output: 12}},
	)
	e.must("agent", "run", "fix/x", "--provider", "codex", "--cwd", work, "--prompt", "write hello.txt")
	// Usage is read to the end of the turn before done is published: the record
	// right after the wait holds the turn's tokens.
	e.must("agent", "wait", "fix/x", "--until", "done", "--timeout", "120s")
	a := e.agent("fix/x")
	if a.State != wire.StateDone || a.LastMessage != "I wrote hello.txt." || a.Usage.OutputTokens != 52 {
		t.Fatalf("at done: %s/%s %q last %q usage %+v", a.State, a.StateSource, a.StateReason, a.LastMessage, a.Usage)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "hello from orcr\n" {
		t.Fatalf("tool did not write the file: %q %v", b, err)
	}
	if a.Usage.InputTokens != 700 || a.Usage.CacheReadTokens != 2500 || !a.Usage.Priced || a.Model != "gpt-5.3-codex" {
		t.Fatalf("usage %+v model %q", a.Usage, a.Model)
	}
	if !strings.HasPrefix(a.Transcript, filepath.Join(home, "sessions")) {
		t.Fatalf("rollout %q", a.Transcript)
	}
	if got := strings.TrimSpace(e.must("agent", "read", "fix/x", "--last-message")); got != "I wrote hello.txt." {
		t.Fatalf("last message %q", got)
	}

	srv.Push(modelserver.Turn{Text: "Cookie checked.", Usage: modelserver.Usage{Input: 1800, CacheRead: 1700, Output: 9}})
	e.must("agent", "send", "fix/x", "also check the session cookie")
	// (The agent is still done from the first turn until codex starts the second, so
	// wait for the second turn's done by its message.)
	a = e.waitAgent("fix/x", 60*time.Second, "second turn", func(a wire.Agent) bool {
		return a.LastMessage == "Cookie checked." && a.State == wire.StateDone
	})
	if a.Usage.OutputTokens != 61 {
		t.Fatalf("at the second done: usage %+v", a.Usage)
	}

	reset := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	srv.Push(modelserver.Turn{Limit: &modelserver.LimitError{ResetsAt: reset}})
	e.must("agent", "send", "fix/x", "keep going")
	a = e.waitAgent("fix/x", 60*time.Second, "usage limit", func(a wire.Agent) bool {
		return a.State == wire.StateBlocked && a.Blocked != nil && a.Blocked.Kind == wire.BlockedLimit &&
			a.Blocked.ResetsAt != nil && a.Blocked.ResetsAt.Equal(reset)
	})

	if err := syscall.Kill(a.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	e.must("agent", "wait", "fix/x", "--until", "exited", "--timeout", "30s")
}

// TestCodexSignInScreenIsSetup: the real codex with an empty CODEX_HOME and no key
// shows its sign-in screen and waits there. `agent run` warns up front (the server's
// accounts know the login is missing) and still spawns; the agent is then blocked on
// setup, saying what to do, not "working" for as long as nobody looks.
func TestCodexSignInScreenIsSetup(t *testing.T) {
	bin := clis.Find(t, "codex", "ORCR_CODEX_BIN")
	e := newOrcr(t)
	home := filepath.Join(e.dir, "codex-home")
	work := filepath.Join(e.dir, "work")
	for _, d := range []string{home, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e.vars = append(e.vars, "ORCR_CODEX_BIN="+bin, "CODEX_HOME="+home)
	e.serve()
	t0 := time.Now()
	r := e.run("agent", "run", "login/x", "--provider", "codex", "--cwd", work, "--prompt", "hello")
	if r.code != 0 {
		t.Fatalf("agent run: exit %d: %s", r.code, r.err)
	}
	if want := "orcr: warning: codex account default: no login found; log in with: codex login"; !strings.Contains(r.err, want) {
		t.Fatalf("agent run stderr %q, want a line with %q", r.err, want)
	}
	a := e.waitAgent("login/x", 90*time.Second, "blocked on setup", func(a wire.Agent) bool {
		return a.State == wire.StateBlocked && a.Blocked != nil && a.Blocked.Kind == wire.BlockedSetup
	})
	t.Logf("blocked after %s", time.Since(t0))
	if !strings.Contains(a.Blocked.Detail, "codex is not signed in: run `CODEX_HOME="+home+" codex login`") || a.StateSource != "screen" {
		t.Fatalf("blocked %+v (%s: %s)", a.Blocked, a.StateSource, a.StateReason)
	}
	e.must("agent", "kill", "login/x")
}

package e2e_test

import (
	"orcr/testutil/rig"
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
	t.Parallel()
	e := rig.New(t)
	home := e.Codex()
	e.Serve()
	srv, work := e.Models, e.Work

	target := filepath.Join(work, "hello.txt")
	srv.Push(
		modelserver.Turn{ToolCalls: []modelserver.ToolCall{{Name: "exec_command", Input: map[string]any{
			"cmd": "printf 'hello from orcr\\n' > " + target}}},
			Usage: modelserver.Usage{Input: 1500, CacheRead: 1000, Output: 40}},
		modelserver.Turn{Text: "I wrote hello.txt.", Usage: modelserver.Usage{Input: 1700, CacheRead: 1500, Output: 12}},
	)
	e.Must("agent", "run", "fix/x", "--provider", "codex", "--cwd", work, "--prompt", "write hello.txt")
	// Usage is read to the end of the turn before done is published: the record
	// right after the wait holds the turn's tokens.
	e.Must("agent", "wait", "fix/x", "--until", "done", "--timeout", "120s")
	a := e.Agent("fix/x")
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
	if got := strings.TrimSpace(e.Must("agent", "read", "fix/x", "--last-message")); got != "I wrote hello.txt." {
		t.Fatalf("last message %q", got)
	}

	srv.Push(modelserver.Turn{Text: "Cookie checked.", Usage: modelserver.Usage{Input: 1800, CacheRead: 1700, Output: 9}})
	e.Must("agent", "send", "fix/x", "also check the session cookie")
	// (The agent is still done from the first turn until codex starts the second, so
	// wait for the second turn's done by its message.)
	a = e.WaitAgent("fix/x", 60*time.Second, "second turn", func(a wire.Agent) bool {
		return a.LastMessage == "Cookie checked." && a.State == wire.StateDone
	})
	if a.Usage.OutputTokens != 61 {
		t.Fatalf("at the second done: usage %+v", a.Usage)
	}

	reset := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	srv.Push(modelserver.Turn{Limit: &modelserver.LimitError{ResetsAt: reset}})
	e.Must("agent", "send", "fix/x", "keep going")
	a = e.WaitAgent("fix/x", 60*time.Second, "usage limit", func(a wire.Agent) bool {
		return a.State == wire.StateBlocked && a.Blocked != nil && a.Blocked.Kind == wire.BlockedLimit &&
			a.Blocked.ResetsAt != nil && a.Blocked.ResetsAt.Equal(reset)
	})

	if err := syscall.Kill(a.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	e.Must("agent", "wait", "fix/x", "--until", "exited", "--timeout", "30s")
}

package e2e_test

import (
	"orcr/testutil/rig"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
	"orcr/testutil/modelserver"
)

func TestPiThroughOrcr(t *testing.T) {
	t.Parallel()
	e := rig.New(t)
	cfg := e.Pi()
	e.Serve()
	srv, work := e.Models, e.Work

	target := filepath.Join(work, "hello.txt")
	srv.Push(
		modelserver.Turn{ToolCalls: []modelserver.ToolCall{{Name: "write", Input: map[string]any{"path": target, "content": "hello from orcr\n"}}},
			Usage: modelserver.Usage{Input: 100, Output: 20, CacheRead: 300, CacheWrite: 40}},
		modelserver.Turn{Text: "I wrote hello.txt.", Usage: modelserver.Usage{Input: 11, Output: 6}},
	)
	e.Must("agent", "run", "pi/one", "--provider", "pi", "--model", modelserver.PiModel, "--cwd", work, "--prompt", "write hello.txt")
	a := e.WaitAgent("pi/one", 90*time.Second, "turn done", func(a wire.Agent) bool {
		return a.State == wire.StateDone && a.LastMessage == "I wrote hello.txt." && a.Usage.OutputTokens == 26
	})
	if a.StateSource != "hook" || a.Usage.InputTokens != 111 || !a.Usage.Priced || !strings.HasPrefix(a.Transcript, filepath.Join(cfg, "sessions")) {
		t.Fatalf("source %q usage %+v transcript %q", a.StateSource, a.Usage, a.Transcript)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "hello from orcr\n" {
		t.Fatalf("tool did not write: %q %v", b, err)
	}
	srv.Push(modelserver.Turn{Text: "Cookie checked.", Usage: modelserver.Usage{Input: 7, Output: 5}})
	e.Must("agent", "send", "pi/one", "also check the session cookie")
	e.WaitAgent("pi/one", 60*time.Second, "second turn", func(a wire.Agent) bool {
		return a.LastMessage == "Cookie checked." && a.State == wire.StateDone && a.Usage.OutputTokens == 31
	})
	reset := time.Now().Add(3 * time.Hour).UTC().Truncate(time.Minute)
	for i := 0; i < 6; i++ { // pi retries a 429 a few times
		srv.Push(modelserver.Turn{Limit: &modelserver.LimitError{ResetsAt: reset,
			Message: "You've hit your session limit · resets " + strings.ToLower(reset.Format("3:04pm")) + " (UTC)"}})
	}
	e.Must("agent", "send", "pi/one", "keep going")
	a = e.WaitAgent("pi/one", 90*time.Second, "usage limit", func(a wire.Agent) bool {
		return a.State == wire.StateBlocked && a.Blocked != nil && a.Blocked.Kind == wire.BlockedLimit
	})
	if a.Blocked.ResetsAt == nil || !a.Blocked.ResetsAt.Equal(reset) {
		t.Fatalf("blocked %+v", a.Blocked)
	}
}

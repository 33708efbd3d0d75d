package e2e_test

import (
	"encoding/json"
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

func TestClaudeThroughOrcr(t *testing.T) {
	t.Parallel()
	e := rig.New(t)
	e.Claude()
	e.Serve()
	srv, work := e.Models, e.Work

	target := filepath.Join(work, "hello.txt")
	srv.Push(
		modelserver.Turn{ToolCalls: []modelserver.ToolCall{{Name: "Write", Input: map[string]any{"file_path": target, "content": "hello from orcr\n"}}},
			Usage: modelserver.Usage{Input: 120, Output: 30, CacheRead: 1000, CacheWrite: 200}},
		modelserver.Turn{Text: "I wrote hello.txt.", Usage: modelserver.Usage{Input: 15, Output: 8, CacheRead: 1200}},
	)
	e.Must("agent", "run", "review/auth", "--provider", "claude", "--cwd", work, "--prompt", "write hello.txt")
	e.Must("agent", "wait", "review/auth", "--until", "done", "--timeout", "120s")
	a := e.WaitAgent("review/auth", 10*time.Second, "tokens", func(a wire.Agent) bool { return a.Usage.OutputTokens == 38 })
	if a.StateSource != "hook" {
		t.Errorf("done decided by %q, want hook (%s)", a.StateSource, a.StateReason)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "hello from orcr\n" {
		t.Fatalf("tool did not write the file: %q %v", b, err)
	}
	u := a.Usage
	if u.InputTokens != 135 || u.CacheReadTokens != 2200 || u.CacheWriteTokens != 200 || !u.Priced || u.CostUSD == nil || *u.CostUSD <= 0 {
		t.Fatalf("usage %+v", u)
	}
	if got := strings.TrimSpace(e.Must("agent", "read", "review/auth", "--last-message")); got != "I wrote hello.txt." {
		t.Fatalf("last message %q", got)
	}
	if a.SessionID == "" || a.Transcript == "" {
		t.Fatalf("session %q transcript %q", a.SessionID, a.Transcript)
	}

	// A steer is a second turn.
	srv.Push(modelserver.Turn{Text: "Cookie checked.", Usage: modelserver.Usage{Input: 7, Output: 5}})
	e.Must("agent", "send", "review/auth", "also check the session cookie")
	e.WaitAgent("review/auth", 60*time.Second, "second turn", func(a wire.Agent) bool {
		return a.LastMessage == "Cookie checked." && a.State == wire.StateDone && a.Usage.OutputTokens == 43
	})

	// A usage limit blocks the agent with the reset time and stores a reading.
	reset := time.Now().Add(3 * time.Hour).UTC().Truncate(time.Minute)
	srv.Push(modelserver.Turn{Limit: &modelserver.LimitError{ResetsAt: reset,
		Message: "You've hit your session limit · resets " + strings.ToLower(reset.Format("3:04pm")) + " (UTC)"}})
	e.Must("agent", "send", "review/auth", "keep going")
	a = e.WaitAgent("review/auth", 60*time.Second, "usage limit", func(a wire.Agent) bool {
		return a.State == wire.StateBlocked && a.Blocked != nil && a.Blocked.Kind == wire.BlockedLimit
	})
	if a.Blocked.ResetsAt == nil || !a.Blocked.ResetsAt.Equal(reset) || !strings.HasPrefix(a.StateReason, "usage-limit: resets") {
		t.Fatalf("blocked %+v reason %q", a.Blocked, a.StateReason)
	}
	var usage wire.UsageResult
	json.Unmarshal([]byte(e.Must("usage", "--json")), &usage)
	found := false
	for _, r := range usage.Readings {
		if r.Provider == "claude" && r.LimitHit && r.ResetsAt != nil && r.ResetsAt.Equal(reset) {
			found = true
		}
	}
	rows := 0
	for _, r := range usage.Rows {
		if r.Provider == "claude" && r.Window == "total" {
			rows++
		}
	}
	if !found || rows == 0 {
		t.Fatalf("usage report lacks the limit reading or claude rows: %+v", usage)
	}

	// A killed CLI becomes exited.
	if a.PID <= 0 {
		t.Fatalf("no pid: %+v", a)
	}
	if err := syscall.Kill(a.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	e.Must("agent", "wait", "review/auth", "--until", "exited", "--timeout", "30s")
}

package roles_test

import (
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
)

// TestWrapUpWaitsForPrompt: the soft timeout comes while the agent waits on a
// question. The wrap-up is not typed into it (the question would take it as its
// answer and the message would be lost); it goes in once the user has answered.
func TestWrapUpWaitsForPrompt(t *testing.T) {
	t.Parallel()
	r := newClaudeRig(t)
	r.role("asker", `providers = ["shell"]
soft_timeout = "2s"
hard_timeout = "120s"
`)
	r.Serve()
	r.Must("agent", "run", "ask/a", "--role", "asker", "--cwd", r.Work, "--",
		"sh", "-c", `printf 'Remove build? [y/N] '; read -r a; echo "answer:$a"; exec cat`)
	r.WaitAgent("ask/a", 30*time.Second, "blocked on its question", func(a wire.Agent) bool { return a.State == wire.StateBlocked })
	r.WaitAgent("ask/a", 30*time.Second, "the soft timeout's wrap-up", func(a wire.Agent) bool { return a.Limits.WrapUpAt != nil })
	// The wrap-up goes right after WrapUpAt is recorded; typed into the question it
	// shows within milliseconds. Nothing may reach the question for a few seconds (a
	// window that must pass in full: it grows with the wait scale at most ×2).
	if happensWithin(3*time.Second, func() bool {
		return strings.Contains(r.Must("agent", "read", "ask/a"), "answer:") || r.Agent("ask/a").State != wire.StateBlocked
	}) {
		t.Fatalf("the wrap-up was typed into the question:\n%s", r.Must("agent", "read", "ask/a"))
	}
	r.Must("agent", "answer", "ask/a", "--deny")
	r.WaitAgent("ask/a", 30*time.Second, "the wrap-up after the answer", func(a wire.Agent) bool {
		scr := r.Must("agent", "read", "ask/a")
		return strings.Contains(scr, "answer:n") && strings.Contains(scr, "time limit")
	})
}

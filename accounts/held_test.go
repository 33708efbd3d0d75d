package accounts

import (
	"context"
	"strings"
	"testing"
	"time"

	acctapi "orcr/accounts/api"
	"orcr/core/wire"
)

// TestHeld: a provider is held only when every account is; the answer names each
// account's reason, and a provider without accounts is never held.
func TestHeld(t *testing.T) {
	s := newTestService(t, ModeOrdered, "work", "spare")
	if why := s.Held("claude", "sonnet", 0, ""); why != "" {
		t.Fatalf("fresh accounts held: %q", why)
	}
	s.Observe(wire.LimitReading{Provider: "claude", Account: "work", Window: "5h", UsedPct: 100, ResetsAt: at(2 * time.Hour), ObservedAt: t0})
	if why := s.Held("claude", "sonnet", 0, ""); why != "" {
		t.Fatalf("held with spare free: %q", why)
	}
	if why := s.Held("claude", "sonnet", 0, "work"); !strings.Contains(why, "claude/work 5h window full") {
		t.Fatalf("pinned to the full account: %q", why)
	}
	s.Observe(wire.LimitReading{Provider: "claude", Account: "spare", Window: "weekly", Family: "sonnet", UsedPct: 100, ResetsAt: at(3 * time.Hour), ObservedAt: t0})
	why := s.Held("claude", "sonnet", 0, "")
	if !strings.HasPrefix(why, "every account held — claude/work 5h window full, resets ") || !strings.Contains(why, "; claude/spare weekly sonnet window full") {
		t.Fatalf("both full: %q", why)
	}
	if why := s.Held("claude", "opus", 0, "spare"); why != "" {
		t.Fatalf("opus on spare (only its sonnet window is full) held: %q", why)
	}
	if why := s.Held("shell", "", 0, ""); why != "" {
		t.Fatalf("shell held: %q", why)
	}
}

// TestBudgetSinceAndResume: a budget with Since counts only agents created from then
// on, and a resumed record (whose usage holds its predecessor's) replaces the one it
// continues instead of adding to it.
func TestBudgetSinceAndResume(t *testing.T) {
	s := newTestService(t, ModeOrdered, "work")
	ctx := context.Background()
	cost := func(v float64) *float64 { return &v }
	s.mu.Lock()
	s.noteAgentLocked(wire.Agent{ID: "old", Path: "impl/a", Provider: "claude", State: wire.StateKilled, CreatedAt: t0, Usage: wire.Usage{CostUSD: cost(3)}})
	s.mu.Unlock()
	usd, since := 1.0, t0.Add(time.Minute)
	if _, err := s.BudgetSet(ctx, acctapi.BudgetSetParams{Glob: "impl/a", USD: &usd, Action: "stop", Role: "impl", Since: &since}); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.noteAgentLocked(wire.Agent{ID: "new", Path: "impl/a", Provider: "claude", State: wire.StateDone, CreatedAt: since, Usage: wire.Usage{CostUSD: cost(0.4)}})
	s.noteAgentLocked(wire.Agent{ID: "child", Path: "impl/a/sub", Provider: "claude", State: wire.StateDone, CreatedAt: since.Add(time.Second), Usage: wire.Usage{CostUSD: cost(0.1)}})
	s.noteAgentLocked(wire.Agent{ID: "again", Path: "impl/a", Provider: "claude", State: wire.StateDone, CreatedAt: since.Add(time.Hour), ResumedFrom: "new", Usage: wire.Usage{CostUSD: cost(0.7)}})
	s.mu.Unlock()
	bs, _ := s.Budgets(ctx)
	if len(bs) != 1 || bs[0].Agents != 2 || bs[0].SpentUSD < 0.79 || bs[0].SpentUSD > 0.81 || bs[0].Reached || bs[0].Role != "impl" {
		t.Fatalf("budget %+v: want the resumed record and the child, $0.80, not reached", bs)
	}
}

package roles_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/accounts"
	"orcr/core/wire"
	"orcr/roles"
)

// TestResolveSkipsHeldProviders drives the resolver with the real accounts service:
// a provider whose one account's window is full is skipped with the account's
// reason; over headroom only low-priority work skips it (a role's priority counts);
// with nothing else in the chain the held provider is taken and the work waits.
func TestResolveSkipsHeldProviders(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "config.toml"), []byte("model_provider = \"x\"\n[model_providers.x]\nname = \"x\"\n"), 0o600)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	acct, err := accounts.New(accounts.Options{Now: func() time.Time { return now },
		Settings: accounts.Settings{Policy: accounts.Policy{Headroom: 0.9, HoldBelow: 5}},
		Accounts: []accounts.Spec{{Provider: "codex", Label: "main", Home: home}}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeRole(t, dir, "impl", "providers = [\"codex:gpt-5.5\", \"claude:sonnet\"]\nprompt = \"go\"\n")
	writeRole(t, dir, "urgent", "providers = [\"codex:gpt-5.5\", \"claude:sonnet\"]\nprompt = \"go\"\npriority = 5\n")
	writeRole(t, dir, "solo", "providers = [\"codex:gpt-5.5\"]\nprompt = \"go\"\n")
	res := &roles.Resolver{Dir: dir, Check: check(), Accounts: acct}
	ready := func(string) error { return nil }
	resolve := func(role string) (wire.RunParams, string) {
		t.Helper()
		p, notes, err := res.Resolve(context.Background(), wire.RunParams{Path: "x", Role: role}, ready)
		if err != nil {
			t.Fatal(err)
		}
		return p, strings.Join(notes, "\n")
	}
	if p, notes := resolve("impl"); p.Provider != "codex" {
		t.Fatalf("free codex skipped: %s\n%s", p.Provider, notes)
	}

	reset := now.Add(2 * time.Hour)
	acct.Observe(wire.LimitReading{Provider: "codex", Account: "main", Window: "5h", UsedPct: 95, ResetsAt: &reset, ObservedAt: now})
	if p, notes := resolve("impl"); p.Provider != "claude" || !strings.Contains(notes, "skipped codex:gpt-5.5: every account held — codex/main 5h at 95%, over headroom 90%") {
		t.Fatalf("over headroom, priority 0: %s\n%s", p.Provider, notes)
	}
	if p, notes := resolve("urgent"); p.Provider != "codex" || p.Priority != 5 {
		t.Fatalf("over headroom, priority 5: %s %d\n%s", p.Provider, p.Priority, notes)
	}

	acct.Observe(wire.LimitReading{Provider: "codex", Account: "main", Window: "5h", UsedPct: 100, ResetsAt: &reset, ObservedAt: now})
	if p, notes := resolve("urgent"); p.Provider != "claude" || !strings.Contains(notes, "codex/main 5h window full, resets "+reset.Local().Format("15:04")) {
		t.Fatalf("full window, priority 5: %s\n%s", p.Provider, notes)
	}
	if p, notes := resolve("solo"); p.Provider != "codex" || !strings.Contains(notes, "queued on choice 1 until an account has room") {
		t.Fatalf("nothing to fall back to: %s\n%s", p.Provider, notes)
	}
	// A request naming its provider does not use the chain, held or not.
	p, _, err := res.Resolve(context.Background(), wire.RunParams{Path: "x", Role: "impl", Provider: "codex"}, ready)
	if err != nil || p.Provider != "codex" {
		t.Fatalf("given provider: %s %v", p.Provider, err)
	}
}

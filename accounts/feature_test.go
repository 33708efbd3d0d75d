package accounts_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"orcr/accounts"
	acctapi "orcr/accounts/api"
	"orcr/adapters/shell"
	"orcr/core"
	"orcr/core/wire"
	"orcr/pty"
	"orcr/store"
)

// TestBudgetReachedIsAnEvent: the accounts feature, started by the engine as every
// feature is, publishes budget.reached through its kernel when an agent's usage
// reaches a budget. (Before it was a feature, it looked for a Publish method on the
// composed Service, which had none, and the event was never sent.)
func TestBudgetReachedIsAnEvent(t *testing.T) {
	home := t.TempDir()
	st, err := store.Open(filepath.Join(home, "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	eng, err := core.NewEngine(core.Options{Store: st, Host: pty.New(pty.Options{}), Providers: []core.Provider{shell.New()},
		Home: home, Socket: filepath.Join(home, "orcr.sock")})
	if err != nil {
		t.Fatal(err)
	}
	acct, err := accounts.New(accounts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	defer func() {
		acct.Close()
		eng.Close(context.Background())
	}()
	if err := eng.Start(ctx, acct); err != nil {
		t.Fatal(err)
	}
	usd := 1.0
	if _, err := acct.BudgetSet(ctx, acctapi.BudgetSetParams{Glob: "b/**", USD: &usd, Action: "hold"}); err != nil {
		t.Fatal(err)
	}
	evs, err := eng.Subscribe(ctx, wire.SubscribeParams{})
	if err != nil {
		t.Fatal(err)
	}
	cost := 2.5
	spent := wire.Agent{ID: "x1", Path: "b/x", Provider: "shell", State: wire.StateDone, CreatedAt: time.Now().UTC(),
		Usage: wire.Usage{CostUSD: &cost}}
	if _, err := eng.Publish(ctx, wire.Event{Event: wire.EventAgentUpdated, Agent: &spent}); err != nil {
		t.Fatal(err)
	}
	for ev := range evs {
		if ev.Event == acctapi.EventBudgetReached {
			if ev.Data["glob"] != "b/**" {
				t.Fatalf("budget.reached for %v, want b/**", ev.Data["glob"])
			}
			return
		}
	}
	t.Fatal("no budget.reached event before the deadline")
}

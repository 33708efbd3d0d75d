package accounts

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	acctapi "orcr/accounts/api"
	"orcr/core"
	"orcr/core/wire"
	"orcr/store"
)

// TestStoredAcrossRestart: readings, window history and budgets are in the real
// badger store and come back in a new service on the same store.
func TestStoredAcrossRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	st, err := store.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Now: func() time.Time { return t0 }, Settings: Settings{Policy: Policy{Headroom: 0.9, HoldBelow: 5}},
		Accounts: []Spec{{Provider: "claude", Label: "work", Env: map[string]string{"CLAUDE_CODE_OAUTH_TOKEN": "t"}}}}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.store = core.FeatureBuckets(st, Name)
	s.Observe(wire.LimitReading{Provider: "claude", Account: "work", Window: "weekly", Family: "opus", UsedPct: 97, ResetsAt: at(time.Hour), ObservedAt: t0})
	usd := 5.0
	if _, err := s.BudgetSet(context.Background(), acctapi.BudgetSetParams{Glob: "review/**", USD: &usd, Action: "stop"}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	st, err = store.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s2, _ := New(opts)
	s2.store = core.FeatureBuckets(st, Name)
	if err := s2.load(context.Background()); err != nil {
		t.Fatal(err)
	}
	l, _ := s2.Accounts(context.Background())
	if len(l.Accounts) == 0 || len(l.Accounts[0].Windows) != 1 || l.Accounts[0].Windows[0].UsedPct != 97 || l.Accounts[0].Windows[0].State != "throttled" {
		t.Fatalf("after restart: %+v", l.Accounts)
	}
	bs, _ := s2.Budgets(context.Background())
	if len(bs) != 1 || bs[0].Glob != "review/**" || bs[0].Action != "stop" || *bs[0].USD != 5 {
		t.Fatalf("budgets after restart: %+v", bs)
	}
	if ok, _, _ := s2.Admit(context.Background(), wire.Agent{ID: "x", Provider: "claude", Model: "claude-opus-4-5", Priority: 1}); ok {
		t.Fatal("opus work admitted over headroom after restart")
	}
}

// TestBudgetGate: a reached budget holds spawns under its glob (and under its
// subtree's descendants), not elsewhere, and removing it lets them go.
func TestBudgetGate(t *testing.T) {
	s := newTestService(t, ModeOrdered, "work")
	tok := int64(1000)
	ctx := context.Background()
	if _, err := s.BudgetSet(ctx, acctapi.BudgetSetParams{Glob: "review", Tokens: &tok}); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.noteAgentLocked(wire.Agent{ID: "a", Path: "review/x/y", Provider: "claude", State: wire.StateDone, Usage: wire.Usage{OutputTokens: 1200}})
	reached := s.reachedLocked()
	s.mu.Unlock()
	if len(reached) != 1 {
		t.Fatalf("reached %v", reached)
	}
	if ok, why, _ := s.Admit(ctx, wire.Agent{ID: "b", Path: "review/z", Provider: "claude"}); ok || !strings.Contains(why, "budget review: 1200 of 1000 tokens used") {
		t.Fatalf("admit under the budget: %v %q", ok, why)
	}
	if ok, _, _ := s.Admit(ctx, wire.Agent{ID: "c", Path: "other/z", Provider: "claude"}); !ok {
		t.Fatal("held outside the budget")
	}
	if err := s.BudgetRemove(ctx, "review"); err != nil {
		t.Fatal(err)
	}
	if ok, _, _ := s.Admit(ctx, wire.Agent{ID: "b", Path: "review/z", Provider: "claude"}); !ok {
		t.Fatal("still held after the budget was removed")
	}
	for _, p := range []acctapi.BudgetSetParams{{Glob: "x"}, {Glob: "x", Tokens: &tok, Action: "explode"}} {
		if _, err := s.BudgetSet(ctx, p); err == nil {
			t.Fatalf("budget %+v accepted", p)
		}
	}
}

// TestPoller: the usage endpoint's answer becomes readings; a 429 waits its
// Retry-After; an unreachable endpoint yields no reading and no error state.
func TestPoller(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/oauth/usage" || r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		if calls.Add(1) == 2 {
			w.Header().Set("Retry-After", "600")
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{
			"five_hour":            map[string]any{"utilization": 63.0, "resets_at": t0.Add(2 * time.Hour).Format(time.RFC3339)},
			"seven_day":            map[string]any{"utilization": 41.0, "resets_at": t0.Add(72 * time.Hour).Format(time.RFC3339)},
			"seven_day_opus":       map[string]any{"utilization": 97.0, "resets_at": t0.Add(72 * time.Hour).Format(time.RFC3339)},
			"seven_day_oauth_apps": nil,
		})
	}))
	defer srv.Close()
	s := newTestService(t, ModeOrdered, "work")
	sp := Spec{Provider: "claude", Label: "work", UsageURL: srv.URL, Env: map[string]string{"CLAUDE_CODE_OAUTH_TOKEN": "tok"}}
	p := &poller{s: s, spec: sp, every: MinPoll, client: srv.Client()}
	rs, next, err := p.poll(context.Background())
	if err != nil || len(rs) != 3 || next != 0 {
		t.Fatalf("poll: %v %v %v", rs, next, err)
	}
	for _, r := range rs {
		s.Observe(r)
	}
	if w := s.accts["claude"][0].series[seriesKey{"weekly", "opus"}]; w == nil || w.cur.UsedPct != 97 {
		t.Fatalf("opus weekly not read: %+v", w)
	}
	if _, next, err = p.poll(context.Background()); err == nil || next != 10*time.Minute {
		t.Fatalf("429: next %v err %v", next, err)
	}
	p.spec.UsageURL = "http://127.0.0.1:1" // nothing listens there
	if rs, _, err := p.poll(context.Background()); err == nil || len(rs) != 0 || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("unreachable: %v %v", rs, err)
	}
	if _, err := New(Options{Settings: Settings{Poll: time.Minute}}); err == nil {
		t.Fatal("a poll interval under 5 minutes was accepted")
	}
}

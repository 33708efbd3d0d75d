package accounts

import (
	"fmt"
	"strings"
	"testing"
	"time"

	acctapi "orcr/accounts/api"
	"orcr/core/wire"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) *time.Time { t := t0.Add(d); return &t }

func TestDecide(t *testing.T) {
	pol := Policy{Mode: ModeOrdered, Headroom: 0.9, HoldBelow: 5}
	dist := pol
	dist.Mode = ModeDistribute
	work := func(ws ...WindowView) AccountView { return AccountView{Label: "work", Windows: ws} }
	api := AccountView{Label: "api", PerToken: true}
	cases := []struct {
		name    string
		pol     Policy
		accts   []AccountView
		req     Request
		want    string // account, "" = held
		reason  string // substring of the reason when held
		retryAt *time.Time
	}{
		{"empty windows admit on the first", pol, []AccountView{work(), api}, Request{}, "work", "", nil},
		{"5h full holds until its reset, api takes it", pol,
			[]AccountView{work(WindowView{Window: "5h", UsedPct: 100, ResetsAt: at(2 * time.Hour)}), api}, Request{}, "api", "", nil},
		{"5h full alone holds with the reset", pol,
			[]AccountView{work(WindowView{Window: "5h", UsedPct: 100, ResetsAt: at(2 * time.Hour)})}, Request{}, "",
			"claude/work 5h window full", at(2 * time.Hour)},
		{"a window whose reset passed no longer counts", pol,
			[]AccountView{work(WindowView{Window: "5h", UsedPct: 100, ResetsAt: at(-time.Minute)})}, Request{}, "work", "", nil},
		{"opus weekly full holds opus", pol,
			[]AccountView{work(WindowView{Window: "weekly", Family: "opus", UsedPct: 100, ResetsAt: at(48 * time.Hour)})},
			Request{Family: "opus"}, "", "weekly opus window full", at(48 * time.Hour)},
		{"opus weekly full lets sonnet run", pol,
			[]AccountView{work(WindowView{Window: "weekly", Family: "opus", UsedPct: 100, ResetsAt: at(48 * time.Hour)})},
			Request{Family: "sonnet"}, "work", "", nil},
		{"over headroom holds low priority", pol,
			[]AccountView{work(WindowView{Window: "weekly", UsedPct: 95, ResetsAt: at(time.Hour)})}, Request{Priority: 1}, "",
			"over headroom 90%", at(time.Minute)},
		{"over headroom lets priority ≥ hold_below run", pol,
			[]AccountView{work(WindowView{Window: "weekly", UsedPct: 95, ResetsAt: at(time.Hour)})}, Request{Priority: 5}, "work", "", nil},
		{"over headroom but full is full for everyone", pol,
			[]AccountView{work(WindowView{Window: "5h", UsedPct: 100, ResetsAt: at(time.Hour)})}, Request{Priority: 9}, "", "window full", at(time.Hour)},
		{"burn rate that would exhaust before the reset throttles", pol,
			[]AccountView{work(WindowView{Window: "5h", UsedPct: 60, Burn: 30, ResetsAt: at(2 * time.Hour)})}, Request{}, "",
			"burning 30%/h", at(time.Minute)},
		{"burn rate that ends below 100 before the reset admits", pol,
			[]AccountView{work(WindowView{Window: "5h", UsedPct: 60, Burn: 10, ResetsAt: at(2 * time.Hour)})}, Request{}, "work", "", nil},
		{"a problem account is skipped with its reason", pol,
			[]AccountView{{Label: "work", Problem: "not logged in"}, api}, Request{}, "api", "", nil},
		{"pin waits for its account", pol,
			[]AccountView{work(WindowView{Window: "5h", UsedPct: 100, ResetsAt: at(time.Hour)}), api}, Request{Pin: "work"}, "", "work 5h window full", at(time.Hour)},
		{"distribute takes the least used", dist,
			[]AccountView{work(WindowView{Window: "5h", UsedPct: 70}), {Label: "b", Windows: []WindowView{{Window: "5h", UsedPct: 20}}}}, Request{}, "b", "", nil},
		{"distribute round-robins between equals", dist,
			[]AccountView{{Label: "a", LastUsed: 7}, {Label: "b", LastUsed: 3}, {Label: "c", LastUsed: 5}}, Request{}, "b", "", nil},
		{"distribute prefers fewer live agents among equals", dist,
			[]AccountView{{Label: "a", Live: 2}, {Label: "b", Live: 1, LastUsed: 9}}, Request{}, "b", "", nil},
		{"no accounts at all", pol, nil, Request{}, "", "no claude account configured", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Decide(View{Now: t0, Policy: c.pol, Provider: "claude", Accounts: c.accts}, c.req)
			if d.Account != c.want {
				t.Fatalf("account %q, want %q (reason %q, choices %+v)", d.Account, c.want, d.Reason, d.Choices)
			}
			if c.want == "" {
				if !strings.Contains(d.Reason, c.reason) {
					t.Fatalf("reason %q lacks %q", d.Reason, c.reason)
				}
				if (c.retryAt == nil) != d.RetryAt.IsZero() || c.retryAt != nil && !d.RetryAt.Equal(*c.retryAt) {
					t.Fatalf("retry at %v, want %v", d.RetryAt, c.retryAt)
				}
			}
		})
	}
}

// TestPlacementFansOut: parallel admissions in one pass land round-robin on equal
// accounts, because each placement is seen by the next decision.
func TestPlacementFansOut(t *testing.T) {
	s := newTestService(t, ModeDistribute, "a", "b", "c")
	var got []string
	for i := 0; i < 6; i++ {
		a := wire.Agent{ID: fmt.Sprint("id", i), Provider: "claude", Path: fmt.Sprint("x/", i)}
		if ok, why, _ := s.Admit(nil, a); !ok {
			t.Fatal(why)
		}
		got = append(got, s.Place(nil, a))
	}
	if strings.Join(got, ",") != "a,b,c,a,b,c" {
		t.Fatalf("placements %v", got)
	}
}

// TestNearLimitGoesToSecond: the first account near its limit (over headroom) sends
// ordinary work to the second; a reading that the window reset brings it back.
func TestNearLimitGoesToSecond(t *testing.T) {
	s := newTestService(t, ModeOrdered, "work", "spare")
	now := t0
	s.now = func() time.Time { return now }
	s.Observe(wire.LimitReading{Provider: "claude", Account: "work", Window: "5h", UsedPct: 93, ResetsAt: at(time.Hour), ObservedAt: now})
	a := wire.Agent{ID: "1", Provider: "claude", Path: "q/1"}
	if got := s.Place(nil, a); got != "spare" {
		t.Fatalf("placed on %q, want spare", got)
	}
	now = t0.Add(61 * time.Minute) // the window reset: work has room again
	if got := s.Place(nil, wire.Agent{ID: "2", Provider: "claude", Path: "q/2"}); got != "work" {
		t.Fatalf("after the reset placed on %q, want work", got)
	}
}

// TestBadReadings: unparseable readings are kept out and never exhaust an account.
func TestBadReadings(t *testing.T) {
	s := newTestService(t, ModeOrdered, "work")
	for _, r := range []wire.LimitReading{
		{Provider: "claude", Account: "work", Window: "daily", UsedPct: 100, ObservedAt: t0},
		{Provider: "claude", Account: "work", Window: "5h", UsedPct: -3, ObservedAt: t0},
		{Provider: "claude", Account: "work", Window: "5h", UsedPct: 100},
		{Provider: "claude", Account: "nobody", Window: "5h", UsedPct: 100, ObservedAt: t0},
	} {
		s.Observe(r)
	}
	if _, err := readingOf(map[string]any{"usedPct": "lots"}); err == nil {
		t.Fatal("a reading of the wrong type decoded")
	}
	if ok, why, _ := s.Admit(nil, wire.Agent{ID: "1", Provider: "claude"}); !ok {
		t.Fatalf("held by a bad reading: %s", why)
	}
}

// TestClockJumpAndHistory: a clock jump back restarts the burn samples; each window
// is one history record at its peak, bounded at historyMax.
func TestClockJumpAndHistory(t *testing.T) {
	s := newTestService(t, ModeOrdered, "work")
	obs := func(now time.Time, pct float64, reset time.Time) {
		s.Observe(wire.LimitReading{Provider: "claude", Account: "work", Window: "5h", UsedPct: pct, ResetsAt: &reset, ObservedAt: now})
	}
	obs(t0, 10, t0.Add(5*time.Hour))
	obs(t0.Add(20*time.Minute), 30, t0.Add(5*time.Hour))
	se := s.accts["claude"][0].series[seriesKey{"5h", ""}]
	if b := se.burn(); b < 59 || b > 61 {
		t.Fatalf("burn %v, want 60%%/h", b)
	}
	obs(t0.Add(-2*time.Hour), 31, t0.Add(5*time.Hour)) // the clock jumped back
	if b := se.burn(); b != 0 {
		t.Fatalf("burn across a clock jump %v, want 0", b)
	}
	for i := 0; i < historyMax+10; i++ {
		r := t0.Add(time.Duration(i+2) * 5 * time.Hour)
		obs(r.Add(-time.Hour), float64(i%100), r)
	}
	h, _ := s.History(nil, acctapi.HistoryParams{})
	if len(h.Peaks) != historyMax {
		t.Fatalf("%d history records, want %d", len(h.Peaks), historyMax)
	}
}

func newTestService(t testing.TB, mode string, labels ...string) *Service {
	t.Helper()
	var specs []Spec
	for _, l := range labels {
		specs = append(specs, Spec{Provider: "claude", Label: l, Env: map[string]string{"CLAUDE_CODE_OAUTH_TOKEN": "t"}})
	}
	s, err := New(Options{Accounts: specs, Now: func() time.Time { return t0 },
		Settings: Settings{Policy: Policy{Mode: mode, Headroom: 0.9, HoldBelow: 5}}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestDuplicateLabels(t *testing.T) {
	_, err := New(Options{Accounts: []Spec{{Provider: "claude", Label: "w"}, {Provider: "claude", Label: "w"}}})
	if err == nil || !strings.Contains(err.Error(), `two claude accounts are labelled "w"`) {
		t.Fatalf("err %v", err)
	}
}

func TestMissingConfigDir(t *testing.T) {
	s, err := New(Options{Accounts: []Spec{{Provider: "claude", Label: "w", ConfigDir: "/nonexistent/x"}, {Provider: "claude", Label: "b", Env: map[string]string{"ANTHROPIC_API_KEY": "k"}}}})
	if err != nil {
		t.Fatal(err)
	}
	sel, _ := s.Select(nil, acctapi.SelectParams{Provider: "claude"})
	if sel.Account != "b" || !strings.Contains(sel.Accounts[0].Why, "CLAUDE_CONFIG_DIR=/nonexistent/x claude /login") {
		t.Fatalf("select %+v", sel)
	}
	if err := s.CheckSpawn(nil, wire.RunParams{Provider: "claude", Account: "zz"}); err == nil || !strings.Contains(err.Error(), "configured: b, w") {
		t.Fatalf("unknown label: %v", err)
	}
}

// BenchmarkAdmissionPass is one admission pass over 10,000 queued agents with 10
// accounts of 3 windows each, all of them over headroom so every agent is asked
// about and held (the worst case: nothing is admitted, nothing leaves the queue).
func BenchmarkAdmissionPass(b *testing.B) {
	labels := make([]string, 10)
	for i := range labels {
		labels[i] = fmt.Sprint("acct", i)
	}
	s := newTestService(b, ModeDistribute, labels...)
	for _, l := range labels {
		for _, w := range []struct{ win, fam string }{{"5h", ""}, {"weekly", ""}, {"weekly", "opus"}} {
			s.Observe(wire.LimitReading{Provider: "claude", Account: l, Window: w.win, Family: w.fam, UsedPct: 95, ResetsAt: at(time.Hour), ObservedAt: t0})
		}
	}
	queue := make([]wire.Agent, 10000)
	models := []string{"claude-opus-4-5", "claude-sonnet-4-5", ""}
	for i := range queue {
		queue[i] = wire.Agent{ID: fmt.Sprint(i), Provider: "claude", Path: fmt.Sprint("q/", i), Model: models[i%3], Priority: i % 4}
		s.agents[queue[i].ID] = &agentInfo{provider: "claude", path: queue[i].Path}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.mu.Lock()
		s.gen++ // a new pass after a change: nothing cached from the last one
		s.mu.Unlock()
		held := 0
		for _, a := range queue {
			if ok, _, _ := s.Admit(nil, a); !ok {
				held++
			}
		}
		if held != len(queue) {
			b.Fatalf("held %d of %d", held, len(queue))
		}
	}
}

// BenchmarkDecide is one uncached decision over 10 accounts of 3 windows each.
func BenchmarkDecide(b *testing.B) {
	v := View{Now: t0, Policy: Policy{Mode: ModeDistribute, Headroom: 0.9, HoldBelow: 5}, Provider: "claude"}
	for i := 0; i < 10; i++ {
		v.Accounts = append(v.Accounts, AccountView{Label: fmt.Sprint("a", i), LastUsed: uint64(i), Windows: []WindowView{
			{Window: "5h", UsedPct: float64(10 * i), ResetsAt: at(time.Hour)},
			{Window: "weekly", UsedPct: 40, ResetsAt: at(48 * time.Hour)},
			{Window: "weekly", Family: "opus", UsedPct: 97, ResetsAt: at(48 * time.Hour)}}})
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if d := Decide(v, Request{Family: "sonnet"}); d.Account != "a0" {
			b.Fatal(d)
		}
	}
}

// TestChosenForeseesPlace: Chosen is the account Place then gives, and it places
// nothing itself (the nodes' placer asks it before admission's placement).
func TestChosenForeseesPlace(t *testing.T) {
	s := newTestService(t, ModeDistribute, "a", "b")
	for i := 0; i < 4; i++ {
		a := wire.Agent{ID: fmt.Sprint("id", i), Provider: "claude", Path: fmt.Sprint("x/", i)}
		first, again := s.Chosen(a), s.Chosen(a)
		if first != again {
			t.Fatalf("Chosen moved from %q to %q without a placement", first, again)
		}
		if got := s.Place(nil, a); got != first {
			t.Fatalf("Chosen said %q, Place gave %q", first, got)
		}
	}
	if got := s.Chosen(wire.Agent{ID: "sh", Provider: "shell", Path: "x/sh"}); got != "" {
		t.Fatalf("a provider without accounts: %q", got)
	}
}

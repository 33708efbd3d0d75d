package accounts

import (
	"context"
	"testing"
	"time"

	acctapi "orcr/accounts/api"
	"orcr/core/socket"
	"orcr/core/wire"
)

// TestUsageHistoryPages: usage.history with a limit answers one page and the cursor of
// the next; following next yields the whole history once, in order, even when a new
// window is recorded between two pages (it goes at the head of its series, before the
// cursor); no limit still answers everything, as before paging.
func TestUsageHistoryPages(t *testing.T) {
	ctx := context.Background()
	labels := []string{"a", "b", "c"}
	s := newTestService(t, ModeOrdered, labels...)
	obs := func(acct string, i int) {
		r := t0.Add(time.Duration(i+1) * 5 * time.Hour)
		s.Observe(wire.LimitReading{Provider: "claude", Account: acct, Window: "5h", UsedPct: float64(i % 100), ResetsAt: &r, ObservedAt: r.Add(-time.Hour)})
	}
	for _, l := range labels {
		for i := range historyMax {
			obs(l, i)
		}
	}
	tr, err := socket.NewInProcess(s.Methods())
	if err != nil {
		t.Fatal(err)
	}
	whole, err := wire.Call(ctx, tr, acctapi.UsageHistory, acctapi.HistoryParams{})
	if err != nil || len(whole.Peaks) != 3*historyMax || whole.Next != "" {
		t.Fatalf("no limit: %v, %d peaks, next %q", err, len(whole.Peaks), whole.Next)
	}

	const limit = 100
	var got []acctapi.WindowPeak
	p := acctapi.HistoryParams{Limit: limit}
	for pages := 1; ; pages++ {
		r, err := wire.Call(ctx, tr, acctapi.UsageHistory, p)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Peaks) > limit {
			t.Fatalf("page %d holds %d peaks, over the limit %d", pages, len(r.Peaks), limit)
		}
		got = append(got, r.Peaks...)
		if pages == 1 {
			obs("a", historyMax+5) // a new window of a's while the client pages
		}
		if r.Next == "" {
			break
		}
		if pages > 3*historyMax/limit+1 {
			t.Fatalf("still paging after %d pages", pages)
		}
		p.After = r.Next
	}
	// The new window is newer than every peak of a's already listed, so it is not
	// listed, and a's oldest window, trimmed to keep historyMax, is not either.
	want := append(whole.Peaks[:historyMax-1:historyMax-1], whole.Peaks[historyMax:]...)
	if len(got) != len(want) {
		t.Fatalf("paged %d peaks, want %d", len(got), len(want))
	}
	for i := range want {
		if historyCursor(got[i]) != historyCursor(want[i]) {
			t.Fatalf("peak %d: %s, want %s", i, historyCursor(got[i]), historyCursor(want[i]))
		}
	}

	if _, err := wire.Call(ctx, tr, acctapi.UsageHistory, acctapi.HistoryParams{Limit: limit, After: "nonsense"}); wire.CodeOf(err) != wire.CodeInvalidParams {
		t.Fatalf("a made-up cursor: %v", err)
	}
}

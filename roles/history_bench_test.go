package roles

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"orcr/core"
	"orcr/core/wire"

	roleapi "orcr/roles/api"
)

// listKernel serves a fixed agent list; the rest of the kernel is not needed here.
type listKernel struct {
	agents []wire.Agent
}

func (k listKernel) List(context.Context, wire.ListParams) ([]wire.Agent, error) {
	return append([]wire.Agent(nil), k.agents...), nil
}
func (k listKernel) CallerAgent(context.Context) (*wire.Agent, error) { return nil, nil }

func finished(n int) []wire.Agent {
	now := time.Now().UTC().Add(-time.Hour)
	out := make([]wire.Agent, n)
	for i := range out {
		code, cost := i%3, float64(i%100)/100
		start := now.Add(-time.Duration(i) * time.Second)
		end := start.Add(time.Duration(30+i%600) * time.Second)
		out[i] = wire.Agent{ID: fmt.Sprintf("0190%04x-0000-7000-8000-%012x", i, i), Path: fmt.Sprintf("review/g%02d/a%04d", i%50, i),
			Provider: "claude", Model: "claude-sonnet-5", Role: "reviewer", State: wire.StateExited, ExitCode: &code,
			Usage:     wire.Usage{InputTokens: 1200, OutputTokens: 300, CostUSD: &cost},
			CreatedAt: start, StartedAt: &start, EndedAt: &end}
	}
	return out
}

func TestHistoryFiltersAndSorts(t *testing.T) {
	as := finished(5)
	as[2].State, as[2].EndedAt = wire.StateDone, nil // live: not history
	old := time.Now().Add(-48 * time.Hour)
	as[3].EndedAt = &old
	k := listKernel{agents: as}
	r, err := HistoryOf(context.Background(), k, roleapi.AgentHistoryParams{Glob: "review/**", SinceSeconds: 24 * 3600})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, e := range r.Entries {
		paths = append(paths, e.Path)
	}
	// Same end instant: newest id first.
	if strings.Join(paths, " ") != "review/g04/a0004 review/g01/a0001 review/g00/a0000" || r.Entries[2].Result != "exit 0" || r.Entries[2].DurationSeconds != 30 {
		t.Fatalf("history %v %+v", paths, r.Entries)
	}
	r, _ = HistoryOf(context.Background(), k, roleapi.AgentHistoryParams{Text: true})
	if lines := strings.Split(strings.TrimSpace(r.Text), "\n"); len(lines) != 5 || !strings.HasPrefix(lines[0], "ENDED") {
		t.Fatalf("text:\n%s", r.Text)
	}
}

// BenchmarkHistoryText10000 is the server's share of `orcr history` over 10,000
// finished agents: the index is kept from the events, so a call selects and renders.
func BenchmarkHistoryText10000(b *testing.B) {
	var x histIndex
	x.load(finished(10000))
	q := histQuery{now: time.Now().UTC(), text: true}
	b.ReportAllocs()
	for b.Loop() {
		if r := q.result(x.match(q)); len(r.Text) < 10000 {
			b.Fatal("no text")
		}
	}
}

// TestHistoryIndexKeepsOrder: entries put one by one, replaced and removed, in any
// order, list as a fresh load of the same agents does, and the text is the same table.
func TestHistoryIndexKeepsOrder(t *testing.T) {
	as := finished(300)
	same := as[7].EndedAt
	as[8].EndedAt = same // a tie, broken by id
	var x histIndex
	for _, i := range rand.Perm(len(as)) {
		x.put(Entry(as[i]))
	}
	later := as[3].EndedAt.Add(time.Hour)
	as[3].EndedAt = &later // resumed and ended again
	as[3].Role = "coder"
	x.put(Entry(as[3]))
	x.remove(as[5].ID)
	x.remove("no-such-id")
	live := append(append([]wire.Agent(nil), as[:5]...), as[6:]...)
	var want histIndex
	want.load(live)
	q := histQuery{now: time.Now().UTC(), text: true}
	if got, w := q.result(x.match(q)).Text, q.result(want.match(q)).Text; got != w {
		t.Fatalf("put/remove:\n%.600s\nload:\n%.600s", got, w)
	}
	q.text = false
	got := q.result(x.match(q)).Entries
	if len(got) != len(live) || got[0].ID != as[3].ID || got[0].Role != "coder" {
		t.Fatalf("first %+v of %d", got[0], len(got))
	}
	for i := 1; i < len(got); i++ {
		if got[i].EndedAt.After(got[i-1].EndedAt) || got[i].EndedAt.Equal(got[i-1].EndedAt) && got[i].ID > got[i-1].ID {
			t.Fatalf("out of order at %d: %v after %v", i, got[i].EndedAt, got[i-1].EndedAt)
		}
	}
	q.since = as[100].EndedAt.UnixNano()
	for _, e := range q.result(x.match(q)).Entries {
		if e.EndedAt.UnixNano() < q.since {
			t.Fatalf("%s ended before --since", e.Path)
		}
	}
}

func TestHistoryFormatsLikeTheKernel(t *testing.T) {
	for _, n := range []int64{0, 999, 1000, 12345, 4_100_000} {
		e := roleapi.AgentHistoryEntry{Tokens: n, EndedAt: time.Now().Add(-90 * time.Minute)}
		row := roleapi.HistoryRow(e, time.Now())
		want := "-"
		if n > 0 {
			want = core.HumanCount(n)
		}
		if row[6] != want || row[0] != core.FormatAge(90*time.Minute)+" ago" {
			t.Fatalf("row %q for %d tokens", row, n)
		}
	}
}

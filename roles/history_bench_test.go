package roles_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"orcr/core"
	"orcr/core/wire"
	"orcr/roles"
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
	r, err := roles.HistoryOf(context.Background(), k, wire.AgentHistoryParams{Glob: "review/**", SinceSeconds: 24 * 3600})
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
	r, _ = roles.HistoryOf(context.Background(), k, wire.AgentHistoryParams{Text: true})
	if lines := strings.Split(strings.TrimSpace(r.Text), "\n"); len(lines) != 5 || !strings.HasPrefix(lines[0], "ENDED") {
		t.Fatalf("text:\n%s", r.Text)
	}
}

func BenchmarkHistoryText10000(b *testing.B) {
	k := listKernel{agents: finished(10000)}
	for i := 0; i < b.N; i++ {
		if _, err := roles.HistoryOf(context.Background(), k, wire.AgentHistoryParams{Text: true}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestHistoryFormatsLikeTheKernel(t *testing.T) {
	for _, n := range []int64{0, 999, 1000, 12345, 4_100_000} {
		e := wire.AgentHistoryEntry{Tokens: n, EndedAt: time.Now().Add(-90 * time.Minute)}
		row := core.HistoryRow(e, time.Now())
		want := "-"
		if n > 0 {
			want = core.HumanCount(n)
		}
		if row[6] != want || row[0] != core.FormatAge(90*time.Minute)+" ago" {
			t.Fatalf("row %q for %d tokens", row, n)
		}
	}
}

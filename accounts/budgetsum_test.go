package accounts

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"
	"time"

	acctapi "orcr/accounts/api"
	"orcr/core"
	"orcr/core/wire"
)

// TestBudgetTotalsFollowEvents: the totals kept from each event (no re-summing) equal a
// sum over every record, through cost updates, resumes, Since, budgets set after their
// agents and budgets removed — the old per-event rescan is the reference.
func TestBudgetTotalsFollowEvents(t *testing.T) {
	s := newTestService(t, ModeOrdered, "work")
	ctx := context.Background()
	rng := rand.New(rand.NewSource(7))
	paths := []string{"review/a", "review/a/sub", "review/b", "impl/x", "impl/x/y/z", "other"}
	globs := []string{"review/**", "review/a", "impl/*", strings.Repeat("*", 2040), "{review,impl}/**/z"}
	since := t0.Add(10 * time.Minute)
	usd := 1e9
	var ids []string
	agents := map[string]wire.Agent{}
	for step := range 600 {
		switch r := rng.Intn(10); {
		case r == 0 || len(ids) == 0: // a new agent, sometimes resuming an older one
			a := wire.Agent{ID: fmt.Sprintf("a%03d", step), Path: paths[rng.Intn(len(paths))], Provider: "claude",
				State: wire.StateWorking, CreatedAt: t0.Add(time.Duration(step) * time.Second)}
			if len(ids) > 0 && rng.Intn(3) == 0 {
				a.ResumedFrom = ids[rng.Intn(len(ids))]
			}
			ids = append(ids, a.ID)
			agents[a.ID] = a
			s.onEvent(wire.Event{Event: wire.EventAgentSpawned, Agent: &a})
		case r == 1: // a budget set, replaced or removed
			g := globs[rng.Intn(len(globs))]
			if rng.Intn(3) == 0 {
				s.BudgetRemove(ctx, g)
				break
			}
			p := acctapi.BudgetSetParams{Glob: g, USD: &usd}
			if rng.Intn(2) == 0 {
				p.Since = &since
			}
			if _, err := s.BudgetSet(ctx, p); err != nil {
				t.Fatal(err)
			}
		default: // usage grows
			id := ids[rng.Intn(len(ids))]
			a := agents[id]
			c := rng.Float64() / 7
			if a.Usage.CostUSD != nil {
				c += *a.Usage.CostUSD
			}
			a.Usage.CostUSD = &c
			a.Usage.OutputTokens += int64(rng.Intn(1000))
			agents[id] = a
			s.onEvent(wire.Event{Event: wire.EventAgentUpdated, Agent: &a})
		}
		bs, _ := s.Budgets(ctx)
		for _, b := range bs {
			wantUSD, wantTok, wantN := rescan(t, b, agents)
			if math.Abs(b.SpentUSD-wantUSD) > 1e-9 || b.SpentTokens != wantTok || b.Agents != wantN {
				t.Fatalf("step %d, budget %.20s: $%v %d tokens %d agents, a rescan says $%v %d %d",
					step, b.Glob, b.SpentUSD, b.SpentTokens, b.Agents, wantUSD, wantTok, wantN)
			}
		}
	}
}

// rescan is the old way: every record, each path and its ancestors matched.
func rescan(t *testing.T, b acctapi.Budget, agents map[string]wire.Agent) (float64, int64, int) {
	g := newTestGlob(t, b.Glob)
	continued := map[string]bool{}
	for _, a := range agents {
		if a.ResumedFrom != "" && a.ResumedFrom != a.ID {
			continued[a.ResumedFrom] = true
		}
	}
	usd, tok, n := 0.0, int64(0), 0
	for id, a := range agents {
		if continued[id] || b.Since != nil && a.CreatedAt.Before(*b.Since) {
			continue
		}
		hit := false
		for p := a.Path; p != "" && !hit; {
			hit = g.Match(p)
			i := strings.LastIndexByte(p, '/')
			if i < 0 {
				break
			}
			p = p[:i]
		}
		if hit {
			if a.Usage.CostUSD != nil {
				usd += *a.Usage.CostUSD
			}
			tok += a.Usage.OutputTokens
			n++
		}
	}
	return usd, tok, n
}

func newTestGlob(t *testing.T, g string) interface{ Match(string) bool } {
	t.Helper()
	gl, err := core.ParseGlob("", g)
	if err != nil {
		t.Fatal(err)
	}
	return gl
}

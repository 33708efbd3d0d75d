package spawnpolicy

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"orcr/core"
	"orcr/core/wire"
)

// kernel is the part of core.Kernel the check uses, over a fixed list of records;
// the rest is the embedded nil interface (calling it panics: the check must not).
type kernel struct {
	core.Kernel
	caller *wire.Agent
	agents []wire.Agent
}

func (k *kernel) CallerAgent(context.Context) (*wire.Agent, error) { return k.caller, nil }

func (k *kernel) Get(_ context.Context, id string) (wire.Agent, error) {
	for _, a := range k.agents {
		if a.ID == id {
			return a, nil
		}
	}
	return wire.Agent{}, wire.Errorf(wire.CodeNotFound, "no agent %s", id)
}

func (k *kernel) List(context.Context, wire.ListParams) ([]wire.Agent, error) { return k.agents, nil }

func ip(n int) *int         { return &n }
func fp(v float64) *float64 { return &v }

func agent(id, path, parent string, cost float64, sp *wire.SpawnPolicy) wire.Agent {
	a := wire.Agent{ID: id, Path: path, ParentID: parent, State: wire.StateWorking, Spawn: sp}
	if cost > 0 {
		a.Usage.CostUSD = fp(cost)
	}
	return a
}

// TestBudgetCountsTheSubtree: budget_usd on an ancestor counts its whole subtree by
// lineage — itself, its children's and grandchildren's cost, ended agents too — and
// refuses a spawn from any agent under it once that reaches the bound, naming the
// ancestor; another subtree's cost does not count.
func TestBudgetCountsTheSubtree(t *testing.T) {
	lead := agent("1", "lead", "", 0.50, &wire.SpawnPolicy{BudgetUSD: fp(2)})
	a := agent("2", "lead/a", "1", 0.75, nil)
	b := agent("3", "lead/a/b", "2", 0.25, nil)
	ended := agent("4", "lead/old", "1", 0.40, nil)
	ended.State = wire.StateExited
	other := agent("5", "other", "", 100, nil)
	k := &kernel{caller: &b, agents: []wire.Agent{lead, a, b, ended, other}}
	s := New()
	s.k = k
	if err := s.CheckSpawn(context.Background(), wire.RunParams{Path: "lead/a/b/c"}); err != nil {
		t.Fatalf("$1.90 of $2 spent: %v", err)
	}
	k.agents[2].Usage.CostUSD = fp(0.35) // the subtree now costs $2.00
	k.caller = &k.agents[2]
	err := s.CheckSpawn(context.Background(), wire.RunParams{Path: "lead/a/b/d"})
	if wire.CodeOf(err) != wire.CodeSpawnRefused || !strings.Contains(err.Error(),
		"spawn refused: lead has budget_usd = 2.00 ($2.00 spent by it and the agents under it); lead/a/b is under it") {
		t.Fatalf("at the bound: %v", err)
	}
	costs := SubtreeCosts(k.agents)
	if got := costs["2"]; got < 1.0999 || got > 1.1001 {
		t.Fatalf("lead/a's subtree: %v", got)
	}
}

// TestRulesNameWhoSetThem: the depth rule names the agent highest up whose bound the
// spawn passes, providers and roles the nearest; a root caller is not bounded.
func TestRulesNameWhoSetThem(t *testing.T) {
	top := agent("1", "top", "", 0, &wire.SpawnPolicy{MaxDepth: ip(2), Roles: []string{"reviewer"}})
	mid := agent("2", "top/m", "1", 0, &wire.SpawnPolicy{MaxDepth: ip(1), Providers: []string{"shell"}, Roles: []string{"reviewer"}})
	low := agent("3", "top/m/l", "2", 0, &wire.SpawnPolicy{MaxDepth: ip(0)})
	for _, c := range []struct {
		chain []wire.Agent
		p     wire.RunParams
		want  string
	}{
		{[]wire.Agent{low, mid, top}, wire.RunParams{Path: "top/m/l/x", Role: "reviewer"}, "spawn refused: top has max_depth = 2 (top/m/l/x would be 3 levels below it)"},
		{[]wire.Agent{mid, top}, wire.RunParams{Path: "top/m/x", Provider: "codex", Role: "reviewer"}, "spawn refused: top/m has providers = [shell] (not codex)"},
		{[]wire.Agent{mid, top}, wire.RunParams{Path: "top/m/x"}, "spawn refused: top/m has roles = [reviewer] (no role)"},
		{[]wire.Agent{mid, top}, wire.RunParams{Path: "top/m/x", Role: "reviewer"}, ""},
	} {
		err := rules(c.chain, c.p)
		if c.want == "" && err != nil || c.want != "" && (err == nil || err.Error() != c.want) {
			t.Errorf("%s: %v, want %q", c.p.Path, err, c.want)
		}
	}
	s := New()
	s.k = &kernel{}
	if err := s.CheckSpawn(context.Background(), wire.RunParams{Path: "x"}); err != nil {
		t.Fatalf("root caller: %v", err)
	}
}

// TestChildrenReservedUntilRecorded: two spawns checked before either is recorded both
// count, so a pane spawning in parallel cannot pass max_children; a reservation ends
// when the record shows (counted from the records then) or after reserveFor.
func TestChildrenReservedUntilRecorded(t *testing.T) {
	p := agent("1", "p", "", 0, &wire.SpawnPolicy{MaxChildren: ip(2)})
	k := &kernel{caller: &p, agents: []wire.Agent{p}}
	s := New()
	s.k = k
	ctx := context.Background()
	for _, path := range []string{"p/a", "p/b"} {
		if err := s.CheckSpawn(ctx, wire.RunParams{Path: path}); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	if err := s.CheckSpawn(ctx, wire.RunParams{Path: "p/c"}); err == nil || !strings.Contains(err.Error(), "max_children = 2 (2 running)") {
		t.Fatalf("third while two are in flight: %v", err)
	}
	// p/a is recorded and ended: its place is free; p/b still in flight.
	done := agent("2", "p/a", "1", 0, nil)
	done.State = wire.StateExited
	k.agents = append(k.agents, done)
	if err := s.CheckSpawn(ctx, wire.RunParams{Path: "p/c"}); err != nil {
		t.Fatalf("after p/a ended: %v", err)
	}
	base := s.now()
	s.now = func() time.Time { return base.Add(reserveFor + time.Second) }
	if err := s.CheckSpawn(ctx, wire.RunParams{Path: "p/d"}); err != nil {
		t.Fatalf("reservations past reserveFor must lapse: %v", err)
	}
}

// BenchmarkCheckSpawn is one spawn from a pane under max_children and budget_usd set
// two levels up, on a server holding n agent records: the check lists the records
// twice (children, subtree costs), so its cost grows with the records.
func BenchmarkCheckSpawn(b *testing.B) {
	for _, n := range []int{100, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			top := agent("top", "top", "", 0.1, &wire.SpawnPolicy{MaxChildren: ip(1 << 20), BudgetUSD: fp(1e6)})
			mid := agent("mid", "top/m", "top", 0.1, &wire.SpawnPolicy{MaxChildren: ip(1 << 20)})
			as := []wire.Agent{top, mid}
			for i := range n - 2 {
				parent := "mid"
				if i%3 == 0 {
					parent = "top"
				}
				as = append(as, agent(fmt.Sprint("a", i), fmt.Sprint("x/", i), parent, 0.01, nil))
			}
			s := New()
			s.k = &kernel{caller: &as[1], agents: as}
			ctx := context.Background()
			b.ResetTimer()
			for range b.N {
				// One path: a reservation lasts until the record shows, and no record
				// is added here, so distinct paths would pile up b.N reservations.
				if err := s.CheckSpawn(ctx, wire.RunParams{Path: "top/m/c"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

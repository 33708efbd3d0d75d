package wire_test

import (
	"testing"

	"orcr/core/wire"
)

func ip(n int) *int         { return &n }
func fp(v float64) *float64 { return &v }

// TestSpawnPolicyNarrow: each number the smaller, each list the common names (an
// empty side does not bound, two sides with nothing in common allow nothing), nil
// bounds nothing; ForChild takes one level of depth; neither changes its inputs.
func TestSpawnPolicyNarrow(t *testing.T) {
	parent := &wire.SpawnPolicy{MaxChildren: ip(3), MaxDepth: ip(2), Providers: []string{"shell", "claude"}, BudgetUSD: fp(5)}
	asked := &wire.SpawnPolicy{MaxChildren: ip(50), MaxDepth: ip(1), Providers: []string{"claude", "codex"}, Roles: []string{"reviewer"}, BudgetUSD: fp(9)}
	got := parent.Narrow(asked)
	if got.String() != "max_children = 3, max_depth = 1, providers = [claude], roles = [reviewer], budget_usd = 5.00" {
		t.Fatalf("narrow: %s", got)
	}
	if *parent.MaxChildren != 3 || *asked.MaxChildren != 50 || len(parent.Roles) != 0 {
		t.Fatal("narrow changed its inputs")
	}
	if none := (&wire.SpawnPolicy{Providers: []string{"shell"}}).Narrow(&wire.SpawnPolicy{Providers: []string{"claude"}}); len(none.Providers) != 1 || none.Providers[0] != wire.NoneAllowed {
		t.Fatalf("disjoint lists: %v", none.Providers)
	}
	var nilp *wire.SpawnPolicy
	if !nilp.Narrow(nil).Empty() || nilp.Narrow(parent).String() != parent.String() || parent.Narrow(nil).String() != parent.String() {
		t.Fatal("nil must bound nothing")
	}
	child := parent.ForChild()
	if *child.MaxDepth != 1 || *parent.MaxDepth != 2 || *child.MaxChildren != 3 {
		t.Fatalf("for child: %s (parent %s)", child, parent)
	}
	if z := (&wire.SpawnPolicy{MaxDepth: ip(0)}).ForChild(); *z.MaxDepth != 0 {
		t.Fatalf("depth below 0: %d", *z.MaxDepth)
	}
}

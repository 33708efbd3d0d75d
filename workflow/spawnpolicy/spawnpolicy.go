// Package spawnpolicy is DESIGN §18's spawn policy: what an agent may itself spawn
// through `orcr agent run` from its pane — [spawn] max_children, max_depth, providers,
// roles and budget_usd, set by a role or by agent run (--spawn-* flags, RunParams.Spawn).
//
// A policy binds the agent's whole subtree. A child's record carries its parent's
// policy narrowed by what it asked for (never widened: each number the smaller, each
// list the common names, max_depth one less), and the check does not trust that copy
// alone: a spawn from a pane is checked against the policy of the caller and of every
// ancestor above it (the lineage the kernel verified, core.Kernel.CallerAgent), and
// refused with the rule named and the agent that set it — "spawn refused: review/x
// has max_children = 3 (3 running)". Spawns from a root caller (a user's shell, a
// feature) are not bounded: a policy is what agents may do, not what their user may.
//
// It is a feature beside the kernel: a core.SpawnChecker (the check, before anything
// is recorded) and the "spawnpolicy" capability the roles resolver asks to narrow a
// child's policy (roles.Shaper).
package spawnpolicy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"orcr/core"
	"orcr/core/wire"
)

// Name is the feature's name; Capability what it provides itself as.
const (
	Name       = "spawn"
	Capability = "spawnpolicy"
)

// maxChain bounds the ancestors walked (paths are at most 16 deep; absolute paths
// given by agents can make lineage deeper than a path, but not without bound).
const maxChain = 64

// reserveFor is how long a spawn the check let through counts as a running child
// before its record shows: two spawns from one pane at once must not both see room
// for one.
const reserveFor = 5 * time.Second

// Service is the spawn-policy feature.
type Service struct {
	k   core.Kernel
	now func() time.Time

	mu sync.Mutex
	// pending holds spawns checked but maybe not yet recorded: parent id → child path
	// → when the check passed.
	pending map[string]map[string]time.Time
}

var (
	_ core.Feature      = (*Service)(nil)
	_ core.SpawnChecker = (*Service)(nil)
)

// New builds the feature.
func New() *Service {
	return &Service{now: time.Now, pending: map[string]map[string]time.Time{}}
}

// Name implements core.Feature.
func (s *Service) Name() string { return Name }

// Methods implements core.Feature: the policy shows on each agent's record.
func (s *Service) Methods() []wire.Handler { return nil }

// Start provides the capability and adds the check.
func (s *Service) Start(_ context.Context, k core.Kernel) error {
	if k == nil {
		return errors.New("spawn policy needs the kernel")
	}
	s.k = k
	k.Provide(Capability, s)
	k.AddGate(s)
	return nil
}

// Close implements core.Feature.
func (s *Service) Close() error { return nil }

// Admit implements core.Gate: a policy refuses spawns; it holds nothing in the queue.
func (s *Service) Admit(context.Context, wire.Agent) (bool, string, time.Time) {
	return true, "", time.Time{}
}

// Shape gives a child its policy: its parent's, one level less deep, narrowed by what
// it asked for (roles.Shaper).
func (s *Service) Shape(ctx context.Context, p wire.RunParams) (wire.RunParams, []string, error) {
	if err := Check(p.Spawn); err != nil {
		return p, nil, err
	}
	caller, err := s.k.CallerAgent(ctx)
	if err != nil {
		return p, nil, err
	}
	if caller == nil || caller.Spawn.Empty() {
		return p, nil, nil
	}
	inherited := caller.Spawn.ForChild()
	eff := inherited.Narrow(p.Spawn)
	var notes []string
	if wider(p.Spawn, inherited) {
		notes = append(notes, fmt.Sprintf("spawn policy: asked for more than %s allows; its policy binds (%s)", caller.Path, eff.String()))
	} else {
		notes = append(notes, fmt.Sprintf("spawn policy: %s (inherited from %s)", eff.String(), caller.Path))
	}
	p.Spawn = eff
	return p, notes, nil
}

// Check refuses a policy with a value out of range or a list of names that cannot be
// names.
func Check(sp *wire.SpawnPolicy) error {
	if sp == nil {
		return nil
	}
	if err := wire.CheckRanges(wire.MethodAgentRun, sp); err != nil {
		return err
	}
	for _, l := range [][]string{sp.Providers, sp.Roles} {
		for _, n := range l {
			if n == "" || strings.ContainsAny(n, " ,:/") {
				return wire.Errorf(wire.CodeInvalidParams, "spawn policy: %q is not a provider or role name", n)
			}
		}
	}
	return nil
}

// wider reports whether asked would allow something base does not.
func wider(asked, base *wire.SpawnPolicy) bool {
	if asked.Empty() || base.Empty() {
		return false
	}
	gt := func(a, b *int) bool { return b != nil && (a == nil || *a > *b) }
	if gt(asked.MaxChildren, base.MaxChildren) || gt(asked.MaxDepth, base.MaxDepth) {
		return true
	}
	if base.BudgetUSD != nil && (asked.BudgetUSD == nil || *asked.BudgetUSD > *base.BudgetUSD) {
		return true
	}
	outside := func(a, b []string) bool {
		if len(b) == 0 {
			return false
		}
		if len(a) == 0 {
			return true
		}
		for _, x := range a {
			if !slices.Contains(b, x) {
				return true
			}
		}
		return false
	}
	return outside(asked.Providers, base.Providers) || outside(asked.Roles, base.Roles)
}

// CheckSpawn implements core.SpawnChecker: a spawn from an agent's pane must fit the
// policy of the caller and of every ancestor above it.
func (s *Service) CheckSpawn(ctx context.Context, p wire.RunParams) error {
	caller, err := s.k.CallerAgent(ctx)
	if err != nil || caller == nil {
		return nil // a refused claim is the kernel's to report; a root caller is not bounded
	}
	chain := s.chain(ctx, *caller)
	bound := false
	for _, a := range chain {
		bound = bound || !a.Spawn.Empty()
	}
	if !bound {
		return nil
	}
	if err := rules(chain, p); err != nil {
		return err
	}
	if err := s.budget(ctx, chain); err != nil {
		return err
	}
	return s.children(ctx, chain, p.Path)
}

// chain is the caller and its ancestors, nearest first, as far as records remain.
func (s *Service) chain(ctx context.Context, caller wire.Agent) []wire.Agent {
	chain := []wire.Agent{caller}
	for a := caller; a.ParentID != "" && len(chain) < maxChain; {
		up, err := s.k.Get(ctx, a.ParentID)
		if err != nil || up.ID != a.ParentID {
			break
		}
		chain = append(chain, up)
		a = up
	}
	return chain
}

// rules checks the depth, providers and roles rules of the chain against the spawn
// (pure: the records say all it needs). chain[i] is i+1 levels above the new agent.
func rules(chain []wire.Agent, p wire.RunParams) error {
	// Depth from the top: the agent that set the bound is the one to name.
	for i := len(chain) - 1; i >= 0; i-- {
		a := chain[i]
		if a.Spawn != nil && a.Spawn.MaxDepth != nil && i+1 > *a.Spawn.MaxDepth {
			levels := "levels"
			if i+1 == 1 {
				levels = "level"
			}
			return refuse("%s has max_depth = %d (%s would be %d %s below it)", a.Path, *a.Spawn.MaxDepth, p.Path, i+1, levels)
		}
	}
	provider := p.Provider
	if provider == "" {
		provider = "shell"
	}
	for _, a := range chain {
		if a.Spawn != nil && len(a.Spawn.Providers) > 0 && !slices.Contains(a.Spawn.Providers, provider) {
			return refuse("%s has providers = [%s] (not %s)%s", a.Path, strings.Join(a.Spawn.Providers, ", "), provider, under(a, chain[0]))
		}
	}
	for _, a := range chain {
		if a.Spawn != nil && len(a.Spawn.Roles) > 0 && !slices.Contains(a.Spawn.Roles, p.Role) {
			role := "no role"
			if p.Role != "" {
				role = "not " + p.Role
			}
			return refuse("%s has roles = [%s] (%s)%s", a.Path, strings.Join(a.Spawn.Roles, ", "), role, under(a, chain[0]))
		}
	}
	return nil
}

// under says that the caller is below the agent whose rule refused, when it is not
// that agent itself.
func under(set, caller wire.Agent) string {
	if set.ID == caller.ID {
		return ""
	}
	return "; " + caller.Path + " is under it"
}

func refuse(format string, args ...any) error {
	return wire.Errorf(wire.CodeSpawnRefused, "spawn refused: "+format, args...)
}

// children checks max_children: the caller's running children (and spawns checked a
// moment ago that may not be recorded yet) against the smallest bound of the chain.
// A spawn it lets through is reserved until its record shows.
func (s *Service) children(ctx context.Context, chain []wire.Agent, path string) error {
	limit, from := -1, wire.Agent{}
	for _, a := range chain {
		if a.Spawn != nil && a.Spawn.MaxChildren != nil && (limit < 0 || *a.Spawn.MaxChildren < limit) {
			limit, from = *a.Spawn.MaxChildren, a
		}
	}
	if limit < 0 {
		return nil
	}
	caller := chain[0]
	s.mu.Lock()
	defer s.mu.Unlock()
	as, err := s.k.List(ctx, wire.ListParams{All: true})
	if err != nil {
		return err
	}
	live := map[string]bool{}
	recorded := map[string]bool{}
	for _, a := range as {
		if a.ParentID != caller.ID {
			continue
		}
		recorded[a.Path] = true
		if !a.State.Terminal() {
			live[a.Path] = true
		}
	}
	now := s.now()
	res := s.pending[caller.ID]
	for path, at := range res {
		if recorded[path] || now.Sub(at) > reserveFor {
			delete(res, path)
			continue
		}
		live[path] = true
	}
	if n := len(live); n >= limit {
		why := fmt.Sprintf("%d running", n)
		if from.ID != caller.ID {
			why += "; inherited from " + from.Path
		}
		return refuse("%s has max_children = %d (%s)", caller.Path, limit, why)
	}
	if res == nil {
		res = map[string]time.Time{}
		s.pending[caller.ID] = res
	}
	res[path] = now
	// Drop what expired under other parents too, so the map stays the size of the
	// spawns in flight.
	for id, r := range s.pending {
		for p, at := range r {
			if now.Sub(at) > reserveFor {
				delete(r, p)
			}
		}
		if len(r) == 0 && id != caller.ID {
			delete(s.pending, id)
		}
	}
	return nil
}

// budget checks budget_usd: the cost of each bounded ancestor's subtree (itself and
// every agent spawned under it, ended ones too) against its bound.
func (s *Service) budget(ctx context.Context, chain []wire.Agent) error {
	need := false
	for _, a := range chain {
		need = need || a.Spawn != nil && a.Spawn.BudgetUSD != nil
	}
	if !need {
		return nil
	}
	as, err := s.k.List(ctx, wire.ListParams{All: true})
	if err != nil {
		return err
	}
	costs := SubtreeCosts(as)
	for i := len(chain) - 1; i >= 0; i-- {
		a := chain[i]
		if a.Spawn == nil || a.Spawn.BudgetUSD == nil {
			continue
		}
		if spent := costs[a.ID]; spent >= *a.Spawn.BudgetUSD {
			return refuse("%s has budget_usd = %.2f ($%.2f spent by it and the agents under it)%s", a.Path, *a.Spawn.BudgetUSD, spent, under(a, chain[0]))
		}
	}
	return nil
}

// SubtreeCosts is, for every agent of as, the cost of it and every agent below it by
// lineage (parent ids), ended ones included. An unpriced agent costs nothing here.
func SubtreeCosts(as []wire.Agent) map[string]float64 {
	parent := make(map[string]string, len(as))
	own := make(map[string]float64, len(as))
	for _, a := range as {
		parent[a.ID] = a.ParentID
		if a.Usage.CostUSD != nil {
			own[a.ID] = *a.Usage.CostUSD
		}
	}
	total := make(map[string]float64, len(as))
	for id, c := range own {
		// Add the agent's own cost to it and each ancestor; the walk is bounded like
		// the chain, so a cycle in damaged records cannot loop.
		for n, at := 0, id; at != "" && n < maxChain; n++ {
			total[at] += c
			at = parent[at]
		}
	}
	return total
}

package wire

import "0orcr/fast"

// Identities and spawn policy (DESIGN §18): the fields agent.run and the agent record
// carry for them. The identity feature (workflow/identity) resolves a name into the
// agent's standing instructions and memory; the spawn feature (workflow/spawnpolicy)
// bounds what an agent may itself spawn from its pane.

// Error codes of identities and spawn policy.
const (
	// CodeUnknownIdentity: a spawn names an identity with no directory, or one that
	// does not load (its file and line, or why its AGENTS.md is refused).
	CodeUnknownIdentity = "unknown_identity"
	// CodeSpawnRefused: an agent asked to spawn beyond its spawn policy (the rule is
	// named), or to give its child another identity than its own.
	CodeSpawnRefused = "spawn_refused"
)

func init() { ErrorCodes = append(ErrorCodes, CodeUnknownIdentity, CodeSpawnRefused) }

// SpawnPolicy bounds what an agent may itself spawn through orcr agent run from its
// pane: how many live children at once, how many levels below it, which providers and
// roles, and what its whole subtree may cost. Absent fields do not bound. A child's
// policy is its parent's narrowed by what it asked for (never widened), with MaxDepth
// one less: on a record, MaxDepth is how many levels may still come below the agent.
type SpawnPolicy struct {
	MaxChildren *int     `json:"maxChildren,omitempty" range:"0,100000"`
	MaxDepth    *int     `json:"maxDepth,omitempty" range:"0,16"`
	Providers   []string `json:"providers,omitempty" maxItems:"16"`
	Roles       []string `json:"roles,omitempty" maxItems:"256"`
	BudgetUSD   *float64 `json:"budgetUsd,omitempty" range:"0,1000000"`
}

// Empty reports whether p bounds nothing.
func (p *SpawnPolicy) Empty() bool {
	return p == nil || p.MaxChildren == nil && p.MaxDepth == nil && len(p.Providers) == 0 && len(p.Roles) == 0 && p.BudgetUSD == nil
}

// Narrow is the policy that binds when both p and q apply: each number the smaller,
// each list the names in both (a list one side leaves empty does not bound). Neither
// is changed; nil bounds nothing.
func (p *SpawnPolicy) Narrow(q *SpawnPolicy) *SpawnPolicy {
	if p.Empty() {
		return q.clone()
	}
	if q.Empty() {
		return p.clone()
	}
	return &SpawnPolicy{
		MaxChildren: minPtr(p.MaxChildren, q.MaxChildren),
		MaxDepth:    minPtr(p.MaxDepth, q.MaxDepth),
		Providers:   both(p.Providers, q.Providers),
		Roles:       both(p.Roles, q.Roles),
		BudgetUSD:   minPtr(p.BudgetUSD, q.BudgetUSD),
	}
}

// ForChild is what p leaves to a child: the same bounds, one level less depth.
func (p *SpawnPolicy) ForChild() *SpawnPolicy {
	c := p.clone()
	if c != nil && c.MaxDepth != nil {
		d := max(*c.MaxDepth-1, 0)
		c.MaxDepth = &d
	}
	return c
}

func (p *SpawnPolicy) clone() *SpawnPolicy {
	if p.Empty() {
		return nil
	}
	c := *p
	c.MaxChildren, c.MaxDepth, c.BudgetUSD = clonePtr(p.MaxChildren), clonePtr(p.MaxDepth), clonePtr(p.BudgetUSD)
	c.Providers = append([]string(nil), p.Providers...)
	c.Roles = append([]string(nil), p.Roles...)
	return &c
}

func clonePtr[T any](v *T) *T {
	if v == nil {
		return nil
	}
	c := *v
	return &c
}

func minPtr[T int | float64](a, b *T) *T {
	switch {
	case a == nil:
		return clonePtr(b)
	case b == nil:
		return clonePtr(a)
	}
	v := min(*a, *b)
	return &v
}

// both is the names in a and b, in a's order; an empty side does not bound. Two
// lists with nothing in common leave one impossible name, so the result still
// refuses everything rather than reading as "no bound".
func both(a, b []string) []string {
	switch {
	case len(a) == 0:
		return append([]string(nil), b...)
	case len(b) == 0:
		return append([]string(nil), a...)
	}
	var out []string
	for _, x := range a {
		for _, y := range b {
			if x == y {
				out = append(out, x)
				break
			}
		}
	}
	if len(out) == 0 {
		out = []string{NoneAllowed}
	}
	return out
}

// NoneAllowed is the one name of a narrowed list whose two sides had none in common:
// nothing matches it.
const NoneAllowed = "(none)"

// String writes a policy as its [spawn] keys ("max_children = 3, providers = [shell]"):
// fast.Spawn's String, the one writer, which `agent get` on the fast path uses too.
func (sp *SpawnPolicy) String() string { return (*fast.Spawn)(sp).String() }

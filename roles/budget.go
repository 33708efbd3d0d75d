package roles

import (
	"context"
	"fmt"

	acctapi "orcr/accounts/api"
	"orcr/core/wire"
)

// A role's budget_usd through the accounts feature's budgets (DESIGN §10): when an
// agent with a budget is spawned, a budget is set on its path (covering the agents
// it spawns beneath it) with the role's budget_action, counting only agents created
// from then on, so an earlier agent at the same path does not spend it. `orcr budget
// ls` shows it; reaching it holds new spawns under the path and, for stop, gives the
// live ones the budget's wrap-up message and stops them after its grace period. A
// resume continues on the same budget. It goes when the path has no record left.
// Without the accounts feature the watcher enforces the bound itself (stop).

// Budgets is what a role's budget needs of the accounts feature.
type Budgets interface {
	Budgets(ctx context.Context) ([]acctapi.Budget, error)
	BudgetSet(ctx context.Context, p acctapi.BudgetSetParams) (acctapi.Budget, error)
	BudgetRemove(ctx context.Context, glob string) error
}

// Budget actions of a role.
const (
	BudgetStop = "stop"
	BudgetHold = "hold"
)

// budgetOn is the budget set on glob, if any.
func (s *Service) budgetOn(ctx context.Context, bud Budgets, glob string) (acctapi.Budget, bool) {
	bs, err := bud.Budgets(ctx)
	if err != nil {
		return acctapi.Budget{}, false
	}
	for _, b := range bs {
		if b.Glob == glob {
			return b, true
		}
	}
	return acctapi.Budget{}, false
}

// hasRoleBudget says whether spawned has anything to do for a: a role budget on an
// agent that is not a resume. Most spawns have none, and the watcher then starts no
// goroutine for them (one per `orcr agent run` in a spawn loop).
func hasRoleBudget(a wire.Agent) bool { return a.Limits.BudgetUSD > 0 && a.ResumedFrom == "" }

// spawned sets a new agent's role budget. A budget the user set on the same path
// wins: it is left as it is, and the record's notes say so.
func (s *Service) spawned(ctx context.Context, a wire.Agent) {
	l := a.Limits
	bud := s.accounts()
	if bud == nil || !hasRoleBudget(a) {
		return
	}
	if b, ok := s.budgetOn(ctx, bud, a.Path); ok && b.Role == "" {
		s.note(ctx, a.ID, fmt.Sprintf("budget: the budget set on %s (%s) applies, not the role's $%g", a.Path, b.Action, l.BudgetUSD))
		return
	}
	action := l.BudgetAction
	if action == "" {
		action = BudgetStop
	}
	usd, since := l.BudgetUSD, a.CreatedAt
	if _, err := bud.BudgetSet(ctx, acctapi.BudgetSetParams{Glob: a.Path, USD: &usd, Action: action,
		Role: a.Role, Since: &since}); err != nil {
		s.log.Warn("roles: set the role's budget", "id", a.ID, "path", a.Path, "err", err)
		s.note(ctx, a.ID, fmt.Sprintf("budget: could not set the role's $%g on %s (%v); the role enforces it itself", usd, a.Path, err))
		return
	}
	s.note(ctx, a.ID, fmt.Sprintf("budget: $%g on %s (%s), see orcr budget ls", usd, a.Path, action))
}

// removed drops a role's budget once no record is left at its path.
func (s *Service) removed(ctx context.Context, a wire.Agent) {
	bud := s.accounts()
	if bud == nil {
		return
	}
	b, ok := s.budgetOn(ctx, bud, a.Path)
	if !ok || b.Role == "" {
		return
	}
	if as, err := s.k.List(ctx, wire.ListParams{Glob: a.Path, All: true}); err == nil {
		for _, o := range as {
			if o.Path == a.Path && o.ID != a.ID {
				return
			}
		}
	}
	if err := bud.BudgetRemove(ctx, a.Path); err != nil {
		s.log.Warn("roles: remove the role's budget", "path", a.Path, "err", err)
	}
}

// delegated says whether a's budget is the accounts feature's to enforce.
func (s *Service) delegated(ctx context.Context, a wire.Agent) bool {
	bud := s.accounts()
	if bud == nil {
		return false
	}
	_, ok := s.budgetOn(ctx, bud, a.Path) // the role's, or the user's that spawned left in place
	return ok
}

// note appends a line to the agent's role notes (agent get --explain).
func (s *Service) note(ctx context.Context, id, line string) {
	if _, err := s.k.Amend(ctx, id, func(x *wire.Agent) { x.RoleNotes = append(x.RoleNotes, line) }); err != nil {
		s.log.Warn("roles: note", "id", id, "err", err)
	}
}

package accounts

import (
	"context"

	acctapi "orcr/accounts/api"
	"orcr/core/wire"
)

// Methods are the account.*, usage.select, usage.history and budget.* socket methods
// (core.Feature).
func (s *Service) Methods() []wire.Handler {
	return []wire.Handler{
		wire.Handle(acctapi.AccountList, func(ctx context.Context, _ *wire.Empty) (acctapi.AccountListResult, error) {
			return s.Accounts(ctx)
		}),
		wire.Handle(acctapi.UsageSelect, func(ctx context.Context, p *acctapi.SelectParams) (acctapi.SelectResult, error) {
			return s.Select(ctx, *p)
		}),
		wire.Handle(acctapi.UsageHistory, func(ctx context.Context, p *acctapi.HistoryParams) (acctapi.HistoryResult, error) {
			r, err := s.History(ctx, *p)
			if err != nil {
				return r, err
			}
			r.Peaks, r.Next, err = pageHistory(r.Peaks, p.After, p.Limit)
			return r, err
		}),
		wire.Handle(acctapi.BudgetList, func(ctx context.Context, _ *wire.Empty) (acctapi.BudgetListResult, error) {
			bs, err := s.Budgets(ctx)
			return acctapi.BudgetListResult{Budgets: bs}, err
		}),
		wire.Handle(acctapi.BudgetSet, func(ctx context.Context, p *acctapi.BudgetSetParams) (acctapi.BudgetResult, error) {
			b, err := s.BudgetSet(ctx, *p)
			return acctapi.BudgetResult{Budget: b}, err
		}),
		wire.Handle(acctapi.BudgetRemove, func(ctx context.Context, p *acctapi.BudgetGlobParams) (wire.Empty, error) {
			return wire.Empty{}, s.BudgetRemove(ctx, p.Glob)
		}),
	}
}

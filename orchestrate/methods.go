package orchestrate

import (
	"context"

	"orcr/core/wire"
	planapi "orcr/orchestrate/api"
)

// Methods are the plan.* and catalog.get socket methods (core.Feature).
func (s *Service) Methods() []wire.Handler {
	return []wire.Handler{
		wire.Handle(planapi.PlanNew, func(ctx context.Context, p *planapi.PlanNewParams) (planapi.PlanResult, error) {
			pl, err := s.PlanNew(ctx, *p)
			return planapi.PlanResult{Plan: pl}, err
		}),
		wire.Handle(planapi.PlanList, func(ctx context.Context, _ *wire.Empty) (planapi.PlanListResult, error) {
			ps, err := s.Plans(ctx)
			if ps == nil {
				ps = []planapi.Plan{}
			}
			return planapi.PlanListResult{Plans: ps}, err
		}),
		wire.Handle(planapi.PlanGet, func(ctx context.Context, p *planapi.PlanNameParams) (planapi.PlanGetResult, error) {
			return s.PlanGet(ctx, p.Name)
		}),
		wire.Handle(planapi.PlanApprove, func(ctx context.Context, p *planapi.PlanNameParams) (planapi.PlanResult, error) {
			pl, err := s.PlanApprove(ctx, p.Name)
			return planapi.PlanResult{Plan: pl}, err
		}),
		wire.Handle(planapi.PlanReject, func(ctx context.Context, p *planapi.PlanRejectParams) (planapi.PlanResult, error) {
			pl, err := s.PlanReject(ctx, *p)
			return planapi.PlanResult{Plan: pl}, err
		}),
		wire.Handle(planapi.CatalogGet, func(ctx context.Context, _ *wire.Empty) (planapi.CatalogResult, error) {
			return s.Catalog(ctx)
		}),
	}
}

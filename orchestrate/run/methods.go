package run

import (
	"context"

	"orcr/core/wire"
	runapi "orcr/orchestrate/run/api"
)

// Methods are the run.* socket methods (core.Feature).
func (s *Service) Methods() []wire.Handler {
	view := func(fn func(ctx context.Context, name string) (runapi.RunView, error)) func(context.Context, *runapi.RunNameParams) (runapi.RunResult, error) {
		return func(ctx context.Context, p *runapi.RunNameParams) (runapi.RunResult, error) {
			r, err := fn(ctx, p.Name)
			return runapi.RunResult{Run: r}, err
		}
	}
	milestones := func(fn func(ctx context.Context, p runapi.RunMilestonesParams) (runapi.RunView, error)) func(context.Context, *runapi.RunMilestonesParams) (runapi.RunResult, error) {
		return func(ctx context.Context, p *runapi.RunMilestonesParams) (runapi.RunResult, error) {
			r, err := fn(ctx, *p)
			return runapi.RunResult{Run: r}, err
		}
	}
	text := func(fn func(ctx context.Context, p runapi.RunTextParams) (runapi.RunView, error)) func(context.Context, *runapi.RunTextParams) (runapi.RunResult, error) {
		return func(ctx context.Context, p *runapi.RunTextParams) (runapi.RunResult, error) {
			r, err := fn(ctx, *p)
			return runapi.RunResult{Run: r}, err
		}
	}
	return []wire.Handler{
		wire.Handle(runapi.RunStartM, func(ctx context.Context, p *runapi.RunStartParams) (runapi.RunResult, error) {
			r, err := s.RunStart(ctx, *p)
			return runapi.RunResult{Run: r}, err
		}),
		wire.Handle(runapi.RunListM, func(ctx context.Context, _ *wire.Empty) (runapi.RunListResult, error) {
			rs, err := s.Runs(ctx)
			if rs == nil {
				rs = []runapi.RunView{}
			}
			return runapi.RunListResult{Runs: rs}, err
		}),
		wire.Handle(runapi.RunStatusM, view(s.RunStatus)),
		wire.Handle(runapi.RunEventsM, func(ctx context.Context, p *runapi.RunEventsParams) (runapi.RunEventsResult, error) {
			// One entry past the page says whether another page follows, so the last
			// page has no next and a client stops without an empty round trip.
			q := *p
			if q.Limit > 0 {
				q.Limit++
			}
			es, err := s.RunEvents(ctx, q)
			if es == nil {
				es = []runapi.RunEntry{}
			}
			var next uint64
			if p.Limit > 0 && len(es) > p.Limit {
				es = es[:p.Limit]
				next = es[len(es)-1].Seq
			}
			return runapi.RunEventsResult{Entries: es, Next: next}, err
		}),
		wire.Handle(runapi.RunStopM, view(s.RunStop)),
		wire.Handle(runapi.RunFinishM, func(ctx context.Context, p *runapi.RunNameParams) (runapi.RunFinishResult, error) {
			return s.RunFinish(ctx, p.Name)
		}),
		wire.Handle(runapi.RunDispatchM, milestones(s.RunDispatch)),
		wire.Handle(runapi.RunHoldM, milestones(s.RunHold)),
		wire.Handle(runapi.RunRetryM, milestones(s.RunRetry)),
		wire.Handle(runapi.RunAnswerM, text(s.RunAnswer)),
		wire.Handle(runapi.RunFixM, text(s.RunFix)),
		wire.Handle(runapi.RunDoneM, func(ctx context.Context, p *runapi.RunCallerParams) (runapi.RunMilestone, error) {
			return s.RunDone(ctx, *p)
		}),
		wire.Handle(runapi.RunAskM, func(ctx context.Context, p *runapi.RunCallerParams) (runapi.RunMilestone, error) {
			return s.RunAsk(ctx, *p)
		}),
	}
}

package schedule

import (
	"context"

	"orcr/core/wire"
	schedapi "orcr/schedule/api"
)

// Methods are the schedule.* socket methods (core.Feature).
func (s *Service) Methods() []wire.Handler {
	return []wire.Handler{
		wire.Handle(schedapi.ScheduleList, func(ctx context.Context, _ *wire.Empty) (schedapi.ScheduleListResult, error) {
			ss, err := s.Schedules(ctx)
			return schedapi.ScheduleListResult{Schedules: ss}, err
		}),
		wire.Handle(schedapi.ScheduleAdd, func(ctx context.Context, p *schedapi.ScheduleAddParams) (schedapi.ScheduleResult, error) {
			sc, err := s.ScheduleAdd(ctx, *p)
			return schedapi.ScheduleResult{Schedule: sc}, err
		}),
		wire.Handle(schedapi.ScheduleRemove, func(ctx context.Context, p *schedapi.ScheduleNameParams) (wire.Empty, error) {
			return wire.Empty{}, s.ScheduleRemove(ctx, p.Name)
		}),
		wire.Handle(schedapi.ScheduleRunNow, func(ctx context.Context, p *schedapi.ScheduleRunParams) (schedapi.ScheduleRunResult, error) {
			r, err := s.ScheduleRun(ctx, *p)
			return schedapi.ScheduleRunResult{Run: r}, err
		}),
		wire.Handle(schedapi.ScheduleRuns, func(ctx context.Context, p *schedapi.ScheduleNameParams) (schedapi.ScheduleRunsResult, error) {
			rs, err := s.ScheduleRuns(ctx, p.Name)
			return schedapi.ScheduleRunsResult{Runs: rs}, err
		}),
	}
}

package socket

import (
	"context"

	"orcr/core"
	"orcr/core/wire"
	runapi "orcr/orchestrate/run/api"
)

// runHandlers serve the run.* methods (orchestrate/run implements them).
var runHandlers = []handler{
	serve(runapi.RunStartM, func(ctx context.Context, s core.Service, p *runapi.RunStartParams) (runapi.RunResult, error) {
		r, err := s.RunStart(ctx, *p)
		return runapi.RunResult{Run: r}, err
	}),
	serve(runapi.RunListM, func(ctx context.Context, s core.Service, _ *wire.Empty) (runapi.RunListResult, error) {
		rs, err := s.Runs(ctx)
		if rs == nil {
			rs = []runapi.RunView{}
		}
		return runapi.RunListResult{Runs: rs}, err
	}),
	serve(runapi.RunStatusM, func(ctx context.Context, s core.Service, p *runapi.RunNameParams) (runapi.RunResult, error) {
		r, err := s.RunStatus(ctx, p.Name)
		return runapi.RunResult{Run: r}, err
	}),
	serve(runapi.RunEventsM, func(ctx context.Context, s core.Service, p *runapi.RunEventsParams) (runapi.RunEventsResult, error) {
		es, err := s.RunEvents(ctx, *p)
		if es == nil {
			es = []runapi.RunEntry{}
		}
		return runapi.RunEventsResult{Entries: es}, err
	}),
	serve(runapi.RunStopM, func(ctx context.Context, s core.Service, p *runapi.RunNameParams) (runapi.RunResult, error) {
		r, err := s.RunStop(ctx, p.Name)
		return runapi.RunResult{Run: r}, err
	}),
	serve(runapi.RunFinishM, func(ctx context.Context, s core.Service, p *runapi.RunNameParams) (runapi.RunFinishResult, error) {
		return s.RunFinish(ctx, p.Name)
	}),
	serve(runapi.RunDispatchM, func(ctx context.Context, s core.Service, p *runapi.RunMilestonesParams) (runapi.RunResult, error) {
		r, err := s.RunDispatch(ctx, *p)
		return runapi.RunResult{Run: r}, err
	}),
	serve(runapi.RunHoldM, func(ctx context.Context, s core.Service, p *runapi.RunMilestonesParams) (runapi.RunResult, error) {
		r, err := s.RunHold(ctx, *p)
		return runapi.RunResult{Run: r}, err
	}),
	serve(runapi.RunRetryM, func(ctx context.Context, s core.Service, p *runapi.RunMilestonesParams) (runapi.RunResult, error) {
		r, err := s.RunRetry(ctx, *p)
		return runapi.RunResult{Run: r}, err
	}),
	serve(runapi.RunAnswerM, func(ctx context.Context, s core.Service, p *runapi.RunTextParams) (runapi.RunResult, error) {
		r, err := s.RunAnswer(ctx, *p)
		return runapi.RunResult{Run: r}, err
	}),
	serve(runapi.RunFixM, func(ctx context.Context, s core.Service, p *runapi.RunTextParams) (runapi.RunResult, error) {
		r, err := s.RunFix(ctx, *p)
		return runapi.RunResult{Run: r}, err
	}),
	serve(runapi.RunDoneM, func(ctx context.Context, s core.Service, p *runapi.RunCallerParams) (runapi.RunMilestone, error) {
		return s.RunDone(ctx, *p)
	}),
	serve(runapi.RunAskM, func(ctx context.Context, s core.Service, p *runapi.RunCallerParams) (runapi.RunMilestone, error) {
		return s.RunAsk(ctx, *p)
	}),
}

// RunStart starts a run.
func (c *Client) RunStart(ctx context.Context, p runapi.RunStartParams) (runapi.RunView, error) {
	r, err := invoke(ctx, c, runapi.RunStartM, p)
	return r.Run, err
}

// Runs lists runs.
func (c *Client) Runs(ctx context.Context) ([]runapi.RunView, error) {
	r, err := invoke(ctx, c, runapi.RunListM, wire.Empty{})
	return r.Runs, err
}

// RunStatus returns one run.
func (c *Client) RunStatus(ctx context.Context, name string) (runapi.RunView, error) {
	r, err := invoke(ctx, c, runapi.RunStatusM, runapi.RunNameParams{Name: name})
	return r.Run, err
}

// RunEvents reads a run's log.
func (c *Client) RunEvents(ctx context.Context, p runapi.RunEventsParams) ([]runapi.RunEntry, error) {
	r, err := invoke(ctx, c, runapi.RunEventsM, p)
	return r.Entries, err
}

// RunStop stops a run.
func (c *Client) RunStop(ctx context.Context, name string) (runapi.RunView, error) {
	r, err := invoke(ctx, c, runapi.RunStopM, runapi.RunNameParams{Name: name})
	return r.Run, err
}

// RunFinish finishes a run.
func (c *Client) RunFinish(ctx context.Context, name string) (runapi.RunFinishResult, error) {
	return invoke(ctx, c, runapi.RunFinishM, runapi.RunNameParams{Name: name})
}

// RunDispatch starts ready milestones.
func (c *Client) RunDispatch(ctx context.Context, p runapi.RunMilestonesParams) (runapi.RunView, error) {
	r, err := invoke(ctx, c, runapi.RunDispatchM, p)
	return r.Run, err
}

// RunHold holds milestones.
func (c *Client) RunHold(ctx context.Context, p runapi.RunMilestonesParams) (runapi.RunView, error) {
	r, err := invoke(ctx, c, runapi.RunHoldM, p)
	return r.Run, err
}

// RunRetry retries milestones.
func (c *Client) RunRetry(ctx context.Context, p runapi.RunMilestonesParams) (runapi.RunView, error) {
	r, err := invoke(ctx, c, runapi.RunRetryM, p)
	return r.Run, err
}

// RunAnswer answers a coder's question.
func (c *Client) RunAnswer(ctx context.Context, p runapi.RunTextParams) (runapi.RunView, error) {
	r, err := invoke(ctx, c, runapi.RunAnswerM, p)
	return r.Run, err
}

// RunFix sends a follow-up job.
func (c *Client) RunFix(ctx context.Context, p runapi.RunTextParams) (runapi.RunView, error) {
	r, err := invoke(ctx, c, runapi.RunFixM, p)
	return r.Run, err
}

// RunDone reports a milestone done from a coder's pane.
func (c *Client) RunDone(ctx context.Context, p runapi.RunCallerParams) (runapi.RunMilestone, error) {
	return invoke(ctx, c, runapi.RunDoneM, p)
}

// RunAsk asks a question from a coder's pane.
func (c *Client) RunAsk(ctx context.Context, p runapi.RunCallerParams) (runapi.RunMilestone, error) {
	return invoke(ctx, c, runapi.RunAskM, p)
}

package socket

import (
	"context"

	"orcr/core"
	"orcr/core/wire"
)

// runHandlers serve the run.* methods (orchestrate/run implements them).
var runHandlers = []handler{
	serve(wire.RunStartM, func(ctx context.Context, s core.Service, p *wire.RunStartParams) (wire.RunResult, error) {
		r, err := s.RunStart(ctx, *p)
		return wire.RunResult{Run: r}, err
	}),
	serve(wire.RunListM, func(ctx context.Context, s core.Service, _ *wire.Empty) (wire.RunListResult, error) {
		rs, err := s.Runs(ctx)
		if rs == nil {
			rs = []wire.RunView{}
		}
		return wire.RunListResult{Runs: rs}, err
	}),
	serve(wire.RunStatusM, func(ctx context.Context, s core.Service, p *wire.RunNameParams) (wire.RunResult, error) {
		r, err := s.RunStatus(ctx, p.Name)
		return wire.RunResult{Run: r}, err
	}),
	serve(wire.RunEventsM, func(ctx context.Context, s core.Service, p *wire.RunEventsParams) (wire.RunEventsResult, error) {
		es, err := s.RunEvents(ctx, *p)
		if es == nil {
			es = []wire.RunEntry{}
		}
		return wire.RunEventsResult{Entries: es}, err
	}),
	serve(wire.RunStopM, func(ctx context.Context, s core.Service, p *wire.RunNameParams) (wire.RunResult, error) {
		r, err := s.RunStop(ctx, p.Name)
		return wire.RunResult{Run: r}, err
	}),
	serve(wire.RunFinishM, func(ctx context.Context, s core.Service, p *wire.RunNameParams) (wire.RunFinishResult, error) {
		return s.RunFinish(ctx, p.Name)
	}),
	serve(wire.RunDispatchM, func(ctx context.Context, s core.Service, p *wire.RunMilestonesParams) (wire.RunResult, error) {
		r, err := s.RunDispatch(ctx, *p)
		return wire.RunResult{Run: r}, err
	}),
	serve(wire.RunHoldM, func(ctx context.Context, s core.Service, p *wire.RunMilestonesParams) (wire.RunResult, error) {
		r, err := s.RunHold(ctx, *p)
		return wire.RunResult{Run: r}, err
	}),
	serve(wire.RunRetryM, func(ctx context.Context, s core.Service, p *wire.RunMilestonesParams) (wire.RunResult, error) {
		r, err := s.RunRetry(ctx, *p)
		return wire.RunResult{Run: r}, err
	}),
	serve(wire.RunAnswerM, func(ctx context.Context, s core.Service, p *wire.RunTextParams) (wire.RunResult, error) {
		r, err := s.RunAnswer(ctx, *p)
		return wire.RunResult{Run: r}, err
	}),
	serve(wire.RunFixM, func(ctx context.Context, s core.Service, p *wire.RunTextParams) (wire.RunResult, error) {
		r, err := s.RunFix(ctx, *p)
		return wire.RunResult{Run: r}, err
	}),
	serve(wire.RunDoneM, func(ctx context.Context, s core.Service, p *wire.RunCallerParams) (wire.RunMilestone, error) {
		return s.RunDone(ctx, *p)
	}),
	serve(wire.RunAskM, func(ctx context.Context, s core.Service, p *wire.RunCallerParams) (wire.RunMilestone, error) {
		return s.RunAsk(ctx, *p)
	}),
}

// RunStart starts a run.
func (c *Client) RunStart(ctx context.Context, p wire.RunStartParams) (wire.RunView, error) {
	r, err := invoke(ctx, c, wire.RunStartM, p)
	return r.Run, err
}

// Runs lists runs.
func (c *Client) Runs(ctx context.Context) ([]wire.RunView, error) {
	r, err := invoke(ctx, c, wire.RunListM, wire.Empty{})
	return r.Runs, err
}

// RunStatus returns one run.
func (c *Client) RunStatus(ctx context.Context, name string) (wire.RunView, error) {
	r, err := invoke(ctx, c, wire.RunStatusM, wire.RunNameParams{Name: name})
	return r.Run, err
}

// RunEvents reads a run's log.
func (c *Client) RunEvents(ctx context.Context, p wire.RunEventsParams) ([]wire.RunEntry, error) {
	r, err := invoke(ctx, c, wire.RunEventsM, p)
	return r.Entries, err
}

// RunStop stops a run.
func (c *Client) RunStop(ctx context.Context, name string) (wire.RunView, error) {
	r, err := invoke(ctx, c, wire.RunStopM, wire.RunNameParams{Name: name})
	return r.Run, err
}

// RunFinish finishes a run.
func (c *Client) RunFinish(ctx context.Context, name string) (wire.RunFinishResult, error) {
	return invoke(ctx, c, wire.RunFinishM, wire.RunNameParams{Name: name})
}

// RunDispatch starts ready milestones.
func (c *Client) RunDispatch(ctx context.Context, p wire.RunMilestonesParams) (wire.RunView, error) {
	r, err := invoke(ctx, c, wire.RunDispatchM, p)
	return r.Run, err
}

// RunHold holds milestones.
func (c *Client) RunHold(ctx context.Context, p wire.RunMilestonesParams) (wire.RunView, error) {
	r, err := invoke(ctx, c, wire.RunHoldM, p)
	return r.Run, err
}

// RunRetry retries milestones.
func (c *Client) RunRetry(ctx context.Context, p wire.RunMilestonesParams) (wire.RunView, error) {
	r, err := invoke(ctx, c, wire.RunRetryM, p)
	return r.Run, err
}

// RunAnswer answers a coder's question.
func (c *Client) RunAnswer(ctx context.Context, p wire.RunTextParams) (wire.RunView, error) {
	r, err := invoke(ctx, c, wire.RunAnswerM, p)
	return r.Run, err
}

// RunFix sends a follow-up job.
func (c *Client) RunFix(ctx context.Context, p wire.RunTextParams) (wire.RunView, error) {
	r, err := invoke(ctx, c, wire.RunFixM, p)
	return r.Run, err
}

// RunDone reports a milestone done from a coder's pane.
func (c *Client) RunDone(ctx context.Context, p wire.RunCallerParams) (wire.RunMilestone, error) {
	return invoke(ctx, c, wire.RunDoneM, p)
}

// RunAsk asks a question from a coder's pane.
func (c *Client) RunAsk(ctx context.Context, p wire.RunCallerParams) (wire.RunMilestone, error) {
	return invoke(ctx, c, wire.RunAskM, p)
}

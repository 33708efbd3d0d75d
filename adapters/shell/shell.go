// Package shell is the provider adapter for any argv: it launches the command as given
// and tells state from the screen alone — working while output flows, idle once it has
// been quiet for a moment, blocked when the settled screen asks a question (question.go).
// It has no hooks and no transcript.
package shell

import (
	"context"
	"errors"
	"time"

	"orcr/core"
	"orcr/core/wire"
)

// Quiet is how long the screen must be still before the agent counts as idle.
const Quiet = time.Second

// Provider runs any program.
type Provider struct{}

// New returns the shell provider.
func New() *Provider { return &Provider{} }

var (
	_ core.Provider   = (*Provider)(nil)
	_ core.TurnOnSend = (*Provider)(nil)
)

// Name is "shell".
func (*Provider) Name() string { return "shell" }

// Detect always succeeds: the program is whatever argv names.
func (*Provider) Detect(context.Context) core.ProviderStatus {
	return core.ProviderStatus{Name: "shell", Found: true, Notes: []string{"runs any argv"}}
}

// TurnOnSend: the screen is all the shell provider sees, so a send ending in Enter
// starts a turn (core.TurnOnSend).
func (*Provider) TurnOnSend() bool { return true }

// Prepare launches the agent's argv unchanged. A --prompt reaches the program as
// $ORCR_PROMPT: a plain program's input is its own, so the prompt is not typed into it,
// but it is not dropped either (`sh -c 'do-work "$ORCR_PROMPT"'`).
func (*Provider) Prepare(_ context.Context, req core.LaunchRequest) (core.LaunchPlan, error) {
	if len(req.Agent.Argv) == 0 {
		return core.LaunchPlan{}, errors.New("shell provider needs a command after --")
	}
	plan := core.LaunchPlan{Argv: req.Agent.Argv}
	if req.Agent.Prompt != "" {
		plan.Env = []string{"ORCR_PROMPT=" + req.Agent.Prompt}
	}
	return plan, nil
}

// Observe returns the screen-rule observer. A re-adopted agent starts from its record,
// so a question still on screen stays blocked across a restart.
func (*Provider) Observe(a wire.Agent) core.Observer {
	o := &observer{}
	if a.State == wire.StateBlocked && a.Blocked != nil {
		o.asked = a.Blocked.Question
	}
	return o
}

type observer struct {
	asked string // the question line the agent is blocked on
}

func (o *observer) Screen(s core.Screen, quiet time.Duration) *core.Signal {
	if o.asked != "" {
		// Blocked: stay so while the question stands unanswered, whatever the clock.
		if q := question(s.Text); q != nil && q.Question == o.asked {
			return nil
		}
		o.asked = ""
	}
	if quiet >= Quiet {
		if q := question(s.Text); q != nil {
			o.asked = q.Question
			return &core.Signal{State: wire.StateBlocked, Source: "screen", Reason: "question: " + q.Detail, Blocked: q}
		}
		return &core.Signal{State: wire.StateIdle, Source: "screen", Reason: "screen quiet for " + quiet.Round(100*time.Millisecond).String()}
	}
	return &core.Signal{State: wire.StateWorking, Source: "screen", Reason: "output flowing"}
}

func (*observer) Hook(event string, _ []byte) (*core.Signal, error) {
	return nil, errors.New("the shell provider has no hooks")
}

func (*observer) Poll(context.Context) (*core.Signal, error) { return nil, nil }

// Unpolled implements core.Unpolled: a shell program has no transcript, so its agent
// keeps no poll timer.
func (*observer) Unpolled() {}

func (*observer) Close() error { return nil }

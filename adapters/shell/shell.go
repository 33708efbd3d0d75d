// Package shell is the provider adapter for any argv: it launches the command as given
// and tells state from the screen alone — working while output flows, idle once it has
// been quiet for a moment. It has no hooks and no transcript.
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

var _ core.Provider = (*Provider)(nil)

// Name is "shell".
func (*Provider) Name() string { return "shell" }

// Detect always succeeds: the program is whatever argv names.
func (*Provider) Detect(context.Context) core.ProviderStatus {
	return core.ProviderStatus{Name: "shell", Found: true, Notes: []string{"runs any argv"}}
}

// Prepare launches the agent's argv unchanged.
func (*Provider) Prepare(_ context.Context, req core.LaunchRequest) (core.LaunchPlan, error) {
	if len(req.Agent.Argv) == 0 {
		return core.LaunchPlan{}, errors.New("shell provider needs a command after --")
	}
	return core.LaunchPlan{Argv: req.Agent.Argv}, nil
}

// Observe returns the screen-rule observer.
func (*Provider) Observe(wire.Agent) core.Observer { return observer{} }

type observer struct{}

func (observer) Screen(_ core.Screen, quiet time.Duration) *core.Signal {
	if quiet >= Quiet {
		return &core.Signal{State: wire.StateIdle, Source: "screen", Reason: "screen quiet for " + quiet.Round(100*time.Millisecond).String()}
	}
	return &core.Signal{State: wire.StateWorking, Source: "screen", Reason: "output flowing"}
}

func (observer) Hook(event string, _ []byte) (*core.Signal, error) {
	return nil, errors.New("the shell provider has no hooks")
}

func (observer) Poll(context.Context) (*core.Signal, error) { return nil, nil }

func (observer) Close() error { return nil }

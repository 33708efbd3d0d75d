package core

import (
	"context"

	"orcr/core/wire"
)

// Hook routes a provider hook to the agent's observer.
func (e *Engine) Hook(ctx context.Context, p wire.HookParams) error {
	// Only the agent itself may report its hooks: the caller must be verified as
	// running inside that agent's pane.
	if c, ok := CallerFrom(ctx); ok && !c.InProcess {
		me, err := e.callerAgent(ctx)
		if err != nil {
			return err
		}
		if me == nil || me.ID != p.AgentID {
			return wire.Errorf(wire.CodeCallerRefused, "hook for agent %s must come from inside that agent's pane", p.AgentID)
		}
	}
	e.mu.Lock()
	rt, ok := e.agents[p.AgentID]
	e.mu.Unlock()
	if !ok {
		return wire.Errorf(wire.CodeNotFound, "hook for unknown agent %q (ORCR_ID); was it started by this server?", p.AgentID)
	}
	if rt.done == nil || rt.events == nil {
		return wire.Errorf(wire.CodeNotRunning, "agent %s is not running", rt.a.Path)
	}
	prov := e.providers[rt.a.Provider]
	if prov == nil || (p.Provider != "" && p.Provider != rt.a.Provider) {
		return wire.Errorf(wire.CodeInvalidParams, "hook from provider %q for a %s agent", p.Provider, rt.a.Provider)
	}
	errc := make(chan error, 1)
	select {
	case rt.events <- func() { errc <- e.hookOnLoop(ctx, rt, p) }:
	case <-rt.done:
		return wire.Errorf(wire.CodeNotRunning, "agent %s ended", rt.a.Path)
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-errc:
		return err
	case <-rt.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// hookOnLoop runs on the agent's loop goroutine, which owns the observer.
func (e *Engine) hookOnLoop(ctx context.Context, rt *agentRT, p wire.HookParams) error {
	obs := rt.observer()
	if obs == nil {
		return nil
	}
	sig, err := obs.Hook(p.Event, p.Payload)
	if err != nil {
		return wire.Errorf(wire.CodeInvalidParams, "hook %s/%s: %v", p.Provider, p.Event, err)
	}
	e.apply(ctx, rt, sig)
	return nil
}

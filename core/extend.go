package core

import (
	"context"
	"fmt"
	"sync"
	"time"

	"orcr/core/wire"
)

// Extension points for features that shape an agent before it runs (roles, §12):
// a resolver that turns a templated run request into a concrete one before it is
// queued, and hooks that run before each launch. Both are optional; the daemon wires
// the roles feature into them.

// RunResolver turns a run request into the one that is queued: a role's providers,
// prompt, system prompt and limits filled in. It runs in agent.run before anything is
// recorded, so a bad request (an unknown role, a missing variable) is an error to the
// caller and nothing starts. ready says whether a provider can start now (known,
// found, its host integration present); a resolver uses it to fall back along a
// provider chain. notes are kept on the record (Agent.RoleNotes) to explain the choice.
type RunResolver interface {
	Resolve(ctx context.Context, p wire.RunParams, ready func(provider string) error) (q wire.RunParams, notes []string, err error)
}

// LaunchHook runs before each launch of an agent's pane, after its worktree exists
// (newWorktree: made for this launch). An error fails the launch with that message.
type LaunchHook interface {
	BeforeLaunch(ctx context.Context, a wire.Agent, newWorktree bool) error
}

// readyFresh is how long a provider's Detect answers for: fallback must not run every
// CLI's --version on every spawn.
const readyFresh = 30 * time.Second

type readyCache struct {
	mu sync.Mutex
	at map[string]time.Time
	ok map[string]error
}

// ProviderReady says whether provider can start now: it is known, its program is
// found (Detect, cached for readyFresh) and the host has its integration.
func (e *Engine) ProviderReady(ctx context.Context, provider string) error {
	prov, ok := e.providers[provider]
	if !ok {
		return wire.Errorf(wire.CodeUnknownProvider, "unknown provider %q", provider)
	}
	if ic, ok := e.host.(IntegrationChecker); ok && provider != "shell" {
		if err := ic.RequireIntegration(ctx, provider); err != nil {
			return err
		}
	}
	c := &e.ready
	c.mu.Lock()
	if at, ok := c.at[provider]; ok && time.Since(at) < readyFresh {
		err := c.ok[provider]
		c.mu.Unlock()
		return err
	}
	c.mu.Unlock()
	st := prov.Detect(ctx)
	var err error
	if !st.Found {
		err = fmt.Errorf("%s not found", provider)
		if st.Fix != "" {
			err = fmt.Errorf("%s not found; install it with: %s", provider, st.Fix)
		}
	}
	c.mu.Lock()
	if c.at == nil {
		c.at, c.ok = map[string]time.Time{}, map[string]error{}
	}
	c.at[provider], c.ok[provider] = time.Now(), err
	c.mu.Unlock()
	return err
}

// Amend lets a feature change the fields it owns on an agent's record (hook runs,
// limit counters) and announces the change as agent.updated. fn must not change the
// state: states move only through the kernel's rules.
func (e *Engine) Amend(ctx context.Context, id string, fn func(a *wire.Agent)) (wire.Agent, error) {
	e.mu.Lock()
	rt := e.agents[id]
	e.mu.Unlock()
	if rt == nil {
		return wire.Agent{}, wire.Errorf(wire.CodeNotFound, "no agent %s", id)
	}
	a, _, err := e.change(ctx, rt, func(a wire.Agent) (wire.Agent, *wire.Event, bool) {
		st, src, why := a.State, a.StateSource, a.StateReason
		fn(&a)
		a.State, a.StateSource, a.StateReason = st, src, why
		return a, &wire.Event{Event: wire.EventAgentUpdated}, true
	})
	return a, err
}

// StopAgent kills one agent with a reason the record keeps (a role's hard timeout).
func (e *Engine) StopAgent(ctx context.Context, id, reason string) error {
	e.mu.Lock()
	rt := e.agents[id]
	e.mu.Unlock()
	if rt == nil {
		return wire.Errorf(wire.CodeNotFound, "no agent %s", id)
	}
	e.killOne(ctx, rt, reason, func(a wire.Agent) bool { return !a.State.Terminal() })
	return nil
}

// resolveRun applies the resolver, if any.
func (e *Engine) resolveRun(ctx context.Context, p wire.RunParams) (wire.RunParams, []string, error) {
	if e.opts.Resolver == nil {
		if p.Role != "" {
			return p, nil, wire.Errorf(wire.CodeUnknownRole, "roles are not available on this server")
		}
		return p, nil, nil
	}
	return e.opts.Resolver.Resolve(ctx, p, func(provider string) error { return e.ProviderReady(ctx, provider) })
}

// beforeLaunch runs the launch hooks in order; the first error wins.
func (e *Engine) beforeLaunch(ctx context.Context, a wire.Agent, newWorktree bool) error {
	for _, h := range e.opts.LaunchHooks {
		if err := h.BeforeLaunch(ctx, a, newWorktree); err != nil {
			return err
		}
	}
	return nil
}

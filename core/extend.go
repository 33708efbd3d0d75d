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
// queued, and hooks that run before each launch. Both are optional; a feature
// registers them through its Kernel in Start (roles does).

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

// check says whether prov's program is found, asking its Detect at most once per
// readyFresh.
func (c *readyCache) check(ctx context.Context, prov Provider) error {
	name := prov.Name()
	c.mu.Lock()
	if at, ok := c.at[name]; ok && time.Since(at) < readyFresh {
		err := c.ok[name]
		c.mu.Unlock()
		return err
	}
	c.mu.Unlock()
	st := prov.Detect(ctx)
	var err error
	if !st.Found {
		err = fmt.Errorf("%s not found", name)
		if st.Fix != "" {
			err = fmt.Errorf("%s not found; install it with: %s", name, st.Fix)
		}
	}
	c.mu.Lock()
	if c.at == nil {
		c.at, c.ok = map[string]time.Time{}, map[string]error{}
	}
	c.at[name], c.ok[name] = time.Now(), err
	c.mu.Unlock()
	return err
}

// resolveRun applies the resolver, if any.
func (e *Engine) resolveRun(ctx context.Context, p wire.RunParams) (wire.RunParams, []string, error) {
	r := e.ext.load().resolver
	if r == nil {
		if p.Role != "" {
			return p, nil, wire.Errorf(wire.CodeUnknownRole, "roles are not available on this server")
		}
		return p, nil, nil
	}
	return r.Resolve(ctx, p, func(provider string) error { return providerReady(ctx, e, provider) })
}

// beforeLaunch runs the launch hooks in order; the first error wins.
func (e *Engine) beforeLaunch(ctx context.Context, a wire.Agent, newWorktree bool) error {
	for _, h := range e.ext.load().launch {
		if err := h.BeforeLaunch(ctx, a, newWorktree); err != nil {
			return err
		}
	}
	return nil
}

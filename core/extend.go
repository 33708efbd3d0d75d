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

// LaunchWrapper is a LaunchHook that also shapes the command a pane starts, after the
// adapter prepared it and before the host launches it: the sandbox (§16) puts its
// launcher in front of the agent's argv. needs is what the adapter says its program
// must reach when confined. confined reports that the wrapper confined the agent; an
// agent whose Sandbox is on and that no wrapper confined does not start (never
// unconfined when confinement was asked for). An error fails the launch.
type LaunchWrapper interface {
	WrapLaunch(ctx context.Context, a wire.Agent, spec *LaunchSpec, needs Confinement) (confined bool, err error)
}

// Confinement is what a provider's program needs inside a sandbox (§16), from its
// adapter: its state directories (read-write), its install (read-execute), files it
// only reads (the settings orcr wrote for it), the TCP ports of its model server, and
// notes on what the adapter changed because orcr confines it (its own sandbox off).
type Confinement struct {
	RW, ROX, RO []string
	Ports       []int
	Notes       []string
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

// wrapLaunch lets the launch hooks that are LaunchWrappers shape spec, and refuses an
// agent that asked for a sandbox none of them gave.
func (x *hooks) wrapLaunch(ctx context.Context, a wire.Agent, spec *LaunchSpec, needs Confinement) error {
	confined := false
	for _, h := range x.launch {
		if w, ok := h.(LaunchWrapper); ok {
			c, err := w.WrapLaunch(ctx, a, spec, needs)
			if err != nil {
				return err
			}
			confined = confined || c
		}
	}
	if a.Sandbox.On() && !confined {
		return fmt.Errorf("%s asked for a sandbox and this server has none to give (no sandbox feature); it was not started unconfined", a.Path)
	}
	return nil
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

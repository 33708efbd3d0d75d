package core

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"orcr/core/wire"
)

// Agents that live on another machine (DESIGN §14). The engine keeps every agent in
// its one tree, but an agent whose record names a Node has its pane, its observer and
// its own record on that node's server; here it is admitted (so the caps count the
// whole fleet), launched, typed into, read, resized, attached and stopped through the
// Remote a feature registered (nodes), and its state is what the node reports, folded
// in with Kernel.Mirror. No local loop watches it, and a restart of this server leaves
// it as it was (reconcile does not look for its pane here): the node still runs it.
//
// This is the one seam the kernel has for nodes: the engine asks "is it remote?" at
// the few places it would touch a pane, and hands such an agent to Remote.

// Remote is where agents placed on another machine live.
type Remote interface {
	// Launch starts a on its node (same id and path); it returns once the node has
	// the agent. Its later states arrive through Kernel.Mirror. a.Env holds the values
	// of its own env (not the record's names): for the node, never to be stored here.
	Launch(ctx context.Context, a wire.Agent) error
	Send(ctx context.Context, a wire.Agent, p wire.SendParams) error
	Read(ctx context.Context, a wire.Agent, p wire.ReadParams) (wire.ReadResult, error)
	Resize(ctx context.Context, a wire.Agent, cols, rows int) error
	// Kill stops the agent on its node; an unreachable node is an error (the agent
	// is not marked killed here while it may still run there).
	Kill(ctx context.Context, a wire.Agent, reason string) error
	Attach(ctx context.Context, a wire.Agent) (wire.AttachResult, error)
}

// NodePlacer is a Gate that places what it admits on a node: asked right after the
// placers, under the engine's lock, for an admitted agent no --node pinned; "" keeps
// it on this machine. What it returns is stamped on the record (Agent.Node) in the
// same write that makes it starting.
type NodePlacer interface {
	Gate
	PlaceNode(ctx context.Context, a wire.Agent) string
}

// FleetPlacer is a NodePlacer that weighs memory across the machines (nodes): while
// PlacesFleet says so (a node is registered), the memory guard hands it each agent
// with this machine's reading instead of holding the agent on that reading alone, so
// an agent this machine has no room for may still start on a node. Its answer is the
// guard's; it is called as a Gate is (under the engine's lock, quick, no side
// effects), and PlaceNode is then asked for the agents admitted, with Agent.Account
// set to the account the placers chose.
type FleetPlacer interface {
	NodePlacer
	PlacesFleet() bool
	AdmitFleet(ctx context.Context, a wire.Agent, here LocalRoom) (ok bool, reason string, retryAt time.Time)
}

// LocalRoom is this machine's memory as the guard reads it: FreeMB (MemAvailable, -1
// when unknown) and limits.min_free_mb (0: the guard is off).
type LocalRoom struct {
	FreeMB    int
	MinFreeMB int
}

func remoteOf(e *Engine) (Remote, error) {
	r := e.ext.load().remote
	if r == nil {
		return nil, wire.Errorf(wire.CodeInvalidParams, "this server runs no agents on nodes")
	}
	return r, nil
}

// nodeLocked is the node an admitted agent goes to: a node placer's choice, which is
// its pin when it has one (the placer is asked either way, so it counts the agent on
// its node), else "" : here.
func nodeLocked(ctx context.Context, e *Engine, a wire.Agent) string {
	for _, g := range e.ext.load().gates {
		if p, ok := g.(NodePlacer); ok {
			if n := p.PlaceNode(ctx, a); n != "" {
				return n
			}
		}
	}
	return a.Node
}

// launchRemote hands an admitted agent to its node.
func launchRemote(ctx context.Context, e *Engine, rt *agentRT) {
	e.mu.Lock()
	a := rt.a
	e.mu.Unlock()
	r, err := remoteOf(e)
	if err == nil {
		// The node is given the values of the agent's own env (--env, a role's), secrets
		// resolved here; the record keeps only their names. The account's env is the
		// node's own (its [[accounts]] of the same label), not this machine's paths.
		var own map[string]string
		if own, err = envValues(e.opts.Home, e.opts.Secrets, a); err == nil {
			a.Env = own
			err = r.Launch(ctx, a)
		}
	}
	if err != nil {
		e.finishFailed(ctx, rt, fmt.Errorf("launch on node %s: %w", a.Node, err))
		return
	}
	e.mu.Lock()
	killed := rt.a.State.Terminal()
	e.mu.Unlock()
	if killed {
		// Killed while the node was starting it: it must not run on there.
		if err := r.Kill(ctx, a, "killed while starting"); err != nil {
			e.log.Warn("kill on node an agent killed while starting", "id", a.ID, "node", a.Node, "err", err)
		}
	}
}

// remoteAgent is rt's record when it lives on a node (ok false: it lives here).
func remoteAgent(e *Engine, rt *agentRT) (wire.Agent, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return rt.a, rt.a.Node != ""
}

func liveRemote(a wire.Agent) error {
	if !a.State.Live() {
		return &wire.Error{Code: wire.CodeNotRunning, Message: fmt.Sprintf("%s is %s and has no live pane", a.Path, a.State)}
	}
	return nil
}

// killRemote stops an agent on its node and ends its record here once the node
// took the kill.
func killRemote(ctx context.Context, e *Engine, rt *agentRT, a wire.Agent, reason string, still func(a wire.Agent) bool) bool {
	if still != nil && !still(a) {
		return false
	}
	var r Remote
	notThere := false
	if a.State.Live() || a.State == wire.StateStarting {
		var err error
		r, err = remoteOf(e)
		if err == nil {
			err = r.Kill(ctx, a, reason)
		}
		if err != nil && !errors.Is(err, wire.ErrNotFound) {
			e.log.Warn("kill on node", "id", a.ID, "node", a.Node, "err", err)
			return false
		}
		notThere = err != nil
	}
	ended := e.end(ctx, rt, wire.StateKilled, "server", reason, nil, func(x *wire.Agent) bool {
		return still == nil || still(*x)
	})
	if ended && notThere && r != nil && a.State == wire.StateStarting {
		// Its launch may have handed it to the node between the kill there (not there
		// yet) and the end here: launchRemote kills it there only when it sees the end
		// after the node took it, so once the end is written it is killed there again.
		// One of the two finds it (TestNodeAgents: "the node has it idle" under load).
		if err := r.Kill(ctx, a, reason); err != nil && !errors.Is(err, wire.ErrNotFound) {
			e.log.Warn("kill on node an agent killed while starting", "id", a.ID, "node", a.Node, "err", err)
		}
	}
	return ended
}

// mirror applies what an agent's node reports to its record here: fn may change the
// state (the node's rules decided it); a change of state is announced as agent.state,
// anything else as agent.updated, and an end frees its slot for admission.
func mirror(ctx context.Context, e *Engine, id string, fn func(a *wire.Agent)) (wire.Agent, error) {
	e.mu.Lock()
	rt := e.agents[id]
	e.mu.Unlock()
	if rt == nil {
		return wire.Agent{}, wire.Errorf(wire.CodeNotFound, "no agent %s", id)
	}
	ended := false
	a, _, err := e.change(ctx, rt, func(a wire.Agent) (wire.Agent, *wire.Event, bool) {
		if a.Node == "" {
			return a, nil, false
		}
		from := a.State
		if from.Terminal() {
			return a, nil, false // ended here: what the node says later changes nothing
		}
		next := a
		fn(&next)
		next.ID, next.Path, next.Node, next.ParentID, next.ParentPath = a.ID, a.Path, a.Node, a.ParentID, a.ParentPath
		// The pane is the node's: no local host is ever asked about it.
		next.PaneID, next.PID = "", 0
		if next.State == from && reflect.DeepEqual(next, a) {
			// Nothing the coordinator keeps changed (a node event about fields it does
			// not mirror, a record re-read as it was): no write, no event. Each node
			// agent otherwise cost its coordinator a stored event per node event.
			return a, nil, false
		}
		ev := &wire.Event{Event: wire.EventAgentUpdated}
		if next.State != from {
			ev = &wire.Event{Event: wire.EventAgentState, From: from, To: next.State}
			ended = next.State.Terminal()
		}
		return next, ev, true
	})
	if err == nil && ended {
		e.kickAdmission()
	}
	if err == nil && a.Node == "" {
		return a, wire.Errorf(wire.CodeInvalidParams, "agent %s runs here, not on a node", id)
	}
	return a, err
}

package nodes

import (
	"context"
	"fmt"
	"strings"

	"orcr/core"
	"orcr/core/wire"
)

// This machine's own cap, and the directory an agent placed automatically gets on its
// node (DESIGN §14, runs on nodes).
//
// [limits] local caps the live agents placement puts on this machine while nodes are
// registered: without it this machine, preferred whenever it has memory, would take
// every agent a fleet has room for. The feature counts them itself (the placer is
// asked under the engine's lock and may not call back): an agent it places here is
// counted at once, in the admission pass that placed it, and forgotten when its state
// event says it ended, hibernated or went back to the queue.
//
// An agent placed on a node by admission (not pinned) was asked for with a directory
// of this machine: a run's coder with its milestone's worktree. Before it is handed to
// its node (Launch, also the hand-over after a restart of this server), the feature
// that made that directory may give it one on the node: a capability provided as
// "node-dirs" (orchestrate/run's coders: a clone of the milestone's branch, pushed
// there). The record's directory becomes the node's before the node has the agent, so
// a restart between the two finds the clone's, and pushing again reuses the clone.

// An agent asked for with a sandbox (a run's coders by default) is handed to its node
// with it: the node's own sandbox feature confines it there, with the node's Landlock,
// its clone read-write and the node's orcr directory (where its socket to the
// coordinator is) reachable; a node whose kernel has no Landlock refuses it, and the
// launch fails here with "launch on node NAME: … Landlock …" — never unconfined.

// nodeDirsCapability is the name a feature provides a NodeDirs under.
const nodeDirsCapability = "node-dirs"

// nodeDirs gives an agent placed on a node its directory there: "" keeps a.Cwd (not
// the provider's agent). An error fails the launch with its message.
type nodeDirs interface {
	NodeDir(ctx context.Context, a wire.Agent) (string, error)
}

// hereKeeper is what the node-dirs provider may also say: the agents at path work in
// this machine's repository and are never placed on a node (a run's lead and
// reviewer). It is asked under the engine's lock, so it answers from the path alone.
type hereKeeper interface {
	StaysHere(path string) bool
}

// staysHere says whether only this machine can take a: a worktree agent (nodes have
// no clone of its repository), or one the node-dirs provider keeps here.
func (s *Service) staysHere(a wire.Agent) bool {
	if a.Worktree != "" {
		return true
	}
	if s.k == nil {
		return false
	}
	h, ok := core.Lookup[hereKeeper](s.k, nodeDirsCapability)
	return ok && h.StaysHere(a.Path)
}

// startLocal counts this machine's live agents and follows their ends.
func (s *Service) startLocal(ctx context.Context) error {
	after := s.k.LastSeq()
	agents, err := s.k.List(ctx, wire.ListParams{All: true})
	if err != nil {
		return fmt.Errorf("nodes: list agents: %w", err)
	}
	s.mu.Lock()
	for _, a := range agents {
		if a.Node == "" && countsHere(a.State) {
			s.local[a.ID] = struct{}{}
		}
	}
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.followLocal(after)
	}()
	return nil
}

// countsHere says whether an agent in state st holds a slot of this machine.
func countsHere(st wire.State) bool {
	return !st.Terminal() && st != wire.StateQueued && st != wire.StateHibernated
}

// followLocal forgets this machine's agents as they end, subscribing again from the
// last event seen when the stream is cut (a slow reader is dropped by the broker).
func (s *Service) followLocal(after uint64) {
	for s.ctx.Err() == nil {
		ch, err := s.k.Subscribe(s.ctx, wire.SubscribeParams{After: after})
		if err != nil {
			s.log.Warn("nodes: follow this machine's agents", "err", err)
			return
		}
		for ev := range ch {
			after = ev.Seq
			if ev.Event != wire.EventAgentState || ev.Agent == nil || countsHere(ev.To) {
				continue
			}
			s.mu.Lock()
			_, was := s.local[ev.Agent.ID]
			delete(s.local, ev.Agent.ID)
			capped := s.localMax > 0
			s.mu.Unlock()
			if was && capped {
				s.k.Readmit() // its slot here is free; admission may have asked before this
			}
		}
	}
}

// SetLocalMax changes this machine's cap ([limits] local) when the config is reloaded
// (SIGHUP), as the other limits are: admission is asked again at once, so agents
// waiting for this machine start when the cap was raised or lifted (0). A cap lowered
// below the agents running here stops none of them; the next waits until enough ended.
func (s *Service) SetLocalMax(n int) {
	if n < 0 {
		n = 0
	}
	s.mu.Lock()
	was := s.localMax
	s.localMax = n
	s.mu.Unlock()
	if was != n {
		s.log.Info("this machine's cap among the nodes changed ([limits] local)", "from", was, "to", n)
		if s.k != nil {
			s.k.Readmit()
		}
	}
}

// placedHereLocked counts an agent admission keeps on this machine.
func (s *Service) placedHereLocked(id string) {
	s.local[id] = struct{}{}
}

// nodeDir asks the feature that provides node-dirs for a's directory on its node and,
// when it gives one, records it before the hand-over.
func (s *Service) nodeDir(ctx context.Context, a wire.Agent) (wire.Agent, error) {
	if s.k == nil || a.Cwd == "" {
		return a, nil
	}
	d, ok := s.k.Lookup(nodeDirsCapability)
	if !ok {
		return a, nil
	}
	nd, ok := d.(nodeDirs)
	if !ok {
		return a, nil
	}
	dir, err := nd.NodeDir(ctx, a)
	if err != nil || dir == "" || dir == a.Cwd {
		return a, err
	}
	// A prompt that names the directory here (a coder's brief: "Work in …") names the
	// node's: the agent is never told of a path its machine does not have.
	prompt := strings.ReplaceAll(a.Prompt, a.Cwd, dir)
	if _, err := s.k.Amend(ctx, a.ID, func(x *wire.Agent) { x.Cwd, x.Prompt = dir, prompt }); err != nil {
		return a, fmt.Errorf("record %s's directory on node %s: %w", a.Path, a.Node, err)
	}
	s.log.Info("the agent's directory was made on its node", "id", a.ID, "node", a.Node, "from", a.Cwd, "dir", dir)
	a.Cwd, a.Prompt = dir, prompt
	return a, nil
}

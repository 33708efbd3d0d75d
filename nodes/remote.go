package nodes

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"orcr/core"
	"orcr/core/secretenv"
	"orcr/core/socket"
	"orcr/core/wire"
	nodeapi "orcr/nodes/api"
)

// Agents on nodes (DESIGN §14): the coordinator keeps each in its one tree (same id
// and path as on the node) through the kernel's Remote seam (core/remote.go). This
// file is that Remote: a spawn, a send, a read, a resize, a kill of a node's agent go
// to the node's server over the link; the node's event stream, read with `after` from
// a cursor kept in the feature's buckets, is folded into the coordinator's records
// (Kernel.Mirror), so the events missed while the link was down are replayed in order
// when it returns. A node that stops answering leaves its agents unreachable — never
// lost, never respawned. The feature is also the admission gate of node agents: a
// pinned agent waits while its node is unreachable, draining or at its cap.

var (
	_ core.Remote       = (*Service)(nil)
	_ core.NodePlacer   = (*Service)(nil)
	_ core.SpawnChecker = (*Service)(nil)
)

const bucketCursor = "cursor" // node → the seq of its last event folded in

// startAgents loads which agents are on which node and plugs the feature into
// admission and the kernel's Remote seam.
func (s *Service) startAgents(ctx context.Context) error {
	agents, err := s.k.List(ctx, wire.ListParams{All: true})
	if err != nil {
		return fmt.Errorf("nodes: list agents: %w", err)
	}
	s.mu.Lock()
	for _, a := range agents {
		if a.Node != "" && !a.State.Terminal() {
			s.onNode[a.ID] = a.Node
		}
		if a.Node != "" && a.State == wire.StateStarting {
			// Admitted before this server stopped (admission runs only once every
			// feature started): on its node already, or to be handed to it by the
			// link's re-read, on that node, even while the link is still being made.
			s.handOver[a.ID] = true
		}
	}
	s.mu.Unlock()
	s.k.SetRemote(s)
	s.k.AddGate(s)
	return nil
}

// CheckSpawn refuses a spawn pinned to a node that is not registered or is drained.
func (s *Service) CheckSpawn(_ context.Context, p wire.RunParams) error {
	if p.Node == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.nodes[p.Node]
	if !ok {
		return s.notFoundLocked(p.Node)
	}
	if n.spec.Draining {
		return wire.Errorf(wire.CodeNotAllowed, "node %s is drained: it takes no new agents (orcr node drain --undo %s)", p.Node, p.Node)
	}
	if why := noForwardLocked(n, p.Path); why != "" {
		return wire.Errorf(wire.CodeNotAllowed, "%s", why)
	}
	return nil
}

// Admit holds an agent pinned to a node while the node is not up, is drained, or has
// its cap of live agents. It is called under the engine's lock: it reads only the
// feature's own state.
func (s *Service) Admit(_ context.Context, a wire.Agent) (bool, string, time.Time) {
	if a.Node == "" {
		return true, "", time.Time{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.nodes[a.Node]
	if !ok {
		return false, fmt.Sprintf("node %s is not registered (removed?)", a.Node), time.Time{}
	}
	var v nodeapi.Node
	if n.link != nil {
		n.link.fill(&v)
	}
	switch {
	case n.spec.Draining:
		return false, fmt.Sprintf("node %s is drained", a.Node), time.Time{}
	case v.State != nodeapi.StateUp:
		why := v.Error
		if why == "" {
			why = "linking"
		}
		return false, fmt.Sprintf("node %s is %s: %s", a.Node, v.State, why), time.Now().Add(time.Second)
	}
	if max := n.spec.MaxAgents; max > 0 {
		if on := s.countLocked(a.Node); on >= max {
			return false, fmt.Sprintf("node %s has %d of its %d agents", a.Node, on, max), time.Time{}
		}
	}
	return true, "", time.Time{}
}

// countLocked is how many live agents the coordinator has on node.
func (s *Service) countLocked(node string) int {
	c := 0
	for _, n := range s.onNode {
		if n == node {
			c++
		}
	}
	return c
}

// ended forgets an agent that ended.
func (s *Service) ended(id string) {
	s.mu.Lock()
	_, was := s.onNode[id]
	delete(s.onNode, id)
	delete(s.foldedAt, id)
	delete(s.handOver, id)
	s.mu.Unlock()
	if was {
		s.k.Readmit()
	}
}

// linkOf is the link of the node an agent is on, with its transport.
func (s *Service) linkOf(node string) (*link, *socket.Client, error) {
	s.mu.Lock()
	n, ok := s.nodes[node]
	var l *link
	if ok {
		l = n.link
	}
	s.mu.Unlock()
	if l == nil {
		return nil, nil, wire.Errorf(wire.CodeUnavailable, "node %s is not registered", node)
	}
	tr, err := l.transport()
	return l, tr, err
}

// Launch forwards an admitted agent's spawn to its node, with its id and path.
func (s *Service) Launch(ctx context.Context, a wire.Agent) error {
	_, tr, err := s.linkOf(a.Node)
	if err != nil {
		return err
	}
	// One placed there (not pinned, so not refused at the spawn) that must call orcr.
	s.mu.Lock()
	why := noForwardLocked(s.nodes[a.Node], a.Path)
	s.mu.Unlock()
	if why != "" {
		return wire.Errorf(wire.CodeNotAllowed, "%s", why)
	}
	if a, err = s.nodeDir(ctx, a); err != nil { // placerun.go
		return err
	}
	p := wire.RunParams{ID: a.ID, Path: a.Path, Provider: a.Provider, Model: a.Model, Argv: a.Argv, Cwd: a.Cwd,
		Prompt: a.Prompt, Priority: a.Priority, Keep: a.Keep, Worktree: a.Worktree, SystemPrompt: a.SystemPrompt,
		MaxTurns: a.Limits.MaxTurns, SoftTimeoutSeconds: a.Limits.SoftTimeoutSeconds, HardTimeoutSeconds: a.Limits.HardTimeoutSeconds,
		BudgetUSD: a.Limits.BudgetUSD, BudgetAction: a.Limits.BudgetAction, Env: map[string]string{envNode: a.Node},
		Sandbox: a.Sandbox} // confined by the node's own sandbox, on its kernel, or refused there (placerun.go)
	for k, v := range a.Env {
		p.Env[k] = v
	}
	if a.Account != "" && a.Account != "default" {
		// The node runs it on its own login of the same account (its [[accounts]]).
		p.Account = a.Account
	}
	r, err := wire.Call(ctx, tr, wire.AgentRun, p)
	var bad *wire.Error
	if errors.As(err, &bad) && bad.Code == wire.CodeInvalidParams && p.Cwd != "" && p.Worktree == "" && strings.Contains(bad.Message, "is not a directory") {
		// The directory the spawn was asked from is this machine's and the node has
		// no such one: the agent starts in the node's own (its user's home); its
		// record here then says which.
		s.log.Info("the agent's directory is not on its node; it starts in the node's own", "node", a.Node, "id", a.ID, "cwd", p.Cwd)
		p.Cwd = ""
		r, err = wire.Call(ctx, tr, wire.AgentRun, p)
	}
	if err != nil {
		var we *wire.Error
		if errors.As(err, &we) && we.Code == wire.CodeNameTaken {
			// Launched before a crash of this server: the node has it already.
			r, err = wire.Call(ctx, tr, wire.AgentGet, wire.TargetParams{Target: a.ID})
		}
		if errors.As(err, &we) && we.Code == wire.CodeUnavailable {
			// The link dropped with the spawn in flight: the node may have it or not.
			// It stays starting here; when the link is made again the node's record is
			// read (reread), and the spawn handed over if the node does not have it.
			s.log.Warn("link lost while handing an agent to its node; settled when it returns", "node", a.Node, "id", a.ID, "err", err)
			s.mu.Lock()
			s.handOver[a.ID] = true
			s.mu.Unlock()
			return nil
		}
		if err != nil {
			return err
		}
	}
	s.fold(ctx, r.Agent)
	return nil
}

// fold applies the node's record of an agent to the coordinator's. A record older
// than one folded already (the answer to the spawn, after the events that followed
// it) changes nothing.
func (s *Service) fold(ctx context.Context, na wire.Agent) {
	s.mu.Lock()
	if last, ok := s.foldedAt[na.ID]; ok && na.UpdatedAt.Before(last) {
		s.mu.Unlock()
		return
	}
	s.foldedAt[na.ID] = na.UpdatedAt
	s.mu.Unlock()
	st := na.State
	if st == wire.StateQueued {
		// Queued in the node's own queue is starting here: admitted by the
		// coordinator, it holds its slot (a queued record here would free it, and a
		// kill would not reach the node).
		st = wire.StateStarting
	}
	a, err := s.k.Mirror(ctx, na.ID, func(a *wire.Agent) {
		a.State, a.StateSource, a.StateReason, a.StateAt, a.Blocked = st, na.StateSource, na.StateReason, na.StateAt, na.Blocked
		a.Host, a.Cwd, a.SessionID, a.LastMessage, a.Usage, a.Model = na.Host, na.Cwd, na.SessionID, na.LastMessage, na.Usage, na.Model
		a.StartedAt, a.EndedAt, a.ExitCode, a.Error, a.Hooks = na.StartedAt, na.EndedAt, na.ExitCode, na.Error, na.Hooks
		if len(na.Argv) > 0 {
			a.Argv = na.Argv
		}
		if na.LastScreen != "" {
			a.LastScreen = na.LastScreen
		}
		a.Unreachable = false
	})
	if err != nil {
		if !errors.Is(err, wire.ErrNotFound) {
			s.log.Warn("fold a node's agent", "id", na.ID, "err", err)
		}
		return
	}
	if a.State.Terminal() {
		s.ended(a.ID)
	}
}

// follow reads one node's events from its cursor while the link holds, folding its
// agents' changes into the coordinator's records. On each (re)link the agents'
// records are re-read first, then the missed events replayed.
func (s *Service) follow(ctx context.Context, l *link, tr *socket.Client, lastSeq uint64) {
	cur, err := s.cursor(ctx, l.name)
	if err != nil {
		s.log.Warn("node cursor", "node", l.name, "err", err)
	}
	renewed := cur > lastSeq
	if cur == 0 || renewed {
		// A node never followed (or whose store was made anew): from now on.
		cur = lastSeq
	}
	ch, err := wire.Subscribe(ctx, tr, wire.SubscribeParams{After: cur})
	if err != nil {
		s.log.Warn("subscribe to node", "node", l.name, "err", err)
		return
	}
	// The records first: they are what the node has now, whatever its log still holds.
	s.reread(ctx, l.name, tr)
	if renewed {
		s.gap(l, 0, 0, "the node's event log starts again (its store is new)")
	}
	n := 0
	first := true
	for ev := range ch {
		if first {
			first = false
			if ev.Seq > cur+1 && cur > 0 {
				// The node no longer keeps the events after the cursor: they were
				// pruned there (gc.retain) while the link was down. Nothing is made
				// up for them: the records re-read above stand, and the gap is said.
				s.gap(l, cur+1, ev.Seq-1, "they were pruned there (gc.retain) before the link returned")
			}
		}
		if ev.Agent != nil && ev.Agent.ID != "" {
			s.mu.Lock()
			node, ours := s.onNode[ev.Agent.ID]
			s.mu.Unlock()
			if ours && node == l.name {
				s.fold(ctx, *ev.Agent)
			}
		}
		if ev.Seq > cur {
			cur = ev.Seq
			if n++; n%64 == 0 || len(ch) == 0 {
				s.saveCursor(ctx, l.name, cur)
			}
		}
	}
	s.saveCursor(context.Background(), l.name, cur)
}

// reread folds the node's current record of each of its agents.
func (s *Service) reread(ctx context.Context, node string, tr *socket.Client) {
	s.mu.Lock()
	var ids []string
	for id, n := range s.onNode {
		if n == node {
			ids = append(ids, id)
		}
	}
	s.mu.Unlock()
	for _, id := range ids {
		r, err := wire.Call(ctx, tr, wire.AgentGet, wire.TargetParams{Target: id})
		if errors.Is(err, wire.ErrNotFound) {
			s.mu.Lock()
			mine := s.handOver[id]
			delete(s.handOver, id)
			s.mu.Unlock()
			a, gerr := s.k.Get(ctx, id)
			if gerr == nil && a.State == wire.StateStarting && !mine {
				// Placed by admission since this server started, and its launch is
				// under way (making its clone there, say): that launch hands it over.
				// A second hand-over here would make its directory again under it —
				// pushing the milestone's branch over the commits its coder made.
				continue
			}
			// Admitted here but never handed over: this server stopped between the two
			// (killed while placing), or the link dropped with the spawn in flight. It
			// is handed over now, once; the node refuses an id it has, so it never
			// runs twice.
			if gerr == nil && a.State == wire.StateStarting {
				s.log.Info("hand an admitted agent to its node after a restart", "node", node, "id", id)
				err := s.envValues(&a)
				if err == nil {
					err = s.Launch(ctx, a)
				}
				if err != nil {
					s.log.Warn("hand over after a restart", "node", node, "id", id, "err", err)
				}
				continue
			}
			// The node has no record of it: it ended there and was collected
			// (gc.retain) while nobody here watched, or the node's store is new. How it
			// ended is not known, so it is lost, saying so — never left live here.
			s.log.Warn("an agent of the node is no longer on it; marked lost", "node", node, "id", id)
			now := time.Now().UTC()
			why := fmt.Sprintf("node %s no longer has it: it ended there and its record was collected while the link was down, so how it ended was not seen", node)
			if _, err := s.k.Mirror(ctx, id, func(a *wire.Agent) {
				a.State, a.StateReason, a.StateSource, a.StateAt, a.EndedAt, a.Unreachable = wire.StateLost, why, "node", now, &now, false
			}); err == nil {
				s.ended(id)
			}
			continue
		}
		if err != nil {
			continue
		}
		s.mu.Lock()
		delete(s.handOver, id) // the node has it
		s.mu.Unlock()
		s.fold(ctx, r.Agent)
	}
}

// gap says that the node's events from..to (to 0: not known) were not replayed: on
// the node's view, in the log and as a node.events_gap event.
func (s *Service) gap(l *link, from, to uint64, why string) {
	what := fmt.Sprintf("events %d–%d of node %s were not replayed: %s; its agents' records were re-read instead", from, to, l.name, why)
	if to == 0 {
		what = fmt.Sprintf("node %s's events could not be replayed: %s; its agents' records were re-read instead", l.name, why)
	}
	l.mu.Lock()
	l.gap = time.Now().UTC().Format(time.RFC3339) + ": " + what
	l.mu.Unlock()
	s.log.Warn("node events gap", "node", l.name, "from", from, "to", to, "why", why)
	s.k.Publish(context.Background(), wire.Event{Event: nodeapi.EventNodeGap,
		Data: map[string]any{"node": l.name, "from": from, "to": to, "why": what}})
}

// unreachable marks the live agents of a node unreachable (not lost).
func (s *Service) unreachable(ctx context.Context, node string) {
	s.mu.Lock()
	var ids []string
	for id, n := range s.onNode {
		if n == node {
			ids = append(ids, id)
		}
	}
	s.mu.Unlock()
	for _, id := range ids {
		s.k.Mirror(ctx, id, func(a *wire.Agent) { a.Unreachable = true })
	}
}

func (s *Service) cursor(ctx context.Context, node string) (uint64, error) {
	b, err := s.store.Get(ctx, bucketCursor, node)
	if errors.Is(err, wire.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(string(b), 10, 64)
}

func (s *Service) saveCursor(ctx context.Context, node string, seq uint64) {
	if err := s.store.Put(ctx, bucketCursor, node, []byte(strconv.FormatUint(seq, 10))); err != nil {
		s.log.Warn("save node cursor", "node", node, "err", err)
	}
}

// Send types into a node's agent.
func (s *Service) Send(ctx context.Context, a wire.Agent, p wire.SendParams) error {
	_, tr, err := s.linkOf(a.Node)
	if err != nil {
		return err
	}
	p.Target = a.ID
	return wire.Do(ctx, tr, wire.AgentSend, p)
}

// Read reads a node's agent's screen, last message or transcript.
func (s *Service) Read(ctx context.Context, a wire.Agent, p wire.ReadParams) (wire.ReadResult, error) {
	_, tr, err := s.linkOf(a.Node)
	if err != nil {
		return wire.ReadResult{}, err
	}
	p.Target = a.ID
	return wire.Call(ctx, tr, wire.AgentRead, p)
}

// Resize resizes a node's agent's pane.
func (s *Service) Resize(ctx context.Context, a wire.Agent, cols, rows int) error {
	_, tr, err := s.linkOf(a.Node)
	if err != nil {
		return err
	}
	return wire.Do(ctx, tr, wire.AgentResize, wire.ResizeParams{Target: a.ID, Cols: cols, Rows: rows})
}

// Kill stops a node's agent there.
func (s *Service) Kill(ctx context.Context, a wire.Agent, _ string) error {
	_, tr, err := s.linkOf(a.Node)
	if err != nil {
		return err
	}
	_, err = wire.Call(ctx, tr, wire.AgentKill, wire.KillParams{Glob: a.ID})
	if err == nil || errors.Is(err, wire.ErrNotFound) {
		s.ended(a.ID)
	}
	return err
}

// Attach is `ssh -t` into the node's own `orcr agent attach`.
func (s *Service) Attach(ctx context.Context, a wire.Agent) (wire.AttachResult, error) {
	s.mu.Lock()
	n, ok := s.nodes[a.Node]
	var spec nodeapi.Node
	var l *link
	if ok {
		spec, l = n.spec, n.link
	}
	s.mu.Unlock()
	if !ok || l == nil {
		return wire.AttachResult{}, wire.Errorf(wire.CodeUnavailable, "node %s is not registered", a.Node)
	}
	if _, err := l.transport(); err != nil {
		return wire.AttachResult{}, err
	}
	t, err := s.resolve(spec)
	if err != nil {
		return wire.AttachResult{}, err
	}
	l.mu.Lock()
	home := l.home
	l.mu.Unlock()
	argv := []string{"ssh", "-t", "-p", strconv.Itoa(t.Port)}
	for _, id := range t.Identities {
		argv = append(argv, "-i", id)
	}
	argv = append(argv, "-o", "UserKnownHostsFile="+knownHostsArg(s, t), t.User+"@"+t.Addr,
		fmt.Sprintf("ORCR_HOME=%s %s agent attach %s", shellQuote(home), shellQuote(home+"/bin/orcr"), a.ID))
	return wire.AttachResult{Argv: argv, Agent: a}, nil
}

// knownHostsArg is ssh's UserKnownHostsFile value: the user's files and orcr's own.
func knownHostsArg(s *Service, t target) string {
	files := t.KnownHosts
	if len(files) == 0 {
		files = []string{filepath.Join(s.sshDir(), "known_hosts")}
	}
	return strings.Join(append(files, s.ownKnownHosts()), " ")
}

// envValues puts the values of a's env in place of the names its record keeps: the
// kernel keeps them in a 0600 file of the agent's state directory (core/envkeep.go),
// and the spawn the node is handed after a restart needs them as the first one did.
func (s *Service) envValues(a *wire.Agent) error {
	if !secretenv.IsRedacted(a.Env) {
		return nil
	}
	env, ok, err := secretenv.Load(filepath.Join(s.opts.Home, "agents", a.ID))
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("the values of its env are gone from %s", filepath.Join(s.opts.Home, "agents", a.ID))
	}
	env, err = secretenv.Resolve(env, s.opts.Secrets)
	if err != nil {
		return err
	}
	a.Env = env
	return nil
}

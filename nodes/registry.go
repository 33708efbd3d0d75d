package nodes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"orcr/core/wire"
	nodeapi "orcr/nodes/api"
)

// The registry: every node is a record in the bucket "nodes" (node add) or a [[nodes]]
// entry of config.toml; a config node's drain is kept in the bucket "drained", since
// the file is the user's. A name is in one place only: node add refuses a name the
// config has, and a config entry shadows a stored one of the same name (logged).

const (
	bucketNodes   = "nodes"
	bucketDrained = "drained"
)

// node is one registered node and its link.
type node struct {
	spec nodeapi.Node // the registry's fields
	link *link
}

var nodeName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`) }) // compiled on first use: every CLI process initialises this package

func checkName(name string) error {
	if name == "local" {
		return wire.Errorf(wire.CodeInvalidParams, "node name %q is this machine's; pick another", name)
	}
	if !nodeName().MatchString(name) {
		return wire.Errorf(wire.CodeInvalidParams, "node name %q: use a lowercase letter, then letters, digits or -, at most 32 characters", name)
	}
	return nil
}

// sshDir is ~/.ssh, or the directory the options name.
func (s *Service) sshDir() string {
	if s.opts.SSHDir != "" {
		return s.opts.SSHDir
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".ssh")
}

// resolve reads the node's destination against the ssh config as it is now.
func (s *Service) resolve(n nodeapi.Node) (target, error) {
	dir := s.sshDir()
	cfg, err := parseSSHConfig(filepath.Join(dir, "config"), dir)
	if err != nil {
		return target{}, err
	}
	return resolveTarget(n.SSH, n.IdentityFile, cfg)
}

func (s *Service) load(ctx context.Context) error {
	drained := map[string]bool{}
	if err := s.store.Scan(ctx, bucketDrained, func(k string, _ []byte) bool {
		drained[k] = true
		return true
	}); err != nil {
		return fmt.Errorf("nodes: load drained: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.opts.Config {
		n.Source = "config"
		n.Draining = drained[n.Name]
		s.nodes[n.Name] = &node{spec: n}
	}
	var bad error
	err := s.store.Scan(ctx, bucketNodes, func(k string, v []byte) bool {
		var n nodeapi.Node
		if err := json.Unmarshal(v, &n); err != nil {
			bad = fmt.Errorf("nodes: record %s: %w", k, err)
			return false
		}
		if _, dup := s.nodes[n.Name]; dup {
			s.log.Warn("node added with node add is also in config.toml; the config's entry is used", "node", n.Name)
			return true
		}
		n.Source = "cli"
		s.nodes[n.Name] = &node{spec: n}
		return true
	})
	if err != nil {
		return fmt.Errorf("nodes: load: %w", err)
	}
	return bad
}

// persistent is what a record keeps: the registry's fields, none of the link's.
func persistent(n nodeapi.Node) nodeapi.Node {
	return nodeapi.Node{Name: n.Name, SSH: n.SSH, IdentityFile: n.IdentityFile, MaxAgents: n.MaxAgents,
		Accounts: n.Accounts, Labels: n.Labels, AcceptNewHostKey: n.AcceptNewHostKey, Draining: n.Draining,
		Source: n.Source, AddedAt: n.AddedAt}
}

func (s *Service) save(ctx context.Context, n nodeapi.Node) error {
	if n.Source == "config" {
		if n.Draining {
			return s.store.Put(ctx, bucketDrained, n.Name, []byte("1"))
		}
		return s.store.Delete(ctx, bucketDrained, n.Name)
	}
	b, err := json.Marshal(persistent(n))
	if err != nil {
		return err
	}
	return s.store.Put(ctx, bucketNodes, n.Name, b)
}

// firstLinkWait is how long node add waits for the first link to say how it went.
const firstLinkWait = 20 * time.Second

// Add registers a node and starts its link; it returns once the first attempt to link
// has ended (or firstLinkWait passed), so a refused host key or a wrong user is said
// at once. The node stays registered either way, and the link keeps trying.
func (s *Service) Add(ctx context.Context, p nodeapi.AddParams) (nodeapi.Node, error) {
	if err := checkName(p.Name); err != nil {
		return nodeapi.Node{}, err
	}
	if p.MaxAgents < 0 {
		return nodeapi.Node{}, wire.Errorf(wire.CodeInvalidParams, "--max-agents %d: give 0 (no cap of its own) or more", p.MaxAgents)
	}
	n := nodeapi.Node{Name: p.Name, SSH: p.SSH, IdentityFile: p.IdentityFile, MaxAgents: p.MaxAgents,
		Accounts: p.Accounts, Labels: p.Labels, AcceptNewHostKey: p.AcceptNewHostKey, Source: "cli", AddedAt: s.opts.Now().UTC()}
	if p.IdentityFile != "" {
		if !filepath.IsAbs(expandTilde(p.IdentityFile)) {
			return nodeapi.Node{}, wire.Errorf(wire.CodeInvalidParams, "--identity-file %q: give an absolute path", p.IdentityFile)
		}
		if _, err := os.Stat(expandTilde(p.IdentityFile)); err != nil {
			return nodeapi.Node{}, wire.Errorf(wire.CodeInvalidParams, "--identity-file %s: %v", p.IdentityFile, err)
		}
	}
	if _, err := s.resolve(n); err != nil {
		return nodeapi.Node{}, wire.Errorf(wire.CodeInvalidParams, "node %s: %v", p.Name, err)
	}
	s.mu.Lock()
	if old, dup := s.nodes[p.Name]; dup {
		s.mu.Unlock()
		where := "remove it first: orcr node rm " + p.Name
		if old.spec.Source == "config" {
			where = "it is a [[nodes]] entry of config.toml"
		}
		return nodeapi.Node{}, wire.Errorf(wire.CodeNameTaken, "node %s already exists (%s); %s", p.Name, old.spec.SSH, where)
	}
	nd := &node{spec: n}
	s.nodes[p.Name] = nd
	s.mu.Unlock()
	if err := s.save(ctx, n); err != nil {
		s.mu.Lock()
		delete(s.nodes, p.Name)
		s.mu.Unlock()
		return nodeapi.Node{}, err
	}
	s.mu.Lock()
	l := s.startLinkLocked(nd)
	s.mu.Unlock()
	wctx, cancel := context.WithTimeout(ctx, firstLinkWait)
	defer cancel()
	l.waitFirst(wctx)
	return s.Show(ctx, p.Name)
}

// List is every node with what its link knows, by name.
func (s *Service) List(context.Context) []nodeapi.Node {
	s.mu.Lock()
	out := make([]nodeapi.Node, 0, len(s.nodes))
	for _, n := range s.nodes {
		out = append(out, s.viewLocked(n))
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Show is one node.
func (s *Service) Show(_ context.Context, name string) (nodeapi.Node, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.nodes[name]
	if !ok {
		return nodeapi.Node{}, s.notFoundLocked(name)
	}
	return s.viewLocked(n), nil
}

func (s *Service) notFoundLocked(name string) error {
	if len(s.nodes) == 0 {
		return wire.Errorf(wire.CodeNotFound, "no node %s; none is registered (orcr node add NAME user@host)", name)
	}
	names := make([]string, 0, len(s.nodes))
	for k := range s.nodes {
		names = append(names, k)
	}
	sort.Strings(names)
	return wire.Errorf(wire.CodeNotFound, "no node %s; the nodes are: %v", name, names)
}

// viewLocked is the node as clients see it: the registry's fields, the resolved
// destination and the link's state.
func (s *Service) viewLocked(n *node) nodeapi.Node {
	v := n.spec
	if t, err := s.resolve(n.spec); err == nil {
		v.User, v.Addr, v.Port = t.User, t.Addr, t.Port
	}
	if n.link != nil {
		n.link.fill(&v)
	} else {
		v.State = nodeapi.StateConnecting
	}
	if v.Draining && v.State == nodeapi.StateUp {
		v.State = nodeapi.StateDraining
	}
	return v
}

// Drain stops placing agents on a node (undo: places them again).
func (s *Service) Drain(ctx context.Context, p nodeapi.DrainParams) (nodeapi.Node, error) {
	s.mu.Lock()
	n, ok := s.nodes[p.Name]
	if !ok {
		err := s.notFoundLocked(p.Name)
		s.mu.Unlock()
		return nodeapi.Node{}, err
	}
	spec := n.spec
	spec.Draining = !p.Undo
	s.mu.Unlock()
	if err := s.save(ctx, spec); err != nil {
		return nodeapi.Node{}, err
	}
	s.mu.Lock()
	n.spec.Draining = spec.Draining
	s.mu.Unlock()
	s.k.Readmit()
	return s.Show(ctx, p.Name)
}

// Remove forgets a node and ends its link. A node with live agents (running there,
// unreachable there, or queued pinned to it) is refused with their count and the way
// out — drain it and let them end, or kill them — unless force, which marks each lost
// with the reason (what kubectl's delete --force is to pods: the records end here;
// their panes on the node, if it still runs them, are left as they are). It returns
// the paths of the agents it marked lost.
func (s *Service) Remove(ctx context.Context, name string, force bool) ([]string, error) {
	s.mu.Lock()
	n, ok := s.nodes[name]
	if !ok {
		err := s.notFoundLocked(name)
		s.mu.Unlock()
		return nil, err
	}
	source := n.spec.Source
	s.mu.Unlock()
	if source == "config" {
		return nil, wire.Errorf(wire.CodeNotAllowed, "node %s is a [[nodes]] entry of config.toml; remove it there", name)
	}
	on, err := s.agentsOn(ctx, name)
	if err != nil {
		return nil, err
	}
	if len(on) > 0 && !force {
		unreach, queued := 0, 0
		for _, a := range on {
			switch {
			case a.State == wire.StateQueued:
				queued++
			case a.Unreachable:
				unreach++
			}
		}
		var parts []string
		if unreach > 0 {
			parts = append(parts, fmt.Sprintf("%d unreachable", unreach))
		}
		if queued > 0 {
			parts = append(parts, fmt.Sprintf("%d queued for it", queued))
		}
		detail := ""
		if len(parts) > 0 {
			detail = " (" + strings.Join(parts, ", ") + ")"
		}
		return nil, wire.Errorf(wire.CodeNotAllowed, "node %s has %d live %s%s; drain it first (orcr node drain %s) and let them end or kill them (orcr agent ls --node %s), "+
			"or remove it with --force, which marks them lost", name, len(on), plural(len(on), "agent", "agents"), detail, name, name)
	}
	s.mu.Lock()
	if s.nodes[name] != n {
		s.mu.Unlock()
		return nil, s.notFoundLocked(name)
	}
	delete(s.nodes, name)
	s.mu.Unlock()
	if n.link != nil {
		n.link.stop()
	}
	if err := s.store.Delete(ctx, bucketNodes, name); err != nil && !errors.Is(err, wire.ErrNotFound) {
		return nil, err
	}
	s.store.Delete(ctx, bucketCursor, name)
	lost := []string{}
	if force {
		// Again after the link stopped: an agent placed meanwhile is counted too.
		if on, err = s.agentsOn(ctx, name); err != nil {
			return lost, err
		}
		why := fmt.Sprintf("node %s was removed with orcr node rm --force; whatever still runs there is no longer watched", name)
		for _, a := range on {
			now := time.Now().UTC()
			_, err := s.k.Mirror(ctx, a.ID, func(a *wire.Agent) {
				a.State, a.StateReason, a.StateSource, a.StateAt, a.EndedAt, a.Unreachable = wire.StateLost, why, "node", now, &now, false
			})
			if err != nil {
				s.log.Warn("mark a removed node's agent lost", "node", name, "id", a.ID, "err", err)
				continue
			}
			s.ended(a.ID)
			lost = append(lost, a.Path)
		}
		s.log.Info("node removed with --force", "node", name, "lost", len(lost))
	}
	return lost, nil
}

// agentsOn are the coordinator's live agents on a node, and the ones queued pinned to it.
func (s *Service) agentsOn(ctx context.Context, name string) ([]wire.Agent, error) {
	all, err := s.k.List(ctx, wire.ListParams{Node: name})
	if err != nil {
		return nil, fmt.Errorf("nodes: list agents: %w", err)
	}
	var out []wire.Agent
	for _, a := range all {
		if a.Node == name && !a.State.Terminal() {
			out = append(out, a)
		}
	}
	return out, nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

package nodes

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"orcr/core"
	"orcr/core/wire"
	nodeapi "orcr/nodes/api"
)

// Automatic placement (DESIGN §14). While a node is registered, the feature is the
// memory guard's fleet placer (core.FleetPlacer): an agent no --node pins goes to
// this machine when it has room, else to the least loaded node that has room —
// under the node's cap, free memory ≥ limits.min_free_mb + the provider's measured
// RSS, the account accounts chose present on the node. When no machine has room the
// agent waits, and `orcr queue` says why ("no node has claude/work with 900 MB
// free (here: 412 MB free; big: 3 of its 3 agents; lab: unreachable)"). The global
// and per-provider caps are the engine's and count every live agent wherever it
// runs, so they span the fleet. With no node registered nothing here is asked and
// the memory guard is what it always was.

var _ core.FleetPlacer = (*Service)(nil)

// spot is one machine placement may choose: this one (name "") or a node.
type spot struct {
	name     string
	state    string
	why      string // why it is not up
	draining bool
	agents   int // live agents the coordinator has there
	max      int // its cap (0: none of its own)
	freeMB   int // what it reported, less what placements reserved since (-1: unknown)
	totalMB  int
	accounts []string // the accounts whose login it has; this machine has every one
	// confines says why it cannot confine an agent that asks for a sandbox ("" : it
	// can; landlock.go).
	confines string
}

// want is what an agent needs of a machine.
type want struct {
	provider, account string
	minMB, rssMB      int // limits.min_free_mb and the provider's measured RSS
	// here: the agent works in a repository of this machine that no node has a clone
	// of (a worktree agent; a run's lead or reviewer: staysHere), so only this machine
	// can take it.
	here bool
	// sandbox: the agent asks for a sandbox, which only a machine with Landlock gives.
	sandbox bool
}

func (w want) needMB() int { return w.minMB + w.rssMB }

// label is the provider and account as the queue says them: claude/work.
func (w want) label() string {
	if w.account == "" || w.account == "default" {
		return w.provider
	}
	return w.provider + "/" + w.account
}

// hasAccount says whether a node has the account's login: "" and "default" (the
// provider's own login, no [[accounts]] for it) are on every machine; a configured
// account is on a node whose accounts name it as "work" or "claude/work".
func hasAccount(accounts []string, provider, account string) bool {
	if account == "" || account == "default" {
		return true
	}
	for _, a := range accounts {
		if a == account || a == provider+"/"+account {
			return true
		}
	}
	return false
}

// roomFor says why sp cannot take an agent that needs w ("" : it can).
func roomFor(sp spot, w want) string {
	if sp.name == "" && sp.max > 0 && sp.agents >= sp.max {
		return fmt.Sprintf("%d of its %d agents ([limits] local)", sp.agents, sp.max)
	}
	if sp.name == "" && w.sandbox && sp.confines != "" {
		return sp.confines
	}
	if sp.name != "" {
		switch {
		case sp.draining:
			return "drained"
		case sp.state != nodeapi.StateUp:
			return sp.state
		case sp.max > 0 && sp.agents >= sp.max:
			return fmt.Sprintf("%d of its %d agents", sp.agents, sp.max)
		case w.here:
			return "it works in a repository of this machine"
		case !hasAccount(sp.accounts, w.provider, w.account):
			return "no " + w.label() + " login"
		case w.sandbox && sp.confines != "":
			return sp.confines
		}
	}
	if need := w.needMB(); sp.freeMB >= 0 && need > 0 && sp.freeMB < need {
		return fmt.Sprintf("%d MB free", sp.freeMB)
	}
	return ""
}

// load is how full a node is, from 0: its share of its cap, or of its memory when it
// has no cap.
func (sp spot) load() float64 {
	if sp.max > 0 {
		return float64(sp.agents) / float64(sp.max)
	}
	if sp.totalMB > 0 && sp.freeMB >= 0 {
		return 1 - float64(sp.freeMB)/float64(sp.totalMB)
	}
	return 0
}

// choose is where an agent that needs w goes: this machine (spots[0], name "") when it
// has room, else the least loaded node with room (ties: fewer agents, more free
// memory, then the name). ok false says why no machine has room.
func choose(spots []spot, w want) (name string, ok bool, why string) {
	best := -1
	var whys []string
	for i, sp := range spots {
		if r := roomFor(sp, w); r != "" {
			who := sp.name
			if who == "" {
				who = "here"
			}
			whys = append(whys, who+": "+r)
			continue
		}
		if sp.name == "" {
			return "", true, ""
		}
		if best < 0 || better(sp, spots[best]) {
			best = i
		}
	}
	if best >= 0 {
		return spots[best].name, true, ""
	}
	what := "no node has room for " + w.label()
	if need := w.needMB(); need > 0 {
		what = fmt.Sprintf("no node has %s with %d MB free", w.label(), need)
	}
	return "", false, what + " (" + strings.Join(whys, "; ") + ")"
}

func better(a, b spot) bool {
	la, lb := a.load(), b.load()
	if math.Abs(la-lb) > 1e-9 {
		return la < lb
	}
	if a.agents != b.agents {
		return a.agents < b.agents
	}
	if a.freeMB != b.freeMB {
		return a.freeMB > b.freeMB
	}
	return a.name < b.name
}

// reserveFor is how long a placement's memory is counted against its machine: an
// agent takes seconds to grow to its RSS, and the next readings of free memory do not
// show it yet.
const reserveFor = 15 * time.Second

type reservation struct {
	mb int
	at time.Time
}

// reservedLocked is the memory placements reserved on a machine lately.
func (s *Service) reservedLocked(name string, now time.Time) int {
	rs := s.reserved[name]
	keep, mb := rs[:0], 0
	for _, r := range rs {
		if now.Sub(r.at) < reserveFor {
			keep = append(keep, r)
			mb += r.mb
		}
	}
	if len(keep) == 0 {
		delete(s.reserved, name)
	} else {
		s.reserved[name] = keep
	}
	return mb
}

// spotsLocked are this machine (first) and every node, as placement sees them now.
func (s *Service) spotsLocked(here core.LocalRoom) []spot {
	now := time.Now()
	local := spot{name: "", state: nodeapi.StateUp, freeMB: here.FreeMB, totalMB: -1, agents: len(s.local), max: s.localMax,
		confines: cannotConfine(s.ownLandlock())}
	if local.freeMB >= 0 {
		local.freeMB = max(0, local.freeMB-s.reservedLocked("", now))
	}
	out := []spot{local}
	names := make([]string, 0, len(s.nodes))
	for name := range s.nodes {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		n := s.nodes[name]
		var v nodeapi.Node
		if n.link != nil {
			n.link.fill(&v)
		} else {
			v.State = nodeapi.StateConnecting
		}
		sp := spot{name: name, state: v.State, why: v.Error, draining: n.spec.Draining, agents: s.countLocked(name),
			max: n.spec.MaxAgents, freeMB: v.FreeMB, totalMB: v.TotalMB, accounts: n.spec.Accounts, confines: cannotConfine(v.Landlock)}
		if sp.state == nodeapi.StateUp && sp.freeMB >= 0 {
			sp.freeMB = max(0, sp.freeMB-s.reservedLocked(name, now))
		}
		out = append(out, sp)
	}
	return out
}

// rssLocked is the provider's measured RSS in MB: the largest mean any machine
// reports for its live agents of that provider (0 while none was measured).
func (s *Service) rssLocked(provider string) int {
	mb := s.localRSS[provider]
	for _, n := range s.nodes {
		if n.link == nil {
			continue
		}
		n.link.mu.Lock()
		mb = max(mb, n.link.hello.RSS[provider])
		n.link.mu.Unlock()
	}
	return mb
}

// PlacesFleet implements core.FleetPlacer: placement weighs the machines while a node
// is registered.
func (s *Service) PlacesFleet() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.nodes) > 0
}

// accountChooser is what placement asks the accounts feature: the account a spawn
// would run on now.
type accountChooser interface {
	Chosen(a wire.Agent) string
}

func (s *Service) chosenAccount(a wire.Agent) string {
	if a.Account != "" || s.k == nil {
		return a.Account
	}
	if c, ok := core.Lookup[accountChooser](s.k, accountsCapability); ok {
		return c.Chosen(a)
	}
	return ""
}

// AdmitFleet implements core.FleetPlacer: an unpinned agent may start when some
// machine has room for it (a pinned one is its node's to hold: Admit).
func (s *Service) AdmitFleet(_ context.Context, a wire.Agent, here core.LocalRoom) (bool, string, time.Time) {
	if a.Node != "" {
		return true, "", time.Time{}
	}
	acct := s.chosenAccount(a)
	stays := s.staysHere(a)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.here = here
	w := want{provider: providerOf(a), account: acct, minMB: here.MinFreeMB, rssMB: s.rssLocked(providerOf(a)), here: stays, sandbox: a.Sandbox.On()}
	if _, ok, why := choose(s.spotsLocked(here), w); !ok {
		return false, why, time.Now().Add(2 * time.Second)
	}
	return true, "", time.Time{}
}

func providerOf(a wire.Agent) string {
	if a.Provider == "" {
		return "shell"
	}
	return a.Provider
}

// PlaceNode implements core.NodePlacer: a pinned agent is counted on its node; an
// unpinned one goes where choose says, with the account the placers chose, and its
// memory is reserved there.
func (s *Service) PlaceNode(_ context.Context, a wire.Agent) string {
	stays := a.Node == "" && s.staysHere(a)
	s.mu.Lock()
	defer s.mu.Unlock()
	if a.Node != "" {
		s.onNode[a.ID] = a.Node
		return a.Node
	}
	if len(s.nodes) == 0 {
		s.placedHereLocked(a.ID)
		return ""
	}
	w := want{provider: providerOf(a), account: a.Account, minMB: s.here.MinFreeMB, rssMB: s.rssLocked(providerOf(a)), here: stays, sandbox: a.Sandbox.On()}
	name, ok, why := choose(s.spotsLocked(s.here), w)
	if !ok {
		// Admitted on another account than the one foreseen, which no node has: it
		// stays here, as it would without nodes.
		s.log.Info("placement found no room for the account admission chose; it runs here", "id", a.ID, "why", why)
		name = ""
	}
	if w.rssMB > 0 {
		s.reserved[name] = append(s.reserved[name], reservation{mb: w.rssMB, at: time.Now()})
	}
	if name != "" {
		s.onNode[a.ID] = name
		s.log.Info("placed on a node", "id", a.ID, "path", a.Path, "node", name)
	} else {
		s.placedHereLocked(a.ID)
	}
	return name
}

// accountsCapability is the name the accounts feature provides itself under.
const accountsCapability = "accounts"

func lookupAccounts(s *Service) (accountLister, bool) {
	return core.Lookup[accountLister](s.k, accountsCapability)
}

// NodeWithLabels is where an agent whose role wants labels goes (roles' NodePicker):
// of the nodes carrying every label and not drained, the least loaded that has room,
// else the first by name (the agent then waits for it, pinned). No such node is an
// error naming the labels.
func (s *Service) NodeWithLabels(labels []string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var spots []spot
	for _, sp := range s.spotsLocked(s.here)[1:] {
		if n := s.nodes[sp.name]; n != nil && !sp.draining && hasLabels(n.spec.Labels, labels) {
			spots = append(spots, sp)
		}
	}
	if len(spots) == 0 {
		return "", wire.Errorf(wire.CodeNotFound, "no node is labelled %s (and not drained); see orcr node ls", strings.Join(labels, ", "))
	}
	best := -1
	for i, sp := range spots {
		if roomFor(sp, want{}) != "" {
			continue
		}
		if best < 0 || better(sp, spots[best]) {
			best = i
		}
	}
	if best < 0 {
		best = 0
	}
	return spots[best].name, nil
}

func hasLabels(have, want []string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			if h == w {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

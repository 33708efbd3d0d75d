package nodes

import (
	"orcr/core"
	"orcr/core/wire"
	nodeapi "orcr/nodes/api"
)

// Landlock across the fleet (DESIGN §14, §16). Every server says in node.hello the
// Landlock its sandbox feature confines agents with (the ABI its kernel offers, capped
// by ORCR_SANDBOX_MAX_ABI, or why there is none). Placement puts an agent that asks
// for a sandbox (a run's coders, by default) only on a machine that can confine it:
// a node whose hello says an ABI of at least 1, this machine when its own sandbox
// has Landlock. A node that does not say (its orcr is older, or it was never heard)
// gets none: orcr never runs a sandboxed agent unconfined, and a launch that the node
// would refuse is a coder lost to the run. An agent pinned with --node is its node's
// to confine or refuse, whatever this machine's kernel has: the sandbox feature asks
// ConfinesElsewhere before refusing a spawn for this kernel.
//
// The floor is 1, not 4 (where Landlock starts to confine TCP connects): below 4 the
// node's own sandbox runs the agent with the network open and says so, exactly as
// this machine's does, and Debian 12's kernel (6.1) is ABI 3.

// sandboxCapability is the name the sandbox feature provides itself under.
const sandboxCapability = "sandbox"

// ownLandlock is the Landlock this server's sandbox confines agents with.
func (s *Service) ownLandlock() *nodeapi.Landlock {
	if s.k == nil {
		return &nodeapi.Landlock{Error: "this server has no sandbox"}
	}
	sb, ok := core.Lookup[interface{ Landlock() (int, error) }](s.k, sandboxCapability)
	if !ok {
		return &nodeapi.Landlock{Error: "this server has no sandbox"}
	}
	abi, err := sb.Landlock()
	if err != nil {
		return &nodeapi.Landlock{Error: err.Error()}
	}
	return &nodeapi.Landlock{ABI: abi}
}

// cannotConfine says why a machine whose server reported l cannot confine an agent
// ("" : it can).
func cannotConfine(l *nodeapi.Landlock) string {
	switch {
	case l == nil:
		return "its orcr does not say whether it has Landlock"
	case l.ABI < 1 && l.Error != "":
		return "no Landlock to confine a sandbox (" + l.Error + ")"
	case l.ABI < 1:
		return "no Landlock to confine a sandbox"
	}
	return ""
}

// ConfinesElsewhere says whether another machine may confine p, which asks for a
// sandbox (the sandbox feature asks before refusing it for this machine's kernel): an
// agent pinned to a registered node is that node's to confine or refuse; an unpinned
// one may be placed on a node that is not drained and can confine, or was not heard
// yet (it then waits, and the queue says why).
func (s *Service) ConfinesElsewhere(p wire.RunParams) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.Node != "" {
		_, ok := s.nodes[p.Node]
		return ok
	}
	for _, n := range s.nodes {
		if n.spec.Draining {
			continue
		}
		if n.link == nil {
			return true
		}
		n.link.mu.Lock()
		heard, l := n.link.hello.Binary != "", n.link.hello.Landlock
		n.link.mu.Unlock()
		if !heard || cannotConfine(l) == "" {
			return true
		}
	}
	return false
}

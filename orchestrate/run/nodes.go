package run

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"orcr/core"
	"orcr/core/wire"
)

// Coders on nodes (DESIGN §14). A run started with nodes (`orcr run start NAME --node
// a --node b`) places its coders on them in turn. Such a coder's milestone worktree
// is made here as always (the check and the merge run in it), and the branch is
// pushed into a clone on the node, where the coder works; when the coder says `run
// done`, its branch is fetched back into the worktree here before the fact is
// recorded, so the check, the review, the merge and the compare-and-swap of the
// feature branch are what they are for a coder on this machine. The git transport is
// the nodes feature's (over the node's own SSH credentials), asked for through the
// kernel's registry.

// A coder no --node pins is placed by admission like any agent: on this machine when
// it has room, else on the least loaded node with room. It was asked for in its
// milestone's worktree here; when admission puts it on a node, the nodes feature asks
// NodeDir (provided as "node-dirs") for its directory there before handing it over,
// and gets the same clone a pinned coder's brief makes. The clone follows the
// placement, so placement stays where it is (admission, under the caps), and the run
// needs no second guess of where there is room.

// nodeGit is what the run asks the nodes feature (provided as "nodes").
type nodeGit interface {
	CloneOn(ctx context.Context, node, repo, branch, run, m string) (string, error)
	FetchFrom(ctx context.Context, node, dir, branch, wt string) error
}

// nodeOf is the node coder who runs on ("" : this machine).
func (r Record) nodeOf(who string) string {
	if len(r.Nodes) == 0 || r.Mode == "shared" {
		return ""
	}
	n, err := strconv.Atoi(strings.TrimPrefix(who, "coder-"))
	if err != nil || n < 1 {
		return ""
	}
	return r.Nodes[(n-1)%len(r.Nodes)]
}

func (s *Service) nodeGit() (nodeGit, error) {
	g, ok := core.Lookup[nodeGit](s.k, "nodes")
	if !ok {
		return nil, wire.Errorf(wire.CodeUnavailable, "this server runs no nodes")
	}
	return g, nil
}

// cloneOnNode pushes milestone m's branch (its worktree at wt) into a clone on node
// and returns the clone's directory there.
func (s *Service) cloneOnNode(ctx context.Context, rec Record, node, wt, m string) (string, error) {
	g, err := s.nodeGit()
	if err != nil {
		return "", err
	}
	dir, err := g.CloneOn(ctx, node, wt, MilestoneBranch(rec.Run.Name, m), rec.Run.Name, m)
	if err != nil {
		return "", fmt.Errorf("run %s: %s's clone on node %s: %w", rec.Run.Name, m, node, err)
	}
	return dir, nil
}

// fetchFromNode brings milestone m's branch back from the clone of coder who's agent
// a when a runs on a node (its directory there is its clone), into m's worktree here.
func (s *Service) fetchFromNode(ctx context.Context, rec Record, who string, a wire.Agent, m string) error {
	if a.Node == "" {
		return nil
	}
	if ms, ok := rec.Run.Milestone(m); !ok || ms.Coder != who {
		return nil // not this coder's: Step says why
	}
	g, err := s.nodeGit()
	if err != nil {
		return err
	}
	if err := g.FetchFrom(ctx, a.Node, a.Cwd, MilestoneBranch(rec.Run.Name, m), s.workDir(rec, m)); err != nil {
		return wire.Errorf(wire.CodeUnavailable, "run %s: bring %s back from node %s: %v; commit and run `run done %s` again", rec.Run.Name, m, a.Node, err, m)
	}
	return nil
}

// NodeDir is the directory on its node of an agent that admission placed there (the
// nodes feature asks before the hand-over): for a coder of a run asked for in its
// milestone's worktree here, the clone of the milestone's branch on that node; ""
// for any other agent. A coder of a shared run works in this machine's one checkout,
// which no node has: refused, saying so.
func (s *Service) NodeDir(ctx context.Context, a wire.Agent) (string, error) {
	name, who, ok := splitRunPath(a.Path)
	if !ok || !strings.HasPrefix(who, "coder-") || a.Node == "" || a.Cwd == "" {
		return "", nil
	}
	rec, err := s.runs.Get(ctx, name)
	if errors.Is(err, wire.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if rec.Mode == "shared" {
		if a.Cwd == rec.Repo {
			return "", wire.Errorf(wire.CodeInvalidParams, "run %s is shared: its coders work in this machine's checkout %s, which node %s has no copy of; start it with --mode worktree to let coders run on nodes, or set [limits] local so this machine keeps room", name, rec.Repo, a.Node)
		}
		return "", nil
	}
	for _, m := range rec.Run.Milestones {
		if a.Cwd == s.workDir(rec, m.ID) {
			return s.cloneOnNode(ctx, rec, a.Node, a.Cwd, m.ID)
		}
	}
	return "", nil
}

// isCloneOf says whether dir is run's clone of milestone m on a node (CloneOn's
// clones/RUN/M under the node's orcr directory).
func isCloneOf(dir, run, m string) bool {
	return strings.HasSuffix(dir, "/clones/"+run+"/"+m)
}

// StaysHere says that a run's agents other than its coders (the lead, the reviewer)
// run on this machine: they work in its repository and the milestones' worktrees,
// which only coders get clones of; and so do the coders of a shared run, which work
// in this machine's one checkout (placed on a node, their launch could only fail).
// The nodes feature asks it at admission, under the engine's lock: the path and the
// runs' modes held in memory answer, the store is not read.
func (s *Service) StaysHere(path string) bool {
	name, who, ok := splitRunPath(path)
	if !ok {
		return false
	}
	if !strings.HasPrefix(who, "coder-") {
		return true
	}
	_, shared := s.shared.Load(name)
	return shared
}

// noteMode remembers whether run name is shared, for StaysHere.
func (s *Service) noteMode(name, mode string) {
	if mode == "shared" {
		s.shared.Store(name, true)
	} else {
		s.shared.Delete(name)
	}
}

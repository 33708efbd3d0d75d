package tools

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"orcr/core/wire"
	mcpapi "orcr/mcp/api"
	planapi "orcr/orchestrate/api"
	runapi "orcr/orchestrate/run/api"
)

// allow checks a call against the session's scope and returns the params to send:
// targets are resolved to ids (what was checked is what is acted on), and a child
// started in scope self is capped to self.
func (s *Server) allow(ctx context.Context, tl tool, p any) (any, error) {
	scope := s.session.Scope
	if scope == mcpapi.ScopeRead && tl.kind != reads {
		return nil, refused("%s changes agents, and this MCP session's scope is read (it sees the fleet and changes nothing); a session started with --scope self or act may", tl.name)
	}
	if tl.kind == reports || scope == mcpapi.ScopeAct || (scope == mcpapi.ScopeRead && tl.kind == reads) {
		return p, nil
	}
	// Scope self: the caller's own subtree, and its lineage for reading.
	me := s.session.Caller
	switch q := p.(type) {
	case *wire.RunParams:
		if strings.HasPrefix(q.Path, "/") && !strings.HasPrefix(q.Path, "/"+me.Path+"/") {
			return nil, refused("agent_run: %s is outside your subtree (%s/…); in scope self give a relative path, which is made under yours", q.Path, me.Path)
		}
		env := maps.Clone(q.Env)
		if env == nil {
			env = map[string]string{}
		}
		env[mcpapi.CapEnv] = mcpapi.ScopeSelf
		q.Env = env
		return q, nil
	case *wire.ListParams:
		q.Table = false // filtered below, record by record
		return q, nil
	case *wire.TargetParams:
		id, err := s.resolve(ctx, tl, q.Target, false)
		q.Target = id
		return q, err
	case *wire.ReadParams:
		id, err := s.resolve(ctx, tl, q.Target, false)
		q.Target = id
		return q, err
	case *wire.SendParams:
		id, err := s.resolve(ctx, tl, q.Target, true)
		q.Target = id
		return q, err
	case *wire.AnswerParams:
		id, err := s.resolve(ctx, tl, q.Target, true)
		q.Target = id
		return q, err
	case *wire.WaitParams:
		if !s.globMine(q.Glob) && !(strings.HasPrefix(q.Glob, "/") && s.inLineage(strings.TrimPrefix(q.Glob, "/"))) {
			return nil, refused("agent_wait: %s reaches outside your lineage; in scope self wait on your own agents (a relative glob such as '*' or 'tests/**') or an ancestor's exact path", q.Glob)
		}
		return q, nil
	case *wire.KillParams:
		if !s.globMine(q.Glob) {
			return nil, refused("agent_kill: %s reaches outside your subtree (%s/…); in scope self stop only your own agents (a relative glob)", q.Glob, me.Path)
		}
		return q, nil
	case *planapi.PlanNewParams:
		if q.Lead != "self" {
			return nil, refused("plan_new: in scope self you may only lead the plan yourself: give lead \"self\" (orcr would otherwise start a lead agent outside your subtree)")
		}
		return q, nil
	case *planapi.PlanNameParams:
		return q, s.planMine(ctx, q.Name)
	case *runapi.RunNameParams:
		return q, s.runMine(ctx, tl, q.Name)
	case *runapi.RunMilestonesParams:
		return q, s.runMine(ctx, tl, q.Name)
	case *runapi.RunTextParams:
		return q, s.runMine(ctx, tl, q.Name)
	}
	return nil, fmt.Errorf("%s: no scope rule for %T", tl.name, p)
}

// filter keeps what a scope may see of an answer: agent_list in scope self lists the
// lineage only.
func (s *Server) filter(tl tool, out any) (any, error) {
	if s.session.Scope != mcpapi.ScopeSelf {
		return out, nil
	}
	if r, ok := out.(*wire.ListResult); ok {
		r.Agents = slices.DeleteFunc(r.Agents, func(a wire.Agent) bool { return !s.inLineage(a.Path) })
		r.Table = nil
	}
	return out, nil
}

func refused(format string, args ...any) error {
	return wire.Errorf(wire.CodeNotAllowed, format, args...)
}

// inSubtree: the caller itself or one of its descendants.
func (s *Server) inSubtree(path string) bool {
	me := s.session.Caller.Path
	return path == me || strings.HasPrefix(path, me+"/")
}

// inLineage: the subtree or an ancestor, by parent edge (the agents that started the
// caller) or by path (the agents whose paths the caller's is under).
func (s *Server) inLineage(path string) bool {
	return s.inSubtree(path) || slices.Contains(s.session.Lineage, path) ||
		strings.HasPrefix(s.session.Caller.Path+"/", path+"/")
}

// globMine says whether every path glob g can match is in the caller's subtree: a
// relative glob is resolved under the caller's path by the server; an absolute one
// must start with the caller's path ('*' never matches a '/').
func (s *Server) globMine(g string) bool {
	if g == "" {
		return false
	}
	if !strings.HasPrefix(g, "/") {
		return true
	}
	me := "/" + s.session.Caller.Path
	return g == me || strings.HasPrefix(g, me+"/")
}

// resolve finds the agent target names and checks it is the caller's to act on (its
// subtree) or to read (its lineage); it returns the agent's id.
func (s *Server) resolve(ctx context.Context, tl tool, target string, act bool) (string, error) {
	r, err := wire.Call(ctx, s.t, wire.AgentGet, wire.TargetParams{Target: target})
	if err != nil {
		return "", err
	}
	a := r.Agent
	switch {
	case act && !s.inSubtree(a.Path):
		return "", refused("%s: %s is not in your subtree (%s/…); scope self acts only on your own agents", tl.name, a.Path, s.session.Caller.Path)
	case !act && !s.inLineage(a.Path):
		return "", refused("%s: %s is not in your lineage (your ancestors, you and your agents); scope self reads only those", tl.name, a.Path)
	}
	return a.ID, nil
}

// planMine: in scope self a plan is the caller's when the caller (or an agent of its
// lineage) is its lead.
func (s *Server) planMine(ctx context.Context, name string) error {
	r, err := wire.Call(ctx, s.t, planapi.PlanGet, planapi.PlanNameParams{Name: name})
	if err != nil {
		return err
	}
	if r.Plan.LeadID == s.session.Caller.ID || (r.Plan.LeadPath != "" && s.inLineage(r.Plan.LeadPath)) {
		return nil
	}
	return refused("plan_show: plan %s is led by %s, not by you or your lineage; scope self shows only your own plans", name, orDefault(r.Plan.LeadPath, "nobody"))
}

// runMine: in scope self a run is the caller's when it leads the run's plan, or runs
// as one of the run's agents (runs/NAME/…); only its lead acts on it.
func (s *Server) runMine(ctx context.Context, tl tool, name string) error {
	me := s.session.Caller
	if tl.kind == reads && strings.HasPrefix(me.Path, "runs/"+name+"/") {
		return nil
	}
	if me.Path == "runs/"+name+"/lead" {
		return nil
	}
	r, err := wire.Call(ctx, s.t, planapi.PlanGet, planapi.PlanNameParams{Name: name})
	if err == nil && r.Plan.LeadID == me.ID {
		return nil
	}
	return refused("%s: run %s is not yours: scope self reaches only a run you lead (or, to read, one you work in)", tl.name, name)
}

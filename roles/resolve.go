package roles

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	"orcr/core"
	"orcr/core/wire"
)

// MaxArg is the longest prompt or system prompt a provider is given: each travels as
// one command-line argument, and Linux refuses a single argument over 128 KiB
// (MAX_ARG_STRLEN) — the CLI would fail to start with E2BIG.
const MaxArg = 120 << 10

// Resolver turns agent.run requests naming a role into concrete ones (core.RunResolver).
type Resolver struct {
	// Dir is the roles directory (Dir() by default).
	Dir string
	// Check validates provider:model pairs (CatalogChecker).
	Check Checker
	// Accounts, when set, says whether a provider's accounts are all held; the
	// chain then skips it (the accounts feature's admission gate).
	Accounts Accounts
	// Shapers, when set, are asked at each request, in order (Shaper).
	Shapers func() []Shaper
	// Bin is the orcr a role's `mcp` registers as the agent's MCP server.
	Bin string
	// Nodes, when set, picks the node for a role's labels (the nodes feature).
	Nodes func() NodePicker
}

// NodePicker is what a role's `labels` ask of the nodes feature (provided as
// "nodes"): the node an agent that needs every one of labels goes to now.
type NodePicker interface {
	NodeWithLabels(labels []string) (string, error)
}

// Accounts is what the fallback needs of the accounts feature: why no account of a
// provider could take work of model at priority now ("" when one could). pin is the
// account the request names, if any.
type Accounts interface {
	Held(provider, model string, priority int, pin string) string
}

var _ core.RunResolver = (*Resolver)(nil)

// Shaper is another feature's part in resolving a run request, asked after the role
// is applied, for every request: the identity feature adds an identity's standing
// instructions and memory, the spawn feature narrows the child's spawn policy by its
// parent's. The kernel has one resolver (this one); these are how the others take
// part without a second.
type Shaper interface {
	Shape(ctx context.Context, p wire.RunParams) (wire.RunParams, []string, error)
}

// Resolve implements core.RunResolver. Fields the request sets win over the role's;
// the provider is the first of the role's chain that can start. The shapers come
// after the role; the sizes are checked last, on what the provider will be given.
func (r *Resolver) Resolve(ctx context.Context, p wire.RunParams, ready func(string) error) (wire.RunParams, []string, error) {
	if err := checkMCP(p.MCP); err != nil {
		return p, nil, err
	}
	p, notes, err := r.resolveRole(ctx, p, ready)
	if err != nil {
		return p, notes, err
	}
	// The request's mcp (a run's [run] mcp, `agent run --mcp`) and the role's, narrowed
	// into p.MCP by resolveRole, give the server once; used up, so a node that resolves
	// the request again does not add it twice.
	if p.MCP != "" {
		if p, err = withMCP(p, p.MCP, r.Bin); err != nil {
			return p, notes, err
		}
		p.MCP = ""
	}
	if r.Shapers != nil {
		for _, sh := range r.Shapers() {
			q, more, err := sh.Shape(ctx, p)
			if err != nil {
				return p, notes, err
			}
			p, notes = q, append(notes, more...)
		}
	}
	return p, notes, checkSizes(p)
}

func (r *Resolver) resolveRole(ctx context.Context, p wire.RunParams, ready func(string) error) (wire.RunParams, []string, error) {
	if err := checkLimits(p); err != nil {
		return p, nil, err
	}
	if p.Role == "" {
		if len(p.Vars) > 0 {
			return p, nil, wire.Errorf(wire.CodeInvalidParams, "--var fills a role's prompt: give --role too")
		}
		return p, nil, nil
	}
	dir := r.Dir
	if dir == "" {
		dir = Dir()
	}
	role, _, err := Load(dir, p.Role, r.Check)
	if err != nil {
		return p, nil, err
	}
	var notes []string
	vars := map[string]string{"path": p.Path, "role": role.Name}
	maps.Copy(vars, p.Vars)
	bad := func(format string, args ...any) error {
		return wire.Errorf(wire.CodeBadRole, "role %s: %s", role.Name, fmt.Sprintf(format, args...))
	}

	if p.Priority == 0 {
		p.Priority = role.Priority // before the chain: admission's headroom rule reads it
	}
	// Provider: the request's, else the first of the chain that can start and has an
	// account with room; when every one that can start is held, the first of those
	// (its work waits in the queue for the reset, never cancelled).
	if p.Provider != "" {
		notes = append(notes, fmt.Sprintf("provider %s given by the request (the role's chain %s not used)", p.Provider, chain(role)))
	} else {
		var skipped []string
		held := -1
		for i, c := range role.Providers {
			if err := ready(c.Provider); err != nil {
				note := fmt.Sprintf("skipped %s: %v", c, err)
				notes = append(notes, note)
				skipped = append(skipped, note)
				continue
			}
			if why := r.held(c, p); why != "" {
				notes = append(notes, fmt.Sprintf("skipped %s: %s", c, why))
				if held < 0 {
					held = i
				}
				continue
			}
			p.Provider = c.Provider
			if p.Model == "" {
				p.Model = c.Model
			}
			notes = append(notes, fmt.Sprintf("provider %s: choice %d of %d of role %s", c, i+1, len(role.Providers), role.Name))
			break
		}
		if p.Provider == "" && held >= 0 {
			c := role.Providers[held]
			p.Provider = c.Provider
			if p.Model == "" {
				p.Model = c.Model
			}
			notes = append(notes, fmt.Sprintf("provider %s: every provider of role %s that can start is held; queued on choice %d until an account has room",
				c, role.Name, held+1))
		}
		if p.Provider == "" {
			return p, nil, wire.Errorf(wire.CodeMissingProgram, "role %s: no provider of its chain can start:\n  %s",
				role.Name, strings.Join(skipped, "\n  "))
		}
	}
	if p.Prompt == "" && role.Prompt != "" {
		if p.Prompt, err = render(role.Prompt, vars); err != nil {
			return p, nil, bad("prompt: %v", err)
		}
	} else if p.Prompt != "" && role.Prompt != "" {
		notes = append(notes, "prompt given by the request (the role's template not used)")
	}
	if p.Worktree == "" && role.Worktree != "" {
		if p.Worktree, err = render(role.Worktree, vars); err != nil {
			return p, nil, bad("worktree: %v", err)
		}
	}
	sys, err := systemPrompt(role)
	if err != nil {
		return p, nil, bad("%v", err)
	}
	if p.SystemPrompt != "" {
		sys = joinParts(sys, p.SystemPrompt)
	}
	p.SystemPrompt = sys
	if len(role.Env) > 0 {
		env := maps.Clone(role.Env)
		maps.Copy(env, p.Env)
		p.Env = env
	}
	if role.MCP != "" {
		if p.MCP, err = narrowMCP(p.MCP, role.MCP); err != nil {
			return p, nil, wire.Errorf(wire.CodeNotAllowed, "role %s: %v", role.Name, err)
		}
	}
	p.Sandbox = mergeSandbox(p.Sandbox, role.Sandbox)
	p.Keep = p.Keep || role.Keep
	if p.MaxTurns == 0 {
		p.MaxTurns = role.MaxTurns
	}
	if p.BudgetUSD == 0 {
		p.BudgetUSD = role.BudgetUSD
		if p.BudgetAction == "" {
			p.BudgetAction = role.BudgetAction
		}
	}
	if p.SoftTimeoutSeconds == 0 {
		p.SoftTimeoutSeconds = int(role.SoftTimeout / time.Second)
	}
	if p.HardTimeoutSeconds == 0 {
		p.HardTimeoutSeconds = int(role.HardTimeout / time.Second)
	}
	if p.Identity == "" {
		p.Identity = role.Identity
	}
	if p.Node == "" && role.Node != "" {
		p.Node = role.Node
		notes = append(notes, "on node "+role.Node+" (the role's node)")
	} else if p.Node == "" && len(role.Labels) > 0 {
		var np NodePicker
		if r.Nodes != nil {
			np = r.Nodes()
		}
		if np == nil {
			return p, nil, wire.Errorf(wire.CodeInvalidParams, "role %s wants a node labelled %s and this server runs no nodes", role.Name, strings.Join(role.Labels, ", "))
		}
		if p.Node, err = np.NodeWithLabels(role.Labels); err != nil {
			return p, nil, wire.Errorf(wire.CodeInvalidParams, "role %s: %v", role.Name, err)
		}
		notes = append(notes, "on node "+p.Node+" (labelled "+strings.Join(role.Labels, ", ")+")")
	}
	// The role's spawn policy and the request's both bind: the narrower of each.
	p.Spawn = role.Spawn.Narrow(p.Spawn)
	p.Vars = nil // used up: the record keeps the rendered prompt
	if err := checkLimits(p); err != nil {
		return p, nil, err
	}
	return p, notes, nil
}

// held is why every account of c's provider is held for this request ("" when one
// has room, or no accounts feature is wired).
func (r *Resolver) held(c Choice, p wire.RunParams) string {
	if r.Accounts == nil {
		return ""
	}
	model := p.Model
	if model == "" {
		model = c.Model
	}
	return r.Accounts.Held(c.Provider, model, p.Priority, p.Account)
}

func chain(r *Role) string {
	s := make([]string, len(r.Providers))
	for i, c := range r.Providers {
		s[i] = c.String()
	}
	return strings.Join(s, " → ")
}

// systemPrompt is the role's system_prompt followed by each skill file, in order.
func systemPrompt(r *Role) (string, error) {
	out := r.SystemPrompt
	for _, sk := range r.Skills {
		b, err := readBounded(ExpandHome(sk))
		if err != nil {
			return "", fmt.Errorf("skill %s: %w", sk, err)
		}
		out = joinParts(out, strings.TrimRight(string(b), "\n"))
	}
	return out, nil
}

func joinParts(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n\n" + b
}

func checkLimits(p wire.RunParams) error {
	if p.MaxTurns < 0 || p.SoftTimeoutSeconds < 0 || p.HardTimeoutSeconds < 0 || p.BudgetUSD < 0 {
		return wire.Errorf(wire.CodeInvalidParams, "limits must not be negative")
	}
	if a := p.BudgetAction; a != "" && a != BudgetStop && a != BudgetHold {
		return wire.Errorf(wire.CodeInvalidParams, "budget action %q: use stop or hold", a)
	}
	if p.SoftTimeoutSeconds > 0 && p.HardTimeoutSeconds > 0 && p.SoftTimeoutSeconds >= p.HardTimeoutSeconds {
		return wire.Errorf(wire.CodeInvalidParams, "soft timeout %s must be shorter than hard timeout %s",
			time.Duration(p.SoftTimeoutSeconds)*time.Second, time.Duration(p.HardTimeoutSeconds)*time.Second)
	}
	return nil
}

func checkSizes(p wire.RunParams) error {
	if p.Provider == "" || p.Provider == "shell" {
		return nil
	}
	for _, f := range []struct{ what, s string }{{"prompt", p.Prompt}, {"system prompt", p.SystemPrompt}} {
		if len(f.s) > MaxArg {
			return wire.Errorf(wire.CodeInvalidParams, "the %s is %d bytes, over the %d-byte limit of one command-line argument of %s; shorten it or put the detail in a file the agent reads",
				f.what, len(f.s), MaxArg, p.Provider)
		}
	}
	return nil
}

// mergeSandbox is the request's sandbox over the role's: the request's mode wins
// (--sandbox=off unconfines a role that confines), the grants add up.
func mergeSandbox(req, role *wire.Sandbox) *wire.Sandbox {
	if role == nil {
		return req
	}
	if req == nil {
		c := *role
		return &c
	}
	out := *req
	if out.Mode == wire.SandboxOn {
		out.RW = append(append([]string{}, role.RW...), req.RW...)
		out.ROX = append(append([]string{}, role.ROX...), req.ROX...)
		out.Ports = append(append([]int{}, role.Ports...), req.Ports...)
	}
	return &out
}

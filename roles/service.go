package roles

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"orcr/core"
	"orcr/core/wire"

	roleapi "orcr/roles/api"
)

// Options configure a Service.
type Options struct {
	// Dir is the roles directory (default Dir()).
	Dir string
	// Check validates provider:model pairs; nil checks them against the model
	// catalog the plans feature provides (CatalogChecker over Catalog "catalog").
	Check  Checker
	Logger *slog.Logger
	// Bin is the orcr binary a role's `mcp` registers as the agent's MCP server
	// ("" for "orcr" on the PATH).
	Bin string
}

// Service serves role.* and history.list (methods.go), runs the per-repo hooks
// (core.LaunchHook) and enforces agents' limits and validation.
type Service struct {
	opts Options
	k    core.Kernel // set by Start
	log  *slog.Logger

	mu      sync.Mutex
	watched map[string]*watch // agent id → its limits and validation state
	// hist holds every finished agent's history row, kept from the events, so
	// history.list never copies the kernel's records (10,000 of them in 30 ms).
	hist    histIndex
	started bool

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

var (
	_ core.LaunchHook = (*Service)(nil)
)

// New builds the service; Start binds it to the kernel, registers its resolver and
// launch hook, and begins watching agents.
func New(opts Options) *Service {
	if opts.Dir == "" {
		opts.Dir = Dir()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{opts: opts, log: opts.Logger, watched: map[string]*watch{}}
}

// Resolver is the agent.run resolver over the same directory and checker; it asks
// the accounts feature, when there is one, which providers are held.
func (s *Service) Resolver() *Resolver {
	return &Resolver{Dir: s.opts.Dir, Check: s.check, Accounts: heldAccounts{s}, Shapers: s.shapers, Bin: s.opts.Bin, Nodes: s.nodes}
}

// nodes is the nodes feature as a role's labels need it, when the server has it.
func (s *Service) nodes() NodePicker {
	if s.k == nil {
		return nil
	}
	np, _ := core.Lookup[NodePicker](s.k, "nodes")
	return np
}

// shapers are the identity and spawn-policy features, those the server has, looked
// up at each request.
func (s *Service) shapers() []Shaper {
	if s.k == nil {
		return nil
	}
	var out []Shaper
	for _, name := range []string{IdentityCapability, SpawnCapability} {
		if sh, ok := core.Lookup[Shaper](s.k, name); ok {
			out = append(out, sh)
		}
	}
	return out
}

// check is Options.Check, or the model catalog's check.
func (s *Service) check(provider, model string) error {
	if s.opts.Check != nil {
		return s.opts.Check(provider, model)
	}
	var cat Catalog
	if s.k != nil {
		cat, _ = core.Lookup[Catalog](s.k, CatalogCapability)
	}
	return CatalogChecker(cat)(provider, model)
}

// accounts is the accounts feature's budgets and held providers, when the server has
// that feature (it provides itself as "accounts"); nil otherwise.
func (s *Service) accounts() accountsFeature {
	if s.k == nil {
		return nil
	}
	a, _ := core.Lookup[accountsFeature](s.k, AccountsCapability)
	return a
}

// accountsFeature is what roles asks of the accounts feature.
type accountsFeature interface {
	Accounts
	Budgets
}

// heldAccounts asks the accounts feature, looked up at each ask, which providers are held.
type heldAccounts struct{ s *Service }

func (h heldAccounts) Held(provider, model string, priority int, pin string) string {
	if a := h.s.accounts(); a != nil {
		return a.Held(provider, model, priority, pin)
	}
	return ""
}

// Roles lists the role files.
func (s *Service) Roles(context.Context) ([]roleapi.Role, error) {
	return List(s.opts.Dir, s.check), nil
}

// RoleGet returns one role with its file's text.
func (s *Service) RoleGet(_ context.Context, name string) (roleapi.RoleResult, error) {
	r, src, err := Load(s.opts.Dir, name, s.check)
	if err != nil {
		return roleapi.RoleResult{}, err
	}
	return roleapi.RoleResult{Role: r.Wire(), Text: string(src)}, nil
}

// RolePut checks a role's text and writes it to its file atomically.
func (s *Service) RolePut(_ context.Context, p roleapi.RolePutParams) (roleapi.RoleResult, error) {
	if !ValidName(p.Name) {
		return roleapi.RoleResult{}, wire.Errorf(wire.CodeInvalidParams, "invalid role name %q: use [a-z0-9][a-z0-9._-]*", p.Name)
	}
	file := filepath.Join(s.opts.Dir, p.Name+".toml")
	r, err := Parse(p.Name, file, []byte(p.Text), s.check)
	if err != nil {
		return roleapi.RoleResult{}, wire.Errorf(wire.CodeBadRole, "role %s refused:\n%v", p.Name, err)
	}
	if err := os.MkdirAll(s.opts.Dir, 0o700); err != nil {
		return roleapi.RoleResult{}, wire.Errorf(wire.CodeInternal, "roles dir: %v", err)
	}
	tmp := file + ".orcr-tmp"
	if err := os.WriteFile(tmp, []byte(p.Text), 0o600); err != nil {
		return roleapi.RoleResult{}, wire.Errorf(wire.CodeInternal, "write role: %v", err)
	}
	if err := os.Rename(tmp, file); err != nil {
		return roleapi.RoleResult{}, wire.Errorf(wire.CodeInternal, "write role: %v", err)
	}
	return roleapi.RoleResult{Role: r.Wire(), Text: p.Text}, nil
}

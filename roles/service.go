package roles

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"orcr/core"
	"orcr/core/wire"
	roleapi "orcr/roles/api"
)

// Kernel is what the roles feature needs of the kernel: its agents and events, events
// of its own, and the record fields it owns (hook runs, counters).
type Kernel interface {
	core.Kernel
	core.Sender
	Info(ctx context.Context) (wire.InfoResult, error)
	List(ctx context.Context, p wire.ListParams) ([]wire.Agent, error)
	Get(ctx context.Context, target string) (wire.Agent, error)
	Subscribe(ctx context.Context, p wire.SubscribeParams) (<-chan wire.Event, error)
	Amend(ctx context.Context, id string, fn func(a *wire.Agent)) (wire.Agent, error)
	StopAgent(ctx context.Context, id, reason string) error
}

// Options configure a Service.
type Options struct {
	// Dir is the roles directory (default Dir()).
	Dir   string
	Check Checker
	// Accounts lets the fallback skip a provider whose every account is held.
	Accounts Accounts
	// Budgets, when set, takes a role's budget_usd as a budget on its agent's path.
	Budgets Budgets
	Logger  *slog.Logger
}

// Service serves role.* and history.list (methods.go), runs the per-repo hooks
// (core.LaunchHook) and enforces agents' limits and validation.
type Service struct {
	opts  Options
	k     Kernel        // set by Start
	bound chan struct{} // closed once k is set
	log   *slog.Logger

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

// New builds the service; Start binds it to the kernel and begins watching agents.
// It is built before the kernel, which takes its resolver and launch hook.
func New(opts Options) *Service {
	if opts.Dir == "" {
		opts.Dir = Dir()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{opts: opts, log: opts.Logger, watched: map[string]*watch{}, bound: make(chan struct{})}
}

// Resolver is the agent.run resolver over the same directory and checker.
func (s *Service) Resolver() *Resolver {
	return &Resolver{Dir: s.opts.Dir, Check: s.opts.Check, Accounts: s.opts.Accounts}
}

// Roles lists the role files.
func (s *Service) Roles(context.Context) ([]roleapi.Role, error) {
	return List(s.opts.Dir, s.opts.Check), nil
}

// RoleGet returns one role with its file's text.
func (s *Service) RoleGet(_ context.Context, name string) (roleapi.RoleResult, error) {
	r, src, err := Load(s.opts.Dir, name, s.opts.Check)
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
	r, err := Parse(p.Name, file, []byte(p.Text), s.opts.Check)
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

// Start watches agents: the live ones now, and every change from here on.
func (s *Service) Start(ctx context.Context, k Kernel) error {
	if k == nil {
		return errors.New("roles need the kernel")
	}
	s.k = k
	s.ctx, s.cancel = context.WithCancel(context.Background())
	close(s.bound)
	info, err := s.k.Info(ctx)
	if err != nil {
		return err
	}
	ch, err := s.k.Subscribe(s.ctx, wire.SubscribeParams{After: info.LastSeq})
	if err != nil {
		return err
	}
	as, err := s.k.List(ctx, wire.ListParams{All: true})
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.hist.load(as)
	s.started = true
	s.mu.Unlock()
	for _, a := range as {
		if !a.State.Terminal() {
			s.observe(a, nil)
		}
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for ev := range ch {
			switch {
			case ev.Agent != nil && (ev.Event == wire.EventAgentState || ev.Event == wire.EventAgentUpdated):
				s.observe(*ev.Agent, &ev)
			case ev.Agent != nil && ev.Event == wire.EventAgentSpawned:
				a := *ev.Agent
				s.spawn(func(ctx context.Context) { s.spawned(ctx, a) })
			case ev.Agent != nil && ev.Event == wire.EventAgentRemoved:
				s.mu.Lock()
				s.hist.remove(ev.Agent.ID)
				s.mu.Unlock()
				a := *ev.Agent
				s.spawn(func(ctx context.Context) { s.removed(ctx, a) })
			}
		}
	}()
	return nil
}

// Close stops watching and waits for hook runs in progress.
func (s *Service) Close() {
	if s.cancel != nil {
		s.cancel()
	}
	s.mu.Lock()
	for _, w := range s.watched {
		w.stopTimers()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

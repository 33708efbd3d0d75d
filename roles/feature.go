package roles

import (
	"context"
	"errors"

	"orcr/core"
	"orcr/core/wire"
)

// Name is the feature's name: its buckets' namespace.
const Name = "roles"

// The capabilities roles asks other features for, through the kernel's registry
// (core.Lookup), each typed by an interface of its own: roles imports no feature.
const (
	// AccountsCapability is the accounts feature: which providers are held
	// (Accounts) and the budgets a role sets (Budgets).
	AccountsCapability = "accounts"
	// CatalogCapability is the model catalog the plans feature provides (Catalog).
	CatalogCapability = "catalog"
	// IdentityCapability is the identities feature (§18), SpawnCapability the spawn
	// policy's: each a Shaper of every run request.
	IdentityCapability = "identities"
	SpawnCapability    = "spawnpolicy"
)

var _ core.Feature = (*Service)(nil)

// Name implements core.Feature.
func (s *Service) Name() string { return Name }

// Start registers the roles resolver and the per-repo launch hook with the kernel,
// then watches agents: the live ones now, and every change from here on.
func (s *Service) Start(ctx context.Context, k core.Kernel) error {
	if k == nil {
		return errors.New("roles need the kernel")
	}
	s.k = k
	s.ctx, s.cancel = context.WithCancel(context.Background())
	k.SetResolver(s.Resolver())
	k.AddLaunchHook(s)
	ch, err := k.Subscribe(s.ctx, wire.SubscribeParams{After: k.LastSeq()})
	if err != nil {
		return err
	}
	as, err := k.List(ctx, wire.ListParams{All: true})
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
			case ev.Agent != nil && ev.Event == wire.EventAgentSpawned && hasRoleBudget(*ev.Agent):
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
func (s *Service) Close() error {
	if s.cancel != nil {
		s.cancel()
	}
	s.mu.Lock()
	for _, w := range s.watched {
		w.stopTimers()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

package accounts

import (
	"context"
	"errors"
	"fmt"

	"orcr/core"
	"orcr/core/wire"
)

// Name is the feature's name: its buckets' namespace, and the name under which it
// provides itself to the other features (roles asks it which providers are held and
// sets the budgets of roles through it).
const Name = "accounts"

var _ core.Feature = (*Service)(nil)

// Name implements core.Feature.
func (s *Service) Name() string { return Name }

// Start loads readings and budgets from the feature's buckets, plugs the service into
// admission as a gate, provides it to the other features, and follows the kernel's
// events.
func (s *Service) Start(ctx context.Context, k core.Kernel) error {
	if k == nil {
		return errors.New("accounts need the kernel")
	}
	s.k, s.store = k, k.Buckets()
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if err := s.load(ctx); err != nil {
		return err
	}
	// The cursor first, then the records: what changes in between is replayed.
	after := k.LastSeq()
	agents, err := k.List(ctx, wire.ListParams{All: true})
	if err != nil {
		return fmt.Errorf("accounts: list agents: %w", err)
	}
	ch, err := k.Subscribe(s.ctx, wire.SubscribeParams{After: after})
	if err != nil {
		return fmt.Errorf("accounts: subscribe: %w", err)
	}
	paths := make([]string, 0, len(agents))
	for _, a := range agents {
		paths = append(paths, a.Path)
	}
	s.warm(paths...)
	s.mu.Lock()
	for _, a := range agents {
		s.noteAgentLocked(a)
	}
	s.reachedLocked()
	s.mu.Unlock()
	k.AddGate(s)
	k.Provide(Name, s)
	s.wg.Add(2)
	go s.follow(ch)
	go s.resumeLoop()
	s.startPollers()
	return nil
}

// Close stops the service's goroutines.
func (s *Service) Close() error {
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
	return nil
}

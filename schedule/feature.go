package schedule

import (
	"context"
	"errors"

	"orcr/core"
)

// Name is the feature's name: its buckets' namespace.
const Name = "schedules"

var _ core.Feature = (*Service)(nil)

// Name implements core.Feature.
func (s *Service) Name() string { return Name }

// Start loads the schedules from the feature's buckets (settling claims a crash left
// and applying the missed-run policy) and starts the loop that fires them.
func (s *Service) Start(ctx context.Context, k core.Kernel) error {
	if k == nil {
		return errors.New("schedules need the kernel")
	}
	s.k, s.store = k, k.Buckets()
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if err := s.load(ctx); err != nil {
		return err
	}
	s.wg.Add(1)
	go s.loop()
	return nil
}

// Close stops the loop and every run in progress, and waits for them.
func (s *Service) Close() error {
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
	return nil
}

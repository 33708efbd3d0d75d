package run

import (
	"context"
	"errors"
	"fmt"

	"orcr/core"
	"orcr/core/wire"
	planapi "orcr/orchestrate/api"
)

// Name is the runs feature's name: its buckets' namespace.
const Name = "runs"

// PlansCapability is the plans feature as runs asks it (Plans), through the kernel's
// registry: a run starts from an approved plan, and the plans' records are that
// feature's, in its own buckets.
const PlansCapability = "plans"

// Plans is what runs asks of the plans feature.
type Plans interface {
	PlanGet(ctx context.Context, name string) (planapi.PlanGetResult, error)
}

var _ core.Feature = (*Service)(nil)

// Name implements core.Feature.
func (s *Service) Name() string { return Name }

// Start subscribes to the run agents' events, then re-derives every open run from the
// feature's buckets, the git refs and the agents (Reconcile), and performs what was
// pending.
func (s *Service) Start(ctx context.Context, k core.Kernel) error {
	if k == nil {
		return errors.New("runs need the kernel")
	}
	s.k, s.st = k, k.Buckets()
	s.runs = NewRuns(s.st)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	cursor, err := s.cursor(ctx)
	if err != nil {
		return err
	}
	// Every agent's events, not only runs/**: a lead by --lead self runs at a path of
	// its own (follow keeps the ones of the runs' agents).
	evs, err := k.Subscribe(s.ctx, wire.SubscribeParams{After: cursor})
	if err != nil {
		s.cancel()
		return fmt.Errorf("runs: subscribe: %w", err)
	}
	recs, err := s.runs.List(ctx)
	if err != nil {
		s.cancel()
		return err
	}
	for _, rec := range recs {
		s.indexSelfLead(rec)
		s.noteMode(rec.Run.Name, rec.Mode)
		if rec.Run.Stopped || rec.Run.Finish == "done" && len(rec.Outbox) == 0 {
			continue
		}
		s.resume(ctx, rec)
	}
	// The nodes feature asks for a coder's directory on the node admission put it on.
	k.Provide("node-dirs", s)
	s.wg.Add(2)
	go s.follow(evs)
	go s.pollPlans()
	return nil
}

// Close stops the autopilot and waits for the actions under way (a check is
// stopped; it runs again after the restart).
func (s *Service) Close() error {
	if s.cancel != nil {
		s.cancel()
	}
	s.mu.Lock()
	for _, t := range s.timers {
		t.Stop()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

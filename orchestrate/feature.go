package orchestrate

import (
	"context"
	"errors"
	"fmt"

	"orcr/core"
	"orcr/core/wire"
	"orcr/planning"
)

// Name is the plans feature's name: its buckets' namespace.
const Name = "plans"

// The capabilities the plans feature provides to the other features through the
// kernel's registry (each consumer types them by an interface of its own):
// PlansCapability is the Service (PlanNew, PlanGet: listeners draft plans, runs read
// approved ones); CatalogCapability the model catalog (Knows: roles check models).
const (
	PlansCapability   = "plans"
	CatalogCapability = "catalog"
)

var _ core.Feature = (*Service)(nil)

// Name implements core.Feature.
func (s *Service) Name() string { return Name }

// Start re-derives every plan from the feature's buckets and its lead's state (a turn
// that ended while the server was down is handled now, a message that was not sent is
// sent), then follows the leads' events and the plan files until Close.
func (s *Service) Start(ctx context.Context, k core.Kernel) error {
	if k == nil {
		return errors.New("plans need the kernel")
	}
	s.k, s.st = k, k.Buckets()
	s.plans = NewPlans(s.st)
	k.Provide(PlansCapability, s)
	k.Provide(CatalogCapability, liveCatalog{s})
	cursor, err := s.cursor(ctx)
	if err != nil {
		return err
	}
	// Subscribe before reconciling, so nothing that happens in between is missed;
	// handling a turn end twice is harmless (LeadTurnAt).
	wctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	// Every agent's events, not only plans/*/lead: a lead by --lead self runs at a
	// path of its own (followLeads keeps the leads').
	evs, err := k.Subscribe(wctx, wire.SubscribeParams{After: cursor})
	if err != nil {
		cancel()
		return fmt.Errorf("plans: subscribe: %w", err)
	}
	recs, err := s.plans.List(ctx)
	if err != nil {
		cancel()
		return err
	}
	for _, r := range recs {
		s.indexSelfLead(r)
		s.reconcile(ctx, r)
	}
	s.wg.Add(2)
	go s.followLeads(wctx, evs)
	go s.pollFiles(wctx)
	return nil
}

// Close stops watching and waits for the watchers.
func (s *Service) Close() error {
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
	return nil
}

// liveCatalog is the catalog as it is now: the embedded one with the user's
// overrides, or the embedded one alone while the user's does not load (catalog.get
// reports why), read at each ask so an edit needs no restart.
type liveCatalog struct{ s *Service }

// Knows says whether the catalog lists ref (provider:model).
func (c liveCatalog) Knows(ref string) bool {
	cat, err := c.s.catalog()
	if err != nil {
		cat = planning.Default()
	}
	return cat.Knows(ref)
}

package listen

import (
	"context"
	"errors"

	"orcr/core"
)

// Name is the feature's name: its buckets' namespace.
const Name = "listeners"

// PlansCapability is the plans feature as listeners ask it (Plans), through the
// kernel's registry: a listener whose action is plan = … drafts a plan there.
const PlansCapability = "plans"

var _ core.Feature = (*Service)(nil)

// Name implements core.Feature.
func (s *Service) Name() string { return Name }

// Start loads the stored documents from the feature's buckets and the files, and
// starts the loop.
func (s *Service) Start(ctx context.Context, k core.Kernel) error {
	if k == nil {
		return errors.New("listeners need the kernel")
	}
	s.k, s.st = k, k.Buckets()
	s.rec = NewRecords(s.st)
	return s.start(ctx)
}

// Close stops the loop and waits for ticks in progress (a tick's context ends, so a
// shell command is killed and a request abandoned; what the tick had stored stays).
func (s *Service) Close() error {
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
	return nil
}

// plans is the plans feature, looked up when a dispatch needs it (it may start
// after the listeners); nil when the server has none, which holds plan actions with
// that error.
func (s *Service) plans() Plans {
	p, _ := core.Lookup[Plans](s.k, PlansCapability)
	return p
}

// WorkflowsCapability is the workflows feature as listeners ask it (Workflows).
const WorkflowsCapability = "workflows"

// Workflows is the part of the workflows feature a workflow action uses: start a
// run (the event's vars fill the workflow's vars of the same names; others are left
// out), and say whether a run with a trigger was started (a dispatch begun before a
// restart).
type Workflows interface {
	StartWorkflow(ctx context.Context, name, repo string, vars map[string]string, trigger string) (id string, err error)
	Triggered(ctx context.Context, trigger string) (bool, error)
}

func (s *Service) workflows() Workflows {
	w, _ := core.Lookup[Workflows](s.k, WorkflowsCapability)
	return w
}

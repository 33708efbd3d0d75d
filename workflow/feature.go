package workflow

import (
	"context"
	"errors"

	"orcr/core"
)

// Name is the feature's name: its buckets' namespace.
const Name = "workflows"

var _ core.Feature = (*Service)(nil)

// Name implements core.Feature.
func (s *Service) Name() string { return Name }

// Start keeps the kernel, provides "workflows" (listeners and schedules start runs
// through it), and starts following the agents of the runs under way: what a run
// left in its outbox is performed, and agents that ended while no server watched are
// fed to their runs.
func (s *Service) Start(ctx context.Context, k core.Kernel) error {
	if k == nil {
		return errors.New("workflows need the kernel")
	}
	s.k = k
	s.st = k.Buckets()
	s.pruneNow = make(chan struct{}, 1)
	s.runs = newLog(s.st)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	k.Provide(Name, Starter(s))
	s.wg.Add(2)
	go s.follow()
	go s.prunes()
	return nil
}

// Close stops following and waits for it.
func (s *Service) Close() error {
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
	return nil
}

// Starter is the capability other features look up under "workflows": start a run of
// a workflow by name.
type Starter interface {
	StartWorkflow(ctx context.Context, name, repo string, vars map[string]string, trigger string) (id string, err error)
	Triggered(ctx context.Context, trigger string) (bool, error)
}

// StartWorkflow implements Starter. vars are an event's: those the workflow declares
// fill its vars, the others are left out (a listener's event carries more than any
// one workflow reads).
func (s *Service) StartWorkflow(ctx context.Context, name, repo string, vars map[string]string, trigger string) (string, error) {
	p := runParams(name, repo, vars, trigger)
	p.Vars = nil
	if def, err := Load(ctx, repo, name); err == nil {
		for k, v := range vars {
			if _, ok := def.Vars[k]; ok {
				if p.Vars == nil {
					p.Vars = map[string]string{}
				}
				p.Vars[k] = v
			}
		}
	}
	r, err := s.Begin(ctx, p)
	return r.ID, err
}

// Triggered says whether a run was started with trigger.
func (s *Service) Triggered(ctx context.Context, trigger string) (bool, error) {
	runs, err := s.Runs(ctx)
	if err != nil {
		return false, err
	}
	for _, r := range runs {
		if r.Trigger == trigger {
			return true, nil
		}
	}
	return false, nil
}

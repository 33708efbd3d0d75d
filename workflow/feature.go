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
	s.runs = newLog(k.Buckets())
	s.ctx, s.cancel = context.WithCancel(context.Background())
	k.Provide(Name, Starter(s))
	s.wg.Add(1)
	go s.follow()
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
}

// StartWorkflow implements Starter.
func (s *Service) StartWorkflow(ctx context.Context, name, repo string, vars map[string]string, trigger string) (string, error) {
	r, err := s.Begin(ctx, runParams(name, repo, vars, trigger))
	return r.ID, err
}

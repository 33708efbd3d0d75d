package identity

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"orcr/core"
	"orcr/core/wire"
)

// Name is the feature's name; Capability is what it provides itself as (the roles
// resolver looks it up to shape run requests).
const (
	Name       = "identity"
	Capability = "identities"
)

// Options configure a Service.
type Options struct {
	Dirs   Dirs // DefaultDirs() when empty
	Logger *slog.Logger
}

// Service is the identities feature.
type Service struct {
	dirs Dirs
	log  *slog.Logger
	k    core.Kernel
}

var (
	_ core.Feature      = (*Service)(nil)
	_ core.SpawnChecker = (*Service)(nil)
)

// New builds the feature.
func New(o Options) *Service {
	if o.Dirs == (Dirs{}) {
		o.Dirs = DefaultDirs()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{dirs: o.Dirs, log: o.Logger}
}

// Name implements core.Feature.
func (s *Service) Name() string { return Name }

// Methods implements core.Feature: identities have no socket methods of their own
// (DESIGN names no identity command); an agent's identity shows on its record.
func (s *Service) Methods() []wire.Handler { return nil }

// Start provides the capability and adds the spawn check.
func (s *Service) Start(_ context.Context, k core.Kernel) error {
	if k == nil {
		return errors.New("identities need the kernel")
	}
	s.k = k
	k.Provide(Capability, s)
	k.AddGate(s)
	return nil
}

// Close implements core.Feature.
func (s *Service) Close() error { return nil }

// Shape gives the run request its identity: the caller's when an agent spawns (a
// child cannot choose another), else the one it names. An identity that does not
// load refuses the request before anything is recorded.
func (s *Service) Shape(ctx context.Context, p wire.RunParams) (wire.RunParams, []string, error) {
	var notes []string
	caller, err := s.k.CallerAgent(ctx)
	if err != nil {
		return p, nil, err
	}
	if caller != nil && caller.Identity != "" {
		if p.Identity != "" && p.Identity != caller.Identity {
			return p, nil, refuseOther(caller, p.Identity)
		}
		if p.Identity == "" {
			notes = append(notes, fmt.Sprintf("identity %s inherited from %s", caller.Identity, caller.Path))
		}
		p.Identity = caller.Identity
	}
	if p.Identity == "" {
		return p, notes, nil
	}
	id, err := Load(ctx, s.dirs, p.Identity)
	if err != nil {
		return p, nil, err
	}
	if err := os.MkdirAll(id.Memory, 0o700); err != nil {
		return p, nil, wire.Errorf(wire.CodeInternal, "identity %s: memory directory: %v", id.Name, err)
	}
	q, more := apply(id, p)
	for _, n := range more {
		if len(n) > 8 && n[:8] == "warning:" {
			s.log.Warn("identity instructions cut", "identity", id.Name, "note", n)
		}
	}
	return q, append(notes, more...), nil
}

// MemoryDir is identity name's memory directory (a sandbox grants it read-write).
func (s *Service) MemoryDir(name string) string { return s.dirs.MemoryDir(name) }

// CheckSpawn implements core.SpawnChecker: an agent acting as an identity spawns only
// agents of that identity, also when no resolver shaped the request.
func (s *Service) CheckSpawn(ctx context.Context, p wire.RunParams) error {
	caller, err := s.k.CallerAgent(ctx)
	if err != nil || caller == nil || caller.Identity == "" {
		return nil
	}
	if p.Identity != caller.Identity {
		return refuseOther(caller, p.Identity)
	}
	return nil
}

// Admit implements core.Gate: identities hold nothing in the queue.
func (s *Service) Admit(context.Context, wire.Agent) (bool, string, time.Time) {
	return true, "", time.Time{}
}

func refuseOther(caller *wire.Agent, asked string) error {
	if asked == "" {
		asked = "none"
	}
	return wire.Errorf(wire.CodeSpawnRefused, "spawn refused: %s acts as identity %s, and the agents it spawns do too; it cannot give one another identity (%s)",
		caller.Path, caller.Identity, asked)
}

package mcp

import (
	"context"
	"errors"

	"orcr/core"
	"orcr/core/wire"
	"orcr/mcp/api"
)

// Name is the feature's name.
const Name = "mcp"

// maxDepth bounds the walk up a caller's lineage (paths are at most 16 deep; parents
// of a resumed record may add a few).
const maxDepth = 64

// Feature grants MCP sessions (mcp.session).
type Feature struct {
	k core.Kernel
}

var _ core.Feature = (*Feature)(nil)

// New makes the feature.
func New() *Feature { return &Feature{} }

// Name implements core.Feature.
func (f *Feature) Name() string { return Name }

// Methods implements core.Feature.
func (f *Feature) Methods() []wire.Handler {
	return []wire.Handler{wire.Handle(api.Session, f.session)}
}

// Start implements core.Feature.
func (f *Feature) Start(ctx context.Context, k core.Kernel) error {
	if k == nil {
		return errors.New("mcp needs the kernel")
	}
	f.k = k
	return nil
}

// Close implements core.Feature.
func (f *Feature) Close() error { return nil }

// session verifies the caller and grants the scope.
func (f *Feature) session(ctx context.Context, p *api.SessionParams) (api.SessionResult, error) {
	caller, err := f.k.CallerAgent(ctx)
	if err != nil {
		return api.SessionResult{}, err
	}
	var caps []capped
	lineage := []string{}
	if caller != nil {
		a := *caller
		for depth := 0; ; depth++ {
			if v := a.Env[api.CapEnv]; v != "" {
				caps = append(caps, capped{path: a.Path, cap: v})
			}
			if a.ParentID == "" || depth >= maxDepth {
				break
			}
			parent, err := f.k.Get(ctx, a.ParentID)
			if err != nil {
				// A parent collected by GC no longer caps anything; its path still
				// names the lineage.
				if a.ParentPath != "" {
					lineage = append(lineage, a.ParentPath)
				}
				break
			}
			lineage = append(lineage, parent.Path)
			a = parent
		}
	}
	scope, allowed, by, err := Grant(p.Scope, caller != nil, caps)
	if err != nil {
		return api.SessionResult{}, err
	}
	return api.SessionResult{Scope: scope, Allowed: allowed, Caller: caller, Lineage: lineage, CappedBy: by}, nil
}

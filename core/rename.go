package core

import (
	"context"
	"fmt"

	"orcr/core/wire"
)

// renameAgent answers agent.rename: the record moves to another path (resolved like a
// spawn's, relative to the caller's scope) with an agent.updated event; its id, pane,
// history and state stay. It is refused when a live agent holds the new path (as a
// spawn is: path_taken), and for a live agent that has children, whose paths sit under
// its own and whose records name it as their parent (has_children). The check and the
// write are one hold of the engine's lock, so two renames cannot both take a path. It
// is a plain function so the kernel grows no method. A live agent keeps ORCR_PATH as
// it was launched (a process's environment cannot change) and a tmux window its old
// name; orcr itself finds the agent by its id, so both are cosmetic.
func renameAgent(ctx context.Context, e *Engine, p wire.RenameParams) (wire.Agent, error) {
	rt, err := e.resolve(ctx, p.Target)
	if err != nil {
		return wire.Agent{}, err
	}
	scope, err := e.scope(ctx)
	if err != nil {
		return wire.Agent{}, err
	}
	path, err := ResolvePath(scope, p.Path)
	if err != nil {
		return wire.Agent{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	old := rt.a
	if old.Path == path {
		return old, nil
	}
	if other := e.liveByPathLocked(path); other != nil {
		return old, &wire.Error{Code: wire.CodePathTaken,
			Message: fmt.Sprintf("%s is already %s (%s); pick another path or kill it first: orcr agent kill %s",
				path, other.a.State, other.a.ID, path)}
	}
	if !old.State.Terminal() {
		n := 0
		for _, c := range e.agents {
			if c.a.ParentID == old.ID {
				n++
			}
		}
		if n > 0 {
			return old, wire.Errorf(wire.CodeHasChildren,
				"%s is %s and has %d children under its path; rename it after it ends, or fork it to the new path: orcr agent fork %s %s",
				old.Path, old.State, n, old.Path, path)
		}
	}
	a, _, err := e.changeLocked(ctx, rt, func(a wire.Agent) (wire.Agent, *wire.Event, bool) {
		a.Path = path
		return a, &wire.Event{Event: wire.EventAgentUpdated, Data: map[string]any{"renamedFrom": old.Path}}, true
	})
	if err != nil {
		return a, fmt.Errorf("rename %s: %w", old.Path, err)
	}
	e.log.Info("agent renamed", "id", a.ID, "from", old.Path, "to", path)
	return a, nil
}

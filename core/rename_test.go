package core_test

import (
	"context"
	"errors"
	"testing"

	"orcr/core"
	"orcr/core/socket"
	"orcr/core/wire"
)

// TestRenameAgent: agent.rename moves a live agent to another path (same id, found by
// the new path, not by the old one); a path a live agent holds is refused with
// path_taken, and a live agent with children with has_children.
func TestRenameAgent(t *testing.T) {
	r := newRig(t, "", nil, core.Limits{}, core.GCRules{})
	tr, err := socket.NewInProcess(core.KernelMethods(r.eng))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	run := func(ctx context.Context, path string) wire.Agent {
		t.Helper()
		a, err := r.eng.Run(ctx, wire.RunParams{Path: path, Argv: []string{"sh", "-c", "exec cat"}})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	code := func(err error) string {
		var we *wire.Error
		if errors.As(err, &we) {
			return we.Code
		}
		return ""
	}
	a := run(ctx, "old/name")
	run(ctx, "busy/one")

	res, err := wire.Call(ctx, tr, wire.AgentRename, wire.RenameParams{Target: "old/name", Path: "new/name"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Agent.ID != a.ID || res.Agent.Path != "new/name" {
		t.Fatalf("renamed: %s %s, want %s new/name", res.Agent.ID, res.Agent.Path, a.ID)
	}
	if got, err := r.eng.Get(ctx, "new/name"); err != nil || got.ID != a.ID {
		t.Fatalf("get new/name: %v %v", got.ID, err)
	}
	if _, err := r.eng.Get(ctx, "old/name"); code(err) != wire.CodeNotFound {
		t.Fatalf("get old/name after the rename: %v, want not_found", err)
	}

	// A path a live agent holds.
	_, err = wire.Call(ctx, tr, wire.AgentRename, wire.RenameParams{Target: "new/name", Path: "busy/one"})
	if code(err) != wire.CodePathTaken {
		t.Fatalf("rename onto a live agent's path: %v, want path_taken", err)
	}

	// A live agent with a child (spawned from inside it: the child's path is under its).
	child := run(core.WithCaller(ctx, core.Caller{ClaimedID: a.ID, InProcess: true}), "kid")
	if child.ParentID != a.ID || child.Path != "new/name/kid" {
		t.Fatalf("child: parent %s path %s", child.ParentID, child.Path)
	}
	_, err = wire.Call(ctx, tr, wire.AgentRename, wire.RenameParams{Target: "new/name", Path: "other/name"})
	if code(err) != wire.CodeHasChildren {
		t.Fatalf("rename of a live agent with a child: %v, want has_children", err)
	}
	// The child itself has none: it may move.
	if _, err := wire.Call(ctx, tr, wire.AgentRename, wire.RenameParams{Target: child.ID, Path: "solo/kid"}); err != nil {
		t.Fatal(err)
	}
}

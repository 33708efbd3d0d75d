package roles_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"orcr/core/wire"
	"orcr/roles"
)

type pickNode struct {
	asked [][]string
	node  string
}

func (p *pickNode) NodeWithLabels(labels []string) (string, error) {
	p.asked = append(p.asked, labels)
	if p.node == "" {
		return "", errors.New("no node is labelled " + strings.Join(labels, ", "))
	}
	return p.node, nil
}

// A role's node pins its agents there unless the request names a node; its labels
// ask the nodes feature for a node carrying them; a bad node name is named at its line.
func TestRoleNodeAndLabels(t *testing.T) {
	dir := t.TempDir()
	writeRole(t, dir, "big", "providers = [\"shell\"]\nnode = \"big\"\n")
	writeRole(t, dir, "gpu", "providers = [\"shell\"]\nlabels = [\"gpu\", \"fast\"]\n")
	pick := &pickNode{node: "lab"}
	r := roles.Resolver{Dir: dir, Nodes: func() roles.NodePicker { return pick }}
	ready := func(string) error { return nil }
	ctx := context.Background()
	q, _, err := r.Resolve(ctx, wire.RunParams{Path: "x", Role: "big", Argv: []string{"true"}}, ready)
	if err != nil || q.Node != "big" {
		t.Fatalf("role node: %q %v", q.Node, err)
	}
	q, _, err = r.Resolve(ctx, wire.RunParams{Path: "x", Role: "big", Node: "other", Argv: []string{"true"}}, ready)
	if err != nil || q.Node != "other" {
		t.Fatalf("the request's node: %q %v", q.Node, err)
	}
	q, notes, err := r.Resolve(ctx, wire.RunParams{Path: "x", Role: "gpu", Argv: []string{"true"}}, ready)
	if err != nil || q.Node != "lab" || len(pick.asked) != 1 || !slices.Equal(pick.asked[0], []string{"gpu", "fast"}) ||
		!strings.Contains(strings.Join(notes, ";"), "labelled gpu, fast") {
		t.Fatalf("labels: %q %v %v %v", q.Node, pick.asked, notes, err)
	}
	pick.node = ""
	if _, _, err := r.Resolve(ctx, wire.RunParams{Path: "x", Role: "gpu", Argv: []string{"true"}}, ready); err == nil || !strings.Contains(err.Error(), "no node is labelled gpu, fast") {
		t.Fatalf("no labelled node: %v", err)
	}
	r.Nodes = nil
	if _, _, err := r.Resolve(ctx, wire.RunParams{Path: "x", Role: "gpu", Argv: []string{"true"}}, ready); err == nil || !strings.Contains(err.Error(), "runs no nodes") {
		t.Fatalf("labels without nodes: %v", err)
	}
	writeRole(t, dir, "bad", "providers = [\"shell\"]\n\nnode = \"Big Box\"\n")
	if _, _, err := r.Resolve(ctx, wire.RunParams{Path: "x", Role: "bad", Argv: []string{"true"}}, ready); err == nil || !strings.Contains(err.Error(), ":3") || !strings.Contains(err.Error(), `node "Big Box"`) {
		t.Fatalf("a bad node name: %v", err)
	}
}

package nodes_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/core/socket"
	"orcr/core/wire"
	nodeapi "orcr/nodes/api"
	"orcr/testutil/wait"
)

// An agent on a node calls orcr and reaches the coordinator: inside its pane (a shell
// on the node), `orcr agent run kid` makes a child in the coordinator's one tree,
// under its parent, on the same node; `orcr agent ls` lists the coordinator's agents
// (one that runs here, which the node never heard of); after the link is cut and made
// again the same pane's orcr still reaches the coordinator. The forwarded socket
// serves nothing to a caller that is not one of the node's agents.
func TestNodeAgentCallsOrcr(t *testing.T) {
	c := newCoord(t)
	c.start()
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(c.home, "orcr.log"))
			t.Logf("coordinator's log:\n%s", b)
		}
	})
	n := c.node()
	c.trust(n)
	c.addNode("big", n.Port())
	ctx := context.Background()
	if _, err := c.cl.Run(ctx, wire.RunParams{Path: "n/p", Node: "big", Argv: []string{"sh"}}); err != nil {
		t.Fatal(err)
	}
	p := c.waitAgent("n/p", running, "the parent on the node")
	if _, err := c.cl.Run(ctx, wire.RunParams{Path: "loc/x", Argv: []string{"sh", "-c", "sleep 600"}}); err != nil {
		t.Fatal(err)
	}
	if a := c.waitAgent("loc/x", running, "a local agent"); a.Node != "" {
		t.Fatalf("loc/x runs on %q", a.Node)
	}
	typeIn := func(line string) {
		t.Helper()
		if err := c.cl.Send(ctx, wire.SendParams{Target: "n/p", Text: line, Enter: true}); err != nil {
			t.Fatal(err)
		}
	}
	screenHas := func(what string) {
		t.Helper()
		var r wire.ReadResult
		if !wait.Until(30*time.Second, func() bool {
			var err error
			r, err = c.cl.Read(ctx, wire.ReadParams{Target: "n/p"})
			return err == nil && strings.Contains(r.Text, what)
		}) {
			t.Fatalf("the node pane's screen lacks %q:\n%s", what, r.Text)
		}
	}
	appears := func(path string) wire.Agent {
		t.Helper()
		var a wire.Agent
		if !wait.Until(30*time.Second, func() bool {
			var err error
			a, err = c.cl.Get(ctx, path)
			return err == nil && running(a)
		}) {
			r, _ := c.cl.Read(ctx, wire.ReadParams{Target: "n/p"})
			t.Fatalf("%s is not running (%s); the node pane's screen:\n%s", path, a.State, r.Text)
		}
		return a
	}
	typeIn(`echo "sock=$ORCR_SOCKET hook=$ORCR_HOOK_SOCKET node=$ORCR_NODE" | tr -d '\n'; echo .`)
	screenHas("sock=" + filepath.Join(n.Home, "coordinator.sock") + " hook=" + filepath.Join(n.Home, "orcr.sock") + " node=big.")

	typeIn(`"$ORCR_BIN" agent run kid -- sh -c 'sleep 600' && echo ran-kid`)
	kid := appears("n/p/kid")
	if kid.ParentID != p.ID || kid.ParentPath != "n/p" || kid.Node != "big" {
		t.Fatalf("the child: parent %s %s, node %q; want %s n/p big", kid.ParentID, kid.ParentPath, kid.Node, p.ID)
	}
	if kid.Cwd != p.Cwd {
		t.Fatalf("the child's directory %q; its parent's is %q", kid.Cwd, p.Cwd)
	}
	nc := nodeClient(t, n)
	if na, err := nc.Get(ctx, kid.ID); err != nil || na.Path != "n/p/kid" {
		t.Fatalf("the node's record of the child: %+v %v", na, err)
	}
	typeIn(`"$ORCR_BIN" agent ls | grep -q loc/x && echo ls-has-local`)
	screenHas("ls-has-local")

	// The forwarded socket, called as no agent, or as an agent of the coordinator's
	// own machine: refused.
	up := filepath.Join(n.Home, "coordinator.sock")
	for _, claim := range []string{"", c.agent("loc/x").ID} {
		tr, err := socket.Dial(ctx, up, claim)
		if err != nil {
			t.Fatal(err)
		}
		_, err = wire.Call(ctx, tr, wire.AgentRun, wire.RunParams{Path: "spoof", Argv: []string{"true"}})
		tr.Close()
		var we *wire.Error
		if !errors.As(err, &we) || we.Code != wire.CodeCallerRefused {
			t.Fatalf("a call claiming %q over the node's socket: %v", claim, err)
		}
	}
	if _, err := c.cl.Get(ctx, "spoof"); err == nil {
		t.Fatal("a refused call spawned an agent")
	}

	// The link is cut and made again: the pane's orcr reaches the coordinator still.
	before := n.Forwards.Load()
	n.Cut()
	if !wait.Until(30*time.Second, func() bool { return n.Forwards.Load() > before && c.show("big").State == nodeapi.StateUp }) {
		t.Fatalf("the link was not made again with its forward (%d forwards; %s)", n.Forwards.Load(), c.show("big").State)
	}
	typeIn(`"$ORCR_BIN" agent run kid2 -- sh -c 'sleep 600' && echo ran-kid2`)
	if k2 := appears("n/p/kid2"); k2.ParentID != p.ID || k2.Node != "big" {
		t.Fatalf("kid2: parent %s node %q", k2.ParentID, k2.Node)
	}
	screenHas("ran-kid2")
	c.cl.Kill(ctx, wire.KillParams{Glob: "**"})
}

// running: launched and not ended (live but no longer starting).
func running(a wire.Agent) bool { return a.State.Live() && a.State != wire.StateStarting }

package nodes_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
	nodeapi "orcr/nodes/api"
	"orcr/testutil/wait"
)

func (c *coord) agent(target string) wire.Agent {
	c.t.Helper()
	a, err := c.cl.Get(context.Background(), target)
	if err != nil {
		c.t.Fatal(err)
	}
	return a
}

func (c *coord) waitAgent(target string, ok func(a wire.Agent) bool, what string) wire.Agent {
	c.t.Helper()
	var a wire.Agent
	if !wait.Until(30*time.Second, func() bool { a = c.agent(target); return ok(a) }) {
		c.t.Fatalf("%s: %s is %s (%s), unreachable=%v", what, target, a.State, a.StateReason, a.Unreachable)
	}
	return a
}

func (c *coord) addNode(name string, port int, extra ...string) {
	c.t.Helper()
	args := append([]string{"node", "add", name, fmt.Sprintf("root@127.0.0.1:%d", port)}, extra...)
	if out, err := c.orcr(args...); err != nil || !strings.Contains(out, " up") {
		c.t.Fatalf("node add: %v\n%s", err, out)
	}
}

func live(a wire.Agent) bool { return a.State.Live() }

// spawn asks the coordinator for a shell agent at path that runs until killed, placed
// as admission decides.
func (c *coord) spawn(path string) {
	c.t.Helper()
	if _, err := c.cl.Run(context.Background(), wire.RunParams{Path: path, Argv: []string{"sh", "-c", "sleep 600"}}); err != nil {
		c.t.Fatal(err)
	}
}

// waitQueued waits for path to wait in the coordinator's queue with every one of
// whys in its reason.
func (c *coord) waitQueued(path string, whys ...string) {
	c.t.Helper()
	var q wire.QueueResult
	if !wait.Until(30*time.Second, func() bool {
		var err error
		if q, err = c.cl.Queue(context.Background()); err != nil {
			c.t.Fatal(err)
		}
		for _, e := range q.Entries {
			if e.Path != path {
				continue
			}
			for _, w := range whys {
				if !strings.Contains(e.Waiting, w) {
					return false
				}
			}
			return true
		}
		return false
	}) {
		c.t.Fatalf("%s does not wait saying %q: %+v", path, whys, q.Entries)
	}
}

// localCapOne is the set-up of the [limits] local tests: this machine's cap at 1, the
// coordinator started, node a (in-process) with a cap of nodeMax, and p/first running
// here. It returns config.toml's path.
func (c *coord) localCapOne(nodeMax string) string {
	c.t.Helper()
	cfg := filepath.Join(envOf(c.env, "XDG_CONFIG_HOME"), "orcr", "config.toml")
	os.WriteFile(cfg, []byte("[limits]\nglobal = 500\nmin_free_mb = 0\nlocal = 1\n"), 0o600)
	c.start()
	n := c.node()
	c.trust(n)
	c.addNode("a", n.Port(), "--max-agents", nodeMax)
	c.spawn("p/first")
	if a := c.waitAgent("p/first", live, "the first here"); a.Node != "" {
		c.t.Fatalf("p/first runs on %q; this machine had room", a.Node)
	}
	return cfg
}

// An agent run with --node runs on the node's server under the coordinator's id and
// path; the coordinator's tree shows it (NODE column, --node filter), reads its
// screen, types into it and kills it there. The node's cap holds a fourth agent in
// the queue, saying why; a black-holed link makes the agents unreachable (not lost),
// and when it returns an agent that ended meanwhile is folded in from the events
// replayed; a node server killed with -9 is started again and its agents are still
// there.
func TestNodeAgents(t *testing.T) {
	c := newCoord(t)
	c.start()
	n := c.node()
	c.trust(n)
	c.addNode("big", n.Port(), "--max-agents", "3", "--identity-file", filepath.Join(c.user, ".ssh", "id_ed25519"))
	ctx := context.Background()

	out, err := c.orcr("agent", "run", "n/a1", "--node", "big", "--", "sh", "-c", "echo hello-from-node; exec cat")
	if err != nil {
		t.Fatalf("agent run --node: %v\n%s", err, out)
	}
	a := c.waitAgent("n/a1", live, "spawned on the node")
	if a.Node != "big" {
		t.Fatalf("node %q", a.Node)
	}
	if !wait.Until(20*time.Second, func() bool {
		r, err := c.cl.Read(ctx, wire.ReadParams{Target: "n/a1"})
		return err == nil && strings.Contains(r.Text, "hello-from-node")
	}) {
		t.Fatal("the node agent's screen was not read from the coordinator")
	}
	// The node has the same agent: same id and path.
	nc := nodeClient(t, n)
	na, err := nc.Get(ctx, a.ID)
	if err != nil || na.Path != "n/a1" {
		t.Fatalf("the node's record: %+v %v", na, err)
	}
	if err := c.cl.Send(ctx, wire.SendParams{Target: "n/a1", Text: "typed-from-coordinator", Enter: true}); err != nil {
		t.Fatal(err)
	}
	if !wait.Until(20*time.Second, func() bool {
		r, err := c.cl.Read(ctx, wire.ReadParams{Target: "n/a1"})
		return err == nil && strings.Count(r.Text, "typed-from-coordinator") >= 2 // echoed, then cat's copy
	}) {
		r, _ := c.cl.Read(ctx, wire.ReadParams{Target: "n/a1"})
		t.Fatalf("a send did not reach the node's agent:\n%s", r.Text)
	}
	out, _ = c.orcr("agent", "ls")
	if !strings.Contains(out, "NODE") || !strings.Contains(out, "big") {
		t.Fatalf("agent ls has no NODE column:\n%s", out)
	}
	if out, _ := c.orcr("agent", "ls", "--node", "local"); strings.Contains(out, "n/a1") {
		t.Fatalf("--node local lists a node's agent:\n%s", out)
	}
	// Attach is ssh -t into the node's own attach; the same command with agent read
	// instead, run for real, reaches the agent through the node's sshd.
	ar, err := c.cl.Attach(ctx, wire.AttachParams{Target: "n/a1"})
	if err != nil || len(ar.Argv) < 3 || ar.Argv[0] != "ssh" || ar.Argv[1] != "-t" || !strings.HasSuffix(ar.Argv[len(ar.Argv)-1], "agent attach "+a.ID) {
		t.Fatalf("attach: %v %q", err, ar.Argv)
	}
	argv := append([]string{"-T", "-o", "BatchMode=yes"}, ar.Argv[2:]...)
	argv[len(argv)-1] = strings.Replace(argv[len(argv)-1], "agent attach", "agent read", 1)
	sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
	sshOut, err := exec.CommandContext(sctx, "ssh", argv...).CombinedOutput()
	scancel()
	if err != nil || !strings.Contains(string(sshOut), "hello-from-node") {
		t.Fatalf("ssh %q: %v\n%s", argv, err, sshOut)
	}

	// The cap: three run, the fourth waits, saying why.
	for _, p := range []string{"n/a2", "n/a3", "n/a4"} {
		if _, err := c.cl.Run(ctx, wire.RunParams{Path: p, Node: "big", Argv: []string{"sh", "-c", "sleep 600"}}); err != nil {
			t.Fatal(err)
		}
	}
	c.waitAgent("n/a3", live, "third")
	q, err := c.cl.Queue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Entries) != 1 || q.Entries[0].Path != "n/a4" || !strings.Contains(q.Entries[0].Waiting, "node big has 3 of its 3 agents") {
		t.Fatalf("queue: %+v", q.Entries)
	}
	if _, err := c.cl.Kill(ctx, wire.KillParams{Glob: "n/a2"}); err != nil {
		t.Fatal(err)
	}
	// Killed from the coordinator: killed on the node (at once, or right after its
	// launch there when the kill came first).
	var na2 wire.Agent
	if !wait.Until(20*time.Second, func() bool {
		na2, err = nc.Get(ctx, c.agent("n/a2").ID)
		return err == nil && na2.State == wire.StateKilled
	}) {
		ca := c.agent("n/a2")
		lg, _ := os.ReadFile(filepath.Join(c.home, "orcr.log"))
		t.Fatalf("killed from the coordinator (%s: %s), the node has it %s (%v)\n%s", ca.State, ca.StateReason, na2.State, err, lg)
	}
	c.waitAgent("n/a4", live, "the fourth once a slot is free")

	// An agent that will end while the link is black-holed.
	if _, err := c.cl.Run(ctx, wire.RunParams{Path: "n/short", Node: "big", Argv: []string{"sh", "-c", "sleep 3"}}); err != nil {
		t.Fatal(err)
	}
	c.waitAgent("n/a1", func(a wire.Agent) bool { return true }, "")
	c.cl.Kill(ctx, wire.KillParams{Glob: "n/a4"}) // room for n/short
	short := c.waitAgent("n/short", live, "short started")
	n.Pause()
	c.waitAgent("n/a1", func(a wire.Agent) bool { return a.Unreachable && a.State.Live() }, "unreachable, not lost")
	if out, _ := c.orcr("agent", "ls"); !strings.Contains(out, "unreachable") {
		t.Fatalf("agent ls does not say unreachable:\n%s", out)
	}
	// It ends on the node meanwhile.
	if !wait.Until(20*time.Second, func() bool { x, err := nc.Get(ctx, short.ID); return err == nil && x.State.Terminal() }) {
		t.Fatal("the short agent did not end on the node")
	}
	n.Resume()
	c.waitState("big", nodeapi.StateUp)
	c.waitAgent("n/a1", func(a wire.Agent) bool { return !a.Unreachable && a.State.Live() }, "reachable again")
	got := c.waitAgent("n/short", func(a wire.Agent) bool { return a.State.Terminal() }, "the end replayed")
	if got.State != wire.StateExited || got.ExitCode == nil || *got.ExitCode != 0 {
		t.Fatalf("short: %s (%s; %s) exit %v", got.State, got.StateReason, got.Error, got.ExitCode)
	}

	// kill -9 of the node's server: started again, the agents still there. (Until
	// the coordinator has seen the link drop it still says up: wait for the new server.)
	pid := n.ServerPID()
	n.KillServer9(t)
	if !wait.Until(30*time.Second, func() bool { p := n.ServerPID(); return p != 0 && p != pid }) {
		t.Fatal("the node's server was not started again")
	}
	c.waitState("big", nodeapi.StateUp)
	c.waitAgent("n/a1", func(a wire.Agent) bool { return !a.Unreachable && a.State.Live() }, "after the node server's kill -9")
	if err := c.cl.Send(ctx, wire.SendParams{Target: "n/a1", Text: "after-kill", Enter: true}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"n/a1", "n/a3"} {
		if a := c.agent(p); a.State == wire.StateLost || a.State.Terminal() {
			t.Fatalf("%s is %s", p, a.State)
		}
	}
	// A node with live agents is not removed.
	if out, err := c.orcr("node", "rm", "big"); err == nil || !strings.Contains(out, "live agents") {
		t.Fatalf("rm with agents: %v %s", err, out)
	}
	c.cl.Kill(ctx, wire.KillParams{Glob: "n/**"})
}

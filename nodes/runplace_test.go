package nodes_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"orcr/core/wire"
	nodeapi "orcr/nodes/api"
	runapi "orcr/orchestrate/run/api"
	"orcr/testutil/wait"
)

// placedRun is the scenario of automatic placement of a run's coders: this machine
// and two nodes, each with a cap of 1 ([limits] local = 1, --max-agents 1), a run
// of three milestones whose three coders no --node pins. homes are the nodes' orcr
// directories (where clones are made); add registers the nodes once the coordinator
// runs. With kill, the coordinator is killed with -9 right after the dispatch (while
// it places and clones) and started again.
func placedRun(t *testing.T, c *coord, homes map[string]string, add func(), kill bool) {
	t.Helper()
	repo := c.runScene("spread", partsPlan("spread", 3), runCfgLocal1)
	add()
	c.startRun("spread", []string{"M1", "M2", "M3"}, "--coders", "3", "--coder", "shell", "--lead", "none", "--", "sh", "-c", nodeCoder)
	if kill {
		c.srv.Kill9()
		c.start()
	}
	c.waitRunDone("spread", 180*time.Second)
	ctx := context.Background()
	// One agent per coder, ever (nothing spawned twice, not even across the kill), one
	// on each machine (the caps held: each coder stays live once done).
	all, err := c.cl.List(ctx, wire.ListParams{All: true})
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	where := map[string]wire.Agent{}
	for _, a := range all {
		if strings.HasPrefix(a.Path, "runs/spread/coder-") {
			per[a.Path]++
			where[a.Path] = a
		}
	}
	var machines []string
	for _, who := range []string{"coder-1", "coder-2", "coder-3"} {
		p := "runs/spread/" + who
		if per[p] != 1 {
			var them []string
			for _, a := range all {
				if strings.HasPrefix(a.Path, "runs/spread/") {
					them = append(them, fmt.Sprintf("%s %s %s (%s; %s) node=%q cwd=%s", a.Path, a.ID, a.State, a.StateReason, a.Error, a.Node, a.Cwd))
				}
			}
			ev, _ := c.orcr("run", "events", "spread")
			b, _ := os.ReadFile(filepath.Join(c.home, "orcr.log"))
			t.Fatalf("%s had %d agents; want 1:\n%s\nrun events:\n%s\nlog:\n%s", p, per[p], strings.Join(them, "\n"), ev, b)
		}
		a := where[p]
		m := a.Node
		if m == "" {
			m = "here"
			if strings.Contains(a.Cwd, "/clones/") {
				t.Fatalf("%s worked here in %q", p, a.Cwd)
			}
		} else if !strings.HasPrefix(a.Cwd, filepath.Join(homes[a.Node], "clones", "spread")+"/") {
			t.Fatalf("%s ran on %s in %q; want its clone under %s", p, a.Node, a.Cwd, homes[a.Node])
		}
		machines = append(machines, m)
	}
	sort.Strings(machines)
	if fmt.Sprint(machines) != "[a b here]" {
		t.Fatalf("the coders ran on %v; want one on each machine", machines)
	}
	// Every milestone merged here, each built where its coder ran; one clone per
	// milestone built on a node, none elsewhere.
	built := ""
	for _, m := range []string{"M1", "M2", "M3"} {
		built += gitIn(t, repo, "show", "feature/spread:"+m+".txt") + "\n"
	}
	for node, home := range homes {
		if !strings.Contains(built, "node "+node+" in "+filepath.Join(home, "clones", "spread")+"/") {
			t.Fatalf("no milestone was built in a clone on %s:\n%s", node, built)
		}
		clones, _ := os.ReadDir(filepath.Join(home, "clones", "spread"))
		if len(clones) != 1 {
			t.Fatalf("node %s has %d clones of the run; want 1 (its coder's)", node, len(clones))
		}
	}
	c.stopRun("spread")
}

// A run's coders no --node pins are placed like any agent: this machine takes one
// ([limits] local = 1), each node one (--max-agents 1); each coder on a node works in
// a clone made there when admission put it there, and all three milestones merge here.
func TestRunCodersPlaced(t *testing.T) { placedOnTwo(t, false) }

// The same with the coordinator killed with -9 while it places and clones: after its
// restart each coder still has one agent and each node one clone.
func TestRunCodersPlacedKill9(t *testing.T) { placedOnTwo(t, true) }

// placedOnTwo is placedRun on two in-process nodes with a cap of 1 each.
func placedOnTwo(t *testing.T, kill bool) {
	c := newCoord(t)
	a, b := c.node(), c.node()
	placedRun(t, c, map[string]string{"a": a.Home, "b": b.Home}, func() {
		c.trust(a)
		c.trust(b)
		c.addNode("a", a.Port(), "--max-agents", "1")
		c.addNode("b", b.Port(), "--max-agents", "1")
	}, kill)
}

// The test, for real: two real sshd nodes with a cap of 1 each, this machine
// with a cap of 1, three coders no --node pins spread over the three machines.
func TestRealSSHRunCodersPlaced(t *testing.T) {
	needRealSSH(t)
	c := newCoord(t)
	tag := fmt.Sprintf("%04x", (os.Getpid()+2)%0x10000)
	nodes := []*realNode{startRealNode(t, tag, 5, c.key.PublicKey()), startRealNode(t, tag, 6, c.key.PublicKey())}
	placedRun(t, c, map[string]string{"a": nodes[0].stateHome(), "b": nodes[1].stateHome()}, func() {
		c.addRealNodes(nodes, []string{"a", "b"}, "--max-agents", "1")
	}, false)
}

// A coder placed on a node that then drops off the network is unreachable, not lost:
// the run keeps it on its milestone and starts no other coder in its place while the
// milestone on this machine merges; when the node returns the coder finishes and its
// milestone merges too.
func TestRunCoderPlacedUnreachable(t *testing.T) {
	c := newCoord(t)
	repo := c.runScene("dist", twoPartsPlan, runCfgLocal1)
	n := c.node()
	c.trust(n)
	c.addNode("a", n.Port(), "--max-agents", "1")
	// Each coder waits for its milestone's go file before it builds.
	gate := t.TempDir()
	os.Chmod(gate, 0o777)
	script := `m=$(git rev-parse --abbrev-ref HEAD); m=${m##*/}
while [ ! -e ` + gate + `/"$m" ]; do sleep 0.2; done
` + nodeCoder
	c.startRun("dist", []string{"M1", "M2"}, "--coders", "2", "--coder", "shell", "--lead", "none", "--", "sh", "-c", script)
	ctx := context.Background()
	coders := func() map[string]wire.Agent {
		all, err := c.cl.List(ctx, wire.ListParams{All: true})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]wire.Agent{}
		for _, a := range all {
			if strings.HasPrefix(a.Path, "runs/dist/coder-") {
				if _, dup := out[a.Path]; dup {
					t.Fatalf("%s has two agents", a.Path)
				}
				out[a.Path] = a
			}
		}
		return out
	}
	var there, here wire.Agent
	if !wait.Until(60*time.Second, func() bool {
		there, here = wire.Agent{}, wire.Agent{}
		for _, a := range coders() {
			if a.State.Live() && a.Node == "a" && strings.Contains(a.Cwd, "/clones/dist/") {
				there = a
			} else if a.State.Live() && a.Node == "" {
				here = a
			}
		}
		return there.ID != "" && here.ID != ""
	}) {
		t.Fatalf("want one coder here and one in a clone on node a: %+v", coders())
	}
	mOf := func(a wire.Agent) string { return filepath.Base(a.Cwd) }
	n.Down()
	c.waitAgent(there.ID, func(a wire.Agent) bool { return a.Unreachable && a.State.Live() }, "unreachable, not lost")
	// Meanwhile the milestone here is built and merged.
	os.WriteFile(filepath.Join(gate, mOf(here)), nil, 0o644)
	milestone := func(id string) string {
		v, err := wire.Call(ctx, c.cl, runapi.RunStatusM, runapi.RunNameParams{Name: "dist"})
		if err != nil {
			return ""
		}
		for _, m := range v.Run.Milestones {
			if m.ID == id {
				return m.State + " " + m.Coder
			}
		}
		return ""
	}
	if !wait.Until(60*time.Second, func() bool { return strings.HasPrefix(milestone(mOf(here)), "merged") }) {
		t.Fatalf("%s: %s", mOf(here), milestone(mOf(here)))
	}
	// The node's coder is still the one on its milestone, live and unreachable; nothing
	// was started in its place.
	now := coders()
	if len(now) != 2 || now[there.Path].ID != there.ID || !now[there.Path].Unreachable || !now[there.Path].State.Live() {
		t.Fatalf("while node a is down the coders are %+v", now)
	}
	if got := milestone(mOf(there)); got != "building "+strings.TrimPrefix(there.Path, "runs/dist/") {
		t.Fatalf("%s while its node is down: %s", mOf(there), got)
	}
	n.Up()
	c.waitAgent(there.ID, func(a wire.Agent) bool { return !a.Unreachable && a.State.Live() }, "reachable again")
	os.WriteFile(filepath.Join(gate, mOf(there)), nil, 0o644)
	if !wait.Until(60*time.Second, func() bool { return strings.HasPrefix(milestone(mOf(there)), "merged") }) {
		t.Fatalf("%s after its node returned: %s", mOf(there), milestone(mOf(there)))
	}
	if body := gitIn(t, repo, "show", "feature/dist:"+mOf(there)+".txt"); !strings.Contains(body, "node a in "+filepath.Join(n.Home, "clones", "dist")) {
		t.Fatalf("%s: %q", mOf(there), body)
	}
	c.stopRun("dist")
}

// A run's lead and reviewer are never placed on a node (they work in this machine's
// repository and worktrees; only coders get clones): with this machine at its
// [limits] local cap, a lead waits for it, saying why, while a coder goes to the node.
func TestRunLeadStaysHere(t *testing.T) {
	c := newCoord(t)
	c.localCapOne("2")
	ctx := context.Background()
	c.spawn("runs/x/lead")
	c.spawn("runs/x/coder-1")
	if a := c.waitAgent("runs/x/coder-1", live, "a coder on the node"); a.Node != "a" {
		t.Fatalf("the coder runs on %q", a.Node)
	}
	c.waitQueued("runs/x/lead", "here: 1 of its 1 agents ([limits] local)", "a: it works in a repository of this machine")
	// This machine's slot frees: the lead starts here.
	c.cl.Kill(ctx, wire.KillParams{Glob: "p/first"})
	if a := c.waitAgent("runs/x/lead", live, "the lead once this machine has room"); a.Node != "" {
		t.Fatalf("the lead runs on %q", a.Node)
	}
	c.cl.Kill(ctx, wire.KillParams{Glob: "**"})
}

// [limits] local follows a reload of the config (SIGHUP) like the other limits: an
// agent waiting for this machine's cap starts here once the cap is raised, and a cap
// lowered again below the agents running here stops none of them.
func TestLocalCapReloaded(t *testing.T) {
	c := newCoord(t)
	cfg := c.localCapOne("1")
	c.spawn("p/second")
	if a := c.waitAgent("p/second", live, "the second, on the node"); a.Node != "a" {
		t.Fatalf("p/second runs on %q", a.Node)
	}
	c.spawn("p/third")
	c.waitQueued("p/third", "here: 1 of its 1 agents ([limits] local)", "a: 1 of its 1 agents")
	hup := func(local int) {
		t.Helper()
		os.WriteFile(cfg, []byte(fmt.Sprintf("[limits]\nglobal = 500\nmin_free_mb = 0\nlocal = %d\n", local)), 0o600)
		if err := syscall.Kill(c.srv.PID(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	hup(2)
	if a := c.waitAgent("p/third", live, "the third once [limits] local = 2 is reloaded"); a.Node != "" {
		t.Fatalf("p/third runs on %q; want here", a.Node)
	}
	hup(1)
	if !wait.Until(10*time.Second, func() bool {
		b, _ := os.ReadFile(filepath.Join(c.home, "orcr.log"))
		return strings.Contains(string(b), "local=1")
	}) {
		t.Fatal("the reload to local = 1 is not in the log")
	}
	c.spawn("p/fourth")
	c.waitQueued("p/fourth", "here: 2 of its 1 agents ([limits] local)")
	for _, p := range []string{"p/first", "p/second", "p/third"} {
		if a := c.agent(p); !a.State.Live() {
			t.Fatalf("%s is %s after the cap was lowered", p, a.State)
		}
	}
	c.cl.Kill(context.Background(), wire.KillParams{Glob: "**"})
}

// A coder waiting for its node (down) across a restart of the coordinator is placed
// there the moment the link is made, while the link re-reads the node's agents: it
// is handed over once — by its own launch, which makes its clone — not a second time
// by the re-read, which hands over only agents admitted before the restart. Handed
// over twice at once, its clone was made again under it, and the second push put the
// milestone's branch back over the commit its coder had made (TestRunCodersPlacedKill9
// under load: "done at the base, 0 commits", a replacement coder and a second clone
// on a node). Without the fix this failed 2 runs of 2.
func TestRunCoderPlacedAsLinkComesUp(t *testing.T) {
	c := newCoord(t)
	repo := c.runScene("hold", partsPlan("hold", 2), runCfgLocal1)
	n := c.node()
	c.trust(n)
	c.addNode("a", n.Port(), "--max-agents", "1")
	n.Down()
	c.waitState("a", nodeapi.StateUnreachable)
	c.startRun("hold", []string{"M1", "M2"}, "--coders", "2", "--coder", "shell", "--lead", "none", "--", "sh", "-c", nodeCoder)
	// One coder here ([limits] local = 1), the other waits for node a.
	var waiting string
	if !wait.Until(60*time.Second, func() bool {
		q, err := c.cl.Queue(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range q.Entries {
			if strings.HasPrefix(e.Path, "runs/hold/coder-") && strings.Contains(e.Waiting, "a: unreachable") {
				waiting = e.Path
			}
		}
		return waiting != ""
	}) {
		t.Fatal("no coder waits for node a")
	}
	// The coordinator restarts meanwhile (killed -9): its link to a is made anew.
	c.srv.Kill9()
	c.start()
	// The node's own events go on while its link is down (an agent of its own user):
	// the link, made again, replays them at once and re-reads the node's agents while
	// the coder's launch is still making its clone.
	nc := nodeClient(t, n)
	if _, err := nc.Run(context.Background(), wire.RunParams{Path: "own/x", Argv: []string{"sh", "-c", "sleep 600"}}); err != nil {
		t.Fatal(err)
	}
	defer nc.Kill(context.Background(), wire.KillParams{Glob: "own/x"})
	n.Up()
	a := c.waitAgent(waiting, func(a wire.Agent) bool {
		return a.State.Live() && a.Node == "a" && strings.Contains(a.Cwd, "/clones/hold/")
	}, "the coder in its clone on a")
	c.waitRunDone("hold", 120*time.Second)
	log, _ := os.ReadFile(filepath.Join(c.home, "orcr.log"))
	made := 0
	for _, l := range strings.Split(string(log), "\n") {
		if strings.Contains(l, "the agent's directory was made on its node") && strings.Contains(l, a.ID) {
			made++
		}
		if strings.Contains(l, "hand an admitted agent to its node") {
			t.Errorf("handed over by the link's re-read as well (admitted after the restart): %s", l)
		}
	}
	if made != 1 {
		t.Errorf("the coder's clone was made %d times; want 1:\n%s", made, log)
	}
	if body := gitIn(t, repo, "show", "feature/hold:"+filepath.Base(a.Cwd)+".txt"); !strings.Contains(body, "node a in "+filepath.Join(n.Home, "clones", "hold")) {
		t.Errorf("%s: %q", filepath.Base(a.Cwd), body)
	}
	all, err := c.cl.List(context.Background(), wire.ListParams{All: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range all {
		if strings.HasPrefix(x.Path, "runs/hold/coder-") && x.Path != "runs/hold/coder-1" && x.Path != "runs/hold/coder-2" {
			t.Errorf("a coder was started in another's place: %s %s node=%q", x.Path, x.State, x.Node)
		}
	}
	c.stopRun("hold")
}

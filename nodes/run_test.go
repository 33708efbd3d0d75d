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

	"orcr/core"
	"orcr/core/wire"
	"orcr/orchestrate"
	runapi "orcr/orchestrate/run/api"
	"orcr/planning"
	"orcr/store"
	"orcr/testutil/wait"
)

// partsPlan is an approved plan name of n independent milestones M1…Mn, each of
// which writes its Mi.txt; the run's check wants each file to say the node it was
// built on.
func partsPlan(name string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Plan: %s\nrequest: %d parts\ncheck: for f in M*.txt; do grep -q node \"$f\" || exit 1; done\n", name, n)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "\n## M%d · Part %d\ndepends: -\ntier: small\n\n### Goal\nWrite M%d.txt.\n\n### Acceptance\n- [ ] M%d.txt\n", i, i, i, i)
	}
	return b.String()
}

// twoPartsPlan is the plan dist of two milestones.
var twoPartsPlan = partsPlan("dist", 2)

// nodeCoder is a shell coder: in its clone it writes its milestone's file (named by
// the branch it finds checked out) with the node it runs on, commits, and says `run
// done` — orcr on the node, which reaches the coordinator.
const nodeCoder = `m=$(git rev-parse --abbrev-ref HEAD); m=${m##*/}
echo "built on node $ORCR_NODE in $PWD" > "$m.txt"
git add -A && git commit -qm "$m: built on $ORCR_NODE" && "$ORCR_BIN" run done "$m"
exec cat >/dev/null`

func gitIn(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// seedPlan records an approved plan of text for repo in the coordinator's store (the
// plan's lead is not what this test is about), before its server starts.
func seedPlan(t testing.TB, home, repo, name, text string) {
	t.Helper()
	st, err := store.Open(filepath.Join(home, "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r, err := orchestrate.NewRecord(name, "a request", repo, "claude:x", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Dir(r.File), 0o755)
	if err := os.WriteFile(r.File, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	r.State, r.ApprovedHash, r.FileHash = orchestrate.PlanApproved, planning.HashBytes([]byte(text)), planning.HashBytes([]byte(text))
	if err := orchestrate.NewPlans(core.FeatureBuckets(st, orchestrate.Name)).Create(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}

// Configs of the run tests: coders unconfined ([run] sandbox off), or with this
// machine's cap among the nodes at 1 ([limits] local), or with the coders' default
// sandbox.
const (
	runCfg        = "[limits]\nglobal = 500\nmin_free_mb = 0\n[run]\nsandbox = \"off\"\n"
	runCfgLocal1  = "[limits]\nglobal = 500\nmin_free_mb = 0\nlocal = 1\n[run]\nsandbox = \"off\"\n"
	runCfgSandbox = "[limits]\nglobal = 500\nmin_free_mb = 0\n"
)

// runScene is the set-up every run test shares: a repository with one commit beside
// the coordinator's home, plan name (text) approved in its store, config.toml as cfg,
// git's identity for the coders' commits, and the coordinator started. A failed test
// logs the run's status and events, every agent, the queue and the coordinator's
// log. It returns the repository.
func (c *coord) runScene(name, text, cfg string) string {
	t := c.t
	t.Helper()
	repo := filepath.Join(filepath.Dir(c.home), "app")
	os.MkdirAll(repo, 0o755)
	gitIn(t, repo, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(repo, "README.md"), []byte("# app\n"), 0o644)
	gitIn(t, repo, "add", "-A")
	gitIn(t, repo, "commit", "-qm", "init")
	seedPlan(t, c.home, repo, name, text)
	os.WriteFile(filepath.Join(envOf(c.env, "XDG_CONFIG_HOME"), "orcr", "config.toml"), []byte(cfg), 0o600)
	c.env = append(c.env, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	c.start()
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := c.orcr("run", "status", name)
			ev, _ := c.orcr("run", "events", name)
			ls, _ := c.orcr("agent", "ls", "--all")
			q, _ := c.orcr("queue")
			b, _ := os.ReadFile(filepath.Join(c.home, "orcr.log"))
			t.Logf("run status:\n%s\nevents:\n%s\nagents:\n%s\nqueue:\n%s\ncoordinator's log:\n%s", out, ev, ls, q, b)
		}
	})
	return repo
}

// startRun starts run name with args (`orcr run start NAME ARGS…`) and dispatches its
// milestones.
func (c *coord) startRun(name string, milestones []string, args ...string) {
	c.t.Helper()
	if out, err := c.orcr(append([]string{"run", "start", name}, args...)...); err != nil {
		c.t.Fatalf("run start: %v\n%s", err, out)
	}
	if out, err := c.orcr(append([]string{"run", "dispatch", name}, milestones...)...); err != nil {
		c.t.Fatalf("dispatch: %v\n%s", err, out)
	}
}

// waitRunDone waits for run name to be done.
func (c *coord) waitRunDone(name string, within time.Duration) {
	c.t.Helper()
	var v runapi.RunResult
	if !wait.Until(within, func() bool {
		var err error
		v, err = wire.Call(context.Background(), c.cl, runapi.RunStatusM, runapi.RunNameParams{Name: name})
		return err == nil && v.Run.State == "done"
	}) {
		c.t.Fatalf("the run is %s", v.Run.State)
	}
}

// stopRun stops run name and kills every agent left.
func (c *coord) stopRun(name string) {
	c.orcr("run", "stop", name)
	c.cl.Kill(context.Background(), wire.KillParams{Glob: "**"})
}

// A run whose two coders are on two nodes: each coder works in a clone on its node
// (pushed there over the node's SSH credentials), commits, and calls `orcr run done`
// there; its branch comes back by git fetch, the check runs here and both milestones
// are merged into the feature branch on the coordinator.
func TestRunCodersOnNodes(t *testing.T) {
	c := newCoord(t)
	repo := c.runScene("dist", twoPartsPlan, runCfg)
	a, b := c.node(), c.node()
	c.trust(a)
	c.trust(b)
	c.addNode("a", a.Port())
	c.addNode("b", b.Port())
	c.startRun("dist", []string{"M1", "M2"}, "--coders", "2", "--coder", "shell", "--lead", "none", "--node", "a", "--node", "b", "--", "sh", "-c", nodeCoder)
	c.waitRunDone("dist", 120*time.Second)
	ctx := context.Background()
	// Each coder ran on its node, in a clone there.
	on := map[string]string{}
	for _, who := range []string{"coder-1", "coder-2"} {
		ag, err := c.cl.Get(ctx, "runs/dist/"+who)
		if err != nil {
			t.Fatal(err)
		}
		on[who] = ag.Node
		home := a.Home
		if ag.Node == "b" {
			home = b.Home
		}
		if !strings.HasPrefix(ag.Cwd, filepath.Join(home, "clones", "dist")+"/") {
			t.Fatalf("%s worked in %q on %s; want a clone under %s", who, ag.Cwd, ag.Node, home)
		}
	}
	if on["coder-1"] != "a" || on["coder-2"] != "b" {
		t.Fatalf("coders ran on %v", on)
	}
	// Both milestones are merged on the coordinator's feature branch.
	for _, m := range []string{"M1", "M2"} {
		body := gitIn(t, repo, "show", "feature/dist:"+m+".txt")
		if !strings.Contains(body, "built on node ") {
			t.Fatalf("%s on feature/dist: %q", m, body)
		}
	}
	nodesOf := gitIn(t, repo, "show", "feature/dist:M1.txt") + gitIn(t, repo, "show", "feature/dist:M2.txt")
	if !strings.Contains(nodesOf, "node a ") || !strings.Contains(nodesOf, "node b ") {
		t.Fatalf("the milestones were not built on both nodes: %q", nodesOf)
	}
	c.stopRun("dist")
}

// The test, for real: two real sshd nodes (each its own user and home, in its
// own network namespace on 198.18.0.0/15), a run whose two coders are on the two
// nodes; both milestones are merged on the coordinator.
func TestRealSSHRunOnNodes(t *testing.T) {
	needRealSSH(t)
	c := newCoord(t)
	repo := c.runScene("dist", twoPartsPlan, runCfg)
	tag := fmt.Sprintf("%04x", (os.Getpid()+1)%0x10000)
	nodes := []*realNode{startRealNode(t, tag, 3, c.key.PublicKey()), startRealNode(t, tag, 4, c.key.PublicKey())}
	c.addRealNodes(nodes, []string{"a", "b"})
	c.startRun("dist", []string{"M1", "M2"}, "--coders", "2", "--coder", "shell", "--lead", "none", "--node", "a", "--node", "b", "--", "sh", "-c", nodeCoder)
	c.waitRunDone("dist", 180*time.Second)
	nodesOf := gitIn(t, repo, "show", "feature/dist:M1.txt") + gitIn(t, repo, "show", "feature/dist:M2.txt")
	if !strings.Contains(nodesOf, "node a in "+nodes[0].stateHome()+"/clones/dist/") || !strings.Contains(nodesOf, "node b in "+nodes[1].stateHome()+"/clones/dist/") {
		t.Fatalf("the milestones were not built in clones on both nodes: %q", nodesOf)
	}
	c.stopRun("dist")
}

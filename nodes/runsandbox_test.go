package nodes_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
	runapi "orcr/orchestrate/run/api"
	"orcr/testutil/sshnode"
	"orcr/testutil/wait"
)

// sandboxedCoder is a shell coder that tries to write outside its clone (its node
// user's home) and says in its milestone's file whether it could, then commits and
// says `run done` — from inside its sandbox, over the node's forwarded socket.
const sandboxedCoder = `m=$(git rev-parse --abbrev-ref HEAD); m=${m##*/}
if touch "$HOME/escaped-$m" 2>/dev/null; then w=escaped; else w=confined; fi
echo "built on node $ORCR_NODE in $PWD, $w" > "$m.txt"
git add -A && git commit -qm "$m: built on $ORCR_NODE" && "$ORCR_BIN" run done "$m"
exec cat >/dev/null`

// sandboxRun starts the two-milestone run on nodes a and b with the coders' default
// sandbox ([run] sandbox not set: on).
func sandboxRun(t *testing.T, c *coord, add func()) string {
	t.Helper()
	repo := c.runScene("dist", twoPartsPlan, runCfgSandbox)
	add()
	c.startRun("dist", []string{"M1", "M2"}, "--coders", "2", "--coder", "shell", "--lead", "none", "--node", "a", "--node", "b", "--", "sh", "-c", sandboxedCoder)
	return repo
}

// The test of confined coders on nodes, for real: with the default (coders
// sandboxed), each coder on a real sshd node is confined by Landlock there by the
// node's own server (its user's, no capabilities): it cannot write its user's home,
// it commits in its clone, and its `orcr run done` reaches the coordinator, where
// both milestones merge.
func TestRealSSHRunCodersSandboxed(t *testing.T) {
	needRealSSH(t)
	c := newCoord(t)
	tag := fmt.Sprintf("%04x", (os.Getpid()+3)%0x10000)
	nodes := []*realNode{startRealNode(t, tag, 7, c.key.PublicKey()), startRealNode(t, tag, 8, c.key.PublicKey())}
	repo := sandboxRun(t, c, func() { c.addRealNodes(nodes, []string{"a", "b"}) })
	c.waitRunDone("dist", 180*time.Second)
	for i, m := range []string{"M1", "M2"} {
		body := gitIn(t, repo, "show", "feature/dist:"+m+".txt")
		n := nodes[i]
		if !strings.Contains(body, "in "+n.stateHome()+"/clones/dist/"+m+", confined") {
			t.Fatalf("%s on feature/dist: %q; want it built confined in its clone on its node", m, body)
		}
		if _, err := os.Stat(filepath.Join(n.home, "escaped-"+m)); err == nil {
			t.Fatalf("the coder of %s wrote its node user's home", m)
		}
		// The node's server confined it: its policy is in the node's orcr directory.
		a := c.agent("runs/dist/coder-" + m[1:])
		if !a.Sandbox.On() {
			t.Fatalf("coder of %s: sandbox %+v", m, a.Sandbox)
		}
		pol, err := os.ReadFile(filepath.Join(n.stateHome(), "agents", a.ID, "sandbox-policy.json"))
		if err != nil || !strings.Contains(string(pol), n.stateHome()+"/clones/dist/"+m) {
			t.Fatalf("the node's sandbox policy of %s: %v\n%s", a.Path, err, pol)
		}
	}
	c.stopRun("dist")
}

// A node whose kernel has no Landlock (here: its server's Landlock switched off) does
// not run a sandboxed coder unconfined: its launch fails naming the node and the
// reason, while the coder on the node that has Landlock works.
func TestRunCoderSandboxRefusedOnNode(t *testing.T) {
	c := newCoord(t)
	a := c.node()
	b := sshnode.Start(t, sshnode.Options{Authorized: c.key.PublicKey(), Env: append(baseEnv(), "ORCR_SANDBOX_MAX_ABI=0")})
	sandboxRun(t, c, func() {
		c.trust(a)
		c.trust(b)
		c.addNode("a", a.Port())
		c.addNode("b", b.Port())
	})
	ctx := context.Background()
	var ag wire.Agent
	if !wait.Until(60*time.Second, func() bool {
		var err error
		ag, err = c.cl.Get(ctx, "runs/dist/coder-2")
		return err == nil && ag.State == wire.StateFailed
	}) {
		t.Fatalf("the coder on the node without Landlock: %s (%s)", ag.State, ag.Error)
	}
	for _, s := range []string{"node b", "Landlock", "unconfined"} {
		if !strings.Contains(ag.Error, s) {
			t.Fatalf("coder-2's error %q does not say %q", ag.Error, s)
		}
	}
	if !wait.Until(60*time.Second, func() bool {
		v, err := wire.Call(ctx, c.cl, runapi.RunStatusM, runapi.RunNameParams{Name: "dist"})
		if err != nil {
			return false
		}
		for _, m := range v.Run.Milestones {
			if m.ID == "M1" {
				return m.State == "merged"
			}
		}
		return false
	}) {
		t.Fatal("M1, built confined on node a, was not merged")
	}
	c.stopRun("dist")
}

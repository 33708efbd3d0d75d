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
	"orcr/testutil/wait"
)

// The test of Landlock in placement, with real sshd nodes: this machine's
// sandbox is switched off (ORCR_SANDBOX_MAX_ABI=0, as on a kernel without Landlock),
// and so is node weak's (its sshd sets ORCR_SANDBOX_MAX_ABI=0 in every session, so its
// server starts with it); node strong has its kernel's. node ls and node show say so.
// A run's two coders, sandboxed by default and pinned to no node, are not refused for
// this machine's kernel: both are placed on strong, none on weak, and build confined
// in their clones there. An agent without a sandbox still goes to weak when the other
// machines are full; one that asks for a sandbox waits while strong is full, the queue
// saying each machine's reason, and is placed on strong once a coder ends; one pinned
// to strong is not refused for this machine's kernel and strong confines it.
func TestRealSSHLandlockPlacement(t *testing.T) {
	needRealSSH(t)
	c := newCoord(t)
	c.env = append(c.env, "ORCR_SANDBOX_MAX_ABI=0")
	repo := c.runScene("dist", twoPartsPlan, "[limits]\nglobal = 500\nmin_free_mb = 0\nlocal = 1\n")
	tag := fmt.Sprintf("%04x", (os.Getpid()+4)%0x10000)
	strong := startRealNode(t, tag, 9, c.key.PublicKey())
	weak := startRealNode(t, tag, 10, c.key.PublicKey(), "SetEnv ORCR_SANDBOX_MAX_ABI=0")
	c.addRealNodes([]*realNode{strong, weak}, []string{"strong", "weak"}, "--max-agents", "2")

	const off = "Landlock is switched off for this server by ORCR_SANDBOX_MAX_ABI=0"
	if v := c.show("weak"); v.Landlock == nil || v.Landlock.ABI != 0 || !strings.Contains(v.Landlock.Error, off) {
		t.Fatalf("weak's Landlock: %+v", v.Landlock)
	}
	if v := c.show("strong"); v.Landlock == nil || v.Landlock.ABI < 1 {
		t.Fatalf("strong's Landlock: %+v", v.Landlock)
	}
	out, err := c.orcr("node", "ls")
	if err != nil || !strings.Contains(out, "LANDLOCK") {
		t.Fatalf("node ls: %v\n%s", err, out)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "weak ") && !strings.Contains(l, " none ") || strings.HasPrefix(l, "strong ") && !strings.Contains(l, " ABI ") {
			t.Fatalf("node ls's LANDLOCK column:\n%s", out)
		}
	}
	if out, _ := c.orcr("node", "show", "weak"); !strings.Contains(out, "  landlock:   none ("+off) || !strings.Contains(out, "agents that ask for a sandbox are not placed here") {
		t.Fatalf("node show weak:\n%s", out)
	}

	// doctor checks a node that is up (a link cut by a missed keepalive under load is
	// made again within the backoff).
	doctor := ""
	if !wait.Until(30*time.Second, func() bool {
		doctor, _ = c.orcr("doctor")
		return strings.Contains(doctor, "PROBLEM: no Landlock to confine a sandbox ("+off) &&
			strings.Contains(doctor, "): agents that ask for a sandbox (a run's coders, by default) are not placed on it")
	}) {
		t.Fatalf("doctor does not say weak confines nothing:\n%s", doctor)
	}

	c.startRun("dist", []string{"M1", "M2"}, "--coders", "2", "--coder", "shell", "--lead", "none", "--", "sh", "-c", sandboxedCoder)
	c.waitRunDone("dist", 180*time.Second)
	for _, m := range []string{"M1", "M2"} {
		a := c.agent("runs/dist/coder-" + m[1:])
		if a.Node != "strong" || !a.Sandbox.On() {
			t.Fatalf("the coder of %s ran on %q (sandbox %+v); want it confined on strong", m, a.Node, a.Sandbox)
		}
		if body := gitIn(t, repo, "show", "feature/dist:"+m+".txt"); !strings.Contains(body, "in "+strong.stateHome()+"/clones/dist/") || !strings.Contains(body, ", confined") {
			t.Fatalf("%s on feature/dist: %q; want it built confined in its clone on strong", m, body)
		}
	}
	if clones, _ := os.ReadDir(filepath.Join(weak.stateHome(), "clones")); len(clones) != 0 {
		t.Fatalf("weak has clones of the run: %v", clones)
	}

	// Without a sandbox: here while it has room, then weak (strong has its 2 coders).
	ctx := context.Background()
	c.spawn("plain/first")
	c.spawn("plain/second")
	if a := c.waitAgent("plain/first", live, "the first plain agent"); a.Node != "" {
		t.Fatalf("plain/first runs on %q; this machine had room", a.Node)
	}
	if a := c.waitAgent("plain/second", live, "the second plain agent"); a.Node != "weak" {
		t.Fatalf("plain/second runs on %q; want weak, the only machine with room", a.Node)
	}
	// With a sandbox: no machine can take it now, and the queue says why of each.
	if out, err := c.orcr("agent", "run", "boxed/x", "--sandbox", "--", "sh", "-c", "exec cat"); err != nil {
		t.Fatalf("a sandboxed agent on a coordinator without Landlock whose node has it: %v\n%s", err, out)
	}
	c.waitQueued("boxed/x", "here: 1 of its 1 agents ([limits] local)", "strong: 2 of its 2 agents", "weak: no Landlock to confine a sandbox ("+off)
	c.cl.Kill(ctx, wire.KillParams{Glob: "plain/first"})
	c.waitQueued("boxed/x", "here: no Landlock to confine a sandbox ("+off)
	// A coder ends: strong has room, and takes it.
	c.cl.Kill(ctx, wire.KillParams{Glob: "runs/dist/coder-1"})
	if a := c.waitAgent("boxed/x", live, "the sandboxed agent once strong has room"); a.Node != "strong" {
		t.Fatalf("boxed/x runs on %q; want strong", a.Node)
	}
	// Pinned to strong with a sandbox: not refused for this machine's kernel; strong's
	// server confines it (its policy is in strong's orcr directory).
	c.cl.Kill(ctx, wire.KillParams{Glob: "boxed/x"})
	work := filepath.Join(strong.home, "work") // not the home, which holds the node's orcr home
	run(t, "install", "-d", "-o", strong.user, work)
	if out, err := c.orcr("agent", "run", "pinned/x", "--node", "strong", "--cwd", work, "--sandbox", "--", "sh", "-c", "exec cat"); err != nil {
		t.Fatalf("a sandboxed agent pinned to a node with Landlock, from a coordinator without: %v\n%s", err, out)
	}
	pinned := c.waitAgent("pinned/x", func(a wire.Agent) bool { return a.State.Live() && a.State != wire.StateStarting }, "the pinned sandboxed agent running on strong")
	// On a pty node the policy (--explain's) is written once the launches pause.
	policy := filepath.Join(strong.stateHome(), "agents", pinned.ID, "sandbox-policy.json")
	if !wait.Until(30*time.Second, func() bool { _, err := os.Stat(policy); return err == nil }) {
		t.Fatalf("strong did not confine pinned/x: no %s", policy)
	}
	c.stopRun("dist")
}

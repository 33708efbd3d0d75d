package nodes_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
	nodeapi "orcr/nodes/api"
	"orcr/testutil/sshnode"
	"orcr/testutil/testbin"
	"orcr/testutil/wait"
)

// stampedBuild is orcr built with -ldflags -X on the given variables (name=value), as
// a release of another version or protocol would be: built once per test binary
// (testbin.BuildStamped) and shared by the tests that run or install it, read-only.
func stampedBuild(t *testing.T, stamps ...string) string {
	t.Helper()
	return testbin.BuildStamped(t, "orcr", stamps...)
}

// A node of this platform whose server speaks another wire protocol (a build
// stamped protocol 99): while an agent lives on it the link is refused saying so
// (protocol 99 against 1, replaced once they end); when the agent has ended the
// node gets this binary and its server is restarted on it: up, and a new agent runs.
func TestNodeOtherProtocolUpgraded(t *testing.T) {
	c := newCoord(t)
	newBin := c.bin
	c.bin = stampedBuild(t, "orcr/nodes.protocolStamp=99")
	c.start()
	n := c.node()
	c.trust(n)
	c.addNode("big", n.Port())
	ctx := context.Background()
	flag := filepath.Join(t.TempDir(), "end")
	if _, err := c.cl.Run(ctx, wire.RunParams{Path: "p/old", Node: "big", Argv: []string{"sh", "-c", "echo ready; while [ ! -e " + flag + " ]; do sleep 0.2; done"}}); err != nil {
		t.Fatal(err)
	}
	c.waitAgent("p/old", func(a wire.Agent) bool { return a.State.Live() && a.State != wire.StateStarting }, "on the protocol-99 node")
	oldPID := n.ServerPID()

	c.srv.Stop()
	c.bin = newBin
	c.start()
	var v nodeapi.Node
	if !wait.Until(30*time.Second, func() bool {
		v = c.show("big")
		return strings.Contains(v.Error, "(protocol 99) with 1 live agents and this orcr") &&
			strings.Contains(v.Error, fmt.Sprintf("speaks protocol %d: its server is replaced by this version once they end there", wire.Version))
	}) {
		t.Fatalf("a node of another protocol with a live agent: %s (%s)", v.State, v.Error)
	}
	if v.State == nodeapi.StateUp || n.ServerPID() != oldPID {
		t.Fatalf("the node of another protocol: %s, server %d (was %d)", v.State, n.ServerPID(), oldPID)
	}

	os.WriteFile(flag, nil, 0o644)
	if !wait.Until(60*time.Second, func() bool {
		v = c.show("big")
		return v.State == nodeapi.StateUp
	}) {
		t.Fatalf("the node was not upgraded once its agent ended: %s (%s)", v.State, v.Error)
	}
	if p := n.ServerPID(); p == oldPID || p == 0 {
		t.Fatalf("the node's server is %d (was %d)", p, oldPID)
	}
	if got, want := sum(t, filepath.Join(n.Home, "bin", "orcr")), sum(t, newBin); got != want {
		t.Fatal("the node was not sent this binary")
	}
	if _, err := c.cl.Run(ctx, wire.RunParams{Path: "p/new", Node: "big", Argv: []string{"sh", "-c", "exec cat"}}); err != nil {
		t.Fatal(err)
	}
	c.waitAgent("p/new", func(a wire.Agent) bool { return a.State.Live() && a.State != wire.StateStarting }, "on the upgraded node")
	c.cl.Kill(ctx, wire.KillParams{Glob: "p/**"})
}

// A node of another platform (its uname says aarch64 on amd64, or x86_64 on arm64)
// is never sent this binary. With an orcr there that speaks another protocol, the
// link is refused saying what to install where, and the node's binary is left as it
// was; with one of another version that speaks this protocol, it is linked and kept.
func TestNodeOtherPlatformOtherProtocolRefused(t *testing.T) {
	c := newCoord(t)
	c.start()
	fake, other := t.TempDir(), "aarch64"
	otherArch := "arm64"
	if runtime.GOARCH == "arm64" {
		other, otherArch = "x86_64", "amd64"
	}
	real, err := exec.LookPath("uname")
	if err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("#!/bin/sh\nif [ \"$1\" = -m ]; then echo %s; else exec %s \"$@\"; fi\n", other, real)
	if err := os.WriteFile(filepath.Join(fake, "uname"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	env := baseEnv()
	for i, kv := range env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			env[i] = "PATH=" + fake + ":" + p
		}
	}
	n := sshnode.Start(t, sshnode.Options{Authorized: c.key.PublicKey(), Env: env})
	c.trust(n)
	install := func(bin string) {
		t.Helper()
		b, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Join(n.Home, "bin"), 0o755)
		// Beside it, then renamed over it: the one in place may be running.
		tmp := filepath.Join(n.Home, "bin", ".orcr.new")
		if err := os.WriteFile(tmp, b, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(n.Home, "bin", "orcr")); err != nil {
			t.Fatal(err)
		}
	}
	p99 := stampedBuild(t, "orcr/nodes.protocolStamp=99")
	install(p99)
	out, _ := c.orcr("node", "add", "far", fmt.Sprintf("root@127.0.0.1:%d", n.Port()))
	bin := filepath.Join(n.Home, "bin", "orcr")
	if !strings.Contains(out, fmt.Sprintf("node far is linux/%s and runs orcr ", otherArch)) || !strings.Contains(out, ", which speaks protocol 99; this orcr ") ||
		!strings.Contains(out, fmt.Sprintf("speaks protocol %d and sends its binary only to a node of its own platform (linux/%s): install orcr", wire.Version, runtime.GOARCH)) ||
		!strings.Contains(out, fmt.Sprintf("for linux/%s there at %s", otherArch, bin)) {
		t.Fatalf("node add of a node of another platform and protocol:\n%s", out)
	}
	if v := c.show("far"); v.State == nodeapi.StateUp {
		t.Fatalf("the node of another platform and protocol is up")
	}
	if sum(t, bin) != sum(t, p99) {
		t.Fatal("the binary of a node of another platform was replaced")
	}

	// Its orcr is replaced by hand with one of another version that speaks this
	// protocol: the link is made, and that binary kept.
	old := stampedBuild(t, "orcr/internal/buildinfo.stamp=v0.0.1-old")
	install(old)
	n.StopServer(t)
	var v nodeapi.Node
	if !wait.Until(60*time.Second, func() bool { v = c.show("far"); return v.State == nodeapi.StateUp }) {
		t.Fatalf("a node of another platform speaking this protocol: %s (%s)", v.State, v.Error)
	}
	if v.Version != "v0.0.1-old" || sum(t, bin) != sum(t, old) {
		t.Fatalf("the node of another platform runs %s; its binary kept: %v", v.Version, sum(t, bin) == sum(t, old))
	}
	out, _ = c.orcr("doctor")
	if strings.Contains(out, "it is replaced once") {
		t.Fatalf("doctor promises to replace the orcr of a node of another platform:\n%s", out)
	}
}

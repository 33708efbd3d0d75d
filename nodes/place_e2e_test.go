package nodes_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
	nodeapi "orcr/nodes/api"
	"orcr/testutil/sshnode"
	"orcr/testutil/wait"
)

// meminfo writes a /proc/meminfo-format file saying freeMB available (ORCR_MEMINFO).
func meminfo(t testing.TB, path string, freeMB int) {
	t.Helper()
	tmp := path + ".tmp"
	body := fmt.Sprintf("MemTotal:       %d kB\nMemFree:        %d kB\nMemAvailable:   %d kB\n", 64000*1024, freeMB*1024, freeMB*1024)
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// Without --node an agent is placed: here while this machine has min_free_mb free,
// else on the node with room — its cap and its memory — and when no machine has room
// it waits, and the queue says why, naming each machine. The global cap counts the
// agents on nodes too.
func TestAutomaticPlacement(t *testing.T) {
	c := newCoord(t)
	dir := t.TempDir()
	here, there := filepath.Join(dir, "here"), filepath.Join(dir, "there")
	meminfo(t, here, 500)
	meminfo(t, there, 800)
	c.env = append(c.env, "ORCR_MEMINFO="+here)
	cfg := filepath.Join(envOf(c.env, "XDG_CONFIG_HOME"), "orcr", "config.toml")
	if err := os.WriteFile(cfg, []byte("[limits]\nglobal = 500\nmin_free_mb = 1000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.start()
	n := sshnode.Start(t, sshnode.Options{Authorized: c.key.PublicKey(), Env: append(baseEnv(), "ORCR_MEMINFO="+there)})
	c.trust(n)
	c.addNode("big", n.Port(), "--max-agents", "2")
	ctx := context.Background()

	// No machine has 1000 MB free. The agent is asked for from a directory the node
	// does not have (made here, then removed: one machine plays both).
	gone := filepath.Join(dir, "only-here")
	os.Mkdir(gone, 0o755)
	if _, err := c.cl.Run(ctx, wire.RunParams{Path: "p/a1", Cwd: gone, Argv: []string{"sh", "-c", "sleep 600"}}); err != nil {
		t.Fatal(err)
	}
	c.waitQueued("p/a1", "no node has shell with 1000 MB free", "here: 500 MB free", "big: 800 MB free")
	if a := c.agent("p/a1"); a.State != wire.StateQueued {
		t.Fatalf("p/a1 is %s", a.State)
	}
	os.Remove(gone)
	// The node has room now: it goes there, and starts in the node's own directory.
	meminfo(t, there, 32000)
	a1 := c.waitAgent("p/a1", live, "placed once the node has room")
	if a1.Node != "big" {
		t.Fatalf("p/a1 runs on %q", a1.Node)
	}
	if !wait.Until(10*time.Second, func() bool { return c.agent("p/a1").Cwd == n.Home }) {
		t.Fatalf("p/a1's directory is %q; want the node's home %s", c.agent("p/a1").Cwd, n.Home)
	}
	c.spawn("p/a2")
	if a := c.waitAgent("p/a2", live, "second on the node"); a.Node != "big" {
		t.Fatalf("p/a2 runs on %q", a.Node)
	}
	// The node's cap is reached: the third waits for a machine.
	c.spawn("p/a3")
	c.waitQueued("p/a3", "big: 2 of its 2 agents", "here: 500 MB free")
	// This machine has room again: it is preferred.
	meminfo(t, here, 32000)
	if a := c.waitAgent("p/a3", live, "placed here"); a.Node != "" {
		t.Fatalf("p/a3 runs on %q; this machine has room", a.Node)
	}
	// The global cap spans the machines: 3 run (2 there, 1 here), a fourth waits.
	g := 3
	if _, err := c.cl.SetCaps(ctx, wire.CapsParams{Global: &g}); err != nil {
		t.Fatal(err)
	}
	c.spawn("p/a4")
	c.waitQueued("p/a4", "global")
	if out, _ := c.orcr("agent", "ls"); !strings.Contains(out, "NODE") || !strings.Contains(out, "local") {
		t.Fatalf("agent ls:\n%s", out)
	}
	c.cl.Kill(ctx, wire.KillParams{Glob: "p/**"})
	// The node's own record: the two it runs.
	nc := nodeClient(t, n)
	for _, a := range []wire.Agent{a1} {
		if na, err := nc.Get(ctx, a.ID); err != nil || na.Path != a.Path {
			t.Fatalf("the node's record of %s: %+v %v", a.Path, na, err)
		}
	}
}

func envOf(env []string, k string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, k+"="); ok {
			return v
		}
	}
	return ""
}

// --env reaches the pane on the node, and its value is in no record and no event — the
// coordinator's or the node's.
func TestNodeAgentEnv(t *testing.T) {
	c := newCoord(t)
	c.start()
	n := c.node()
	c.trust(n)
	c.addNode("big", n.Port())
	ctx := context.Background()
	const secret = "s3cr3t-7c1e-value"
	if _, err := c.cl.Run(ctx, wire.RunParams{Path: "e/a", Node: "big", Env: map[string]string{"NODE_SECRET": secret},
		Argv: []string{"sh", "-c", `echo "got=$NODE_SECRET"; exec cat`}}); err != nil {
		t.Fatal(err)
	}
	a := c.waitAgent("e/a", live, "spawned on the node")
	if !wait.Until(20*time.Second, func() bool {
		r, err := c.cl.Read(ctx, wire.ReadParams{Target: "e/a"})
		return err == nil && strings.Contains(r.Text, "got="+secret)
	}) {
		r, _ := c.cl.Read(ctx, wire.ReadParams{Target: "e/a"})
		t.Fatalf("the pane on the node has no NODE_SECRET:\n%s", r.Text)
	}
	nc := nodeClient(t, n)
	na, err := nc.Get(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	for who, env := range map[string]map[string]string{"coordinator": c.agent("e/a").Env, "node": na.Env} {
		if _, ok := env["NODE_SECRET"]; !ok || env["NODE_SECRET"] == secret {
			t.Fatalf("the %s's record: env %v", who, env)
		}
	}
	for who, cl := range map[string]interface {
		Subscribe(context.Context, wire.SubscribeParams) (<-chan wire.Event, error)
	}{"coordinator": c.cl, "node": nc} {
		sctx, cancel := context.WithCancel(ctx)
		ch, err := cl.Subscribe(sctx, wire.SubscribeParams{})
		if err != nil {
			t.Fatal(err)
		}
		seen := 0
		for done := false; !done; {
			select {
			case ev := <-ch:
				seen++
				if ev.Agent != nil && ev.Agent.Env["NODE_SECRET"] == secret || fmt.Sprint(ev.Data) != "" && strings.Contains(fmt.Sprint(ev.Data), secret) {
					t.Fatalf("the %s's event %s holds the value", who, ev.Event)
				}
			case <-time.After(2 * time.Second):
				done = true
			}
		}
		cancel()
		if seen == 0 {
			t.Fatalf("no events from the %s", who)
		}
	}
	c.cl.Kill(ctx, wire.KillParams{Glob: "e/**"})
}

// orcr doctor checks each node: reachable over ssh with tmux, the same orcr, its
// providers and accounts; a node without tmux is named with the fix.
func TestDoctorChecksNodes(t *testing.T) {
	c := newCoord(t)
	c.start()
	n := c.node()
	c.trust(n)
	c.addNode("big", n.Port())
	// A node whose PATH has the tools the link looks with, but no tmux.
	bin := t.TempDir()
	for _, tool := range []string{"sh", "uname", "sha256sum", "cut", "mkdir"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatal(err)
		}
		os.Symlink(p, filepath.Join(bin, tool))
	}
	var env []string
	for _, kv := range baseEnv() {
		if !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	bare := sshnode.Start(t, sshnode.Options{Authorized: c.key.PublicKey(), Env: append(env, "PATH="+bin)})
	c.trust(bare)
	c.orcr("node", "add", "bare", fmt.Sprintf("root@127.0.0.1:%d", bare.Port()))
	out, err := c.orcr("doctor")
	if err != nil {
		t.Fatalf("doctor: %v\n%s", err, out)
	}
	_, sect, ok := strings.Cut(out, "\nnodes\n")
	if !ok {
		t.Fatalf("doctor has no nodes section:\n%s", out)
	}
	for _, want := range []string{"big\tup\tssh ok, tmux ok\torcr ", "(this binary)", "providers: shell found, claude ", "accounts:  claude/",
		"bare\tunreachable\tnot reachable", "PROBLEM: not reachable (unreachable): node bare has no tmux: install it there"} {
		if !strings.Contains(sect, want) {
			t.Fatalf("doctor's nodes lack %q:\n%s", want, sect)
		}
	}
	// --json has the same.
	out, err = c.orcr("doctor", "--json")
	var r struct {
		Nodes []nodeapi.CheckResult `json:"nodes"`
	}
	if err != nil || json.Unmarshal([]byte(out), &r) != nil || len(r.Nodes) != 2 || r.Nodes[0].Node.Name != "bare" ||
		r.Nodes[1].Facts == nil || !r.Nodes[1].SameBinary || strings.Contains(fmt.Sprint(r.Nodes[1].Problems), "reachable") ||
		!strings.Contains(fmt.Sprint(r.Nodes[0].Problems), "no tmux") {
		t.Fatalf("doctor --json: %v\n%s", err, out)
	}
}

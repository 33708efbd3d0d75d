package nodes_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"orcr/core/wire"
	nodeapi "orcr/nodes/api"
	"orcr/testutil/clis"
	"orcr/testutil/serve"
	"orcr/testutil/sshnode"
	"orcr/testutil/wait"
)

// Faults of issue 22: the node's server stopped (SIGSTOP) leaves its agents
// unreachable, never lost, and SIGCONT brings them back as they were; the coordinator
// killed with -9 right after admitting agents for a node spawns none of them twice
// once it is started again — each runs on the node once, under its one id.
func TestNodeFaults(t *testing.T) {
	c := newCoord(t)
	c.start()
	n := c.node()
	c.trust(n)
	c.addNode("big", n.Port())
	ctx := context.Background()

	if _, err := c.cl.Run(ctx, wire.RunParams{Path: "f/held", Node: "big", Argv: []string{"sh", "-c", "echo held-up; exec cat"}}); err != nil {
		t.Fatal(err)
	}
	held := c.waitAgent("f/held", live, "spawned")
	pid := n.ServerPID()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	defer func() {
		if stopped {
			syscall.Kill(pid, syscall.SIGCONT)
		}
	}()
	got := c.waitState("big", nodeapi.StateUnreachable)
	if !strings.Contains(got.Error, "does not answer") {
		t.Fatalf("a stopped server: %q", got.Error)
	}
	c.waitAgent("f/held", func(a wire.Agent) bool { return a.Unreachable && a.State.Live() }, "unreachable while the server is stopped")
	syscall.Kill(pid, syscall.SIGCONT)
	stopped = false
	c.waitState("big", nodeapi.StateUp)
	a := c.waitAgent("f/held", func(a wire.Agent) bool { return !a.Unreachable && a.State.Live() }, "back after SIGCONT")
	if a.ID != held.ID || n.ServerPID() != pid {
		t.Fatalf("after SIGCONT: id %s (was %s), server %d (was %d)", a.ID, held.ID, n.ServerPID(), pid)
	}
	if err := c.cl.Send(ctx, wire.SendParams{Target: "f/held", Text: "after-cont", Enter: true}); err != nil {
		t.Fatal(err)
	}

	// Eight spawns for the node, and the coordinator killed at once: some admitted,
	// some handed over, some not yet.
	var ids []string
	for i := range 8 {
		r, err := c.cl.Run(ctx, wire.RunParams{Path: fmt.Sprintf("f/k%d", i), Node: "big", Argv: []string{"sh", "-c", "sleep 600"}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	c.srv.Kill9()
	c.start()
	for i := range 8 {
		c.waitAgent(fmt.Sprintf("f/k%d", i), func(a wire.Agent) bool { return a.State.Live() && a.State != wire.StateStarting }, "running after the restart")
	}
	// The node has each once, under the coordinator's id, and nothing else.
	cmd := exec.Command(filepath.Join(n.Home, "bin", "orcr"), "agent", "ls", "--all", "--json")
	cmd.Env = append(baseEnv(), "ORCR_HOME="+n.Home, "HOME="+n.Home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node agent ls: %v\n%s", err, out)
	}
	var onNode []wire.Agent
	if err := json.Unmarshal(out, &onNode); err != nil {
		var wrapped struct {
			Agents []wire.Agent `json:"agents"`
		}
		if err2 := json.Unmarshal(out, &wrapped); err2 != nil {
			t.Fatalf("node agent ls --json: %v\n%s", err, out)
		}
		onNode = wrapped.Agents
	}
	count := map[string]int{}
	for _, x := range onNode {
		count[x.Path]++
		if strings.HasPrefix(x.Path, "f/k") && !contains(ids, x.ID) {
			t.Errorf("the node runs %s under id %s, not the coordinator's", x.Path, x.ID)
		}
	}
	for i := range 8 {
		if p := fmt.Sprintf("f/k%d", i); count[p] != 1 {
			t.Errorf("the node has %s %d times", p, count[p])
		}
	}
	if len(onNode) != 9 {
		t.Errorf("the node has %d agents; want 9", len(onNode))
	}
	all, _ := c.cl.List(ctx, wire.ListParams{Glob: "f/**", All: true})
	if len(all) != 9 {
		t.Errorf("the coordinator has %d records; want 9", len(all))
	}
	c.cl.Kill(ctx, wire.KillParams{Glob: "f/**"})
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// A node removed while it has agents: node rm refuses with their count (the queued
// one pinned to it counted too) and says to drain it first or use --force; the agents
// run on. With --force the node is gone and each of its agents is lost, saying why —
// never left live here with nobody watching.
func TestNodeRemoveWithAgents(t *testing.T) {
	c := newCoord(t)
	c.start()
	n := c.node()
	c.trust(n)
	c.addNode("big", n.Port(), "--max-agents", "2")
	ctx := context.Background()
	for i := range 3 {
		if _, err := c.cl.Run(ctx, wire.RunParams{Path: fmt.Sprintf("rm/a%d", i), Node: "big", Argv: []string{"sh", "-c", "exec cat"}}); err != nil {
			t.Fatal(err)
		}
	}
	c.waitAgent("rm/a0", live, "a0 on the node")
	c.waitAgent("rm/a1", live, "a1 on the node")
	c.waitAgent("rm/a2", func(a wire.Agent) bool { return a.State == wire.StateQueued }, "a2 queued behind the node's cap")

	out, err := c.orcr("node", "rm", "big")
	if err == nil {
		t.Fatalf("node rm of a node with agents succeeded:\n%s", out)
	}
	for _, want := range []string{"node big has 3 live agents", "1 queued for it", "orcr node drain big", "--force"} {
		if !strings.Contains(out, want) {
			t.Fatalf("node rm refusal lacks %q:\n%s", want, out)
		}
	}
	if st := c.show("big").State; st != nodeapi.StateUp {
		t.Fatalf("after a refused rm the node is %s", st)
	}
	for i := range 2 {
		c.waitAgent(fmt.Sprintf("rm/a%d", i), func(a wire.Agent) bool { return a.State.Live() && !a.Unreachable }, "still running after a refused rm")
	}

	out, err = c.orcr("node", "rm", "--force", "big")
	if err != nil || !strings.Contains(out, "removed node big") || !strings.Contains(out, "3 agents marked lost") {
		t.Fatalf("node rm --force: %v\n%s", err, out)
	}
	for i := range 3 {
		a := c.agent(fmt.Sprintf("rm/a%d", i))
		if a.State != wire.StateLost || !strings.Contains(a.StateReason, "node big was removed with orcr node rm --force") || a.EndedAt == nil {
			t.Fatalf("rm/a%d after rm --force: %s (%s)", i, a.State, a.StateReason)
		}
	}
	if out, err := c.orcr("node", "ls"); err != nil || !strings.Contains(out, "no nodes") {
		t.Fatalf("node ls after rm --force: %v\n%s", err, out)
	}
	if _, err := c.cl.Run(ctx, wire.RunParams{Path: "rm/after", Node: "big", Argv: []string{"true"}}); err == nil || !strings.Contains(err.Error(), "no node big") {
		t.Fatalf("a spawn pinned to the removed node: %v", err)
	}
}

// oldBuild builds orcr stamped as another version (v0.0.1-old): its binary and its
// version differ from the tree's, as a node left on an older release.
func oldBuild(t *testing.T) string {
	t.Helper()
	return stampedBuild(t, "orcr/internal/buildinfo.stamp=v0.0.1-old")
}

// A node on an older orcr: the coordinator, upgraded, sends its binary over SFTP
// when it links, keeps the node's older server while agents live on it (they are
// listed, read, typed into — none lost, none unreachable), and restarts the server on
// its own version once the last has ended; a new agent then runs on the new server.
func TestNodeOlderVersionUpgraded(t *testing.T) {
	c := newCoord(t)
	newBin := c.bin
	c.bin = oldBuild(t)
	c.start()
	n := c.node()
	c.trust(n)
	c.addNode("big", n.Port())
	ctx := context.Background()
	oldVersion := c.show("big").Version
	if oldVersion != "v0.0.1-old" {
		t.Fatalf("the older node says it runs orcr %q", oldVersion)
	}
	for i := range 2 {
		if _, err := c.cl.Run(ctx, wire.RunParams{Path: fmt.Sprintf("up/a%d", i), Node: "big", Argv: []string{"sh", "-c", "echo ready; exec cat"}}); err != nil {
			t.Fatal(err)
		}
	}
	ids := map[string]string{}
	for i := range 2 {
		p := fmt.Sprintf("up/a%d", i)
		ids[p] = c.waitAgent(p, func(a wire.Agent) bool { return a.State.Live() && a.State != wire.StateStarting }, "on the old node").ID
	}
	oldPID := n.ServerPID()
	if got, want := sum(t, filepath.Join(n.Home, "bin", "orcr")), sum(t, c.bin); got != want {
		t.Fatal("the node does not run the older build")
	}

	// The coordinator is upgraded.
	c.srv.Stop()
	c.bin = newBin
	c.start()
	if !wait.Until(30*time.Second, func() bool { return sum(t, filepath.Join(n.Home, "bin", "orcr")) == sum(t, newBin) }) {
		t.Fatal("the new binary was not sent to the node")
	}
	v := c.waitState("big", nodeapi.StateUp)
	if v.Version != oldVersion || n.ServerPID() != oldPID {
		t.Fatalf("a node with live agents was restarted: version %s (was %s), server %d (was %d)", v.Version, oldVersion, n.ServerPID(), oldPID)
	}
	for p, id := range ids {
		a := c.waitAgent(p, func(a wire.Agent) bool { return a.State.Live() && !a.Unreachable }, "live on the old server")
		if a.ID != id {
			t.Fatalf("%s is %s, was %s", p, a.ID, id)
		}
		if err := c.cl.Send(ctx, wire.SendParams{Target: p, Text: "typed-" + a.Path[3:], Enter: true}); err != nil {
			t.Fatal(err)
		}
		if !wait.Until(20*time.Second, func() bool {
			r, err := c.cl.Read(ctx, wire.ReadParams{Target: p})
			return err == nil && strings.Contains(r.Text, "typed-"+a.Path[3:])
		}) {
			t.Fatalf("%s on the old server was not typed into and read", p)
		}
	}
	out, _ := c.orcr("doctor")
	if !strings.Contains(out, "it is replaced once its 2 agents end") {
		t.Fatalf("doctor does not say the node waits for its agents:\n%s", out)
	}

	// The last agent ends: the server is restarted on this version.
	if _, err := c.cl.Kill(ctx, wire.KillParams{Glob: "up/**"}); err != nil {
		t.Fatal(err)
	}
	if !wait.Until(60*time.Second, func() bool {
		v := c.show("big")
		return v.State == nodeapi.StateUp && v.Version != oldVersion
	}) {
		v := c.show("big")
		t.Fatalf("the node was not restarted on the new version: %s %s (%s)", v.State, v.Version, v.Error)
	}
	if p := n.ServerPID(); p == oldPID || p == 0 {
		t.Fatalf("the node's server is %d (was %d)", p, oldPID)
	}
	for p := range ids {
		if a := c.agent(p); a.State != wire.StateKilled {
			t.Fatalf("%s after its kill and the upgrade: %s (%s)", p, a.State, a.StateReason)
		}
	}
	if _, err := c.cl.Run(ctx, wire.RunParams{Path: "up/new", Node: "big", Argv: []string{"sh", "-c", "exec cat"}}); err != nil {
		t.Fatal(err)
	}
	c.waitAgent("up/new", func(a wire.Agent) bool { return a.State.Live() && a.State != wire.StateStarting }, "on the upgraded node")
	c.cl.Kill(ctx, wire.KillParams{Glob: "up/**"})
}

// A link cut for a long time, without waiting for it: the node is down (every
// attempt to link again refused) while the backoff climbs to its cap (1 s here,
// $ORCR_NODE_BACKOFF_MAX; 15 s by default) and the node's gc.retain (3 s here, a
// week by default) prunes the events the coordinator missed. During the cut the node
// is unreachable with its attempts and next try shown, its agents unreachable, not
// lost; the node's server restarts. When it returns the replay cannot cover the gap: the agents' records are
// re-read (the one that blocked meanwhile is blocked), the one the node collected
// is lost saying why — no end is made up for it — and the gap is reported
// (node.events_gap, node show's gap).
func TestNodeLongCutReplayGap(t *testing.T) {
	c := newCoord(t)
	c.env = append(c.env, "ORCR_NODE_BACKOFF_MAX=1s")
	c.start()
	n := sshnode.Start(t, sshnode.Options{Authorized: c.key.PublicKey(), Env: baseEnv(),
		Config: "[limits]\nglobal = 500\nmin_free_mb = 0\n[gc]\nretain = \"3s\"\n"})
	c.trust(n)
	c.addNode("big", n.Port())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	info, err := c.cl.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := c.cl.Subscribe(ctx, wire.SubscribeParams{After: info.LastSeq})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []wire.Event
	go func() {
		for ev := range evs {
			mu.Lock()
			seen = append(seen, ev)
			mu.Unlock()
		}
	}()
	if _, err := c.cl.Run(ctx, wire.RunParams{Path: "cut/asks", Node: "big", Argv: []string{"sh", "-c", `read x; echo "QUESTION: go on?"; read y`}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.cl.Run(ctx, wire.RunParams{Path: "cut/ends", Node: "big", Argv: []string{"sh", "-c", "read x; exit 3"}}); err != nil {
		t.Fatal(err)
	}
	asks := c.waitAgent("cut/asks", func(a wire.Agent) bool { return a.State.Live() && a.State != wire.StateStarting }, "asks running")
	ends := c.waitAgent("cut/ends", func(a wire.Agent) bool { return a.State.Live() && a.State != wire.StateStarting }, "ends running")

	n.Down()
	c.waitState("big", nodeapi.StateUnreachable)
	nc := nodeClient(t, n) // the test's own way to the node, beside the cut link
	if err := nc.Send(ctx, wire.SendParams{Target: asks.ID, Text: "x", Enter: true}); err != nil {
		t.Fatal(err)
	}
	if !wait.Until(20*time.Second, func() bool { a, err := nc.Get(ctx, asks.ID); return err == nil && a.State == wire.StateBlocked }) {
		t.Fatal("asks did not block on the node")
	}
	if err := nc.Send(ctx, wire.SendParams{Target: ends.ID, Text: "x", Enter: true}); err != nil {
		t.Fatal(err)
	}
	// The node collects what ended more than 3 s ago and prunes the older events.
	gcEnv := append(baseEnv(), "ORCR_HOME="+n.Home, "HOME="+n.Home, "XDG_CONFIG_HOME="+filepath.Join(n.Home, "cfg"))
	if !wait.Until(30*time.Second, func() bool {
		cmd := exec.Command(filepath.Join(n.Home, "bin", "orcr"), "gc")
		cmd.Env = gcEnv
		cmd.Run()
		_, err := nc.Get(ctx, ends.ID)
		return errors.Is(err, wire.ErrNotFound)
	}) {
		t.Fatal("the node did not collect the agent that ended")
	}
	// The node's server restarts during the cut (the link starts it again on its
	// return): what it replays then comes from its store, where the events after the
	// coordinator's cursor are pruned — as when more than its in-memory window
	// (4,096 events) went by.
	n.StopServer(t)
	// Meanwhile: unreachable, the backoff at its cap, the agents unreachable.
	v := c.show("big")
	if v.State != nodeapi.StateUnreachable || v.Attempts < 4 || v.RetryAt == nil || time.Until(*v.RetryAt) > 1500*time.Millisecond {
		t.Fatalf("during the cut: %s, %d attempts, retry at %v", v.State, v.Attempts, v.RetryAt)
	}
	if out, _ := c.orcr("node", "show", "big"); !strings.Contains(out, "attempts failed; next") || !strings.Contains(out, "unreachable, not lost") {
		t.Fatalf("node show during the cut:\n%s", out)
	}
	for _, p := range []string{"cut/asks", "cut/ends"} {
		if a := c.agent(p); !a.Unreachable || !a.State.Live() {
			t.Fatalf("%s during the cut: %s unreachable=%v", p, a.State, a.Unreachable)
		}
	}

	n.Up()
	c.waitState("big", nodeapi.StateUp)
	a := c.waitAgent("cut/asks", func(a wire.Agent) bool { return a.State == wire.StateBlocked && !a.Unreachable }, "asks re-read as blocked")
	if a.ID != asks.ID {
		t.Fatal("asks changed id")
	}
	e := c.waitAgent("cut/ends", func(a wire.Agent) bool { return a.State.Terminal() }, "ends settled")
	if e.State != wire.StateLost || !strings.Contains(e.StateReason, "node big no longer has it") || e.ExitCode != nil {
		t.Fatalf("ends after the gap: %s (%s) exit %v", e.State, e.StateReason, e.ExitCode)
	}
	v = c.show("big")
	if !strings.Contains(v.Gap, "were not replayed") || v.Attempts != 0 || v.RetryAt != nil {
		t.Fatalf("node after the return: gap %q, attempts %d, retry %v", v.Gap, v.Attempts, v.RetryAt)
	}
	if !wait.Until(10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, ev := range seen {
			if ev.Event == nodeapi.EventNodeGap && ev.Data["node"] == "big" {
				return true
			}
		}
		return false
	}) {
		t.Fatal("no node.events_gap event")
	}
	mu.Lock()
	for _, ev := range seen {
		if ev.Agent != nil && ev.Agent.ID == ends.ID && ev.Event == wire.EventAgentState && ev.To == wire.StateExited {
			t.Errorf("an end the coordinator never saw was made up: %+v", ev)
		}
	}
	mu.Unlock()
	c.cl.Kill(context.Background(), wire.KillParams{Glob: "cut/**"})
}

// Thirty-four agents on one real sshd whose MaxSessions is 10: every call and the
// event stream ride streamlocal channels of the link's one connection, never a
// session each, so all 34 are spawned, listed, read, typed into and killed, and the
// events of each reach the coordinator; two `orcr agent attach` at once (each its own
// `ssh -t`) each show their own agent and typing through each reaches it; a detach of
// one leaves the other's view, and when both end no attach session stays and no agent
// is lost.
func TestRealSSHMaxSessions34Agents(t *testing.T) {
	needRealSSH(t)
	if _, err := exec.LookPath("ssh"); err != nil {
		clis.Missingf(t, "ssh (openssh-client) is missing")
	}
	c := newCoord(t)
	c.start()
	tag := fmt.Sprintf("%04x", (os.Getpid()+1)%0x10000)
	rn := startRealNode(t, tag, 3, c.key.PublicKey())
	os.WriteFile(filepath.Join(c.user, ".ssh", "known_hosts"), []byte(rn.knownHostsLine()+"\n"), 0o600)
	if out, err := c.orcr("node", "add", "big", rn.user+"@"+rn.addr, "--identity-file", filepath.Join(c.user, ".ssh", "id_ed25519")); err != nil || !strings.Contains(out, " up") {
		t.Fatalf("node add: %v\n%s", err, out)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	info, err := c.cl.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := c.cl.Subscribe(ctx, wire.SubscribeParams{After: info.LastSeq})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	states := map[string]map[wire.State]bool{} // path → states its events reached
	go func() {
		for ev := range evs {
			if ev.Agent != nil && ev.Event == wire.EventAgentState {
				mu.Lock()
				if states[ev.Agent.Path] == nil {
					states[ev.Agent.Path] = map[wire.State]bool{}
				}
				states[ev.Agent.Path][ev.To] = true
				mu.Unlock()
			}
		}
	}()
	const N = 34
	path := func(i int) string { return fmt.Sprintf("many/a%02d", i) }
	for i := range N {
		if _, err := c.cl.Run(ctx, wire.RunParams{Path: path(i), Node: "big", Argv: []string{"sh", "-c", fmt.Sprintf("echo ready-%02d; exec cat", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if !wait.Until(180*time.Second, func() bool {
		as, _ := c.cl.List(ctx, wire.ListParams{Glob: "many/**"})
		up := 0
		for _, a := range as {
			if a.Node == "big" && a.State.Live() && a.State != wire.StateStarting && !a.Unreachable {
				up++
			}
		}
		return up == N
	}) {
		as, _ := c.cl.List(ctx, wire.ListParams{Glob: "many/**"})
		for _, a := range as {
			t.Logf("%s %s %s %s", a.Path, a.Node, a.State, a.StateReason)
		}
		t.Fatalf("not all %d agents run on the node (%s: %s)", N, c.show("big").State, c.show("big").Error)
	}
	tab, err := c.cl.ListTable(ctx, wire.ListParams{Glob: "many/**", Table: true, Node: "big"})
	if err != nil || len(tab.Rows) != N {
		t.Fatalf("agent ls --node big: %v, %d rows", err, len(tab.Rows))
	}
	for i := range N {
		if err := c.cl.Send(ctx, wire.SendParams{Target: path(i), Text: fmt.Sprintf("typed-%02d", i), Enter: true}); err != nil {
			t.Fatalf("send %s: %v", path(i), err)
		}
	}
	for i := range N {
		if !wait.Until(30*time.Second, func() bool {
			r, err := c.cl.Read(ctx, wire.ReadParams{Target: path(i)})
			return err == nil && strings.Contains(r.Text, fmt.Sprintf("ready-%02d", i)) && strings.Contains(r.Text, fmt.Sprintf("typed-%02d", i))
		}) {
			r, err := c.cl.Read(ctx, wire.ReadParams{Target: path(i)})
			t.Fatalf("read %s: %v %q", path(i), err, r.Text)
		}
	}

	// Two attaches at once, each an ssh -t of its own, in a tmux of the test's.
	sock := filepath.Join(serve.ShortDir(t, "orcr-at-"), "t.sock")
	defer exec.Command("tmux", "-S", sock, "kill-server").Run()
	envArgs := []string{"env", "-u", "TMUX"}
	envArgs = append(envArgs, c.env...)
	for i, p := range []string{path(3), path(17)} {
		cmdline := append(append([]string{}, envArgs...), c.bin, "agent", "attach", p)
		args := []string{"-S", sock}
		if i == 0 {
			args = append(args, "new-session", "-d", "-x", "120", "-y", "30", "-s", "at")
		} else {
			args = append(args, "new-window", "-t", "at")
		}
		// The window stays after the attach ends, saying how it ended.
		run(t, "tmux", append(args, shellJoin(cmdline)+"; echo attach ended: $?; sleep 600")...)
	}
	// Both attaches are connected at once, each an ssh connection of its own with one
	// session, as clients of the node's tmux, each in a session of its own grouped with
	// orcr's: each terminal shows its own agent.
	nodeSock := filepath.Join(rn.stateHome(), "tmux.sock")
	clients := func() int {
		out, _ := exec.Command("tmux", "-S", nodeSock, "list-clients", "-F", "#{client_control_mode}").CombinedOutput()
		return strings.Count(string(out), "0\n")
	}
	sessions := func() string {
		out, _ := exec.Command("tmux", "-S", nodeSock, "list-sessions", "-F", "#{session_name}").CombinedOutput()
		return strings.TrimSpace(string(out))
	}
	screen := func(w string) string {
		out, _ := exec.Command("tmux", "-S", sock, "capture-pane", "-p", "-t", "at:"+w).CombinedOutput()
		return string(out)
	}
	if !wait.Until(30*time.Second, func() bool { return clients() == 2 }) {
		t.Fatalf("%d attach clients on the node, want 2; the first attach's window:\n%s", clients(), screen("0"))
	}
	for w, i := range map[string]int{"0": 3, "1": 17} {
		if !wait.Until(30*time.Second, func() bool {
			s := screen(w)
			return strings.Contains(s, fmt.Sprintf("typed-%02d", i)) && strings.Contains(s, "orcr · "+path(i)+" · detach: prefix d")
		}) {
			t.Fatalf("the attach of %s does not show it:\n%s", path(i), screen(w))
		}
		// One agent's name only: no window list naming every agent.
		if s := screen(w); strings.Count(s, "many/") != 1 {
			t.Fatalf("the attach of %s names other agents:\n%s", path(i), s)
		}
	}
	run(t, "tmux", "-S", sock, "send-keys", "-t", "at:1", "via-attach-17", "Enter")
	run(t, "tmux", "-S", sock, "send-keys", "-t", "at:0", "via-attach-03", "Enter")
	for _, i := range []int{3, 17} {
		if !wait.Until(30*time.Second, func() bool {
			r, err := c.cl.Read(ctx, wire.ReadParams{Target: path(i)})
			return err == nil && strings.Contains(r.Text, fmt.Sprintf("via-attach-%02d", i))
		}) {
			t.Fatalf("typing through the attach of %s did not reach it", path(i))
		}
	}
	if r, _ := c.cl.Read(ctx, wire.ReadParams{Target: path(17)}); strings.Contains(r.Text, "via-attach-03") {
		t.Fatalf("the typing of the attach of %s reached %s:\n%s", path(3), path(17), r.Text)
	}
	if v := c.show("big"); v.State != nodeapi.StateUp {
		t.Fatalf("the link with two attaches open: %s (%s)", v.State, v.Error)
	}
	// Detach the first: the second keeps its view; then kill the second's terminal
	// (its ssh dies): no attach session is left on the node, and no agent is lost.
	run(t, "tmux", "-S", sock, "send-keys", "-t", "at:0", "C-b", "d")
	if !wait.Until(30*time.Second, func() bool { return clients() == 1 && strings.Contains(screen("0"), "attach ended: 0") }) {
		t.Fatalf("after a detach: %d clients; the detached terminal:\n%s", clients(), screen("0"))
	}
	run(t, "tmux", "-S", sock, "send-keys", "-t", "at:1", "after-detach-17", "Enter")
	if !wait.Until(30*time.Second, func() bool {
		s := screen("1")
		return strings.Contains(s, "after-detach-17") && strings.Contains(s, "orcr · "+path(17)+" · ")
	}) {
		t.Fatalf("the attach of %s after the other detached:\n%s", path(17), screen("1"))
	}
	run(t, "tmux", "-S", sock, "kill-window", "-t", "at:1")
	if !wait.Until(30*time.Second, func() bool { return clients() == 0 && sessions() == "orcr" }) {
		t.Fatalf("after the attaches ended, the node's tmux has %d clients and sessions %q", clients(), sessions())
	}
	as, err := c.cl.List(ctx, wire.ListParams{Glob: "many/**"})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range as {
		if !a.State.Live() || a.Unreachable {
			t.Fatalf("after the attaches ended, %s is %s (%s)", a.Path, a.State, a.StateReason)
		}
	}
	if len(as) != N {
		t.Fatalf("after the attaches ended, %d agents, want %d", len(as), N)
	}
	exec.Command("tmux", "-S", sock, "kill-server").Run()

	if _, err := c.cl.Kill(ctx, wire.KillParams{Glob: "many/**"}); err != nil {
		t.Fatal(err)
	}
	if !wait.Until(60*time.Second, func() bool {
		as, _ := c.cl.List(ctx, wire.ListParams{Glob: "many/**", All: true})
		k := 0
		for _, a := range as {
			if a.State == wire.StateKilled {
				k++
			}
		}
		return k == N
	}) {
		t.Fatal("not all 34 were killed")
	}
	if !wait.Until(30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for i := range N {
			st := states[path(i)]
			if !st[wire.StateKilled] || len(st) < 2 {
				return false
			}
		}
		return true
	}) {
		mu.Lock()
		t.Fatalf("the coordinator's events do not have each agent's states: %v", states)
	}
	if v := c.show("big"); v.State != nodeapi.StateUp {
		t.Fatalf("the node after 34 agents: %s (%s)", v.State, v.Error)
	}
}

func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// A node whose user cannot write its home: node add says so with the fix, node ls
// shows the node unreachable with the same reason under the table, and doctor names
// it as the node's problem; nothing is spawned there.
func TestRealSSHNodeHomeNotWritable(t *testing.T) {
	needRealSSH(t)
	c := newCoord(t)
	c.start()
	tag := fmt.Sprintf("%04x", (os.Getpid()+2)%0x10000)
	rn := startRealNode(t, tag, 4, c.key.PublicKey())
	// The user's home belongs to root now: the user can read it, not write it.
	run(t, "chown", "root:root", rn.home)
	run(t, "chmod", "0755", rn.home)
	os.WriteFile(filepath.Join(c.user, ".ssh", "known_hosts"), []byte(rn.knownHostsLine()+"\n"), 0o600)
	out, _ := c.orcr("node", "add", "ro", rn.user+"@"+rn.addr)
	want := rn.user + " cannot write " + rn.stateHome() + "; give the user a writable home"
	if !strings.Contains(out, want) {
		t.Fatalf("node add of a node whose home is not writable:\n%s", out)
	}
	out, err := c.orcr("node", "ls")
	if err != nil || !strings.Contains(out, "ro\tunreachable") && !strings.Contains(out, "unreachable") || !strings.Contains(out, "ro: node ro: "+want) {
		t.Fatalf("node ls:\n%s", out)
	}
	out, _ = c.orcr("doctor")
	if !strings.Contains(out, "PROBLEM: not reachable (unreachable): node ro: "+want) {
		t.Fatalf("doctor:\n%s", out)
	}
	if _, err := c.cl.Run(context.Background(), wire.RunParams{Path: "ro/x", Node: "ro", Argv: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	c.waitAgent("ro/x", func(a wire.Agent) bool { return a.State == wire.StateQueued }, "held in the queue")
	if !wait.Until(20*time.Second, func() bool {
		out, _ = c.orcr("queue")
		return strings.Contains(out, "node ro is unreachable") && strings.Contains(out, "cannot write")
	}) {
		t.Fatalf("orcr queue does not say why ro/x waits:\n%s", out)
	}
	c.cl.Kill(context.Background(), wire.KillParams{Glob: "ro/**"})
}

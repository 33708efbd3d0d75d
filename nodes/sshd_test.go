package nodes_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"orcr/testutil/clis"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"orcr/core/wire"
	nodeapi "orcr/nodes/api"
	"orcr/testutil/proc"
	"orcr/testutil/wait"
)

// realNode is a real OpenSSH sshd in a network namespace of its own, reached over a
// veth link on 198.18.0.0/15, serving one user of its own with their own home.
type realNode struct {
	ns, veth, user, home, addr string
	hostKey                    gossh.PublicKey
	sshd                       *exec.Cmd
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func needRealSSH(t *testing.T) {
	clis.NeedRoot(t, "make network namespaces and users")
	for _, p := range []string{"/usr/sbin/sshd", "/usr/sbin/ip", "/usr/sbin/useradd"} {
		if _, err := os.Stat(p); err != nil {
			clis.Missingf(t, "%s is missing (scripts/test installs openssh-server)", p)
		}
	}
}

// startRealNode makes namespace i of the test: user, home, veth, sshd. Lines of
// sshdConfig come first in its sshd_config (sshd takes the first value it reads).
func startRealNode(t *testing.T, tag string, i int, authorized gossh.PublicKey, sshdConfig ...string) *realNode {
	t.Helper()
	n := &realNode{ns: fmt.Sprintf("orcr%s%d", tag, i), veth: fmt.Sprintf("ov%s%d", tag, i), user: fmt.Sprintf("on%s%d", tag, i)}
	base, err := os.MkdirTemp("", "orcr-sshd-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(base, 0o755)
	n.home = filepath.Join(base, "home")
	run(t, "useradd", "-m", "-d", n.home, "-s", "/bin/sh", n.user)
	run(t, "usermod", "-p", "*", n.user) // no password, but not locked: sshd lets a locked account in by no key
	t.Cleanup(func() {
		n.stopServer()
		n.killUserProcesses()
		exec.Command("userdel", "-r", "-f", n.user).Run()
		os.RemoveAll(base)
	})
	// 198.18.<i>.1 here, 198.18.<i>.2 in the namespace.
	host, peer := fmt.Sprintf("198.18.%d.1", i), fmt.Sprintf("198.18.%d.2", i)
	n.addr = peer
	run(t, "ip", "netns", "add", n.ns)
	t.Cleanup(func() {
		if n.sshd != nil && n.sshd.Process != nil {
			n.sshd.Process.Kill()
			n.sshd.Wait()
		}
		exec.Command("ip", "link", "del", n.veth).Run()
		exec.Command("ip", "netns", "del", n.ns).Run()
	})
	run(t, "ip", "link", "add", n.veth, "type", "veth", "peer", "name", n.veth+"p")
	run(t, "ip", "link", "set", n.veth+"p", "netns", n.ns)
	run(t, "ip", "addr", "add", host+"/30", "dev", n.veth)
	run(t, "ip", "link", "set", n.veth, "up")
	run(t, "ip", "netns", "exec", n.ns, "ip", "addr", "add", peer+"/30", "dev", n.veth+"p")
	run(t, "ip", "netns", "exec", n.ns, "ip", "link", "set", n.veth+"p", "up")
	run(t, "ip", "netns", "exec", n.ns, "ip", "link", "set", "lo", "up")

	etc := filepath.Join(base, "etc")
	os.MkdirAll(etc, 0o755)
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	blk, _ := gossh.MarshalPrivateKey(priv, "")
	os.WriteFile(filepath.Join(etc, "host_ed25519"), pem.EncodeToMemory(blk), 0o600)
	sg, _ := gossh.NewSignerFromKey(priv)
	n.hostKey = sg.PublicKey()
	os.WriteFile(filepath.Join(etc, "authorized_keys"), gossh.MarshalAuthorizedKey(authorized), 0o644)
	cfg := strings.Join(append(sshdConfig, ""), "\n") + fmt.Sprintf(`ListenAddress %s
Port 22
HostKey %s
PidFile %s
AuthorizedKeysFile %s
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin no
AllowUsers %s
MaxSessions 10
AllowStreamLocalForwarding yes
Subsystem sftp internal-sftp
`, peer, filepath.Join(etc, "host_ed25519"), filepath.Join(etc, "sshd.pid"), filepath.Join(etc, "authorized_keys"), n.user)
	os.WriteFile(filepath.Join(etc, "sshd_config"), []byte(cfg), 0o644)
	os.MkdirAll("/run/sshd", 0o755)
	n.sshd = exec.Command("ip", "netns", "exec", n.ns, "/usr/sbin/sshd", "-D", "-e", "-f", filepath.Join(etc, "sshd_config"))
	var out strings.Builder
	n.sshd.Stdout, n.sshd.Stderr = &out, &out
	n.sshd.WaitDelay = time.Second // its sessions' processes hold the output open
	if err := n.sshd.Start(); err != nil {
		t.Fatal(err)
	}
	if !wait.Until(10*time.Second, func() bool {
		c := exec.Command("ip", "netns", "exec", n.ns, "sh", "-c", "exec 3<>/dev/tcp/"+peer+"/22 2>/dev/null")
		return exec.Command("bash", "-c", "exec 3<>/dev/tcp/"+peer+"/22").Run() == nil || c.Run() == nil
	}) {
		t.Fatalf("sshd in %s does not listen: %s", n.ns, out.String())
	}
	return n
}

// stateHome is the node user's ORCR_HOME.
func (n *realNode) stateHome() string { return filepath.Join(n.home, ".local", "state", "orcr") }

func (n *realNode) serverPID() int {
	b, err := os.ReadFile(filepath.Join(n.stateHome(), "orcr.lock"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid <= 0 || proc.Gone(pid) {
		return 0
	}
	return pid
}

func (n *realNode) stopServer() {
	if pid := n.serverPID(); pid != 0 {
		syscall.Kill(pid, syscall.SIGTERM)
		if !wait.Until(10*time.Second, func() bool { return proc.Gone(pid) }) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	exec.Command("tmux", "-S", filepath.Join(n.stateHome(), "tmux.sock"), "kill-server").Run()
}

// killUserProcesses ends what still runs as the node's user (its sshd sessions), by
// pid: the user is the test's own.
func (n *realNode) killUserProcesses() {
	u, err := user.Lookup(n.user)
	if err != nil {
		return
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat("/proc/"+e.Name(), &st) == nil && strconv.Itoa(int(st.Uid)) == u.Uid {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func (n *realNode) knownHostsLine() string {
	return n.addr + " " + strings.TrimSpace(string(gossh.MarshalAuthorizedKey(n.hostKey)))
}

// addRealNodes makes the coordinator's known_hosts hold the real nodes' host keys
// (theirs alone) and adds nodes[i] as names[i], with extra flags of node add; each
// must be up.
func (c *coord) addRealNodes(nodes []*realNode, names []string, extra ...string) {
	c.t.Helper()
	kh := ""
	for _, n := range nodes {
		kh += n.knownHostsLine() + "\n"
	}
	os.WriteFile(filepath.Join(c.user, ".ssh", "known_hosts"), []byte(kh), 0o600)
	for i, n := range nodes {
		args := append([]string{"node", "add", names[i], n.user + "@" + n.addr}, extra...)
		if out, err := c.orcr(args...); err != nil || !strings.Contains(out, " up") {
			c.t.Fatalf("node add %s: %v\n%s", names[i], err, out)
		}
	}
}

// Twelve scripted agents on two real sshd nodes (each its own user and home, in its
// own network namespace), node caps 3 and a global cap of 6; one node's link is cut
// for 10 s and the other's server killed with -9 while they run. Every agent ends
// once, exited 0, on the node it was given; the caps are never exceeded, on the
// coordinator nor on the nodes; the coordinator's events are contiguous and no agent
// changes after its end. A node whose host key changed is refused.
func TestRealSSHNodes(t *testing.T) {
	needRealSSH(t)
	c := newCoord(t)
	cfg := filepath.Join(filepath.Dir(c.home), "cfg", "orcr", "config.toml")
	os.WriteFile(cfg, []byte("[limits]\nglobal = 6\nmin_free_mb = 0\n"), 0o600)
	c.start()
	tag := fmt.Sprintf("%04x", os.Getpid()%0x10000)
	nodes := []*realNode{startRealNode(t, tag, 1, c.key.PublicKey()), startRealNode(t, tag, 2, c.key.PublicKey())}
	names := []string{"a", "b"}
	c.addRealNodes(nodes, names, "--max-agents", "3")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Watch the coordinator's events: live agents per node and in all, seqs in order.
	evs, err := c.cl.Subscribe(ctx, wire.SubscribeParams{After: 0})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	liveOn := map[string]map[string]bool{"a": {}, "b": {}}
	ended := map[string]int{}
	var faults []string
	var lastSeq uint64
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for ev := range evs {
			mu.Lock()
			if lastSeq != 0 && ev.Seq != lastSeq+1 {
				faults = append(faults, fmt.Sprintf("event seq %d after %d", ev.Seq, lastSeq))
			}
			lastSeq = ev.Seq
			if a := ev.Agent; a != nil && a.Node != "" {
				if ended[a.ID] > 0 && ev.Event == wire.EventAgentState {
					faults = append(faults, fmt.Sprintf("%s changed to %s after its end", a.Path, a.State))
				}
				switch {
				case a.State.Terminal():
					delete(liveOn[a.Node], a.ID)
					if ev.Event == wire.EventAgentState {
						ended[a.ID]++
					}
				case a.State == wire.StateStarting || a.State.Live():
					liveOn[a.Node][a.ID] = true
				}
				total := len(liveOn["a"]) + len(liveOn["b"])
				if len(liveOn[a.Node]) > 3 || total > 6 {
					faults = append(faults, fmt.Sprintf("caps exceeded: a %d, b %d", len(liveOn["a"]), len(liveOn["b"])))
				}
			}
			mu.Unlock()
		}
	}()
	for i := 0; i < 12; i++ {
		node := names[i%2]
		if _, err := c.cl.Run(ctx, wire.RunParams{Path: fmt.Sprintf("fleet/%s%02d", node, i), Node: node,
			Argv: []string{"sh", "-c", "echo start; sleep 6; echo end"}}); err != nil {
			t.Fatal(err)
		}
	}
	// Cut a's link for 10 s once agents run there; kill b's server with -9.
	c.waitAgent("fleet/a00", live, "a00 running")
	t.Log("fleet running; cutting a's link, killing b's server")
	run(t, "ip", "link", "set", nodes[0].veth, "down")
	c.waitState("a", nodeapi.StateUnreachable)
	pid := nodes[1].serverPID()
	syscall.Kill(pid, syscall.SIGKILL)
	time.Sleep(10 * time.Second) // the length of the cut is the scenario, not a wait for a condition
	run(t, "ip", "link", "set", nodes[0].veth, "up")
	c.waitState("a", nodeapi.StateUp)
	c.waitState("b", nodeapi.StateUp)
	t.Log("both nodes up again")
	if !wait.Until(120*time.Second, func() bool {
		as, _ := c.cl.List(ctx, wire.ListParams{Glob: "fleet/**"})
		done := 0
		for _, a := range as {
			if a.State.Terminal() {
				done++
			}
		}
		return done == 12
	}) {
		as, _ := c.cl.List(ctx, wire.ListParams{Glob: "fleet/**"})
		for _, a := range as {
			t.Logf("%s %s %s unreachable=%v", a.Path, a.Node, a.State, a.Unreachable)
		}
		t.Fatal("the fleet did not end")
	}
	as, _ := c.cl.List(ctx, wire.ListParams{Glob: "fleet/**", All: true})
	if len(as) != 12 {
		t.Fatalf("%d records for 12 agents", len(as))
	}
	for _, a := range as {
		if a.State != wire.StateExited || a.ExitCode == nil || *a.ExitCode != 0 {
			t.Errorf("%s on %s: %s (%s) exit %v", a.Path, a.Node, a.State, a.StateReason, a.ExitCode)
		}
	}
	// On each node: each of its agents once, under the coordinator's id.
	for i, n := range nodes {
		lctx, lcancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(lctx, "runuser", "-u", n.user, "--", "env", "HOME="+n.home, "ORCR_HOME="+n.stateHome(),
			filepath.Join(n.stateHome(), "bin", "orcr"), "agent", "ls", "--all", "--json")
		cmd.WaitDelay = time.Second
		out, err := cmd.CombinedOutput()
		lcancel()
		if err != nil {
			t.Fatalf("node %s agent ls: %v %s", names[i], err, out)
		}
		for _, a := range as {
			if k := strings.Count(string(out), `"id": "`+a.ID+`"`); a.Node == names[i] && k != 1 {
				t.Errorf("node %s has %s (%s) %d times", names[i], a.Path, a.ID, k)
			}
		}
	}
	cancel()
	<-watched
	mu.Lock()
	defer mu.Unlock()
	for _, f := range faults {
		t.Error(f)
	}
	for _, a := range as {
		if ended[a.ID] != 1 {
			t.Errorf("%s ended %d times", a.Path, ended[a.ID])
		}
	}

	// The host key of a changes: a link made again refuses it.
	other, _ := gossh.NewSignerFromKey(func() ed25519.PrivateKey { _, p, _ := ed25519.GenerateKey(rand.Reader); return p }())
	os.WriteFile(filepath.Join(c.user, ".ssh", "known_hosts"),
		[]byte(nodes[0].addr+" "+strings.TrimSpace(string(gossh.MarshalAuthorizedKey(other.PublicKey())))+"\n"), 0o600)
	out, _ := c.orcr("node", "add", "a2", nodes[0].user+"@"+nodes[0].addr)
	if !strings.Contains(out, "REMOTE HOST IDENTIFICATION HAS CHANGED") {
		t.Fatalf("a changed key on a real sshd:\n%s", out)
	}
}

// A node whose sshd refuses the forward its agents call orcr through
// (AllowStreamLocalForwarding local: the link's own channels to the node's socket
// are allowed, the remote forward is not) is linked (up), and node add, node ls, node
// show and doctor say its agents cannot call orcr and why; a run's agent (which must
// call orcr) is refused there with that reason, and another agent runs there. A node
// whose sshd forwards nothing (DisableForwarding yes) cannot be linked at all, and
// says why.
func TestRealSSHForwardingRefused(t *testing.T) {
	needRealSSH(t)
	c := newCoord(t)
	c.start()
	tag := fmt.Sprintf("%04x", (os.Getpid()+3)%0x10000)
	rn := startRealNode(t, tag, 5, c.key.PublicKey(), "AllowStreamLocalForwarding local")
	off := startRealNode(t, tag, 6, c.key.PublicKey(), "DisableForwarding yes")
	os.WriteFile(filepath.Join(c.user, ".ssh", "known_hosts"), []byte(rn.knownHostsLine()+"\n"+off.knownHostsLine()+"\n"), 0o600)
	const warning = "agents cannot call orcr: the node's sshd refused streamlocal forwarding (set AllowStreamLocalForwarding yes, and no DisableForwarding, in its sshd_config)"
	out, err := c.orcr("node", "add", "nofw", rn.user+"@"+rn.addr, "--identity-file", filepath.Join(c.user, ".ssh", "id_ed25519"))
	if err != nil || !strings.Contains(out, " up") || !strings.Contains(out, "node nofw: warning: "+warning) {
		t.Fatalf("node add: %v\n%s", err, out)
	}
	if v := c.show("nofw"); v.State != nodeapi.StateUp || v.Warning != warning {
		t.Fatalf("node: %s, warning %q", v.State, v.Warning)
	}
	out, _ = c.orcr("node", "show", "nofw")
	if !strings.Contains(out, "  warning:    "+warning) {
		t.Fatalf("node show:\n%s", out)
	}
	out, err = c.orcr("node", "ls")
	if err != nil || !strings.Contains(out, "nofw: warning: "+warning) {
		t.Fatalf("node ls: %v\n%s", err, out)
	}
	out, _ = c.orcr("doctor")
	if !strings.Contains(out, warning) {
		t.Fatalf("doctor does not say the node's agents cannot call orcr:\n%s", out)
	}
	out, err = c.orcr("agent", "run", "runs/demo/coder-1", "--node", "nofw", "--", "sh", "-c", "exec cat")
	if err == nil || !strings.Contains(out, "runs/demo/coder-1 must call orcr from its pane and node nofw cannot let it: the node's sshd refused streamlocal forwarding") {
		t.Fatalf("a run's coder on a node without the forward: %v\n%s", err, out)
	}
	if as, _ := c.cl.List(context.Background(), wire.ListParams{Glob: "runs/**", All: true}); len(as) != 0 {
		t.Fatalf("the refused coder has a record: %+v", as)
	}
	if out, err := c.orcr("agent", "run", "plain/x", "--node", "nofw", "--", "sh", "-c", "echo plain-up; exec cat"); err != nil {
		t.Fatalf("a plain agent on a node without the forward: %v\n%s", err, out)
	}
	if !wait.Until(60*time.Second, func() bool {
		r, err := c.cl.Read(context.Background(), wire.ReadParams{Target: "plain/x"})
		return err == nil && strings.Contains(r.Text, "plain-up")
	}) {
		t.Fatal("the plain agent does not run on the node")
	}
	c.cl.Kill(context.Background(), wire.KillParams{Glob: "plain/**"})

	out, _ = c.orcr("node", "add", "off", off.user+"@"+off.addr, "--identity-file", filepath.Join(c.user, ".ssh", "id_ed25519"))
	if !strings.Contains(out, "its sshd refuses to connect to orcr's socket") || !strings.Contains(out, "DisableForwarding yes") {
		t.Fatalf("node add of a node whose sshd forwards nothing:\n%s", out)
	}
}

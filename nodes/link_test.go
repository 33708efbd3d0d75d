package nodes_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"orcr/core/wire"
	nodeapi "orcr/nodes/api"
	"orcr/testutil/apiclient"
	"orcr/testutil/serve"
	"orcr/testutil/sshnode"
	"orcr/testutil/testbin"
	"orcr/testutil/wait"
)

// coord is a coordinator: a real `orcr serve` whose user has an SSH key and a
// known_hosts of its own (HOME is the test's).
type coord struct {
	t    testing.TB
	bin  string
	env  []string
	home string // ORCR_HOME
	user string // HOME
	key  gossh.Signer
	srv  *serve.Server
	cl   *apiclient.Client
}

func baseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "ORCR_") || strings.HasPrefix(kv, "XDG_") || strings.HasPrefix(kv, "TMUX") ||
			strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "SSH_AUTH_SOCK=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func newCoord(t testing.TB) *coord {
	t.Helper()
	c := &coord{t: t, bin: testbin.Build(t, "orcr")}
	dir := serve.ShortDir(t, "orcr-c-")
	c.home, c.user = filepath.Join(dir, "h"), filepath.Join(dir, "u")
	if err := os.MkdirAll(filepath.Join(c.user, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	blk, err := gossh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.user, ".ssh", "id_ed25519"), pem.EncodeToMemory(blk), 0o600); err != nil {
		t.Fatal(err)
	}
	c.key, _ = gossh.NewSignerFromKey(priv)
	cfg := filepath.Join(dir, "cfg", "orcr")
	os.MkdirAll(cfg, 0o700)
	os.WriteFile(filepath.Join(cfg, "config.toml"), []byte("[limits]\nglobal = 500\nmin_free_mb = 0\n"), 0o600)
	c.env = append(baseEnv(), "ORCR_HOME="+c.home, "HOME="+c.user, "XDG_CONFIG_HOME="+filepath.Join(dir, "cfg"),
		"ORCR_HOST=tmux", "ORCR_NODE_KEEPALIVE=300ms")
	serve.KillTmux(t, filepath.Join(c.home, "tmux.sock"))
	return c
}

func (c *coord) start() {
	c.t.Helper()
	c.srv = serve.Start(c.t, serve.Options{Bin: c.bin, Env: c.env})
	c.cl = c.srv.Client()
}

func (c *coord) node() *sshnode.Node {
	c.t.Helper()
	return sshnode.Start(c.t, sshnode.Options{Authorized: c.key.PublicKey(), Env: baseEnv()})
}

func (c *coord) trust(n *sshnode.Node) {
	c.t.Helper()
	f, err := os.OpenFile(filepath.Join(c.user, ".ssh", "known_hosts"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		c.t.Fatal(err)
	}
	fmt.Fprintln(f, n.KnownHostsLine())
	f.Close()
}

// orcr runs the CLI as the coordinator's user.
func (c *coord) orcr(args ...string) (string, error) {
	cmd := exec.Command(c.bin, args...)
	cmd.Env = c.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (c *coord) show(name string) nodeapi.Node {
	c.t.Helper()
	r, err := wire.Call(context.Background(), c.cl, nodeapi.Show, nodeapi.NameParams{Name: name})
	if err != nil {
		c.t.Fatal(err)
	}
	return r.Node
}

func (c *coord) waitState(name, state string) nodeapi.Node {
	c.t.Helper()
	var n nodeapi.Node
	if !wait.Until(30*time.Second, func() bool { n = c.show(name); return n.State == state }) {
		c.t.Fatalf("node %s is %s (%s), want %s", name, n.State, n.Error, state)
	}
	return n
}

func sum(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// A node added by user@host:port is linked over one SSH connection: its orcr server
// is started on demand with this binary sent over SFTP, and a hundred calls after
// that open no session — they are streamlocal channels.
func TestNodeAddLinksOverOneConnection(t *testing.T) {
	c := newCoord(t)
	c.start()
	n := c.node()
	c.trust(n)
	out, err := c.orcr("node", "add", "big", fmt.Sprintf("root@127.0.0.1:%d", n.Port()), "--max-agents", "3")
	if err != nil || !strings.Contains(out, "node big: root@127.0.0.1") || !strings.Contains(out, "up") {
		t.Fatalf("node add: %v\n%s", err, out)
	}
	if got, want := sum(t, filepath.Join(n.Home, "bin", "orcr")), sum(t, c.bin); got != want {
		t.Fatalf("the node's orcr is %s, the coordinator's %s", got, want)
	}
	if n.ServerPID() == 0 {
		t.Fatal("no orcr server runs on the node")
	}
	sessions := n.Sessions.Load()
	if sessions > 3 {
		t.Fatalf("linking opened %d sessions; want at most 3 (look, start, sftp)", sessions)
	}
	// Keepalives and hellos for a while: over the one channel, never a session.
	seen := *c.show("big").LastSeen
	if !wait.Until(10*time.Second, func() bool { ls := c.show("big").LastSeen; return ls != nil && ls.Sub(seen) > time.Second }) {
		t.Fatal("the link's hellos stopped")
	}
	if got := n.Sessions.Load(); got != sessions {
		t.Fatalf("the link opened %d sessions after linking", got-sessions)
	}
	out, err = c.orcr("node", "ls")
	if err != nil {
		t.Fatal(err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "NAME") || !strings.Contains(lines[0], "AGENTS/CAP") ||
		!strings.Contains(lines[1], "big") || !strings.Contains(lines[1], "up") || !strings.Contains(lines[1], "0/3") || !strings.Contains(lines[1], "MB") {
		t.Fatalf("node ls:\n%s", out)
	}
	out, err = c.orcr("node", "show", "big", "--json")
	var r nodeapi.Result
	if err != nil || json.Unmarshal([]byte(out), &r) != nil || r.Node.Version == "" || r.Node.LastSeen == nil || r.Node.MaxAgents != 3 {
		t.Fatalf("node show: %v\n%s", err, out)
	}
	// Drain, undo, and rm.
	if out, err := c.orcr("node", "drain", "big"); err != nil || c.show("big").State != nodeapi.StateDraining {
		t.Fatalf("drain: %v %s, state %s", err, out, c.show("big").State)
	}
	if out, err := c.orcr("node", "drain", "--undo", "big"); err != nil || c.show("big").State != nodeapi.StateUp {
		t.Fatalf("drain --undo: %v %s", err, out)
	}
	out, err = c.orcr("node", "add", "big", "root@127.0.0.1")
	if err == nil || !strings.Contains(out, "already exists") {
		t.Fatalf("a second big: %v %s", err, out)
	}
	if out, err := c.orcr("node", "rm", "big"); err != nil {
		t.Fatalf("rm: %v %s", err, out)
	}
	if out, err := c.orcr("node", "ls"); err != nil || !strings.Contains(out, "no nodes") {
		t.Fatalf("ls after rm: %v %s", err, out)
	}
}

// A changed host key is refused with ssh's warning; an unknown one is refused unless
// the node is added with --accept-new-host-key, which keeps it in orcr's own file.
func TestNodeHostKeys(t *testing.T) {
	c := newCoord(t)
	c.start()
	n := c.node()
	out, err := c.orcr("node", "add", "new", fmt.Sprintf("root@127.0.0.1:%d", n.Port()))
	if !strings.Contains(out, "Host key verification failed") || !strings.Contains(out, "--accept-new-host-key") {
		t.Fatalf("an unknown host key: %v\n%s", err, out)
	}
	if st := c.show("new").State; st != nodeapi.StateUnreachable {
		t.Fatalf("a node with an unknown key is %s", st)
	}
	c.orcr("node", "rm", "new")
	out, err = c.orcr("node", "add", "new", fmt.Sprintf("root@127.0.0.1:%d", n.Port()), "--accept-new-host-key")
	if err != nil || !strings.Contains(out, "up") {
		t.Fatalf("--accept-new-host-key: %v\n%s", err, out)
	}
	own, _ := os.ReadFile(filepath.Join(c.home, "nodes", "known_hosts"))
	if !strings.Contains(string(own), strings.Fields(n.KnownHostsLine())[2]) {
		t.Fatalf("orcr's known_hosts does not keep the key: %q", own)
	}
	c.orcr("node", "rm", "new")

	// Another machine answers at the address: its key is not the one known.
	other := c.node()
	line := strings.Replace(other.KnownHostsLine(), fmt.Sprint(other.Port()), fmt.Sprint(n.Port()), 1)
	os.WriteFile(filepath.Join(c.user, ".ssh", "known_hosts"), []byte(line+"\n"), 0o600)
	os.Remove(filepath.Join(c.home, "nodes", "known_hosts"))
	out, _ = c.orcr("node", "add", "changed", fmt.Sprintf("root@127.0.0.1:%d", n.Port()), "--accept-new-host-key")
	if !strings.Contains(out, "REMOTE HOST IDENTIFICATION HAS CHANGED") || !strings.Contains(out, "known_hosts:1") {
		t.Fatalf("a changed host key:\n%s", out)
	}
}

// A node whose link is black-holed turns unreachable, and up again when it returns; a
// node whose server is killed is linked again to a server the link starts anew.
func TestNodeUnreachableAndBack(t *testing.T) {
	c := newCoord(t)
	c.start()
	n := c.node()
	c.trust(n)
	if out, err := c.orcr("node", "add", "big", fmt.Sprintf("root@127.0.0.1:%d", n.Port())); err != nil {
		t.Fatal(err, out)
	}
	c.waitState("big", nodeapi.StateUp)
	n.Pause()
	got := c.waitState("big", nodeapi.StateUnreachable)
	if got.Error == "" {
		t.Fatal("unreachable without a reason")
	}
	n.Resume()
	c.waitState("big", nodeapi.StateUp)
	pid := n.ServerPID()
	n.KillServer9(t)
	if !wait.Until(30*time.Second, func() bool { p := n.ServerPID(); return p != 0 && p != pid }) {
		t.Fatal("the node's server was not started again")
	}
	c.waitState("big", nodeapi.StateUp)
}

// nodeClient dials the node's own server directly (the test's view of the node).
func nodeClient(t testing.TB, n *sshnode.Node) *apiclient.Client {
	t.Helper()
	cl, err := apiclient.Dial(context.Background(), filepath.Join(n.Home, "orcr.sock"), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

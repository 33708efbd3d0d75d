// Package sshnode is a node for tests of orcr's nodes (DESIGN §14): an in-process SSH
// server (gliderlabs/ssh) that runs commands with sh, serves SFTP and forwards
// direct-streamlocal channels to unix sockets, fronting a node's own ORCR_HOME, where
// the coordinator's link starts a real `orcr serve`. Its clients reach it through a
// proxy the test can black-hole (Pause) or cut, and it counts the sessions opened, so
// a test can hold the link to one connection and a few sessions.
package sshnode

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	glssh "github.com/gliderlabs/ssh"
	"github.com/pkg/sftp"
	gossh "golang.org/x/crypto/ssh"

	"orcr/core/socket"
	"orcr/testutil/proc"
	"orcr/testutil/serve"
	"orcr/testutil/wait"
)

// Options say how to start a node.
type Options struct {
	// Authorized is the client key allowed in.
	Authorized gossh.PublicKey
	// Env is the base environment of the node's commands (PATH, LANG…); the node adds
	// ORCR_HOME and XDG_CONFIG_HOME.
	Env []string
	// Config is the node's config.toml (default: limits that let tests spawn freely).
	Config string
}

// Node is one running test node.
type Node struct {
	Addr    string // where clients connect (the proxy)
	Home    string // the node's ORCR_HOME
	HostKey gossh.Signer

	Sessions atomic.Int64 // sessions opened (commands, SFTP)
	Channels atomic.Int64 // streamlocal channels opened
	Forwards atomic.Int64 // streamlocal forwards asked for (remote forwards of a unix socket)

	srv    *glssh.Server
	ln     net.Listener // the SSH server's
	proxy  net.Listener
	mu     sync.Mutex
	cond   *sync.Cond
	paused bool
	down   bool // new connections are closed at once (Down)
	conns  map[net.Conn]bool
}

// Start starts a node; it and the orcr server and tmux its clients start in its home
// are stopped when the test ends.
func Start(t testing.TB, o Options) *Node {
	t.Helper()
	home := serve.ShortDir(t, "orcr-n-")
	cfgDir := filepath.Join(home, "cfg", "orcr")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := o.Config
	if cfg == "" {
		cfg = "[limits]\nglobal = 500\nmin_free_mb = 0\n"
	}
	if err := os.WriteFile(filepath.Join(cfgDir, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	hk, err := gossh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	n := &Node{Home: home, HostKey: hk, conns: map[net.Conn]bool{}}
	n.cond = sync.NewCond(&n.mu)
	env := append(append([]string{}, o.Env...), "ORCR_HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, "cfg"), "HOME="+home)
	n.srv = &glssh.Server{
		Handler: func(s glssh.Session) {
			n.Sessions.Add(1)
			cmd := exec.Command("sh", "-c", s.RawCommand())
			cmd.Env = env
			cmd.Dir = home
			cmd.Stdin, cmd.Stdout, cmd.Stderr = s, s, s.Stderr()
			code := 0
			if err := cmd.Run(); err != nil {
				code = 255
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					code = ee.ExitCode()
				}
			}
			s.Exit(code)
		},
		SubsystemHandlers: map[string]glssh.SubsystemHandler{"sftp": func(s glssh.Session) {
			n.Sessions.Add(1)
			srv, err := sftp.NewServer(s)
			if err != nil {
				return
			}
			_ = srv.Serve()
			srv.Close()
		}},
		PublicKeyHandler: func(_ glssh.Context, key glssh.PublicKey) bool {
			return o.Authorized != nil && glssh.KeysEqual(key, o.Authorized)
		},
		ChannelHandlers: map[string]glssh.ChannelHandler{
			"session":                        glssh.DefaultSessionHandler,
			"direct-streamlocal@openssh.com": n.streamlocal,
		},
		RequestHandlers: map[string]glssh.RequestHandler{
			"keepalive@openssh.com":           func(glssh.Context, *glssh.Server, *gossh.Request) (bool, []byte) { return true, nil },
			"streamlocal-forward@openssh.com": n.streamlocalForward,
		},
	}
	n.srv.AddHostKey(hk)
	if n.ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	go n.srv.Serve(n.ln)
	if n.proxy, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	n.Addr = n.proxy.Addr().String()
	go n.proxyLoop()
	serve.KillTmux(t, filepath.Join(home, "tmux.sock"))
	t.Cleanup(func() {
		// The SSH server first, so no link starts the orcr server again once stopped.
		n.proxy.Close()
		n.srv.Close()
		n.Resume()
		n.Cut()
		n.StopServer(t)
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(home, "serve.out"))
			l, _ := os.ReadFile(filepath.Join(home, "orcr.log"))
			t.Logf("node %s: serve.out:\n%s\norcr.log (tail):\n%s", home, b, tail(string(l), 4000))
		}
	})
	return n
}

// Port is the port clients connect to.
func (n *Node) Port() int {
	_, p, _ := net.SplitHostPort(n.Addr)
	v, _ := strconv.Atoi(p)
	return v
}

// KnownHostsLine is the node's host key as a known_hosts line.
func (n *Node) KnownHostsLine() string {
	return fmt.Sprintf("[127.0.0.1]:%d %s", n.Port(), strings.TrimSpace(string(gossh.MarshalAuthorizedKey(n.HostKey.PublicKey()))))
}

func (n *Node) streamlocal(_ *glssh.Server, _ *gossh.ServerConn, nc gossh.NewChannel, _ glssh.Context) {
	var p struct {
		Path      string
		Reserved  string
		Reserved2 uint32
	}
	if err := gossh.Unmarshal(nc.ExtraData(), &p); err != nil {
		nc.Reject(gossh.ConnectionFailed, "bad streamlocal payload")
		return
	}
	c, err := net.Dial("unix", p.Path)
	if err != nil {
		nc.Reject(gossh.ConnectionFailed, err.Error())
		return
	}
	ch, reqs, err := nc.Accept()
	if err != nil {
		c.Close()
		return
	}
	n.Channels.Add(1)
	go gossh.DiscardRequests(reqs)
	go func() {
		io.Copy(ch, c)
		ch.CloseWrite()
		ch.Close()
	}()
	go func() {
		io.Copy(c, ch)
		if uc, ok := c.(*net.UnixConn); ok {
			uc.CloseWrite()
		}
	}()
}

// streamlocalForward is OpenSSH's streamlocal-forward@openssh.com: listen on a unix
// socket here (refused when the path exists, as sshd's StreamLocalBindUnlink no) and
// send each connection to it back as a forwarded-streamlocal channel, until the SSH
// connection ends.
func (n *Node) streamlocalForward(ctx glssh.Context, _ *glssh.Server, req *gossh.Request) (bool, []byte) {
	var p struct{ SocketPath string }
	if err := gossh.Unmarshal(req.Payload, &p); err != nil {
		return false, nil
	}
	conn, ok := ctx.Value(glssh.ContextKeyConn).(*gossh.ServerConn)
	if !ok {
		return false, nil
	}
	// 0600 from its first instant, without the process's umask changing under the
	// test's servers (socket.ListenPrivate says why).
	ln, err := socket.ListenPrivate(p.SocketPath)
	if err != nil {
		return false, nil
	}
	n.Forwards.Add(1)
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				ch, reqs, err := conn.OpenChannel("forwarded-streamlocal@openssh.com",
					gossh.Marshal(&struct{ SocketPath, Reserved string }{p.SocketPath, ""}))
				if err != nil {
					return
				}
				go gossh.DiscardRequests(reqs)
				done := make(chan struct{})
				go func() {
					io.Copy(ch, c)
					ch.CloseWrite()
					close(done)
				}()
				io.Copy(c, ch)
				if uc, ok := c.(*net.UnixConn); ok {
					uc.CloseWrite()
				}
				<-done
				ch.Close()
			}()
		}
	}()
	return true, nil
}

func (n *Node) proxyLoop() {
	for {
		c, err := n.proxy.Accept()
		if err != nil {
			return
		}
		n.mu.Lock()
		down := n.down
		n.mu.Unlock()
		if down {
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", n.ln.Addr().String())
		if err != nil {
			c.Close()
			continue
		}
		n.mu.Lock()
		n.conns[c], n.conns[up] = true, true
		n.mu.Unlock()
		go n.pipe(c, up)
		go n.pipe(up, c)
	}
}

// pipe copies src to dst, holding the bytes while the node is paused.
func (n *Node) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		k, err := src.Read(buf)
		if k > 0 {
			n.mu.Lock()
			for n.paused {
				n.cond.Wait()
			}
			n.mu.Unlock()
			if _, werr := dst.Write(buf[:k]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Pause black-holes the link: bytes are held, connections stay open.
func (n *Node) Pause() {
	n.mu.Lock()
	n.paused = true
	n.mu.Unlock()
}

// Resume lets the held bytes through.
func (n *Node) Resume() {
	n.mu.Lock()
	n.paused = false
	n.cond.Broadcast()
	n.mu.Unlock()
}

// Down takes the node off the network for as long as the test says: every connection
// is closed and new ones are closed as soon as they come (a link that cannot be made
// again, attempt after attempt), until Up.
func (n *Node) Down() {
	n.mu.Lock()
	n.down = true
	n.mu.Unlock()
	n.Cut()
}

// Up ends Down.
func (n *Node) Up() {
	n.mu.Lock()
	n.down = false
	n.mu.Unlock()
}

// Cut closes every connection through the proxy.
func (n *Node) Cut() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for c := range n.conns {
		c.Close()
		delete(n.conns, c)
	}
}

// ServerPID is the pid of the orcr server running in the node's home (0: none).
func (n *Node) ServerPID() int {
	b, err := os.ReadFile(filepath.Join(n.Home, "orcr.lock"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid <= 0 || proc.Gone(pid) {
		return 0
	}
	return pid
}

// KillServer9 kills the node's orcr server with SIGKILL and waits until it is gone.
func (n *Node) KillServer9(t testing.TB) {
	t.Helper()
	pid := n.ServerPID()
	if pid == 0 {
		t.Fatal("sshnode: no orcr server runs on the node")
	}
	syscall.Kill(pid, syscall.SIGKILL)
	if !wait.Until(10*time.Second, func() bool { return proc.Gone(pid) }) {
		t.Fatalf("sshnode: server %d still there after SIGKILL", pid)
	}
}

// StopServer ends the node's orcr server (SIGTERM, then SIGKILL).
func (n *Node) StopServer(t testing.TB) {
	pid := n.ServerPID()
	if pid == 0 {
		return
	}
	syscall.Kill(pid, syscall.SIGTERM)
	if !wait.Until(10*time.Second, func() bool { return proc.Gone(pid) }) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

package nodes

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"

	"orcr/core/socket"
	"orcr/core/wire"
	nodeapi "orcr/nodes/api"
)

// The link to one node (DESIGN §14): one SSH connection, over which every call to the
// node's `orcr serve` and its event stream travel as direct-streamlocal channels to its
// socket — never one SSH session per call, so sshd's MaxSessions does not bound how
// many agents a node runs. Sessions are used only to look at the node when linking
// (one), to start its server when it is not running (one) and to send it this binary
// over SFTP when its version differs (one). Keepalives go every Keepalive; a node
// whose sshd or server stops answering is unreachable (its agents with it, never
// lost), and the link is made again with backoff.

// link is one node's link. Its loop owns the connection; the fields under mu are what
// others read.
type link struct {
	s    *Service
	name string
	ctx  context.Context
	stop func()
	done chan struct{}

	firstOnce sync.Once
	first     chan struct{} // closed when the first attempt ended

	mu       sync.Mutex
	state    string
	err      string
	hello    nodeapi.HelloResult
	lastSeen time.Time
	client   *ssh.Client
	tr       *socket.Client
	home     string // the node's ORCR_HOME
	ours     string // this binary's SHA-256, as the node was linked ("" on a node of another platform, which keeps its own)
	// gen counts connections: a caller holding a transport of an older one knows the
	// link was made again.
	gen uint64
	// attempts failed in a row, and when the next is made (while unreachable).
	attempts  int
	retryAt   time.Time
	gap       string // what the last return could not replay
	noForward string // why its agents cannot call orcr ("": they can; upstream.go)
}

// startLinkLocked starts n's link (s.mu held).
func (s *Service) startLinkLocked(n *node) *link {
	ctx, cancel := context.WithCancel(s.ctx)
	l := &link{s: s, name: n.spec.Name, ctx: ctx, done: make(chan struct{}), first: make(chan struct{}), state: nodeapi.StateConnecting}
	l.stop = func() { cancel(); <-l.done }
	n.link = l
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(l.done)
		l.loop()
	}()
	return l
}

func (l *link) waitFirst(ctx context.Context) {
	select {
	case <-l.first:
	case <-ctx.Done():
	}
}

// fill sets the link's fields of v.
func (l *link) fill(v *nodeapi.Node) {
	l.mu.Lock()
	defer l.mu.Unlock()
	v.State, v.Error = l.state, l.err
	h := l.hello
	v.Agents, v.FreeMB, v.TotalMB, v.Version, v.OS, v.Arch = h.Agents, h.FreeMB, h.TotalMB, h.Version, h.OS, h.Arch
	if h.Landlock != nil {
		ll := *h.Landlock
		v.Landlock = &ll
	}
	if !l.lastSeen.IsZero() {
		t := l.lastSeen.UTC()
		v.LastSeen = &t
	}
	if l.state != nodeapi.StateUp && !l.retryAt.IsZero() {
		t := l.retryAt.UTC()
		v.Attempts, v.RetryAt = l.attempts, &t
	}
	v.Gap = l.gap
	if l.state == nodeapi.StateUp || l.state == nodeapi.StateDraining {
		v.Warning = l.noForward
	}
}

// transport is the node's server as a wire.Transport, or an error saying why the
// node cannot be reached now.
func (l *link) transport() (*socket.Client, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tr == nil || l.state == nodeapi.StateUnreachable || l.state == nodeapi.StateConnecting {
		why := l.err
		if why == "" {
			why = "the link is being made"
		}
		return nil, &wire.Error{Code: wire.CodeUnavailable, Message: fmt.Sprintf("node %s is %s: %s", l.name, l.state, why)}
	}
	return l.tr, nil
}

func (l *link) set(state, why string) {
	l.mu.Lock()
	from := l.state
	l.state, l.err = state, why
	l.mu.Unlock()
	if from != state {
		l.s.log.Info("node link", "node", l.name, "from", from, "to", state, "why", why)
		if state == nodeapi.StateUp && l.s.k != nil {
			l.s.k.Readmit() // agents pinned to it may start
		}
		if l.s.k != nil {
			l.s.k.Publish(context.Background(), wire.Event{Event: nodeapi.EventNodeState,
				Data: map[string]any{"node": l.name, "from": from, "to": state, "error": why}})
		}
	}
}

// keepaliveFloor is the least time a keepalive is given to be answered.
const keepaliveFloor = 3 * time.Second

const (
	backoffMin = 250 * time.Millisecond
	backoffMax = 15 * time.Second
)

func (l *link) loop() {
	backoff := backoffMin
	for l.ctx.Err() == nil {
		err := l.connect(l.ctx)
		l.firstOnce.Do(func() {
			if err != nil {
				l.set(nodeapi.StateUnreachable, err.Error())
			}
			close(l.first)
		})
		if err != nil {
			if l.ctx.Err() != nil {
				break
			}
			l.mu.Lock()
			l.attempts++
			l.retryAt = time.Now().Add(backoff)
			l.mu.Unlock()
			l.set(nodeapi.StateUnreachable, err.Error())
			select {
			case <-l.ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, l.s.opts.BackoffMax)
			continue
		}
		backoff = backoffMin
		l.mu.Lock()
		l.attempts, l.retryAt = 0, time.Time{}
		l.mu.Unlock()
		fctx, fcancel := context.WithCancel(l.ctx)
		l.mu.Lock()
		tr, seq := l.tr, l.hello.LastSeq
		l.mu.Unlock()
		followed := make(chan struct{})
		go func() {
			defer close(followed)
			l.s.follow(fctx, l, tr, seq)
		}()
		err = l.watch(l.ctx)
		fcancel()
		l.drop()
		<-followed
		if errors.Is(err, errUpgrade) && l.ctx.Err() == nil {
			l.s.log.Info("node server of another version has no agents left; linking again to restart it", "node", l.name)
			l.set(nodeapi.StateConnecting, err.Error())
			continue
		}
		if l.ctx.Err() == nil {
			l.set(nodeapi.StateUnreachable, err.Error())
			l.s.unreachable(context.Background(), l.name)
		}
		if l.ctx.Err() != nil {
			break
		}
		l.set(nodeapi.StateUnreachable, err.Error())
	}
	l.drop()
}

// drop closes the connection.
func (l *link) drop() {
	l.mu.Lock()
	c, tr := l.client, l.tr
	l.client, l.tr = nil, nil
	l.mu.Unlock()
	if tr != nil {
		tr.Close()
	}
	if c != nil {
		c.Close()
	}
}

// linkTimeout bounds one attempt's dial, handshake and setup.
const linkTimeout = 20 * time.Second

// connect makes the link: SSH, a look at the node, its binary, its server, the hello.
func (l *link) connect(ctx context.Context) error {
	l.s.mu.Lock()
	nd := l.s.nodes[l.name]
	var spec nodeapi.Node
	if nd != nil {
		spec = nd.spec
	}
	l.s.mu.Unlock()
	if nd == nil {
		return errors.New("node removed")
	}
	t, err := l.s.resolve(spec)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, linkTimeout)
	defer cancel()
	client, err := l.s.dialSSH(ctx, spec, t)
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			client.Close()
		}
	}()
	look, err := lookAt(ctx, client)
	if err != nil {
		return err
	}
	if look.home == "" {
		return fmt.Errorf("node %s: could not read its home directory", l.name)
	}
	if !look.tmux {
		return fmt.Errorf("node %s has no tmux: install it there (apt-get install tmux); agents on a node live in its tmux", l.name)
	}
	if !look.writable {
		return fmt.Errorf("node %s: %s cannot write %s; give the user a writable home (or set ORCR_HOME for it)", l.name, t.User, look.home)
	}
	bin := look.home + "/bin/orcr"
	sock := socket.SocketPath(look.home)
	if len(sock)+len(upstreamSock)-len("orcr.sock") > 100 {
		return fmt.Errorf("node %s: its socket path %s is too long for a unix socket; give the user a shorter ORCR_HOME", l.name, sock)
	}
	ours, err := l.s.selfSum()
	if err != nil {
		return err
	}
	// A node of another platform runs its own orcr: this binary cannot run there, so
	// it is never sent; the node's is used when it speaks this protocol (server).
	foreign := look.goos != runtime.GOOS || look.goarch != runtime.GOARCH
	if look.sum != ours && foreign && look.sum == "" {
		return fmt.Errorf("node %s is %s/%s and this orcr is %s/%s: install orcr %s for %s/%s there at %s (the coordinator sends its own binary only to a node of its platform)",
			l.name, look.goos, look.goarch, runtime.GOOS, runtime.GOARCH, Version(), look.goos, look.goarch, bin)
	}
	if look.sum != ours && !foreign {
		if err := sendBinary(ctx, client, l.s.opts.Self, bin); err != nil {
			return fmt.Errorf("node %s: send orcr: %w", l.name, err)
		}
		l.s.log.Info("sent orcr to node", "node", l.name, "path", bin)
	}
	dial := func(ctx context.Context) (net.Conn, error) {
		type res struct {
			c   net.Conn
			err error
		}
		ch := make(chan res, 1)
		go func() {
			c, err := client.Dial("unix", sock)
			ch <- res{c, err}
		}()
		select {
		case r := <-ch:
			return r.c, r.err
		case <-ctx.Done():
			go func() {
				if r := <-ch; r.c != nil {
					r.c.Close()
				}
			}()
			return nil, ctx.Err()
		}
	}
	tr, hello, err := l.server(ctx, client, dial, look, bin, ours, foreign)
	if err != nil {
		return err
	}
	noForward := l.forward(client, look.home)
	ok = true
	l.mu.Lock()
	l.noForward = noForward
	if foreign {
		ours = "" // its own binary is kept: never an upgrade to wait for (watch)
	}
	l.client, l.tr, l.hello, l.lastSeen, l.home, l.ours = client, tr, hello, time.Now(), look.home, ours
	l.gen++
	l.mu.Unlock()
	l.set(nodeapi.StateUp, "")
	return nil
}

// server reaches the node's orcr server, starting it when it is not running and
// restarting it when it runs another binary and has no live agent (one with agents
// keeps its version until they end: a restart must never cost an agent). On a node
// of another platform (foreign) its own orcr is kept, and refused unless it speaks
// this protocol.
func (l *link) server(ctx context.Context, client *ssh.Client, dial func(context.Context) (net.Conn, error), look lookResult, bin, ours string, foreign bool) (*socket.Client, nodeapi.HelloResult, error) {
	started := false
	for attempt := 0; ; attempt++ {
		tr, err := socket.DialVia(ctx, "node "+l.name, dial, "")
		if err == nil {
			h, herr := wire.Call(ctx, tr, nodeapi.Hello, wire.Empty{})
			if herr == nil && foreign && h.Wire != protocol() {
				tr.Close()
				return nil, h, fmt.Errorf("node %s is %s/%s and runs orcr %s, which speaks protocol %d; this orcr %s speaks protocol %d and sends its binary only to a node of its own platform (%s/%s): "+
					"install orcr %s for %s/%s there at %s", l.name, look.goos, look.goarch, h.Version, h.Wire, Version(), protocol(), runtime.GOOS, runtime.GOARCH,
					Version(), look.goos, look.goarch, bin)
			}
			if herr == nil && h.Wire != protocol() && (h.Agents > 0 || started) {
				// Its agents would be lost to a restart; this orcr cannot talk to them.
				// The link tries again with backoff, and replaces the server once they
				// have ended there.
				tr.Close()
				return nil, h, fmt.Errorf("node %s runs orcr %s (protocol %d) with %d live agents and this orcr %s speaks protocol %d: "+
					"its server is replaced by this version once they end there (ssh to it and end them, or wait)", l.name, h.Version, h.Wire, h.Agents, Version(), protocol())
			}
			if herr == nil && !foreign && h.Binary != ours && h.Agents == 0 && !started {
				// An idle server of another version: stop it, start this one.
				tr.Close()
				l.s.log.Info("restart node server on this version", "node", l.name, "pid", h.PID, "was", h.Version)
				if err := runRemote(ctx, client, fmt.Sprintf("kill %d 2>/dev/null; i=0; while kill -0 %d 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done", h.PID, h.PID)); err != nil {
					return nil, h, fmt.Errorf("node %s: stop its older server: %w", l.name, err)
				}
				continue
			}
			if herr != nil {
				tr.Close()
				var we *wire.Error
				if errors.As(herr, &we) && we.Code == wire.CodeUnknownMethod {
					return nil, h, fmt.Errorf("node %s runs an orcr without nodes (no node.hello); it will be replaced once its agents end", l.name)
				}
				return nil, h, fmt.Errorf("node %s: hello: %w", l.name, herr)
			}
			return tr, h, nil
		}
		if ctx.Err() != nil {
			return nil, nodeapi.HelloResult{}, fmt.Errorf("node %s: its orcr server did not come up: %w", l.name, err)
		}
		if !started {
			started = true
			if err := startServer(ctx, client, look, bin); err != nil {
				return nil, nodeapi.HelloResult{}, fmt.Errorf("node %s: start orcr serve: %w", l.name, err)
			}
		} else if attempt%20 == 19 {
			// Started 2 s ago and still not reached: when its socket is there, the
			// node's sshd is what refuses (it says "open failed" either way).
			sock := socket.SocketPath(look.home)
			if runRemote(ctx, client, "test -S "+shellQuote(sock)) == nil {
				return nil, nodeapi.HelloResult{}, fmt.Errorf("node %s: its sshd refuses to connect to orcr's socket %s, which is there: "+
					"streamlocal forwarding is off (AllowStreamLocalForwarding no, or DisableForwarding yes, in its sshd_config); "+
					"the link needs AllowStreamLocalForwarding yes (or local; its agents call orcr only with yes): %w", l.name, sock, err)
			}
		}
		select {
		case <-ctx.Done():
			return nil, nodeapi.HelloResult{}, fmt.Errorf("node %s: its orcr server did not come up: %w", l.name, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// watch keeps the link: a keepalive to sshd and a hello to the server each interval;
// it returns why the link ended.
func (l *link) watch(ctx context.Context) error {
	every := l.s.opts.Keepalive
	l.mu.Lock()
	client, tr := l.client, l.tr
	l.mu.Unlock()
	closed := make(chan error, 1)
	go func() { closed <- client.Wait() }()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-closed:
			if err == nil {
				err = errors.New("connection closed")
			}
			return fmt.Errorf("ssh connection lost: %w", err)
		case <-tick.C:
		}
		// A busy node (a fleet of agents starting on two cores) answers slowly; it is
		// unreachable only after keepaliveFloor at least.
		limit := max(2*every, keepaliveFloor)
		kctx, cancel := context.WithTimeout(ctx, limit)
		errc := make(chan error, 1)
		go func() {
			_, _, err := client.SendRequest("keepalive@openssh.com", true, nil)
			errc <- err
		}()
		var err error
		select {
		case err = <-errc:
		case <-kctx.Done():
			err = fmt.Errorf("no answer to a keepalive in %s", limit)
		}
		if err != nil {
			cancel()
			return fmt.Errorf("ssh: %w", err)
		}
		h, err := wire.Call(kctx, tr, nodeapi.Hello, wire.Empty{})
		cancel()
		if err != nil {
			return fmt.Errorf("its orcr server does not answer: %w", err)
		}
		l.mu.Lock()
		l.hello, l.lastSeen = h, time.Now()
		l.mu.Unlock()
		if h.Binary != l.ours && h.Agents == 0 && l.ours != "" {
			// The node's server is of another version and kept only for its agents:
			// the last has ended, so the link is made again, which restarts it on
			// this binary (sent when the link was made).
			return errUpgrade
		}
	}
}

// errUpgrade ends a link whose node server runs another binary and has no live agent
// left: the next link restarts it on this one.
var errUpgrade = errors.New("its server runs another orcr and its agents have ended: restarting it on this version")

// dialSSH makes the SSH connection: known hosts checked, key or agent auth.
func (s *Service) dialSSH(ctx context.Context, spec nodeapi.Node, t target) (*ssh.Client, error) {
	hk, err := s.hostKeys(spec, t)
	if err != nil {
		return nil, err
	}
	auth, closeAgent, err := authMethods(t)
	if err != nil {
		return nil, err
	}
	defer closeAgent()
	cfg := &ssh.ClientConfig{User: t.User, Auth: auth, HostKeyCallback: hk, Timeout: linkTimeout}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", t.hostport())
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", t.hostport(), err)
	}
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	c, chans, reqs, err := ssh.NewClientConn(conn, t.hostport(), cfg)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("ssh %s@%s: %w", t.User, t.hostport(), err)
	}
	conn.SetDeadline(time.Time{})
	return ssh.NewClient(c, chans, reqs), nil
}

// ownKnownHosts is orcr's known_hosts: the keys accepted with --accept-new-host-key.
func (s *Service) ownKnownHosts() string { return filepath.Join(s.opts.Home, "nodes", "known_hosts") }

var knownMu sync.Mutex

// hostKeys checks the host key against ssh's known_hosts (the config's
// UserKnownHostsFile, else ~/.ssh/known_hosts) and orcr's own. An unknown key is
// refused unless the node was added with --accept-new-host-key, which keeps it in
// orcr's file; a changed key is always refused, with ssh's warning.
func (s *Service) hostKeys(spec nodeapi.Node, t target) (ssh.HostKeyCallback, error) {
	files := t.KnownHosts
	if len(files) == 0 {
		files = []string{filepath.Join(s.sshDir(), "known_hosts")}
	}
	files = append(files, s.ownKnownHosts())
	return func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		knownMu.Lock()
		defer knownMu.Unlock()
		var have []string
		for _, f := range files {
			if _, err := os.Stat(f); err == nil {
				have = append(have, f)
			}
		}
		if len(have) > 0 {
			cb, err := knownhosts.New(have...)
			if err != nil {
				return fmt.Errorf("read known hosts: %w", err)
			}
			err = cb(hostname, remote, key)
			if err == nil {
				return nil
			}
			var ke *knownhosts.KeyError
			if !errors.As(err, &ke) {
				return err
			}
			if len(ke.Want) > 0 {
				w := ke.Want[0]
				return fmt.Errorf("WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! IT IS POSSIBLE THAT SOMEONE IS DOING SOMETHING NASTY! "+
					"The %s key sent by %s has fingerprint %s; the key known for it is in %s:%d. Host key verification failed. "+
					"If the node was really reinstalled, remove that line (ssh-keygen -R %s) and link again",
					key.Type(), hostname, ssh.FingerprintSHA256(key), w.Filename, w.Line, knownhosts.Normalize(hostname))
			}
		}
		if !spec.AcceptNewHostKey {
			return fmt.Errorf("no host key for %s is known (%s key %s). Host key verification failed. Check it and add it to ~/.ssh/known_hosts (ssh %s once), or add the node with --accept-new-host-key",
				hostname, key.Type(), ssh.FingerprintSHA256(key), hostname)
		}
		own := s.ownKnownHosts()
		if err := os.MkdirAll(filepath.Dir(own), 0o700); err != nil {
			return err
		}
		f, err := os.OpenFile(own, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return fmt.Errorf("keep host key: %w", err)
		}
		defer f.Close()
		_, err = fmt.Fprintln(f, knownhosts.Line([]string{knownhosts.Normalize(hostname)}, key))
		s.log.Info("accepted a new host key", "node", spec.Name, "host", hostname, "fingerprint", ssh.FingerprintSHA256(key))
		return err
	}, nil
}

// authMethods are the keys of the target's identity files (or ssh's default ones)
// and the keys of ssh-agent ($SSH_AUTH_SOCK).
func authMethods(t target) ([]ssh.AuthMethod, func(), error) {
	var signers []ssh.Signer
	files := t.Identities
	explicit := len(files) > 0
	if !explicit {
		home, _ := os.UserHomeDir()
		for _, n := range []string{"id_ed25519", "id_ecdsa", "id_rsa"} {
			files = append(files, filepath.Join(home, ".ssh", n))
		}
	}
	var keyErr error
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			if explicit && keyErr == nil {
				keyErr = fmt.Errorf("identity file %s: %w", f, err)
			}
			continue
		}
		sg, err := ssh.ParsePrivateKey(b)
		if err != nil {
			var pp *ssh.PassphraseMissingError
			if errors.As(err, &pp) {
				continue // ssh-agent may hold it
			}
			if keyErr == nil {
				keyErr = fmt.Errorf("identity file %s: %w", f, err)
			}
			continue
		}
		signers = append(signers, sg)
	}
	closeAgent := func() {}
	if sock := os.Getenv("SSH_AUTH_SOCK"); sock != "" {
		if conn, err := net.Dial("unix", sock); err == nil {
			ag := agent.NewClient(conn)
			if as, err := ag.Signers(); err == nil {
				signers = append(signers, as...)
			}
			closeAgent = func() { conn.Close() }
		}
	}
	if len(signers) == 0 {
		closeAgent()
		if keyErr != nil {
			return nil, func() {}, keyErr
		}
		return nil, func() {}, errors.New("no SSH key: give --identity-file, or load a key into ssh-agent, or create ~/.ssh/id_ed25519")
	}
	return []ssh.AuthMethod{ssh.PublicKeys(signers...)}, closeAgent, nil
}

// lookResult is what one session learned of the node.
type lookResult struct {
	home         string // the node's ORCR_HOME
	goos, goarch string
	sum          string // sha256 of home/bin/orcr, "" when absent
	tmux         bool
	systemd      bool
	writable     bool
}

// lookScript prints key=value lines about the node; it changes nothing but creating
// the orcr directory's bin.
const lookScript = `h="${ORCR_HOME:-${XDG_STATE_HOME:-$HOME/.local/state}/orcr}"
echo "home=$h"
echo "os=$(uname -s)"
echo "arch=$(uname -m)"
if [ -f "$h/bin/orcr" ]; then echo "sum=$(sha256sum "$h/bin/orcr" | cut -d' ' -f1)"; fi
command -v tmux >/dev/null 2>&1 && echo tmux=1
command -v systemd-run >/dev/null 2>&1 && echo systemd=1
mkdir -p "$h/bin" 2>/dev/null && [ -w "$h/bin" ] && echo writable=1
rm -f "$h/` + upstreamSock + `" 2>/dev/null
exit 0`

func lookAt(ctx context.Context, c *ssh.Client) (lookResult, error) {
	out, err := outputRemote(ctx, c, lookScript)
	if err != nil {
		return lookResult{}, fmt.Errorf("look at the node: %w", err)
	}
	var r lookResult
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "=")
		switch k {
		case "home":
			r.home = v
		case "os":
			r.goos = strings.ToLower(v)
		case "arch":
			r.goarch = goArch(v)
		case "sum":
			r.sum = v
		case "tmux":
			r.tmux = true
		case "systemd":
			r.systemd = true
		case "writable":
			r.writable = true
		}
	}
	return r, nil
}

// goArch names uname -m's machine as Go does.
func goArch(m string) string {
	switch m {
	case "x86_64", "amd64":
		return "amd64"
	case "aarch64", "arm64":
		return "arm64"
	case "i386", "i686":
		return "386"
	case "armv7l", "armv6l":
		return "arm"
	}
	return m
}

// sendBinary copies the orcr binary at local to the node's path over SFTP, under a
// temporary name renamed into place, so a server running the old file is not disturbed.
func sendBinary(ctx context.Context, c *ssh.Client, local, remote string) error {
	sc, err := sftp.NewClient(c)
	if err != nil {
		return fmt.Errorf("sftp: %w", err)
	}
	defer sc.Close()
	stop := context.AfterFunc(ctx, func() { sc.Close() })
	defer stop()
	src, err := os.Open(local)
	if err != nil {
		return err
	}
	defer src.Close()
	tmp := remote + ".new"
	dst, err := sc.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	if _, err := dst.ReadFrom(src); err != nil {
		dst.Close()
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := dst.Close(); err != nil {
		return err
	}
	if err := sc.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err := sc.PosixRename(tmp, remote); err != nil {
		if err := sc.Rename(tmp, remote); err != nil {
			return fmt.Errorf("rename into %s: %w", remote, err)
		}
	}
	return nil
}

// startServer starts the node's `orcr serve` detached from the SSH session, as the
// login user: under `systemd-run --user` where a user manager runs, else in a session
// of its own (setsid), so logging out does not end it.
func startServer(ctx context.Context, c *ssh.Client, look lookResult, bin string) error {
	q := shellQuote
	script := fmt.Sprintf(`export ORCR_HOME=%s
cd "$HOME" 2>/dev/null || cd /
if command -v systemd-run >/dev/null 2>&1 && systemctl --user is-system-running >/dev/null 2>&1; then
  if systemd-run --user --quiet --collect --setenv=ORCR_HOME="$ORCR_HOME" --setenv=PATH="$PATH" %s serve >/dev/null 2>&1; then exit 0; fi
fi
setsid %s serve </dev/null >>"$ORCR_HOME/serve.out" 2>&1 &
exit 0`, q(look.home), q(bin), q(bin))
	return runRemote(ctx, c, script)
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// outputRemote runs script in one session and returns its standard output.
func outputRemote(ctx context.Context, c *ssh.Client, script string) ([]byte, error) {
	sess, err := c.NewSession()
	if err != nil {
		return nil, fmt.Errorf("open a session: %w", err)
	}
	defer sess.Close()
	stop := context.AfterFunc(ctx, func() { sess.Close() })
	defer stop()
	var out, errb bytes.Buffer
	sess.Stdout, sess.Stderr = &out, &errb
	if err := sess.Run("sh -c " + shellQuote(script)); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg != "" {
			return out.Bytes(), fmt.Errorf("%w: %s", err, msg)
		}
		return out.Bytes(), err
	}
	return out.Bytes(), nil
}

func runRemote(ctx context.Context, c *ssh.Client, script string) error {
	_, err := outputRemote(ctx, c, script)
	return err
}

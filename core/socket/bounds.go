package socket

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net"
	"runtime"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"orcr/core/wire"
)

// One client must not be able to take the server down or starve the others (DESIGN §13).
// Before these bounds, 300 idle connections under `ulimit -n 256` ended the server
// ("accept4: too many open files": Serve returned on any accept error), 400 pipelined reads
// on a connection that never read its answers took the server from 36 to 773 MB, and 20,000
// pipelined waits kept it at 181 % CPU.

// Limits bound what clients can hold of the server. Zero fields take the defaults.
type Limits struct {
	// MaxConnections bounds open connections; past it a connection is answered with a
	// too_many_connections error line and closed. The default is also kept under the
	// process's file limit (RLIMIT_NOFILE), leaving room for the agents' own files.
	MaxConnections int
	// MaxInFlight bounds the requests one connection has being answered at once. A
	// connection at the bound is not read until one finishes, so a client pipelining
	// thousands of requests makes the server do at most this many at a time.
	MaxInFlight int
	// MaxUnread bounds the bytes of answers a connection has queued behind the one being
	// written. Past it the client is not reading: the connection is closed and logged. One
	// answer alone is never refused by it (only by wire.MaxAnswer, with answer_too_big).
	MaxUnread int
}

// Defaults.
const (
	DefaultMaxConnections = 16384
	// What one connection can make the server hold is about MaxInFlight answers being
	// built plus MaxUnread waiting: 16 reads of 10,000 lines and 4 MiB stay under 16 MB.
	DefaultMaxInFlight = 16
	DefaultMaxUnread   = 4 << 20
)

// effective fills the defaults and keeps the default MaxConnections under the file limit
// (a configured one is taken as given; past the file limit accepts then fail and back off).
func (l Limits) effective() Limits {
	capToFiles := l.MaxConnections <= 0
	if capToFiles {
		l.MaxConnections = DefaultMaxConnections
	}
	if l.MaxInFlight <= 0 {
		l.MaxInFlight = DefaultMaxInFlight
	}
	if l.MaxUnread <= 0 {
		l.MaxUnread = DefaultMaxUnread
	}
	var rl syscall.Rlimit
	if capToFiles && syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil && rl.Cur > 0 && rl.Cur < 1<<30 {
		reserve := max(64, min(int(rl.Cur)/4, 1024)) // the store, hosts, ptys, logs
		l.MaxConnections = max(8, min(l.MaxConnections, int(rl.Cur)-reserve))
	}
	return l
}

// SetLimits sets the bounds; call it before Serve.
func (s *Server) SetLimits(l Limits) {
	s.lim = l.effective()
}

// Limits reports the bounds in force, as `orcr doctor` shows them.
func (s *Server) Limits() Limits { return s.lim }

// acceptBackoff is how long Serve waits after a failed accept: from 5 ms doubling to 1 s, as
// net/http does. A full file table (EMFILE) clears as connections close; stopping would lose
// every agent of the embedded host.
func acceptBackoff(prev time.Duration) time.Duration {
	if prev == 0 {
		return 5 * time.Millisecond
	}
	return min(2*prev, time.Second)
}

// logEvery rate-limits a repeated log line.
type logEvery struct {
	mu    sync.Mutex
	last  time.Time
	count int
}

// tick counts an occurrence and reports whether to log now, with how many were not logged.
func (l *logEvery) tick(every time.Duration) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.count++
	if time.Since(l.last) < every {
		return false, 0
	}
	n := l.count
	l.last, l.count = time.Now(), 0
	return true, n
}

// refuse answers a connection over the bound with one error line, without waiting on it.
func (s *Server) refuse(c *net.UnixConn) {
	line, _ := json.Marshal(wire.Response{Error: &wire.Error{Code: wire.CodeTooManyConnections,
		Message: "the orcr server has its maximum of connections open; close some (or raise [server] max_connections) and retry"}})
	_ = c.SetWriteDeadline(time.Now().Add(time.Millisecond))
	_, _ = c.Write(append(line, '\n'))
	_ = c.Close()
	if ok, n := s.refusedLog.tick(5 * time.Second); ok {
		s.log.Warn("refused connections over the bound", "max", s.lim.MaxConnections, "refused", n)
	}
}

// acceptError handles a failed accept and reports how long to wait before the next.
func (s *Server) acceptError(err error, prev time.Duration) time.Duration {
	d := acceptBackoff(prev)
	if ok, n := s.acceptLog.tick(5 * time.Second); ok {
		msg := "accept failed; retrying"
		if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
			msg = "accept failed: out of file descriptors; retrying as connections close (raise `ulimit -n`)"
		}
		s.log.Error(msg, "err", err, "times", n, "wait", d)
	}
	select {
	case <-s.ctx.Done():
	case <-time.After(d):
	}
	return d
}

// inflight is one connection's bound on requests being answered.
type inflight chan struct{}

func (f inflight) acquire(ctx context.Context) bool {
	select {
	case f <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (f inflight) release() { <-f }

// hangupEvery is how often a connection waiting for an in-flight slot looks for its
// client having gone.
const hangupEvery = 100 * time.Millisecond

// acquireSlot waits for one of the connection's in-flight slots. The connection is not
// read meanwhile, so its close would show only once a running request finished and the
// rest of what it sent was read; instead the client is looked for every hangupEvery, and
// its having gone ends the wait (false), which ends the connection and cancels its
// requests.
func (cn *conn) acquireSlot(ctx context.Context, slots inflight) bool {
	select {
	case slots <- struct{}{}:
		return true
	default:
	}
	t := time.NewTicker(hangupEvery)
	defer t.Stop()
	for {
		select {
		case slots <- struct{}{}:
			return true
		case <-ctx.Done():
			return false
		case <-t.C:
			if peerGone(cn.c) {
				return false
			}
		}
	}
}

// peerGone reports whether the client has closed its end of c for good, or c is closed:
// Linux flags a Unix stream socket POLLHUP once its peer is closed, even with requests
// still unread in it, while a peer that only shut its writing side (shutdown SHUT_WR)
// gives POLLRDHUP alone, and still reads its answers.
func peerGone(nc net.Conn) bool {
	c, ok := nc.(*net.UnixConn)
	if !ok {
		return false // a forwarded connection (ServeConn): its end is seen when a read fails
	}
	raw, err := c.SyscallConn()
	if err != nil {
		return true
	}
	gone := false
	err = raw.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
		if n, perr := unix.Poll(fds, 0); perr == nil && n > 0 {
			gone = fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0
		}
	})
	return err != nil || gone
}

// heavySlots is how many heavy requests (see handler.heavy) run at once server-wide: as
// many as there are CPUs to run them, since they are CPU-bound and hold the engine's lock
// in turn. More at once only split the CPU: 3,200 agent.list at once queued on that lock,
// and a cancelled one cannot leave a lock's queue.
func heavySlots() int { return max(2, runtime.GOMAXPROCS(0)) }

// reserveUnread counts n answer bytes as waiting to be read. The bound is on the backlog:
// the answers queued behind the one being written. An answer with nothing queued ahead of
// it is always taken, however long (up to maxAnswer): measured per line, the 12 MiB answer
// to `agent ls --all --json` over 11,000 records could never fit under 4 MiB and the
// connection of a client that was reading was closed ("connection to orcr server lost:
// EOF"). Past the bound the client is not reading, and the connection is closed.
func (cn *conn) reserveUnread(n int) bool {
	total := cn.unread.Add(int64(n))
	backlog := total - cn.writing.Load() // this answer and those queued before it
	if backlog == int64(n) || backlog <= int64(cn.s.lim.MaxUnread) {
		return true
	}
	cn.unread.Add(-int64(n))
	cn.closeOnce.Do(func() {
		cn.s.log.Warn("closing a connection that does not read its answers",
			"pid", cn.cred.PID, "unread_bytes", cn.unread.Load(), "backlog_bytes", backlog-int64(n), "max", cn.s.lim.MaxUnread)
		_ = cn.c.Close()
	})
	return false
}

// maxAnswer is the largest answer line written (wire.MaxAnswer; tests lower it).
var maxAnswer = wire.MaxAnswer

// idPrefixLen is how much of an over-long request is kept to find its id.
const idPrefixLen = 4 << 10

// idOfPrefix reads the request id from the start of a line too long to decode, so the error
// reaches the call that sent it (a client waits for its own id; answered with "" it waited
// forever). It walks the top-level object's keys until "id"; a value too long to skip in
// the prefix, or no id, gives "".
func idOfPrefix(prefix []byte) string {
	dec := json.NewDecoder(bytes.NewReader(prefix))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return ""
		}
		if k == "id" {
			v, err := dec.Token()
			if s, ok := v.(string); ok && err == nil {
				return s
			}
			return ""
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return ""
		}
	}
	return ""
}

// limitsNow reports the bounds and the connections open now, for server.info.
func (s *Server) limitsNow() *wire.ServerLimits {
	s.mu.Lock()
	n := len(s.conns)
	s.mu.Unlock()
	return &wire.ServerLimits{MaxConnections: s.lim.MaxConnections, MaxInFlight: s.lim.MaxInFlight,
		MaxUnread: s.lim.MaxUnread, Connections: n}
}

// withLimits is the table as the socket serves it: server.info also reports the bounds.
func withLimits(t wire.Handlers, s *Server) wire.Handlers {
	info, ok := t[wire.MethodInfo]
	if !ok {
		return t
	}
	t[wire.MethodInfo] = wire.Handle(wire.Info, func(ctx context.Context, p *wire.Empty) (wire.InfoResult, error) {
		res, err := info.Serve(ctx, p)
		r, _ := res.(wire.InfoResult)
		if err == nil {
			r.Limits = s.limitsNow()
		}
		return r, err
	})
	return t
}

// connMemory is what an open connection costs the Go runtime (its goroutine's stack and its
// structures), by which the soft memory limit is raised while it is open. The server runs
// under a soft limit (64 MiB) that keeps badger's bursts from growing the heap for good;
// 10,000 idle connections' stacks alone brought the runtime to that limit, and its GC then
// ran back to back, tripling every call's time.
const connMemory = 8 << 10

// memLimit follows the connection count in steps, so the limit is not reset per accept.
// The server moves the limit too (with its live heap, daemon.followMemLimit), so the
// base is whatever limit was set since this last set one: a base read once at the first
// connection put a 66 MiB limit back under a 1.3 GB live-heap limit whenever the
// connection count crossed a step, and the collector then ran back to back.
type memLimit struct {
	mu   sync.Mutex
	base int64 // the limit without connections; 0 when none was read yet, -1 when none is set
	last int64 // the limit this last set
	set  int   // connections the current limit allows for
}

func (m *memLimit) follow(conns int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := debug.SetMemoryLimit(-1)
	if m.base == 0 || cur != m.last {
		// First call, or another owner set the limit since: that is the new base.
		if cur == math.MaxInt64 {
			m.base = -1 // no limit: nothing to follow
		} else {
			m.base = cur
		}
		m.set = -1
	}
	if m.base < 0 {
		return
	}
	step := (conns + 255) / 256 * 256
	if step == m.set {
		return
	}
	m.set = step
	m.last = m.base + int64(step)*connMemory
	debug.SetMemoryLimit(m.last)
}

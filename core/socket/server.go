package socket

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"orcr/core"
	"orcr/core/wire"
)

// Server serves declared methods on a Unix socket: the handlers it is given (the
// kernel's and each feature's), dispatched by method name.
type Server struct {
	table wire.Handlers
	log   *slog.Logger
	path  string
	ln    *net.UnixListener

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
	ctx   context.Context
	stop  context.CancelFunc

	lim        Limits // bounds.go
	heavy      inflight
	acceptLog  logEvery
	refusedLog logEvery
	mem        memLimit
}

// Listen creates the socket at path (mode 0600), replacing a stale one. The caller must
// hold the home's Lock, which is what makes removing a leftover socket safe.
func Listen(path string, handlers []wire.Handler, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	table, err := wire.NewHandlers(handlers)
	if err != nil {
		return nil, fmt.Errorf("socket server: %w", err)
	}
	ln, err := listenAt(path)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{log: log, path: path, ln: ln, conns: map[net.Conn]struct{}{}, ctx: ctx, stop: cancel,
		lim: Limits{}.effective(), heavy: make(inflight, heavySlots())}
	s.table = withLimits(table, s)
	return s, nil
}

func listenAt(path string) (*net.UnixListener, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket: %w", err)
	}
	ln, err := ListenPrivate(path)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(true)
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("chmod socket: %w", err)
	}
	return ln, nil
}

// ListenPrivate listens on the unix socket at path, bound under a umask of 0177 (the
// socket is 0600 from its first instant) on an OS thread whose umask is its own
// (unshare(CLONE_FS)). The umask is the process's, shared by all of Go's threads, and
// a server's features make folders and start programs while it listens (a restart's
// run resumes a brief: a worktree made, `git checkout` started): a process-wide umask
// of 0177 around the bind made such a worktree's folder 0600 — no search — and its
// files 0600, so its coder (root without capabilities, DESIGN §16) could neither write
// there nor find its .git (TestListenLeavesTheUmaskAlone). The thread is not given
// back: the runtime ends it with its goroutine. Where unshare is refused (a seccomp
// filter), the socket is bound under the process's umask and the caller chmods it at
// once (listenAt does); the server's home it lives in is 0700 (AcquireLock), so no
// other user reaches it meanwhile.
func ListenPrivate(path string) (*net.UnixListener, error) {
	type bound struct {
		ln  *net.UnixListener
		err error
	}
	ch := make(chan bound, 1)
	go func() {
		runtime.LockOSThread()
		if unix.Unshare(unix.CLONE_FS) != nil {
			runtime.UnlockOSThread()
			ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
			ch <- bound{ln, err}
			return
		}
		// This thread's umask only; it stays locked, so no other goroutine runs on it.
		unix.Umask(0o177)
		ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
		ch <- bound{ln, err}
	}()
	b := <-ch
	return b.ln, b.err
}

// Serve accepts connections until Close. It recreates the socket if it is deleted or
// replaced while the server runs (see watchSocket); a failed accept (out of file
// descriptors) is retried after a back-off, never the end of the server; connections
// past Limits.MaxConnections are refused with an error line.
func (s *Server) Serve() error {
	s.wg.Add(1)
	go s.watchSocket()
	var backoff time.Duration
	for {
		s.mu.Lock()
		ln := s.ln
		s.mu.Unlock()
		c, err := ln.AcceptUnix()
		if err != nil {
			if s.ctx.Err() != nil {
				return nil
			}
			s.mu.Lock()
			replaced := s.ln != ln
			s.mu.Unlock()
			if replaced {
				continue
			}
			backoff = s.acceptError(err, backoff)
			continue
		}
		backoff = 0
		s.mu.Lock()
		if s.ctx.Err() != nil {
			// Accepted while Close ended the connections it knew: it never saw this
			// one, and its handler would read on while Close waits for it.
			s.mu.Unlock()
			c.Close()
			return nil
		}
		if len(s.conns) >= s.lim.MaxConnections {
			s.mu.Unlock()
			s.refuse(c)
			continue
		}
		s.conns[c] = struct{}{}
		s.mem.follow(len(s.conns))
		s.wg.Add(1) // under mu: Close's Wait comes after its sweep, so it counts this one
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.conns, c)
				s.mem.follow(len(s.conns))
				s.mu.Unlock()
				c.Close()
			}()
			s.serveConn(c, nil)
		}()
	}
}

// ServeConn serves one connection that did not come through the socket: a call from a
// node's panes, forwarded over its SSH link (DESIGN §14). caller says where it came
// from (Caller.Node); each request's claimed ORCR_ID is verified against it, and a
// request without one is refused. It returns when the connection ends, and closes it.
func (s *Server) ServeConn(c net.Conn, caller core.Caller) {
	s.mu.Lock()
	if s.ctx.Err() != nil || len(s.conns) >= s.lim.MaxConnections {
		s.mu.Unlock()
		c.Close()
		return
	}
	s.conns[c] = struct{}{}
	s.mem.follow(len(s.conns))
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mem.follow(len(s.conns))
		s.mu.Unlock()
		c.Close()
	}()
	s.serveConn(c, &caller)
}

// Close stops accepting, ends every connection and waits for handlers.
func (s *Server) Close() error {
	s.stop()
	s.mu.Lock()
	err := s.ln.Close()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

// conn is one client connection. Responses are written whole under wmu so handlers
// running concurrently never interleave lines.
type conn struct {
	s    *Server
	c    net.Conn
	wmu  sync.Mutex
	enc  *json.Encoder
	cred core.Caller

	unread    atomic.Int64 // answer bytes encoded but not yet taken by the socket
	writing   atomic.Int64 // of those, the answer being written now (set under wmu)
	closeOnce sync.Once
	// heavy is the connection's one turn at the server-wide heavy slots: a client that
	// pipelines heavy requests holds at most one of them, so another client's list waits
	// for one running list, not for the flood queued ahead of it.
	heavy inflight
}

func (cn *conn) write(v any) error {
	cn.wmu.Lock()
	defer cn.wmu.Unlock()
	return cn.enc.Encode(v)
}

func (cn *conn) reply(id string, result any, err error) {
	cn.send(encodeAnswer(id, result, err))
}

// encodeAnswer frames the answer to request id as one line.
func encodeAnswer(id string, result any, err error) []byte {
	var line []byte
	if err == nil {
		// The result is encoded once and framed by hand: re-encoding a RawMessage
		// would scan large results (agent.list of thousands) a second time.
		b, merr := json.Marshal(result)
		if merr == nil {
			idb, _ := json.Marshal(id)
			line = make([]byte, 0, len(b)+len(idb)+20)
			line = append(line, `{"id":`...)
			line = append(line, idb...)
			line = append(line, `,"result":`...)
			line = append(line, b...)
			line = append(line, "}\n"...)
		} else {
			err = &wire.Error{Code: wire.CodeInternal, Message: "encode result: " + merr.Error()}
		}
	}
	if err == nil && len(line) > maxAnswer {
		err = wire.Errorf(wire.CodeAnswerTooBig,
			"the answer to request %q is %d MiB, over the %d MiB one answer may be; ask for less: page it (limit and after) or narrow it with a glob",
			id, len(line)>>20, maxAnswer>>20)
		line = nil
	}
	if err != nil {
		line, _ = json.Marshal(wire.Response{ID: id, Error: wire.AsError(err)})
		line = append(line, '\n')
	}
	return line
}

// send writes one answer line whole.
func (cn *conn) send(line []byte) {
	if !cn.reserveUnread(len(line)) {
		return
	}
	cn.wmu.Lock()
	cn.writing.Store(int64(len(line)))
	_, werr := cn.c.Write(line)
	cn.unread.Add(-int64(len(line)))
	cn.writing.Store(0)
	cn.wmu.Unlock()
	if werr != nil {
		cn.s.log.Debug("write response", "err", werr)
	}
}

// answer runs one unary request and encodes its answer; nil when the connection closed
// meanwhile, since nobody is left to read it. A heavy request waits for its connection's
// turn and then a server-wide slot, and leaves either wait when its connection closes.
func (s *Server) answer(ctx context.Context, cn *conn, h wire.Handler, id string, params any) []byte {
	if h.Heavy() {
		if !cn.heavy.acquire(ctx) {
			return nil
		}
		defer cn.heavy.release()
		if !s.heavy.acquire(ctx) {
			return nil
		}
		defer s.heavy.release()
	}
	if ctx.Err() != nil {
		return nil
	}
	res, err := h.Serve(ctx, params)
	if ctx.Err() != nil {
		return nil
	}
	return encodeAnswer(id, res, err)
}

// serveConn serves one connection: one of the socket's, whose peer is checked here
// (given nil), or one ServeConn was handed with who it is.
func (s *Server) serveConn(c net.Conn, given *core.Caller) {
	cn := &conn{s: s, c: c, enc: json.NewEncoder(c), heavy: make(inflight, 1)}
	if given != nil {
		cn.cred = *given
	} else {
		uc, _ := c.(*net.UnixConn)
		if uc == nil {
			cn.reply("", nil, wire.Errorf(wire.CodePermission, "cannot read peer credentials: not a unix socket"))
			return
		}
		uid, pid, err := peerCred(uc)
		if err != nil {
			cn.reply("", nil, wire.Errorf(wire.CodePermission, "cannot read peer credentials: %v", err))
			return
		}
		if uid != os.Getuid() {
			cn.reply("", nil, wire.Errorf(wire.CodePermission,
				"permission denied: the server runs as uid %d and serves only that user (you are uid %d); run your own with ORCR_HOME set to a directory you own",
				os.Getuid(), uid))
			return
		}
		cn.cred = core.Caller{PID: pid, UID: uid}
	}
	// Every request of the connection runs under ctx. When the client has closed its end
	// (200 connections that each sent 16 heavy lists and closed left another client
	// waiting 29 s), ctx is cancelled before the requests are waited for: a queued one is
	// dropped, a running one sees ctx.Done and its answer is not built. A client that only
	// shut its writing side (nc -N, socat) still reads, so its answers are finished first.
	ctx, cancel := context.WithCancel(s.ctx)
	var wg sync.WaitGroup
	var readErr error
	defer func() {
		if readErr != nil && !errors.Is(readErr, io.EOF) || peerGone(c) {
			cancel()
		}
		wg.Wait()
		cancel()
	}()
	slots := make(inflight, s.lim.MaxInFlight)
	var r *bufio.Reader
	var first [1]byte
	for {
		// An idle connection holds no buffer: it waits on a one-byte read and borrows a
		// reader for as long as it has bytes to read. 10,000 idle connections cost their
		// goroutines and little else (with a 4 KiB reader each, the live heap sat at the
		// server's 64 MiB soft memory limit and the GC ran without pause).
		if r == nil || r.Buffered() == 0 {
			if r != nil {
				readers.Put(r)
				r = nil
			}
			n, err := c.Read(first[:])
			if n == 0 {
				if err != nil {
					readErr = err
					return
				}
				continue
			}
			r = readers.Get().(*bufio.Reader)
			r.Reset(io.MultiReader(bytes.NewReader(first[:1]), c))
		}
		line, err := readLine(r)
		if errors.Is(err, errLineTooLong) {
			cn.reply(idOfPrefix(line), nil, wire.Errorf(wire.CodeLineTooLong,
				"request of more than %d bytes refused, nothing in it was done: the server takes requests up to 1 MiB. "+
					"Shorten it; for a prompt that long, write it to a file and have the agent read it", wire.MaxLine))
			continue
		}
		if err != nil {
			readErr = err
			return
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		req, params, h, err := parseRequest(s.table, line)
		if err != nil {
			cn.reply(req.ID, nil, err)
			continue
		}
		caller := cn.cred
		caller.ClaimedID = req.Caller
		if caller.Node != "" && req.Caller == "" {
			cn.reply(req.ID, nil, wire.Errorf(wire.CodeCallerRefused,
				"a call over node %s's link must come from one of its agents (ORCR_ID); call the node's own server for anything else", caller.Node))
			continue
		}
		rctx := core.WithCaller(ctx, caller)
		if h.Spec().Stream != nil {
			if h.ServeStream(rctx, params, &streamConn{cn: cn, id: req.ID, r: r}) {
				return // r may still be read by the stream's goroutines: not pooled
			}
			continue
		}
		// At MaxInFlight the connection is not read until an answer is done: a client
		// pipelining thousands of requests gets them answered this many at a time.
		if !cn.acquireSlot(ctx, slots) {
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer slots.release()
			if line := s.answer(rctx, cn, h, req.ID, params); line != nil {
				cn.send(line)
			}
		}()
	}
}

var errLineTooLong = errors.New("line too long")

// readers are the request readers connections borrow while they have bytes to read.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4<<10) }}

// parseRequest decodes one request line and its params and finds its handler in table.
// On error the returned request still carries the id when it could be read.
func parseRequest(table wire.Handlers, line []byte) (wire.Request, any, wire.Handler, error) {
	var req wire.Request
	if err := json.Unmarshal(line, &req); err != nil {
		return wire.Request{}, nil, nil, wire.Errorf(wire.CodeBadRequest,
			"malformed request: %v; send one JSON object per line: {\"id\":\"1\",\"method\":\"server.ping\"}", err)
	}
	if req.Method == "" {
		return req, nil, nil, wire.Errorf(wire.CodeBadRequest, "request has no method; see `orcr api schema`")
	}
	if req.Version != 0 && req.Version != wire.Version {
		return req, nil, nil, wire.Errorf(wire.CodeVersionMismatch,
			"client speaks protocol %d, this server %d; use the orcr binary the server runs, or restart the server with yours", req.Version, wire.Version)
	}
	h, ok := table[req.Method]
	if !ok {
		return req, nil, nil, wire.Errorf(wire.CodeUnknownMethod, "unknown method %q; see `orcr api schema`", req.Method)
	}
	params, err := h.Decode(req.Params)
	return req, params, h, err
}

// readLine reads one newline-terminated line of at most wire.MaxLine bytes. A longer
// line is consumed and reported as errLineTooLong with its first bytes, from which the
// caller can still read the request's id; the connection stays usable.
func readLine(r *bufio.Reader) ([]byte, error) { return readLineOf(r, true) }

// readLineOf is readLine; without drain an over-long line is reported as soon as it passes
// the bound and the rest is left unread (the caller ends the connection): an attach frame
// that never ends must not be read to its end.
func readLineOf(r *bufio.Reader, drain bool) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(buf)+len(chunk) > wire.MaxLine+1 {
			prefix := append([]byte(nil), buf[:min(len(buf), idPrefixLen)]...)
			prefix = append(prefix, chunk[:min(len(chunk), idPrefixLen-len(prefix))]...)
			for drain && errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
				return nil, err
			}
			return prefix, errLineTooLong
		}
		buf = append(buf, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			if err == io.EOF && len(buf) > 0 {
				return buf, nil
			}
			return nil, err
		}
		return buf, nil
	}
}

// streamConn is a streaming method's connection as its handler sees it.
type streamConn struct {
	cn *conn
	id string
	r  *bufio.Reader
}

func (c *streamConn) Reply(result any, err error) { c.cn.reply(c.id, result, err) }
func (c *streamConn) Send(line any) error         { return c.cn.write(line) }

// ReadLine reads one line the client sent, bounded like a request; an over-long one is
// not read to its end (a frame that never ends must not be buffered) and ends the stream.
func (c *streamConn) ReadLine() ([]byte, error) {
	line, err := readLineOf(c.r, false)
	if errors.Is(err, errLineTooLong) {
		c.cn.s.log.Warn("stream line over the line bound; ending the stream", "pid", c.cn.cred.PID, "max", wire.MaxLine)
		return nil, fmt.Errorf("stream line over %d bytes", wire.MaxLine)
	}
	return line, err
}

func peerCred(c *net.UnixConn) (uid, pid int, err error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var cred *syscall.Ucred
	var serr error
	err = raw.Control(func(fd uintptr) {
		cred, serr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	})
	if err != nil {
		return 0, 0, err
	}
	if serr != nil {
		return 0, 0, serr
	}
	return int(cred.Uid), int(cred.Pid), nil
}

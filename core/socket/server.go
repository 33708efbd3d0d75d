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
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"orcr/core"
	"orcr/core/wire"
)

// Server serves a core.Service on a Unix socket.
type Server struct {
	svc  core.Service
	log  *slog.Logger
	path string
	ln   *net.UnixListener

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
func Listen(path string, svc core.Service, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ln, err := listenAt(path)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{log: log, path: path, ln: ln, conns: map[net.Conn]struct{}{}, ctx: ctx, stop: cancel,
		lim: Limits{}.effective(), heavy: make(inflight, heavySlots())}
	s.svc = withLimits{Service: svc, s: s}
	return s, nil
}

func listenAt(path string) (*net.UnixListener, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket: %w", err)
	}
	old := syscall.Umask(0o177)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	syscall.Umask(old)
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
		if len(s.conns) >= s.lim.MaxConnections {
			s.mu.Unlock()
			s.refuse(c)
			continue
		}
		s.conns[c] = struct{}{}
		s.mem.follow(len(s.conns))
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.conns, c)
				s.mem.follow(len(s.conns))
				s.mu.Unlock()
				c.Close()
			}()
			s.serveConn(c)
		}()
	}
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
	c    *net.UnixConn
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
func (s *Server) answer(ctx context.Context, cn *conn, h handler, id string, params any) []byte {
	if h.heavy {
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
	res, err := h.unary(ctx, s.svc, params)
	if ctx.Err() != nil {
		return nil
	}
	return encodeAnswer(id, res, err)
}

func (s *Server) serveConn(c *net.UnixConn) {
	cn := &conn{s: s, c: c, enc: json.NewEncoder(c), heavy: make(inflight, 1)}
	uid, pid, err := peerCred(c)
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
		req, params, err := parseRequest(line)
		if err != nil {
			cn.reply(req.ID, nil, err)
			continue
		}
		caller := cn.cred
		caller.ClaimedID = req.Caller
		rctx := core.WithCaller(ctx, caller)
		h := handlers()[req.Method]
		if h.stream != nil {
			if h.stream(s, rctx, cn, req.ID, params, r) {
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

// parseRequest decodes one request line and its params. On error the returned
// request still carries the id when it could be read.
func parseRequest(line []byte) (wire.Request, any, error) {
	var req wire.Request
	if err := json.Unmarshal(line, &req); err != nil {
		return wire.Request{}, nil, wire.Errorf(wire.CodeBadRequest,
			"malformed request: %v; send one JSON object per line: {\"id\":\"1\",\"method\":\"server.ping\"}", err)
	}
	if req.Method == "" {
		return req, nil, wire.Errorf(wire.CodeBadRequest, "request has no method; see `orcr api schema`")
	}
	if req.Version != 0 && req.Version != wire.Version {
		return req, nil, wire.Errorf(wire.CodeVersionMismatch,
			"client speaks protocol %d, this server %d; use the orcr binary the server runs, or restart the server with yours", req.Version, wire.Version)
	}
	h, ok := handlers()[req.Method]
	if !ok {
		return req, nil, wire.Errorf(wire.CodeUnknownMethod, "unknown method %q; see `orcr api schema`", req.Method)
	}
	params, err := h.decode(req.Params)
	return req, params, err
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

func (s *Server) streamEvents(ctx context.Context, cn *conn, id string, p *wire.SubscribeParams, r *bufio.Reader) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := s.svc.Subscribe(ctx, *p)
	if err != nil {
		cn.reply(id, nil, err)
		return
	}
	info, _ := s.svc.Info(ctx)
	cn.reply(id, wire.SubscribeResult{Subscribed: true, LastSeq: info.LastSeq}, nil)
	// The client never sends on a stream; EOF means it went away.
	go func() {
		_, _ = io.Copy(io.Discard, r)
		cancel()
	}()
	for ev := range ch {
		if err := cn.write(ev); err != nil {
			return
		}
	}
}

// attach answers agent.attach. For a stream attach it turns the connection into an
// AttachFrame stream and returns true when the connection is used up.
func (s *Server) attach(ctx context.Context, cn *conn, id string, p *wire.AttachParams, r *bufio.Reader) bool {
	res, err := s.svc.Attach(ctx, *p)
	if err != nil || !res.Stream {
		cn.reply(id, res, err)
		return false
	}
	cn.reply(id, res, nil)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	go func() {
		defer pw.Close()
		for {
			// Frames are lines bounded like requests: a 400 MiB frame without a newline
			// was buffered whole by a JSON decoder.
			line, err := readLineOf(r, false)
			if errors.Is(err, errLineTooLong) {
				s.log.Warn("attach frame over the line bound; ending the attach", "pid", cn.cred.PID, "max", wire.MaxLine)
				cancel()
				return
			}
			var f wire.AttachFrame
			if err == nil {
				err = json.Unmarshal(line, &f)
			}
			if err == nil && wire.CheckRanges("attach frame", &f) != nil {
				continue // a resize to 100000 columns is dropped, the attach goes on
			}
			if err != nil {
				cancel()
				return
			}
			if f.Cols > 0 && f.Rows > 0 {
				_ = s.svc.Resize(ctx, wire.ResizeParams{Target: res.Agent.ID, Cols: f.Cols, Rows: f.Rows})
			}
			if len(f.Data) > 0 {
				if _, err := pw.Write(f.Data); err != nil {
					return
				}
			}
		}
	}()
	out := frameWriter{cn: cn}
	err = s.svc.AttachStream(ctx, wire.AttachParams{Target: res.Agent.ID, Cols: p.Cols, Rows: p.Rows}, pr, out)
	_ = cn.write(wire.AttachFrame{Closed: true})
	if err != nil {
		s.log.Debug("attach stream ended", "err", err)
	}
	return true
}

type frameWriter struct{ cn *conn }

func (w frameWriter) Write(b []byte) (int, error) {
	data := append([]byte(nil), b...)
	if err := w.cn.write(wire.AttachFrame{Data: data}); err != nil {
		return 0, err
	}
	return len(b), nil
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

// tableOf projects agents to display rows on the server, so a terminal client
// decodes a few short strings per agent instead of whole records.
func tableOf(as []wire.Agent, now time.Time) *wire.Table {
	t := &wire.Table{Columns: core.TableColumns, Rows: make([][]string, 0, len(as))}
	for _, a := range as {
		t.Rows = append(t.Rows, core.TableRow(a, now))
	}
	return t
}

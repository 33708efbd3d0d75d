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
}

// Listen creates the socket at path (mode 0600), replacing a stale one. The caller must
// hold the home's Lock, which is what makes removing a leftover socket safe.
func Listen(path string, svc core.Service, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
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
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{svc: svc, log: log, path: path, ln: ln, conns: map[net.Conn]struct{}{}, ctx: ctx, stop: cancel}, nil
}

// Serve accepts connections until Close.
func (s *Server) Serve() error {
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			if s.ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("accept: %w", err)
		}
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.conns, c)
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
	err := s.ln.Close()
	s.mu.Lock()
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
}

func (cn *conn) write(v any) error {
	cn.wmu.Lock()
	defer cn.wmu.Unlock()
	return cn.enc.Encode(v)
}

func (cn *conn) reply(id string, result any, err error) {
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
	if err != nil {
		line, _ = json.Marshal(wire.Response{ID: id, Error: wire.AsError(err)})
		line = append(line, '\n')
	}
	cn.wmu.Lock()
	_, werr := cn.c.Write(line)
	cn.wmu.Unlock()
	if werr != nil {
		cn.s.log.Debug("write response", "err", werr)
	}
}

func (s *Server) serveConn(c *net.UnixConn) {
	cn := &conn{s: s, c: c, enc: json.NewEncoder(c)}
	uid, pid, err := peerCred(c)
	if err != nil {
		cn.reply("", nil, wire.Errorf(wire.CodePermission, "cannot read peer credentials: %v", err))
		return
	}
	if uid != os.Getuid() {
		cn.reply("", nil, wire.Errorf(wire.CodePermission, "uid %d may not use this server (it belongs to uid %d)", uid, os.Getuid()))
		return
	}
	cn.cred = core.Caller{PID: pid, UID: uid}
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	r := bufio.NewReaderSize(c, 64<<10)
	for {
		line, err := readLine(r)
		if errors.Is(err, errLineTooLong) {
			cn.reply("", nil, wire.Errorf(wire.CodeLineTooLong, "request line over %d bytes; send smaller requests (large prompts: --prompt-file)", wire.MaxLine))
			continue
		}
		if err != nil {
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
		h := handlers[req.Method]
		if h.stream != nil {
			if h.stream(s, rctx, cn, req.ID, params, r) {
				return
			}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := h.unary(rctx, s.svc, params)
			cn.reply(req.ID, res, err)
		}()
	}
}

var errLineTooLong = errors.New("line too long")

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
	h, ok := handlers[req.Method]
	if !ok {
		return req, nil, wire.Errorf(wire.CodeUnknownMethod, "unknown method %q; see `orcr api schema`", req.Method)
	}
	params, err := h.decode(req.Params)
	return req, params, err
}

// readLine reads one newline-terminated line of at most wire.MaxLine bytes. A longer
// line is consumed and reported as errLineTooLong, so the connection stays usable.
func readLine(r *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(buf)+len(chunk) > wire.MaxLine+1 {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
				return nil, err
			}
			return nil, errLineTooLong
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
		dec := json.NewDecoder(r)
		for {
			var f wire.AttachFrame
			if err := dec.Decode(&f); err != nil {
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

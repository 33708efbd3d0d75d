// Package herdrtest is a TEST-ONLY stand-in for the herdr server: a protocol-faithful
// implementation of herdr's local socket API, written from
// shared/reference/herdr-protocol.md, whose panes are real PTYs rendered by a VT
// emulator so what runs in them is real. It exists because herdr itself cannot be
// installed on the test machines; nothing in orcr's production code imports it.
//
// It honours the reference's transport rules (0600 Unix socket, one request line per
// connection, 1 MiB / 5 s request limits, `events.subscribe` keeping its connection),
// its envelopes (string ids, result/error, empty id on invalid_request), error codes,
// id formats (w1, w1:t1, w1:p1, term_<hex>), snake_case events and the §7 minimal
// method set plus the nice-to-haves orcr may use. Screen-manifest state detection is
// reduced to one rule (a "Working..." line means working); agents otherwise report
// through pane.report_agent, as herdr's integrations do.
package herdrtest

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
	"path/filepath"
	"sync"
	"time"
	"unicode/utf8"
)

// Wire facts of the herdr build the reference describes.
const (
	Version  = "0.8.0"
	Protocol = 20

	maxRequest   = 1 << 20
	requestLimit = 5 * time.Second
	writeTimeout = 5 * time.Second
	ringSize     = 512
)

// Options configures a Server.
type Options struct {
	// SocketPath is where the API socket is created (required). Use SocketPath() to
	// compute herdr's own location for a session.
	SocketPath string
	// Version and Protocol are what ping reports (defaults Version, Protocol).
	Version  string
	Protocol int
	// Shell runs in the root pane of every workspace/tab (default $SHELL, else /bin/sh).
	Shell string
	// Env is the server's environment, inherited by panes (default os.Environ()).
	Env []string
	// Cols, Rows is the headless pane size (default 80x24, as herdr without a client).
	Cols, Rows int
	// IntegrationDir records installed integrations, one file per target (default:
	// none can be installed: integration.install fails as herdr does when the agent's
	// config dir is missing).
	IntegrationDir string
	// Poll is the subscription/wait poll interval (default 100 ms, as herdr).
	Poll time.Duration
	// AgentReady is how long after detection an agent becomes interactive_ready
	// (default 3 s, as herdr).
	AgentReady time.Duration
	// RequestTimeout is how long a connection may take to send its request line
	// (default 5 s, as herdr); shorter values make that rule quick to test.
	RequestTimeout time.Duration
	// Logger receives debug lines; nil discards.
	Logger *slog.Logger
}

// Server is a running fake herdr server.
type Server struct {
	opts Options
	ln   net.Listener
	log  *slog.Logger

	mu         sync.Mutex // the "app loop": all state changes are serialized here
	workspaces []*workspace
	panes      map[string]*pane
	wsCounter  int
	events     []event // ring of the last ringSize events
	eventSeq   uint64
	protocol   int
	focused    *pane // the pane a (virtual) UI focused last; nil headless

	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	closeMu sync.Once
	done    chan struct{}
}

// SocketPath returns herdr's socket path for session under config dir configDir
// (reference §1.1): configDir/herdr.sock for "default", else
// configDir/sessions/NAME/herdr.sock.
func SocketPath(configDir, session string) string {
	if session == "" || session == "default" {
		return filepath.Join(configDir, "herdr.sock")
	}
	return filepath.Join(configDir, "sessions", session, "herdr.sock")
}

// Start listens on opts.SocketPath and serves until Close or server.stop. A live
// socket at that path is refused ("herdr server is already running"); a stale one is
// removed.
func Start(opts Options) (*Server, error) {
	if opts.SocketPath == "" {
		return nil, errors.New("herdrtest: SocketPath is required")
	}
	if opts.Version == "" {
		opts.Version = Version
	}
	if opts.Protocol == 0 {
		opts.Protocol = Protocol
	}
	if opts.Shell == "" {
		opts.Shell = os.Getenv("SHELL")
		if opts.Shell == "" {
			opts.Shell = "/bin/sh"
		}
	}
	if opts.Env == nil {
		opts.Env = os.Environ()
	}
	if opts.Cols <= 0 || opts.Rows <= 0 {
		opts.Cols, opts.Rows = 80, 24
	}
	if opts.Poll <= 0 {
		opts.Poll = 100 * time.Millisecond
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = requestLimit
	}
	if opts.AgentReady <= 0 {
		opts.AgentReady = 3 * time.Second
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(filepath.Dir(opts.SocketPath), 0o700); err != nil {
		return nil, fmt.Errorf("herdrtest: socket dir: %w", err)
	}
	if c, err := net.DialTimeout("unix", opts.SocketPath, time.Second); err == nil {
		_ = c.Close()
		return nil, errors.New("herdr server is already running")
	}
	_ = os.Remove(opts.SocketPath)
	ln, err := net.Listen("unix", opts.SocketPath)
	if err != nil {
		return nil, fmt.Errorf("herdrtest: listen: %w", err)
	}
	if err := os.Chmod(opts.SocketPath, 0o600); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("herdrtest: chmod socket: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		opts: opts, ln: ln, log: log, panes: map[string]*pane{},
		protocol: opts.Protocol, ctx: ctx, cancel: cancel, done: make(chan struct{}),
	}
	s.wg.Add(2)
	go s.accept()
	go s.detect()
	return s, nil
}

// SocketPath is the socket the server listens on.
func (s *Server) SocketPath() string { return s.opts.SocketPath }

// Done is closed when the server has stopped (Close or server.stop).
func (s *Server) Done() <-chan struct{} { return s.done }

// SetProtocol changes the protocol number ping reports, to test version refusal.
func (s *Server) SetProtocol(n int) {
	s.mu.Lock()
	s.protocol = n
	s.mu.Unlock()
}

// Close stops listening, kills every pane process (as herdr's server.stop does) and
// waits for all connections to end.
func (s *Server) Close() error {
	s.closeMu.Do(func() {
		s.cancel()
		_ = s.ln.Close()
		s.mu.Lock()
		var terms []*term
		for _, p := range s.panes {
			p.closing = true
			terms = append(terms, p.term)
		}
		s.mu.Unlock()
		var kw sync.WaitGroup
		for _, t := range terms {
			kw.Add(1)
			go func() { defer kw.Done(); t.kill() }()
		}
		kw.Wait()
		s.wg.Wait()
		_ = os.Remove(s.opts.SocketPath)
		close(s.done)
	})
	return nil
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serveConn(c)
		}()
	}
}

// request is the parsed envelope of one line.
type request struct {
	ID     string
	Method string
	Params json.RawMessage
}

// apiError is an error body.
type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func errf(code, format string, args ...any) *apiError {
	return &apiError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// serveConn reads exactly one request line, answers it with one line and closes,
// except for events.subscribe which keeps streaming.
func (s *Server) serveConn(c net.Conn) {
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(s.opts.RequestTimeout))
	line, ok := readLine(c)
	if !ok {
		return // too long, too slow, not UTF-8, or closed: dropped without a reply
	}
	_ = c.SetReadDeadline(time.Time{})
	req, perr := parseRequest(line)
	if perr != nil {
		s.reply(c, "", nil, perr)
		return
	}
	if req.Method == "events.subscribe" {
		s.subscribe(c, req)
		return
	}
	m := methods[req.Method]
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	if m.long {
		go watchPeerClose(c, cancel)
	}
	res, err := m.handle(s, ctx, req.Params)
	var ae *apiError
	if err != nil && !errors.As(err, &ae) {
		ae = errf("internal_error", "%v", err)
	}
	s.reply(c, req.ID, res, ae)
}

// readLine reads up to the first newline, at most maxRequest bytes of valid UTF-8.
func readLine(c net.Conn) ([]byte, bool) {
	r := bufio.NewReaderSize(io.LimitReader(c, maxRequest+1), 64*1024)
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > maxRequest {
			return nil, false
		}
		if err == nil {
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return nil, false
	}
	buf = bytes.TrimRight(buf, "\r\n")
	if !utf8.Valid(buf) {
		return nil, false
	}
	return buf, true
}

// watchPeerClose cancels a long call when the client hangs up (herdr polls for this).
func watchPeerClose(c net.Conn, cancel context.CancelFunc) {
	var b [1]byte
	for {
		_, err := c.Read(b[:])
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return
			}
			cancel()
			return
		}
	}
}

// parseRequest checks the envelope the way herdr's serde parse does: any failure
// (bad JSON, non-string id, unknown method, missing or mistyped params) is an
// invalid_request answered with an empty id.
func parseRequest(line []byte) (request, *apiError) {
	var raw struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(line, &raw); err != nil {
		return request{}, errf("invalid_request", "invalid request: %v", err)
	}
	var req request
	if err := json.Unmarshal(raw.ID, &req.ID); err != nil || len(raw.ID) == 0 || raw.ID[0] != '"' {
		return request{}, errf("invalid_request", "invalid request: id must be a string")
	}
	if err := json.Unmarshal(raw.Method, &req.Method); err != nil || len(raw.Method) == 0 || raw.Method[0] != '"' {
		return request{}, errf("invalid_request", "invalid request: missing field `method`")
	}
	m, ok := methods[req.Method]
	if !ok && req.Method != "events.subscribe" {
		return request{}, errf("invalid_request", "invalid request: unknown variant `%s`", req.Method)
	}
	params := bytes.TrimSpace(raw.Params)
	if len(params) == 0 || bytes.Equal(params, []byte("null")) {
		params = []byte("{}")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(params, &fields); err != nil {
		return request{}, errf("invalid_request", "invalid request: params must be an object")
	}
	required := m.required
	if req.Method == "events.subscribe" {
		required = []string{"subscriptions"}
	}
	for _, f := range required {
		if v, ok := fields[f]; !ok || bytes.Equal(v, []byte("null")) {
			return request{}, errf("invalid_request", "invalid request: missing field `%s`", f)
		}
	}
	if m.params != nil {
		if err := json.Unmarshal(params, m.params()); err != nil {
			return request{}, errf("invalid_request", "invalid request: %v", err)
		}
	}
	req.Params = params
	return req, nil
}

// reply writes one response line.
func (s *Server) reply(c net.Conn, id string, res any, e *apiError) {
	var env any
	if e != nil {
		env = struct {
			ID    string    `json:"id"`
			Error *apiError `json:"error"`
		}{id, e}
	} else {
		env = struct {
			ID     string `json:"id"`
			Result any    `json:"result"`
		}{id, res}
	}
	b, err := json.Marshal(env)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"id": id, "error": errf("internal_error", "%v", err)})
	}
	_ = c.SetWriteDeadline(time.Now().Add(writeTimeout))
	_, _ = c.Write(append(b, '\n'))
}

// decode unmarshals already-validated params into v.
func decode[T any](raw json.RawMessage) T {
	var v T
	_ = json.Unmarshal(raw, &v)
	return v
}

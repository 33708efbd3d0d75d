package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"orcr/core"
	"orcr/core/wire"
	webapi "orcr/web/api"
)

// Names the browser and the gateway agree on.
const (
	// cookieName holds a paired browser's secret (HttpOnly, SameSite=Strict).
	cookieName = "orcr_session"
	// csrfHeader must be on every POST a cookie authenticates: a form or a
	// cross-origin page cannot set it without a CORS preflight, which is never
	// answered.
	csrfHeader = "X-Orcr"
	apiPrefix  = "/api/v1/"
)

// gateway is the HTTP side: the method table, the events, the screens, pairing and
// the page.
type gateway struct {
	s     *Service
	table wire.Handlers
	// hub is the one subscription unfiltered event streams read from.
	hub *hub
	// heavy bounds heavy methods (agent.list) answered at once, as the socket does.
	heavy chan struct{}
}

// caller is who a web request acts as: the server's own user with no agent (the
// root of the tree), as from a shell. It is never InProcess, so it cannot report
// hooks for an agent.
func caller() core.Caller { return core.Caller{UID: os.Getuid()} }

func newGateway(s *Service, hs []wire.Handler) (*gateway, error) {
	t, err := wire.NewHandlers(hs)
	if err != nil {
		return nil, fmt.Errorf("web gateway: %w", err)
	}
	h, err := s.startHub()
	if err != nil {
		return nil, fmt.Errorf("web gateway: %w", err)
	}
	return &gateway{s: s, table: t, hub: h, heavy: make(chan struct{}, 2)}, nil
}

func (g *gateway) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/events", g.events)
	mux.HandleFunc("GET /api/v1/screen", g.screen)
	mux.HandleFunc(apiPrefix+"{method}", g.method)
	mux.HandleFunc("GET /pair", g.pairPage)
	mux.HandleFunc("POST /pair", g.pairRedeem)
	mux.HandleFunc("POST /logout", g.logout)
	mux.HandleFunc("GET /push/key", g.pushKey)
	mux.HandleFunc("POST /push/{op}", g.pushSubscribe)
	mux.HandleFunc("GET /sw.js", serviceWorker)
	mux.HandleFunc("GET /{$}", g.page)
	mux.Handle("GET /static/", staticHandler())
	return secureHeaders(mux)
}

// secureHeaders sets what every answer carries: no framing, no sniffing, a strict
// content policy (the page loads only its own files) and no referrer.
func secureHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Content-Security-Policy", csp())
		h.ServeHTTP(w, r)
	})
}

// statusOf is the HTTP status for an error code.
func statusOf(code string) int {
	switch code {
	case wire.CodeBadRequest, wire.CodeInvalidParams, wire.CodeInvalidPath, wire.CodeInvalidGlob,
		wire.CodeUnknownProvider, wire.CodeOptionRange, wire.CodeNoSuchOption, wire.CodeVersionMismatch,
		wire.CodeAnswerTooBig, wire.CodeUnknownRole, wire.CodeBadRole, wire.CodeNotARepo, wire.CodePlanInvalid:
		return http.StatusBadRequest
	case wire.CodeLineTooLong:
		return http.StatusRequestEntityTooLarge
	case wire.CodeUnknownMethod, wire.CodeNotFound:
		return http.StatusNotFound
	case wire.CodePermission, wire.CodeCallerRefused, wire.CodeNotAllowed:
		return http.StatusForbidden
	case webapi.CodeUnauthorized:
		return http.StatusUnauthorized
	case wire.CodePathTaken, wire.CodeAmbiguous, wire.CodeNotRunning, wire.CodeNameTaken, wire.CodeNotBlocked,
		wire.CodeNotAnswerable, wire.CodeSeveralBlocked, wire.CodePromptGone, wire.CodeAnswerNotTaken,
		wire.CodeAgentBlocked, wire.CodeNotQueued, wire.CodeHasChildren, wire.CodeNoSession:
		return http.StatusConflict
	case wire.CodeTimeout:
		return http.StatusGatewayTimeout
	case wire.CodeUnavailable, wire.CodeShuttingDown, wire.CodeStoreUnavailable, wire.CodeTooManyConnections:
		return http.StatusServiceUnavailable
	case wire.CodeMissingProgram:
		return http.StatusFailedDependency
	case wire.CodeHostError, wire.CodeInternal:
		return http.StatusInternalServerError
	}
	return http.StatusUnprocessableEntity // a feature's own code: understood, not done
}

// writeError answers with the error's code kept: {"error":{code,message,data}}.
func writeError(w http.ResponseWriter, err error) {
	writeErrorStatus(w, 0, err)
}

// writeErrorStatus is writeError with a status of its own (0: the code's).
func writeErrorStatus(w http.ResponseWriter, status int, err error) {
	e := wire.AsError(err)
	if status == 0 {
		status = statusOf(e.Code)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(struct {
		Error *wire.Error `json:"error"`
	}{e})
}

// authenticate finds the request's credential: a bearer token, else the session
// cookie. A cookie-authenticated POST must carry the custom header and come from this
// origin. It answers the refusal itself and returns false.
func (g *gateway) authenticate(w http.ResponseWriter, r *http.Request) (cred, bool) {
	if crossSite(r) {
		writeError(w, wire.Errorf(wire.CodePermission, "cross-origin request refused: the gateway serves its own page only (no CORS)"))
		return cred{}, false
	}
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, secret, _ := strings.Cut(h, " ")
		if !strings.EqualFold(scheme, "Bearer") {
			writeError(w, wire.Errorf(webapi.CodeUnauthorized, "authorization must be \"Bearer TOKEN\" (make one: orcr web token new)"))
			return cred{}, false
		}
		c, ok := g.s.auth.check(r.Context(), strings.TrimSpace(secret))
		if !ok {
			writeError(w, wire.Errorf(webapi.CodeUnauthorized, "token refused: unknown, revoked or expired (orcr web token ls)"))
			return cred{}, false
		}
		return c, true
	}
	ck, err := r.Cookie(cookieName)
	if err != nil || ck.Value == "" {
		writeError(w, wire.Errorf(webapi.CodeUnauthorized, "no credential: send \"Authorization: Bearer TOKEN\" (orcr web token new) or pair this browser (orcr web pair)"))
		return cred{}, false
	}
	c, ok := g.s.auth.check(r.Context(), ck.Value)
	if !ok {
		http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
		writeError(w, wire.Errorf(webapi.CodeUnauthorized, "this browser's pairing was revoked or has expired; pair it again (orcr web pair)"))
		return cred{}, false
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Header.Get(csrfHeader) != "1" {
		writeError(w, wire.Errorf(wire.CodePermission, "a browser's call (any POST) needs the %s: 1 header (cross-site requests cannot send it)", csrfHeader))
		return cred{}, false
	}
	return c, true
}

// crossSite reports a request a browser marked as coming from another site: an
// Origin other than this host, or Sec-Fetch-Site cross-site.
func crossSite(r *http.Request) bool {
	if s := r.Header.Get("Sec-Fetch-Site"); s == "cross-site" || s == "same-site" {
		return true
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return false
	}
	u, err := url.Parse(o)
	if err != nil || u.Host == "" {
		return true // "null" (a sandboxed frame, a file) is no origin of ours
	}
	return !strings.EqualFold(u.Host, r.Host)
}

// method serves POST /api/v1/{method}: the socket method's params as the body, its
// result (or its error, with a status from the code) as the answer.
func (g *gateway) method(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("method")
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeErrorStatus(w, http.StatusMethodNotAllowed, &wire.Error{Code: wire.CodeBadRequest, Message: fmt.Sprintf("%s is called with POST and its params as a JSON body, e.g. curl -H \"Authorization: Bearer $T\" -d '{}' …/api/v1/%s", name, name)})
		return
	}
	c, ok := g.authenticate(w, r)
	if !ok {
		return
	}
	h, found := g.table[name]
	if !found {
		writeError(w, wire.Errorf(wire.CodeUnknownMethod, "unknown method %q; see `orcr api schema`", name))
		return
	}
	if webapi.Local[name] {
		writeError(w, wire.Errorf(wire.CodePermission, "%s is served on the local socket only: run `orcr %s` on the machine", name, cliOf(name)))
		return
	}
	spec := h.Spec()
	if c.scope != webapi.ScopeAct && !spec.ReadOnly {
		writeError(w, wire.Errorf(wire.CodePermission, "%s changes something; the %s token %q may only read (make an act token: orcr web token new --scope act)", name, c.scope, c.name))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, wire.MaxLine))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			writeError(w, wire.Errorf(wire.CodeLineTooLong, "request body over %d bytes refused, nothing in it was done", wire.MaxLine))
			return
		}
		writeError(w, wire.Errorf(wire.CodeBadRequest, "read body: %v", err))
		return
	}
	params, err := h.Decode(json.RawMessage(bytes.TrimSpace(body)))
	if err != nil {
		writeError(w, err)
		return
	}
	ctx := core.WithCaller(r.Context(), caller())
	if spec.Stream != nil {
		g.stream(ctx, w, h, params)
		return
	}
	if h.Heavy() {
		select {
		case g.heavy <- struct{}{}:
			defer func() { <-g.heavy }()
		case <-ctx.Done():
			return
		}
	}
	// The newest event's seq before the method runs: what it answers is at least as
	// new, so a page that follows the events after this seq misses nothing (it needs
	// no server.info first: one round trip less before it draws).
	w.Header().Set("X-Orcr-Seq", strconv.FormatUint(g.s.k.LastSeq(), 10))
	res, err := h.Serve(ctx, params)
	if err != nil {
		writeError(w, err)
		return
	}
	b, err := json.Marshal(res)
	if err != nil {
		writeError(w, wire.Errorf(wire.CodeInternal, "encode result: %v", err))
		return
	}
	if len(b) > wire.MaxAnswer {
		writeError(w, wire.Errorf(wire.CodeAnswerTooBig, "the answer is %d MiB, over %d MiB; page it (limit and after) or narrow it", len(b)>>20, wire.MaxAnswer>>20))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	writeBody(w, r, append(b, '\n'), nil)
}

// cliOf is the command a local-only method is for.
func cliOf(method string) string {
	switch method {
	case webapi.MethodPair:
		return "web pair"
	case webapi.MethodTokenNew:
		return "web token new"
	}
	return method
}

// httpStream is a streaming method's connection over HTTP: the reply is the first
// line of an NDJSON answer and each line follows; the client cannot send (HTTP/1.1
// has no full duplex), so ReadLine waits for the client to leave and says EOF.
type httpStream struct {
	ctx     context.Context
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	mu      sync.Mutex
	replied bool
	failed  bool
}

func (s *httpStream) Reply(result any, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.replied {
		return
	}
	s.replied = true
	if err != nil {
		s.failed = true
		writeError(s.w, err)
		return
	}
	s.w.Header().Set("Content-Type", "application/x-ndjson")
	s.w.Header().Set("Cache-Control", "no-store")
	s.writeLocked(result)
}

func (s *httpStream) writeLocked(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	if _, err := s.w.Write(append(b, '\n')); err != nil {
		return err
	}
	return s.rc.Flush()
}

func (s *httpStream) Send(line any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed {
		return errors.New("the stream's answer was an error")
	}
	return s.writeLocked(line)
}

func (s *httpStream) ReadLine() ([]byte, error) {
	<-s.ctx.Done()
	return nil, io.EOF
}

func (g *gateway) stream(ctx context.Context, w http.ResponseWriter, h wire.Handler, params any) {
	if !g.enter(w) {
		return
	}
	defer g.s.clients.Add(-1)
	hs := &httpStream{ctx: ctx, w: w, rc: http.NewResponseController(w), timeout: g.s.writeTimeout}
	h.ServeStream(ctx, params, hs)
	hs.Reply(nil, errors.New("the stream ended without an answer"))
}

// enter counts an event stream in, or refuses it past the bound.
func (g *gateway) enter(w http.ResponseWriter) bool {
	if n := g.s.clients.Add(1); n > int64(g.s.maxClients) {
		g.s.clients.Add(-1)
		writeError(w, wire.Errorf(wire.CodeTooManyConnections, "%d event streams are open, the most the gateway serves; close some", g.s.maxClients))
		return false
	}
	return true
}

// afterOf is where an event stream starts: Last-Event-ID (a reconnect) wins over
// ?after=; with neither it starts at the newest event (live only). A cursor past the
// newest event (the client's log is of another state directory, or of this one
// before it was wiped) starts at the newest too, and hello says so: kept, it would
// skip every event up to it without a word.
func (g *gateway) afterOf(r *http.Request) (after uint64, hello string, err error) {
	last := g.s.k.LastSeq()
	for _, v := range []string{r.Header.Get("Last-Event-ID"), r.URL.Query().Get("after")} {
		if v == "" {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return 0, "", wire.Errorf(wire.CodeInvalidParams, "event cursor %q: a seq (a whole number ≥ 0)", v)
		}
		if n > last {
			return last, fmt.Sprintf("orcr events after %d: the cursor %d is past the newest event, %d (another server's, or before its state was wiped): reload what you show", last, n, last), nil
		}
		return n, fmt.Sprintf("orcr events after %d", n), nil
	}
	return last, fmt.Sprintf("orcr events after %d", last), nil
}

// sse writes Server-Sent Events with a write deadline: a client that stops reading
// is dropped once its socket's buffers are full, and costs the server one blocked
// goroutine until then. It keeps no buffer of its own: what it writes goes to
// net/http's buffered writer (4 KB per connection) and on to the socket, so a stream
// costs the same few KB whatever it was sent. (It used to gather each batch in a
// bytes.Buffer of its own, which kept the capacity of its biggest batch for the
// stream's life: with 100 clients sent a backlog, 16 MB of the server's memory.)
type sse struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	// deadline is the write deadline set on the connection: it is moved on only once
	// half of the timeout is spent, so a write always has at least half of it. Setting
	// it at every flush was 12 % of the gateway's CPU with 100 streams (a runtime timer
	// changed per client per event).
	deadline time.Time
	// head is one event's header lines (and its data when small), reused.
	head []byte
	// pending is whether anything was written since the last flush; err the first
	// write's error (the stream is over).
	pending bool
	err     error
}

// sseInline is the largest data an event's header is written together with; bigger
// data is written on its own, so head stays small.
const sseInline = 512

// open admits one more stream (refused over the gateway's bound) and starts it with
// its first comment; the caller gives the stream's slot back (clients.Add(-1)) when
// ok. retry sets the client's reconnection delay, for event streams.
func (g *gateway) open(w http.ResponseWriter, hello string, retry bool) (*sse, bool) {
	if !g.enter(w) {
		return nil, false
	}
	out := newSSE(w, g.s.writeTimeout)
	if retry {
		out.write([]byte("retry: 2000\n"))
	}
	out.comment(hello)
	if out.flush() != nil {
		g.s.clients.Add(-1)
		return nil, false
	}
	return out, true
}

func newSSE(w http.ResponseWriter, timeout time.Duration) *sse {
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return &sse{w: w, rc: http.NewResponseController(w), timeout: timeout}
}

// write writes p toward the client (it reaches the socket by the next flush at the
// latest), with the deadline moved on first when it is due.
func (s *sse) write(p []byte) {
	if s.err != nil || len(p) == 0 {
		return
	}
	if now := time.Now(); s.deadline.Sub(now) < s.timeout/2 {
		s.deadline = now.Add(s.timeout)
		_ = s.rc.SetWriteDeadline(s.deadline)
	}
	_, s.err = s.w.Write(p)
	s.pending = true
}

// event writes one event (see appendEvent).
func (s *sse) event(seq uint64, name string, data []byte) {
	if len(data) <= sseInline {
		s.head = appendEvent(s.head[:0], seq, name, data)
		s.write(s.head)
		return
	}
	s.head = appendEvent(s.head[:0], seq, name, nil)
	s.write(s.head[:len(s.head)-2]) // the header and "data: "
	s.write(data)
	s.write([]byte("\n\n"))
}

func (s *sse) comment(text string) {
	s.head = append(append(append(s.head[:0], ": "...), oneLine(text)...), "\n\n"...)
	s.write(s.head)
}

// flush sends what was written to the client; an error ends the stream.
func (s *sse) flush() error {
	if s.err != nil || !s.pending {
		return s.err
	}
	s.pending = false
	s.err = s.rc.Flush()
	return s.err
}

func oneLine(s string) string { return strings.NewReplacer("\n", " ", "\r", " ").Replace(s) }

// events serves GET /api/v1/events: the event log as Server-Sent Events whose id is
// the event's seq, from Last-Event-ID or ?after=, then live; ?path= (repeatable)
// filters by agent glob, ?transient=1 adds agent.screen.
func (g *gateway) events(w http.ResponseWriter, r *http.Request) {
	if _, ok := g.authenticate(w, r); !ok {
		return
	}
	after, hello, err := g.afterOf(r)
	if err != nil {
		writeError(w, err)
		return
	}
	q := r.URL.Query()
	paths := q["path"]
	if len(paths) > 256 {
		writeError(w, wire.Errorf(wire.CodeInvalidParams, "at most 256 paths"))
		return
	}
	ctx, cancel := context.WithCancel(core.WithCaller(r.Context(), caller()))
	defer cancel()
	transient := q.Get("transient") == "1"
	if len(paths) == 0 && !transient {
		g.fromHub(ctx, w, after, hello)
		return
	}
	ch, err := g.s.k.Subscribe(ctx, wire.SubscribeParams{After: after, Paths: paths, Transient: transient})
	if err != nil {
		writeError(w, err)
		return
	}
	out, ok := g.open(w, hello, true)
	if !ok {
		return
	}
	defer g.s.clients.Add(-1)
	beat := time.NewTicker(g.s.heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.s.stopping:
			return
		case <-beat.C:
			out.comment("heartbeat")
		case ev, ok := <-ch:
			if !ok {
				return
			}
			// Take what else is ready, up to a bound, and flush once.
			for i := 0; ; i++ {
				if b, err := json.Marshal(ev); err == nil {
					out.event(ev.Seq, ev.Event, b)
				}
				if i >= hubBatch-1 || out.err != nil {
					break
				}
				select {
				case ev, ok = <-ch:
				default:
					ok = false
				}
				if !ok {
					break
				}
			}
		}
		if out.flush() != nil {
			return
		}
	}
}

// fromHub serves an unfiltered event stream from the hub's ring, catching up from
// the store while the cursor is older than the ring.
func (g *gateway) fromHub(ctx context.Context, w http.ResponseWriter, after uint64, hello string) {
	out, ok := g.open(w, hello, true)
	if !ok {
		return
	}
	defer g.s.clients.Add(-1)
	beat := time.NewTicker(g.s.heartbeat)
	defer beat.Stop()
	cursor := after
	var frames []frame
	for {
		var ok bool
		var changed <-chan struct{}
		frames, ok, changed = g.hub.since(frames[:0], cursor, hubBatch)
		if !ok {
			if !g.catchUp(ctx, out, &cursor, beat.C) {
				return
			}
			continue
		}
		for _, f := range frames {
			out.write(f.b)
			cursor = f.seq
		}
		if len(frames) > 0 {
			clear(frames) // hold no frame the ring has let go of
			if out.flush() != nil {
				return
			}
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-g.s.stopping:
			return
		case <-beat.C:
			out.comment("heartbeat")
			if out.flush() != nil {
				return
			}
		case <-changed:
		}
	}
}

// catchUp streams stored events after *cursor on a subscription of the stream's own
// until the hub holds every event after it; false when the stream ended. It waits
// for its turn first (hub.catchUps), with heartbeats meanwhile.
func (g *gateway) catchUp(ctx context.Context, out *sse, cursor *uint64, beat <-chan time.Time) bool {
	for turn := false; !turn; {
		select {
		case g.hub.catchUps <- struct{}{}:
			turn = true
		case <-ctx.Done():
			return false
		case <-g.s.stopping:
			return false
		case <-beat:
			out.comment("heartbeat")
			if out.flush() != nil {
				return false
			}
		}
	}
	defer func() { <-g.hub.catchUps }()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := g.s.k.Subscribe(ctx, wire.SubscribeParams{After: *cursor})
	if err != nil {
		return false
	}
	n := 0
	for !g.hub.covers(*cursor) {
		select {
		case <-ctx.Done():
			return false
		case <-g.s.stopping:
			return false
		case ev, ok := <-ch:
			if !ok {
				return false
			}
			out.write(encodeFrame(ev))
			*cursor = ev.Seq
			if n++; len(ch) == 0 || n >= hubBatch {
				n = 0
				if out.flush() != nil {
					return false
				}
			}
		}
	}
	return out.flush() == nil
}

// isLoopback reports whether addr (host:port) listens on loopback only.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

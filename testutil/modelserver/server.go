// Package modelserver is orcr's scripted model server, a test fixture that lets the real
// claude and codex CLIs run unattended on this machine. It listens on 127.0.0.1 only and
// speaks the Anthropic Messages API (plain JSON and Server-Sent Events) and the OpenAI
// Responses streaming API (plus chat completions for clients that need it). Each test
// gives it a script: text replies, tool calls the CLI then really runs, delays, a 429
// usage-limit error with the provider's wording and headers, and the usage numbers the
// CLI should record. Every request is logged for the test to assert on.
package modelserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Usage is what the server reports for one response. For OpenAI, Input includes
// CacheRead, as the Responses API counts it.
type Usage struct {
	Input      int64
	Output     int64
	CacheRead  int64
	CacheWrite int64
}

// ToolCall asks the client to run a tool. Input is the tool's arguments as a JSON
// object (for OpenAI function calls it is sent as the arguments string).
type ToolCall struct {
	Name  string
	Input any
	// Custom sends an OpenAI custom tool call (free-form input, e.g. apply_patch) with
	// Input as its raw text.
	Custom bool
}

// LimitError is a scripted 429 usage-limit error.
type LimitError struct {
	// ResetsAt is when the limit resets; the server sends it in the body and headers.
	ResetsAt time.Time
	// Message overrides the error message.
	Message string
	// Claim is the limit that was hit, as Anthropic names it in the
	// representative-claim header: five_hour (default), seven_day, seven_day_opus,
	// seven_day_sonnet. Claude Code words its message from it ("your Opus limit").
	Claim string
}

// orDefaults is the limit's message (msg when it sets none) and when it resets (in an
// hour when it does not say).
func (l *LimitError) orDefaults(msg string) (string, time.Time) {
	if l.Message != "" {
		msg = l.Message
	}
	reset := l.ResetsAt
	if reset.IsZero() {
		reset = time.Now().Add(time.Hour)
	}
	return msg, reset
}

// APIError is a scripted error response: the HTTP status and the provider's error
// type and message.
type APIError struct {
	Status  int
	Type    string // e.g. invalid_request_error
	Message string
}

// Turn is one scripted model response, consumed by the next conversation request.
type Turn struct {
	Text      string
	Thinking  string
	ToolCalls []ToolCall
	Usage     Usage
	// Delay holds the response back (before headers are sent).
	Delay time.Duration
	// Limit answers with a 429 usage-limit error instead of a reply.
	Limit *LimitError
	// Fail answers with an API error instead of a reply (e.g. a 400 the CLI does not
	// retry: its turn ends failed, with no message).
	Fail *APIError
	// Headers are added to the response (e.g. rate-limit readings).
	Headers map[string]string
	// Model overrides the model name echoed back.
	Model string
	// Match, when set, restricts which request may consume this turn; requests that
	// do not match get the default reply.
	Match func(Request) bool
	// Build, when set, makes the turn from the request that consumes it (e.g. a
	// tool call naming a path the CLI only tells in its system prompt). The turn
	// it returns is played instead; its own Build and Match are ignored. It runs
	// with the server's lock held, so it must not call the server.
	Build func(Request) Turn
}

// Request is one logged request.
type Request struct {
	At     time.Time
	Method string
	Path   string
	Query  string
	Header http.Header
	Body   []byte
	// Stream is the body's "stream" flag.
	Stream bool
	// Scripted says the request consumed a scripted turn (Turn is its index in its
	// script). Script is the key of the script it was routed to ("" for the main one).
	Scripted bool
	Turn     int
	Script   string
	// Status is the HTTP status sent.
	Status int
}

// JSON decodes the request body into v.
func (r Request) JSON(v any) error { return json.Unmarshal(r.Body, v) }

// Server is a running scripted model server.
type Server struct {
	// URL is the base URL, http://127.0.0.1:port (no trailing slash, no /v1).
	URL string

	ln   net.Listener
	srv  *http.Server
	mu   sync.Mutex
	cond *sync.Cond
	turn []Turn
	next int
	log  []Request
	// Default is the reply for requests the script does not cover (side requests
	// such as title generation, and conversation requests after the script ran out).
	def  Turn
	seq  int
	done chan struct{}
	// route names the script of a conversation request (Route); routed are those
	// scripts by key, and changed is closed (and replaced) whenever one grows.
	route   func(Request) string
	routed  map[string]*routedScript
	changed chan struct{}
}

// routedScript is one routed script and how far it has been played.
type routedScript struct {
	turns []Turn
	next  int
}

// Start starts a server playing script. Close it when done.
func Start(script ...Turn) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("modelserver: listen: %w", err)
	}
	s := &Server{
		URL:  "http://" + ln.Addr().String(),
		ln:   ln,
		turn: script,
		def:  Turn{Text: "ok", Usage: Usage{Input: 1, Output: 1}},
		done: make(chan struct{}),

		routed:  map[string]*routedScript{},
		changed: make(chan struct{}),
	}
	s.cond = sync.NewCond(&s.mu)
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the server and drops open connections.
func (s *Server) Close() {
	select {
	case <-s.done:
		return
	default:
	}
	close(s.done)
	_ = s.srv.Close()
}

// Push appends turns to the script.
func (s *Server) Push(turns ...Turn) {
	s.mu.Lock()
	s.turn = append(s.turn, turns...)
	s.mu.Unlock()
}

// Route makes the server play several scripts at once, one per agent, when several
// CLIs share it: key names the script of each conversation request ("" is the main
// script, Push). A routed script that has run out holds its next request until
// PushTo gives it a turn (or the client gives up, or the server closes), so a test
// can let one agent go on only once another has got somewhere. key runs with the
// server's lock held, so it must not call the server.
func (s *Server) Route(key func(Request) string) {
	s.mu.Lock()
	s.route = key
	s.mu.Unlock()
}

// PushTo appends turns to the routed script key (see Route).
func (s *Server) PushTo(key string, turns ...Turn) {
	if key == "" {
		s.Push(turns...)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sc := s.routed[key]
	if sc == nil {
		sc = &routedScript{}
		s.routed[key] = sc
	}
	sc.turns = append(sc.turns, turns...)
	close(s.changed)
	s.changed = make(chan struct{})
}

// PlayedOf is how many turns of the routed script key have been consumed.
func (s *Server) PlayedOf(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sc := s.routed[key]; sc != nil {
		return sc.next
	}
	return 0
}

// SetDefault changes the reply for unscripted requests.
func (s *Server) SetDefault(t Turn) {
	s.mu.Lock()
	s.def = t
	s.mu.Unlock()
}

// Requests returns a copy of the request log.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

// Played is how many scripted turns have been consumed.
func (s *Server) Played() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next
}

// Remaining is how many scripted turns are left.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.turn) - s.next
}

// conversation reports whether a request is part of the agent's conversation (and so
// consumes the script) rather than a side request. Both CLIs send their tool list with
// every conversation request; side requests (title, quota probes) send none.
func conversation(body map[string]any) bool {
	tools, _ := body["tools"].([]any)
	return len(tools) > 0
}

// Conversation keeps the requests of reqs that are an agent's conversation (they carry
// the CLI's tool list), not side requests: the rule the server plays its script by.
func Conversation(reqs []Request) []Request {
	var out []Request
	for _, r := range reqs {
		var body map[string]any
		if r.JSON(&body) == nil && conversation(body) {
			out = append(out, r)
		}
	}
	return out
}

func (s *Server) pick(ctx context.Context, req *Request, body map[string]any) Turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	if !conversation(body) {
		return s.def
	}
	if s.route != nil {
		req.Script = s.route(*req)
	}
	if req.Script == "" {
		return s.take(req, &s.turn, &s.next)
	}
	for {
		sc := s.routed[req.Script]
		if sc != nil && sc.next < len(sc.turns) {
			return s.take(req, &sc.turns, &sc.next)
		}
		// Out of turns: hold the request until the test pushes more.
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
			s.mu.Lock()
		case <-ctx.Done():
			s.mu.Lock()
			return s.def
		case <-s.done:
			s.mu.Lock()
			return s.def
		}
	}
}

// take plays the next turn of a script when it matches req, else the default reply.
func (s *Server) take(req *Request, turns *[]Turn, next *int) Turn {
	if *next >= len(*turns) {
		return s.def
	}
	t := (*turns)[*next]
	if t.Match != nil && !t.Match(*req) {
		return s.def
	}
	req.Scripted, req.Turn = true, *next
	*next++
	if t.Build != nil {
		t = t.Build(*req)
	}
	return t
}

func (s *Server) record(req Request) {
	s.mu.Lock()
	s.log = append(s.log, req)
	s.mu.Unlock()
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	req := Request{At: time.Now(), Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
		Header: r.Header.Clone(), Body: raw, Status: http.StatusOK}
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	req.Stream, _ = body["stream"].(bool)

	path := strings.TrimSuffix(r.URL.Path, "/")
	var h func(http.ResponseWriter, *Request, map[string]any, Turn) int
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/messages/count_tokens"):
		req.Status = writeJSON(w, 200, map[string]any{"input_tokens": 10})
		s.record(req)
		return
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/messages"):
		h = s.anthropic
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/responses"):
		h = s.responses
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/chat/completions"):
		h = s.chat
	case r.Method == http.MethodGet && strings.HasSuffix(path, "/models"):
		req.Status = writeJSON(w, 200, map[string]any{"object": "list", "data": []any{}, "models": []any{}})
		s.record(req)
		return
	default:
		req.Status = writeJSON(w, 404, map[string]any{"error": map[string]any{"type": "not_found", "message": "no route " + r.URL.Path}})
		s.record(req)
		return
	}
	t := s.pick(r.Context(), &req, body)
	if t.Delay > 0 {
		select {
		case <-time.After(t.Delay):
		case <-r.Context().Done():
		case <-s.done:
		}
	}
	for k, v := range t.Headers {
		w.Header().Set(k, v)
	}
	req.Status = h(w, &req, body, t)
	s.record(req)
}

func (s *Server) id(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return fmt.Sprintf("%s_%06d%08x", prefix, s.seq, time.Now().UnixNano()&0xffffffff)
}

func writeJSON(w http.ResponseWriter, status int, v any) int {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
	return status
}

// sse writes Server-Sent Events and flushes each one.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

func (e *sse) event(name string, v any) {
	b, _ := json.Marshal(v)
	if name != "" {
		fmt.Fprintf(e.w, "event: %s\n", name)
	}
	fmt.Fprintf(e.w, "data: %s\n\n", b)
	if e.f != nil {
		e.f.Flush()
	}
}

func (e *sse) raw(line string) {
	fmt.Fprintf(e.w, "%s\n\n", line)
	if e.f != nil {
		e.f.Flush()
	}
}

func modelOf(body map[string]any, t Turn) string {
	if t.Model != "" {
		return t.Model
	}
	if m, _ := body["model"].(string); m != "" {
		return m
	}
	return "scripted-model"
}

func inputJSON(in any) string {
	switch v := in.(type) {
	case nil:
		return "{}"
	case string:
		return v
	case json.RawMessage:
		return string(v)
	}
	b, _ := json.Marshal(in)
	return string(b)
}

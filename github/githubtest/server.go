// Package githubtest is a protocol-faithful fake of the GitHub REST API for tests (DESIGN
// §9), like herdr/herdrtest is for herdr: an in-memory set of repositories with issues,
// comments, label events, pull requests and reviews, served on a loopback httptest server
// with GitHub's response shapes and headers — Link pagination (per_page, page), weak ETags
// answered 304 on If-None-Match, `since` filtering, GitHub's default orderings, and an
// x-ratelimit-* budget that 304s do not spend. Faults (401, 403/429 with retry-after, 404,
// 5xx, slow answers, malformed bodies) are injected per request path.
//
// It is test code: nothing in orcr's binary imports it.
package githubtest

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is one fake GitHub. Its setup methods (AddRepo, AddIssue, …) and its HTTP
// handlers share one mutex, so a test may change the world while a client polls it.
type Server struct {
	// URL is the API root (like https://api.github.com), without a trailing slash.
	URL string

	srv *httptest.Server
	mu  sync.Mutex
	now func() time.Time

	tokens    map[string]string // token → login; empty: every request is anonymous
	limit     int
	anonLimit int
	budgets   map[string]*budget // by login ("" for anonymous)
	repos     map[string]*repo   // by lower-case "owner/name"
	nextID    int64
	faults    []*Fault
	log       []Request
	userIDs   map[string]int64
	pageLimit int
}

// Request is one request the server answered, for tests to count.
type Request struct {
	Method      string
	Path        string // path and query as sent
	Status      int
	Conditional bool // it carried If-None-Match
}

type budget struct {
	remaining int
	used      int
	reset     time.Time
}

// Option configures a Server.
type Option func(*Server)

// WithToken makes the server require authentication: token is accepted as login.
// Without any WithToken the server serves every request anonymously.
func WithToken(token, login string) Option {
	return func(s *Server) { s.tokens[token] = login }
}

// WithRateLimit sets the hourly budget of an authenticated user (GitHub: 5000).
func WithRateLimit(n int) Option { return func(s *Server) { s.limit = n } }

// WithClock makes the server read time from now (timestamps, rate-limit resets).
func WithClock(now func() time.Time) Option { return func(s *Server) { s.now = now } }

// New starts a server on loopback; it is closed when the test ends.
func New(t testing.TB, opts ...Option) *Server {
	s := &Server{
		now:       time.Now,
		tokens:    map[string]string{},
		limit:     5000,
		anonLimit: 60,
		budgets:   map[string]*budget{},
		repos:     map[string]*repo{},
		nextID:    1000,
		userIDs:   map[string]int64{},
	}
	for _, o := range opts {
		o(s)
	}
	mux := http.NewServeMux()
	s.routes(mux)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// Close stops the server early (it also stops when the test ends).
func (s *Server) Close() { s.srv.Close() }

// Requests returns the requests answered so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

// ResetRequests forgets the request log.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = nil
}

// Remaining is the rate-limit budget left for login ("" for anonymous).
func (s *Server) Remaining(login string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.budgetLocked(login).remaining
}

// SetRemaining sets login's budget left and when it resets.
func (s *Server) SetRemaining(login string, n int, reset time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.budgetLocked(login)
	b.remaining, b.reset = n, reset.Truncate(time.Second)
}

func (s *Server) budgetLocked(login string) *budget {
	b := s.budgets[login]
	now := s.now()
	if b == nil || !now.Before(b.reset) {
		limit := s.limit
		if login == "" {
			limit = s.anonLimit
		}
		b = &budget{remaining: limit, reset: now.Add(time.Hour).Truncate(time.Second)}
		s.budgets[login] = b
	}
	return b
}

func (s *Server) limitFor(login string) int {
	if login == "" {
		return s.anonLimit
	}
	return s.limit
}

// Fault makes matching requests fail. Zero fields match anything.
type Fault struct {
	Method     string        // "GET", "POST"; "" any
	Path       string        // prefix of the URL path, e.g. "/repos/o/r/issues"; "" any
	Times      int           // how many requests it hits; 0: every one until cleared
	Status     int           // the status to answer (401, 403, 404, 429, 500, 502 …); 0 with Delay, Malformed or NextPage: the real answer
	RetryAfter time.Duration // sent as retry-after (seconds) with 403/429
	Delay      time.Duration // wait this long before answering (or until the client gives up)
	Malformed  bool          // answer 200 with a truncated JSON body
	// Page matches only requests for this page of a listing (the page parameter; absent
	// is page 1); 0 any.
	Page int
	// NextPage answers with the real body but a Link header whose next is this page: a
	// paginator that loops (page 3 → page 2) when it is one already fetched. The body,
	// and so the ETag, is unchanged, as on GitHub: once the fault is cleared a client
	// revalidating the page is answered 304, without the Link.
	NextPage int
	hits     int
}

// Fail installs a fault; the newest matching fault wins.
func (s *Server) Fail(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &f)
}

// ClearFaults removes every fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

func (s *Server) matchFaultLocked(r *http.Request) *Fault {
	for i := len(s.faults) - 1; i >= 0; i-- {
		f := s.faults[i]
		if f.Method != "" && f.Method != r.Method {
			continue
		}
		if f.Path != "" && !strings.HasPrefix(r.URL.Path, f.Path) {
			continue
		}
		if f.Page > 0 && f.Page != pageOf(r) {
			continue
		}
		f.hits++
		if f.Times > 0 && f.hits >= f.Times {
			s.faults = append(s.faults[:i], s.faults[i+1:]...)
		}
		return f
	}
	return nil
}

func (s *Server) id() int64 {
	s.nextID++
	return s.nextID
}

func (s *Server) stamp() time.Time { return s.now().UTC().Truncate(time.Second) }

func (s *Server) userID(login string) int64 {
	if id, ok := s.userIDs[login]; ok {
		return id
	}
	id := int64(len(s.userIDs) + 1)
	s.userIDs[login] = id
	return id
}

// pageOf is the page a listing request asks for: its page parameter, 1 when absent or bad.
func pageOf(r *http.Request) int {
	page, err := strconv.Atoi(r.URL.Query().Get("page"))
	if err != nil || page < 1 {
		return 1
	}
	return page
}

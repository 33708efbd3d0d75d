package githubtest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// call is one request being answered: the handler fills header and returns a status and
// a value to encode as JSON.
type call struct {
	s      *Server
	r      *http.Request
	login  string
	header http.Header
	next   int // a fault's NextPage: the Link's next points there
}

type handler func(c *call) (int, any)

const (
	docsRoot      = "https://docs.github.com/rest"
	docsRateLimit = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"
	docsSecondary = "https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
)

// errBody is GitHub's error document.
type errBody struct {
	Message          string      `json:"message"`
	Errors           []errDetail `json:"errors,omitempty"`
	DocumentationURL string      `json:"documentation_url"`
	Status           string      `json:"status"`
}

type errDetail struct {
	Resource string `json:"resource"`
	Code     string `json:"code"`
	Field    string `json:"field,omitempty"`
	Message  string `json:"message,omitempty"`
}

func fail(status int, msg, doc string) (int, any) {
	return status, errBody{Message: msg, DocumentationURL: doc, Status: strconv.Itoa(status)}
}

func notFound() (int, any) { return fail(http.StatusNotFound, "Not Found", docsRoot) }

// serve wraps a handler with what every GitHub answer goes through, in GitHub's order:
// injected faults, authentication, the primary rate limit, the handler, then the
// conditional-request check (a 304 spends no budget) and the rate-limit headers.
func (s *Server) serve(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		f := s.matchFaultLocked(r)
		var fault Fault
		if f != nil {
			fault = *f
		}
		s.mu.Unlock()
		if fault.Delay > 0 {
			t := time.NewTimer(fault.Delay)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}

		s.mu.Lock()
		defer s.mu.Unlock()
		hdr := w.Header()
		hdr.Set("X-GitHub-Api-Version-Selected", "2022-11-28")
		hdr.Set("X-GitHub-Request-Id", fmt.Sprintf("FAKE:%d", len(s.log)+1))
		hdr.Set("Vary", "Accept, Authorization, Cookie, X-GitHub-OTP")
		conditional := r.Header.Get("If-None-Match") != ""
		logged := func(status int) { s.log = append(s.log, Request{r.Method, r.URL.RequestURI(), status, conditional}) }

		login, ok := s.authLocked(r)
		if !ok {
			logged(401)
			writeJSON(w, 401, errBody{Message: "Bad credentials", DocumentationURL: docsRoot, Status: "401"})
			return
		}
		if fault.Status == 401 {
			logged(401)
			writeJSON(w, 401, errBody{Message: "Bad credentials", DocumentationURL: docsRoot, Status: "401"})
			return
		}
		metered := r.URL.Path != "/rate_limit"
		b := s.budgetLocked(login)
		rateHeaders := func() {
			hdr.Set("X-RateLimit-Limit", strconv.Itoa(s.limitFor(login)))
			hdr.Set("X-RateLimit-Remaining", strconv.Itoa(b.remaining))
			hdr.Set("X-RateLimit-Reset", strconv.FormatInt(b.reset.Unix(), 10))
			hdr.Set("X-RateLimit-Used", strconv.Itoa(b.used))
			hdr.Set("X-RateLimit-Resource", "core")
		}
		if metered && b.remaining <= 0 {
			rateHeaders()
			logged(403)
			msg := "API rate limit exceeded for user ID " + strconv.FormatInt(s.userID(login), 10) + "."
			if login == "" {
				msg = "API rate limit exceeded for 127.0.0.1. (But here's the good news: Authenticated requests get a higher rate limit.)"
			}
			writeJSON(w, 403, errBody{Message: msg, DocumentationURL: docsRateLimit, Status: "403"})
			return
		}
		spend := func() {
			if metered {
				b.remaining--
				b.used++
			}
			rateHeaders()
		}

		switch st := fault.Status; {
		case st == 403 || st == 429:
			spend()
			logged(st)
			if fault.RetryAfter > 0 {
				hdr.Set("Retry-After", strconv.Itoa(int(fault.RetryAfter.Round(time.Second)/time.Second)))
				writeJSON(w, st, errBody{Message: "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.", DocumentationURL: docsSecondary, Status: strconv.Itoa(st)})
				return
			}
			writeJSON(w, st, errBody{Message: "Resource not accessible by personal access token", DocumentationURL: docsRoot, Status: strconv.Itoa(st)})
			return
		case st == 404:
			spend()
			logged(404)
			st, v := notFound()
			writeJSON(w, st, v)
			return
		case st >= 500:
			spend()
			logged(st)
			if st == 502 || st == 504 {
				// GitHub's front end answers these with an HTML page, not JSON.
				hdr.Set("Content-Type", "text/html")
				w.WriteHeader(st)
				_, _ = w.Write([]byte("<html><body><h1>" + http.StatusText(st) + "</h1></body></html>\n"))
				return
			}
			writeJSON(w, st, errBody{Message: "Server Error", DocumentationURL: docsRoot, Status: strconv.Itoa(st)})
			return
		}

		c := &call{s: s, r: r, login: login, header: hdr, next: fault.NextPage}
		status, v := h(c)
		body, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		if fault.Malformed {
			body = body[:len(body)/2]
		}
		if r.Method == http.MethodGet && status == http.StatusOK {
			sum := sha256.Sum256(append([]byte(login+"\x00"), body...))
			etag := `W/"` + hex.EncodeToString(sum[:16]) + `"`
			hdr.Set("ETag", etag)
			hdr.Set("Cache-Control", "private, max-age=60, s-maxage=60")
			if etagMatches(r.Header.Get("If-None-Match"), etag) {
				rateHeaders()
				hdr.Del("Link")
				logged(http.StatusNotModified)
				w.WriteHeader(http.StatusNotModified)
				return
			}
		}
		spend()
		logged(status)
		hdr.Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}
}

// authLocked reads the Authorization header ("Bearer T" or "token T"). No header is an
// anonymous request; a token the server does not know is refused.
func (s *Server) authLocked(r *http.Request) (login string, ok bool) {
	a := r.Header.Get("Authorization")
	if a == "" {
		return "", true
	}
	scheme, tok, _ := strings.Cut(a, " ")
	if !strings.EqualFold(scheme, "bearer") && !strings.EqualFold(scheme, "token") {
		return "", false
	}
	login, ok = s.tokens[strings.TrimSpace(tok)]
	return login, ok
}

// etagMatches is the weak comparison If-None-Match uses: W/ prefixes are ignored and
// the header may list several tags or "*".
func etagMatches(header, etag string) bool {
	if header == "" {
		return false
	}
	want := strings.TrimPrefix(etag, "W/")
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == want {
			return true
		}
	}
	return false
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// paginate cuts items to the requested page (per_page default 30, at most 100) and sets
// the Link header GitHub sends: prev, next, last, first, each the request's own URL
// with page replaced. A NextPage fault replaces next.
func paginate[T any](c *call, items []T) []T {
	q := c.r.URL.Query()
	per, err := strconv.Atoi(q.Get("per_page"))
	if err != nil || per < 1 {
		per = 30
	}
	per = min(per, 100)
	page := pageOf(c.r)
	last := max(1, (len(items)+per-1)/per)
	link := func(p int, rel string) string {
		q.Set("page", strconv.Itoa(p))
		u := url.URL{Scheme: "http", Host: c.r.Host, Path: c.r.URL.Path, RawQuery: q.Encode()}
		return "<" + u.String() + `>; rel="` + rel + `"`
	}
	var links []string
	if page > 1 {
		links = append(links, link(min(page-1, last), "prev"))
	}
	switch {
	case c.next > 0:
		links = append(links, link(c.next, "next"), link(last, "last"))
	case page < last:
		links = append(links, link(page+1, "next"), link(last, "last"))
	}
	if page > 1 {
		links = append(links, link(1, "first"))
	}
	if len(links) > 0 {
		c.header.Set("Link", strings.Join(links, ", "))
	}
	from := (page - 1) * per
	if from >= len(items) {
		return []T{}
	}
	return items[from:min(from+per, len(items))]
}

// since parses the since parameter (ISO 8601); ok is false when it is absent.
func since(c *call) (t time.Time, ok bool, bad bool) {
	v := c.r.URL.Query().Get("since")
	if v == "" {
		return time.Time{}, false, false
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, false, true
	}
	return t, true, false
}

func decodeBody(r *http.Request, v any) error {
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(http.MaxBytesReader(nil, r.Body, 1<<20)); err != nil {
		return err
	}
	return json.Unmarshal(buf.Bytes(), v)
}

func validation(resource, field, code, msg, doc string) (int, any) {
	return http.StatusUnprocessableEntity, errBody{Message: "Validation Failed",
		Errors:           []errDetail{{Resource: resource, Field: field, Code: code, Message: msg}},
		DocumentationURL: doc, Status: "422"}
}

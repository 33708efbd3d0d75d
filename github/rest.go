package github

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The REST layer under the operations: a request, its JSON, GitHub's answer headers
// (rate, Link) and its error bodies. It is orcr's own, over net/http and encoding/json:
// the eight endpoints orcr calls do not need go-github, whose package initialisation
// (~160 allocations, 30 KB) and 1.2 MB of code every orcr process, each CLI command
// included, paid before main.

// apiVersion is the REST API version asked for (GitHub's X-GitHub-Api-Version).
const apiVersion = "2022-11-28"

// response is what one request got back, its body already decoded.
type response struct {
	Status   int
	Header   http.Header
	URL      string // the request's URL: the ETag cache's key
	NextPage int    // Link's rel="next" page, 0 when there is none
}

// apiError is a non-2xx answer: its status, headers and GitHub's error body.
type apiError struct {
	Status           int
	Header           http.Header
	Message          string `json:"message"`
	DocumentationURL string `json:"documentation_url"`
	Errors           []struct {
		Message string `json:"message"`
	} `json:"errors"`
}

func (e *apiError) Error() string {
	if e.Message == "" {
		return http.StatusText(e.Status)
	}
	return e.Message
}

// limitError is a request the client did not send: GitHub said the budget is spent
// until Reset, or asked to wait until then (a secondary limit).
type limitError struct {
	Reset   time.Time
	Message string
}

func (e *limitError) Error() string { return e.Message }

// do sends one request to path (under the API root) with query and, for a write, in
// as its JSON body, and decodes a 2xx answer into out. A request GitHub would refuse
// for its rate limit is not sent.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, in, out any) (*response, error) {
	if err := c.refuseSpent(); err != nil {
		return nil, err
	}
	u := c.opts.APIURL + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("User-Agent", "orcr")
	req.Header.Set("X-GitHub-Api-Version", apiVersion)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.opts.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.opts.Token)
	}
	hr, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer hr.Body.Close()
	resp := &response{Status: hr.StatusCode, Header: hr.Header, URL: u, NextPage: nextPage(hr.Header.Get("Link"))}
	c.noteRate(hr.Header)
	if hr.StatusCode < 200 || hr.StatusCode > 299 {
		e := &apiError{Status: hr.StatusCode, Header: hr.Header}
		b, _ := io.ReadAll(io.LimitReader(hr.Body, 1<<20))
		if json.Unmarshal(b, e) != nil || e.Message == "" {
			e.Message = strings.TrimSpace(string(b))
			if len(e.Message) > 200 || strings.HasPrefix(e.Message, "<") {
				e.Message = "" // an HTML error page says nothing a status does not
			}
		}
		c.noteSecondary(e)
		return resp, e
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, hr.Body)
		return resp, nil
	}
	if err := json.NewDecoder(hr.Body).Decode(out); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return resp, err
	}
	return resp, nil
}

// refuseSpent is a limitError while GitHub's last answers said a request now would
// be refused: the hourly budget spent until its reset, or a secondary limit's wait.
func (c *Client) refuseSpent() error {
	now := c.opts.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if now.Before(c.secondaryUntil) {
		return &limitError{Reset: c.secondaryUntil, Message: "secondary rate limit still in effect; not sending the request"}
	}
	if c.rate.Limit > 0 && c.rate.Remaining == 0 && now.Before(c.rate.Reset) {
		return &limitError{Reset: c.rate.Reset, Message: fmt.Sprintf("API rate limit of %d still exceeded; not sending the request", c.rate.Limit)}
	}
	return nil
}

// noteRate keeps the rate-limit standing an answer's headers carry.
func (c *Client) noteRate(h http.Header) {
	limit, err := strconv.Atoi(h.Get("X-RateLimit-Limit"))
	if err != nil || limit == 0 {
		return
	}
	remaining, _ := strconv.Atoi(h.Get("X-RateLimit-Remaining"))
	reset, _ := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64)
	c.mu.Lock()
	c.rate = Rate{Limit: limit, Remaining: remaining, Reset: time.Unix(reset, 0)}
	c.mu.Unlock()
}

// noteSecondary remembers a secondary rate limit's wait, so no request goes out
// before it ends.
func (c *Client) noteSecondary(e *apiError) {
	if !isSecondary(e) {
		return
	}
	at, ok := retryAfter(e.Status, e.Header, c.opts.Now())
	if !ok {
		at = c.opts.Now().Add(time.Minute)
	}
	c.mu.Lock()
	c.secondaryUntil = at
	c.mu.Unlock()
}

// isSecondary tells GitHub's secondary (abuse) rate limit by its documentation link.
func isSecondary(e *apiError) bool {
	return (e.Status == http.StatusForbidden || e.Status == http.StatusTooManyRequests) &&
		strings.Contains(e.DocumentationURL, "secondary-rate-limits")
}

// nextPage reads the page number of Link's rel="next" (0 when there is none).
func nextPage(link string) int {
	for _, part := range strings.Split(link, ",") {
		target, params, ok := strings.Cut(strings.TrimSpace(part), ";")
		if !ok || !strings.HasPrefix(target, "<") || !strings.HasSuffix(target, ">") {
			continue
		}
		next := false
		for _, p := range strings.Split(params, ";") {
			if strings.TrimSpace(p) == `rel="next"` {
				next = true
			}
		}
		if !next {
			continue
		}
		u, err := url.Parse(target[1 : len(target)-1])
		if err != nil {
			continue
		}
		if n, err := strconv.Atoi(u.Query().Get("page")); err == nil && n > 0 {
			return n
		}
	}
	return 0
}

// repoPath is "repos/OWNER/NAME/" with both escaped, followed by rest.
func repoPath(owner, name, rest string) string {
	return "repos/" + url.PathEscape(owner) + "/" + url.PathEscape(name) + "/" + rest
}

// pageQuery adds page and per_page to q (GitHub's defaults left out).
func pageQuery(q url.Values, page, per int) url.Values {
	if q == nil {
		q = url.Values{}
	}
	if page > 0 {
		q.Set("page", strconv.Itoa(page))
	}
	if per > 0 {
		q.Set("per_page", strconv.Itoa(per))
	}
	return q
}

// setNonEmpty sets q[k] to v when v is not "".
func setNonEmpty(q url.Values, k, v string) {
	if v != "" {
		q.Set(k, v)
	}
}

// The JSON shapes orcr reads: the fields it uses of GitHub's objects.

type userJSON struct {
	Login string `json:"login"`
}

func (u *userJSON) login() string {
	if u == nil {
		return ""
	}
	return u.Login
}

type refJSON struct {
	Ref string `json:"ref"`
}

func (r *refJSON) ref() string {
	if r == nil {
		return ""
	}
	return r.Ref
}

type issueJSON struct {
	Number  int       `json:"number"`
	Title   string    `json:"title"`
	Body    string    `json:"body"`
	State   string    `json:"state"`
	User    *userJSON `json:"user"`
	HTMLURL string    `json:"html_url"`
	Labels  []struct {
		Name string `json:"name"`
	} `json:"labels"`
	PullRequest *struct {
		URL string `json:"url"`
	} `json:"pull_request"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

type commentJSON struct {
	ID        int64     `json:"id"`
	Body      string    `json:"body"`
	User      *userJSON `json:"user"`
	HTMLURL   string    `json:"html_url"`
	IssueURL  string    `json:"issue_url"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

type eventJSON struct {
	ID    int64  `json:"id"`
	Event string `json:"event"`
	Label *struct {
		Name string `json:"name"`
	} `json:"label"`
	Actor     *userJSON  `json:"actor"`
	Issue     *issueJSON `json:"issue"`
	CreatedAt time.Time  `json:"created_at"`
}

type pullJSON struct {
	Number    int       `json:"number"`
	Title     string    `json:"title"`
	Body      string    `json:"body"`
	State     string    `json:"state"`
	User      *userJSON `json:"user"`
	HTMLURL   string    `json:"html_url"`
	Head      *refJSON  `json:"head"`
	Base      *refJSON  `json:"base"`
	Draft     bool      `json:"draft"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

type reviewJSON struct {
	ID          int64     `json:"id"`
	State       string    `json:"state"`
	Body        string    `json:"body"`
	User        *userJSON `json:"user"`
	HTMLURL     string    `json:"html_url"`
	SubmittedAt time.Time `json:"submitted_at"`
}

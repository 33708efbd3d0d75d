// Package github is orcr's one GitHub REST client (DESIGN §5, §11), over net/http:
// the listeners' sources read issues, comments, label events and reviews through it, and
// runs open pull requests with it. It is built for polling: every GET is conditional on
// the ETag last seen for its URL (a 304 costs no rate limit), lists follow Link
// pagination, the rate-limit headers are honoured (no request is sent that GitHub would
// refuse; a caller is told when to come back), 5xx and network errors on reads are
// retried with back-off, and failures come back as typed errors (errors.go).
package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// DefaultAPIURL is github.com's REST root.
const DefaultAPIURL = "https://api.github.com/"

// Options configure a Client. Zero values are the defaults.
type Options struct {
	// Token authenticates requests; "" sends them anonymously (60 an hour on github.com).
	// ResolveToken finds one the way gh does.
	Token string
	// APIURL is the REST root: DefaultAPIURL, a GitHub Enterprise
	// "https://HOST/api/v3/", or a test server.
	APIURL string
	// Timeout bounds one HTTP request (default 30 s).
	Timeout time.Duration
	// Retries is how many times a read failing with 5xx or a network error is retried
	// (default 2; negative: none). Writes are never retried: GitHub may have done them.
	Retries int
	// Backoff is the first retry's delay, doubling after each (default 1 s).
	Backoff time.Duration
	// MaxRateWait is how long a call may block waiting for a rate limit to reset before
	// it returns ErrRateLimited instead (default 0: never block; pollers schedule
	// their next tick at the error's RetryAt).
	MaxRateWait time.Duration
	// CacheBytes bounds the ETag cache's stored bodies (default 16 MiB).
	CacheBytes int
	// Transport is the underlying HTTP transport (default http.DefaultTransport).
	Transport http.RoundTripper
	// Now is the clock for retry-after arithmetic (default time.Now).
	Now func() time.Time
}

// Client is safe for concurrent use; one per token and API root.
type Client struct {
	http  *http.Client
	cache *etagCache
	opts  Options

	mu             sync.Mutex
	rate           Rate
	secondaryUntil time.Time // a secondary rate limit's wait: nothing is sent before it
}

// Rate is the last rate-limit standing GitHub reported.
type Rate struct {
	Limit     int
	Remaining int
	Reset     time.Time
}

// Page describes what a listing cost.
type Page struct {
	Requests    int  // HTTP requests made
	NotModified bool // every one was answered 304: nothing changed since the last call
	Rate        Rate
	NewestID    int64 // ListLabelEvents: the highest event id seen, of any kind
}

// New builds a client.
func New(o Options) (*Client, error) {
	if o.APIURL == "" {
		o.APIURL = DefaultAPIURL
	}
	if !strings.HasSuffix(o.APIURL, "/") {
		o.APIURL += "/"
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.Retries == 0 {
		o.Retries = 2
	}
	if o.Backoff <= 0 {
		o.Backoff = time.Second
	}
	if o.CacheBytes <= 0 {
		o.CacheBytes = 16 << 20
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	cache := newETagCache(o.Transport, o.CacheBytes)
	return &Client{http: &http.Client{Transport: cache, Timeout: o.Timeout}, cache: cache, opts: o}, nil
}

// Rate returns the last rate-limit standing seen.
func (c *Client) Rate() Rate {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rate
}

// call runs one API request through classification, retries of idempotent requests on
// 5xx and network errors (with doubling back-off), and waits for rate limits that
// reset within MaxRateWait.
func (c *Client) call(ctx context.Context, op, repo string, idempotent bool, fn func() (*response, error)) (*response, error) {
	delay := c.opts.Backoff
	for attempt := 0; ; attempt++ {
		resp, err := fn()
		if err == nil {
			return resp, nil
		}
		err = classify(ctx, op, repo, c.opts.Now(), resp, err)
		var wait time.Duration
		switch {
		case errors.Is(err, ErrRateLimited):
			at, _ := RetryAt(err)
			wait = at.Sub(c.opts.Now())
			if wait > c.opts.MaxRateWait {
				return resp, err
			}
			wait = max(wait, 0) + 500*time.Millisecond // x-ratelimit-reset has 1 s grain
		case idempotent && attempt < c.opts.Retries && (errors.Is(err, ErrServer) || errors.Is(err, ErrUnreachable)):
			wait = delay
			delay *= 2
		default:
			return resp, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return resp, fmt.Errorf("github: %s %s: %w", op, repo, ctx.Err())
		case <-t.C:
		}
	}
}

// callOne is call for a request that also returns a value: it keeps the value of the
// attempt that answered.
func callOne[T any](ctx context.Context, c *Client, op, repo string, idempotent bool, fn func() (T, *response, error)) (T, *response, error) {
	var out T
	resp, err := c.call(ctx, op, repo, idempotent, func() (*response, error) {
		var r *response
		var err error
		out, r, err = fn()
		return r, err
	})
	return out, resp, err
}

// listAll pages through a listing: fetch gets one page (1-based) and returns GitHub's
// response; stop, if set, ends the walk early once a page holds what the caller needs.
// maxPages bounds the pages fetched (0: 100); past it the listing ends with what it has,
// as a caller asking for a few pages wants.
//
// Link's next is followed only to a page not fetched yet in this listing: a Link that
// loops (page 3 → page 2) made 6,000–8,000 requests every 5 s and never ended. A loop is
// an error, and every page of the listing leaves the ETag cache: a 304 carries no Link,
// so the cache would replay the looping one even after GitHub mends it.
func listAll[T any](ctx context.Context, c *Client, op, repo string, maxPages int, fetch func(ctx context.Context, page int) ([]T, *response, error), stop func(page []T) bool) ([]T, Page, error) {
	if maxPages <= 0 {
		maxPages = 100
	}
	var t tally
	ctx = withTally(ctx, &t)
	page := func() Page {
		t.mu.Lock()
		defer t.mu.Unlock()
		return Page{Requests: t.sent, NotModified: t.sent > 0 && t.sent == t.notModified, Rate: c.Rate()}
	}
	var all []T
	// fetched holds the pages asked for: the page number is all that tells one page's URL
	// from another's within a listing (its other parameters do not change).
	fetched := map[int]bool{}
	var urls []string
	for n := 1; len(fetched) < maxPages; {
		fetched[n] = true
		items, resp, err := callOne(ctx, c, op, repo, true, func() ([]T, *response, error) {
			return fetch(ctx, n)
		})
		if resp != nil {
			urls = append(urls, resp.URL)
		}
		if errors.Is(err, ErrMalformed) && resp != nil {
			c.cache.forget(resp.URL)
		}
		if err != nil {
			return all, page(), err
		}
		all = append(all, items...)
		if resp.NextPage == 0 || (stop != nil && stop(items)) {
			break
		}
		if fetched[resp.NextPage] {
			for _, u := range urls {
				c.cache.forget(u)
			}
			pg := page()
			return all, pg, errorf(ErrMalformed, op, repo,
				"GitHub's Link header loops at page %d (its next, page %d, was fetched already); stopped after %d requests, and the next call asks again without cached pages",
				n, resp.NextPage, pg.Requests)
		}
		n = resp.NextPage
	}
	return all, page(), nil
}

func splitRepo(op, full string) (string, string, error) {
	owner, name, ok := strings.Cut(full, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return "", "", errorf(ErrInvalid, op, full, "repo must be owner/name")
	}
	return owner, name, nil
}

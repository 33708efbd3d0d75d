package github

import (
	"bytes"
	"container/list"
	"context"
	"io"
	"net/http"
	"sync"
)

// tally counts what one listing sent, carried in the request's context so concurrent
// calls on one client count apart.
type tally struct {
	mu          sync.Mutex
	sent        int
	notModified int
}

type tallyKey struct{}

func withTally(ctx context.Context, t *tally) context.Context {
	return context.WithValue(ctx, tallyKey{}, t)
}

func count(req *http.Request, notModified bool) {
	if t, ok := req.Context().Value(tallyKey{}).(*tally); ok {
		t.mu.Lock()
		t.sent++
		if notModified {
			t.notModified++
		}
		t.mu.Unlock()
	}
}

// etagCache is the transport that makes polling cheap: every GET whose URL it has seen
// with an ETag goes out with If-None-Match, and a 304 (which costs no rate limit) is
// turned back into the 200 it stands for, from the stored body, counted in the call's
// tally so callers can tell nothing changed. Entries are kept per request
// URL, least recently used evicted past maxBytes: an evicted URL only costs one
// unconditional request. One body may take the whole of maxBytes (a page of 100 issues
// with long bodies is over 10 MiB); a body larger still is streamed to the caller
// uncached. No body is ever cut: a cut page decodes as "malformed" on every poll.
type etagCache struct {
	next     http.RoundTripper
	maxBytes int

	mu    sync.Mutex
	byURL map[string]*list.Element
	lru   list.List // of *cacheEntry, most recent at the front
	bytes int
}

type cacheEntry struct {
	url  string
	etag string
	link string
	body []byte
}

func newETagCache(next http.RoundTripper, maxBytes int) *etagCache {
	if next == nil {
		next = http.DefaultTransport
	}
	return &etagCache{next: next, maxBytes: maxBytes, byURL: map[string]*list.Element{}}
}

func (c *etagCache) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || req.Header.Get("If-None-Match") != "" {
		count(req, false)
		return c.next.RoundTrip(req)
	}
	key := req.URL.String()
	cached := c.get(key)
	if cached != nil {
		req = req.Clone(req.Context())
		req.Header.Set("If-None-Match", cached.etag)
	}
	resp, err := c.next.RoundTrip(req)
	count(req, err == nil && resp.StatusCode == http.StatusNotModified && cached != nil)
	if err != nil {
		return nil, err
	}
	switch {
	case resp.StatusCode == http.StatusNotModified && cached != nil:
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		resp.StatusCode, resp.Status = http.StatusOK, "200 OK"
		resp.Header.Set("Content-Type", "application/json; charset=utf-8")
		if resp.Header.Get("Link") == "" && cached.link != "" {
			resp.Header.Set("Link", cached.link)
		}
		resp.Body = io.NopCloser(bytes.NewReader(cached.body))
		resp.ContentLength = int64(len(cached.body))
	case resp.StatusCode == http.StatusOK && resp.Header.Get("ETag") != "":
		// A body that fits the whole cache is kept for the 304s to come; a larger one
		// is handed on as it streams, never cut: the caller decodes all of it, and the
		// next request for the URL goes out unconditional (it has no stored body).
		body, err := io.ReadAll(io.LimitReader(resp.Body, int64(c.maxBytes)+1))
		if err != nil {
			resp.Body.Close()
			return nil, err
		}
		if len(body) > c.maxBytes {
			resp.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(body), resp.Body), resp.Body}
			return resp, nil
		}
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		c.put(&cacheEntry{url: key, etag: resp.Header.Get("ETag"), link: resp.Header.Get("Link"), body: body})
	}
	return resp, nil
}

func (c *etagCache) get(key string) *cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	el := c.byURL[key]
	if el == nil {
		return nil
	}
	c.lru.MoveToFront(el)
	return el.Value.(*cacheEntry)
}

func (c *etagCache) put(e *cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(e.url)
	c.byURL[e.url] = c.lru.PushFront(e)
	c.bytes += len(e.body)
	for c.bytes > c.maxBytes && c.lru.Len() > 1 {
		c.removeLocked(c.lru.Back().Value.(*cacheEntry).url)
	}
}

// forget drops a URL whose stored body turned out not to decode, so the next request
// asks for it whole instead of replaying the bad body forever.
func (c *etagCache) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(key)
}

func (c *etagCache) removeLocked(key string) {
	if el := c.byURL[key]; el != nil {
		c.bytes -= len(el.Value.(*cacheEntry).body)
		c.lru.Remove(el)
		delete(c.byURL, key)
	}
}

func (c *etagCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

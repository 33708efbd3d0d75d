package githubtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// get sends one GET with optional headers (key, value pairs) and returns the response
// with its body read.
func get(t *testing.T, url string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

var linkRE = regexp.MustCompile(`<([^>]+)>; rel="(\w+)"`)

func links(h string) map[string]string {
	out := map[string]string{}
	for _, m := range linkRE.FindAllStringSubmatch(h, -1) {
		out[m[2]] = m[1]
	}
	return out
}

func TestPaginationFollowsLinkHeaders(t *testing.T) {
	s := New(t)
	s.AddRepo("o/r")
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 250 {
		s.AddIssue("o/r", Issue{Title: fmt.Sprint("issue ", i+1), CreatedAt: base.Add(time.Duration(i) * time.Minute)})
	}
	url := s.URL + "/repos/o/r/issues?per_page=100&state=open"
	var numbers []int
	pages := 0
	for url != "" {
		resp, body := get(t, url)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
		var page []struct {
			Number int    `json:"number"`
			State  string `json:"state"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatal(err)
		}
		for _, is := range page {
			numbers = append(numbers, is.Number)
		}
		l := links(resp.Header.Get("Link"))
		pages++
		if pages == 1 && (l["prev"] != "" || l["first"] != "" || !strings.Contains(l["last"], "page=3")) {
			t.Fatalf("first page links %v", l)
		}
		if pages == 3 && (l["next"] != "" || !strings.Contains(l["prev"], "page=2") || !strings.Contains(l["first"], "page=1")) {
			t.Fatalf("last page links %v", l)
		}
		if l["next"] != "" && !strings.Contains(l["next"], "state=open") {
			t.Fatalf("next link lost the query: %s", l["next"])
		}
		url = l["next"]
	}
	if pages != 3 || len(numbers) != 250 {
		t.Fatalf("pages %d, issues %d", pages, len(numbers))
	}
	// GitHub's default order: created, newest first.
	for i, n := range numbers {
		if n != 250-i {
			t.Fatalf("position %d holds #%d, want #%d", i, n, 250-i)
		}
	}
}

// A NextPage fault serves a Link that loops (page 3's next is page 2) on the page's real
// body; once cleared, the page's ETag still matches, so a revalidation is a 304 without
// a Link.
func TestLoopingLinkFault(t *testing.T) {
	s := New(t)
	s.AddRepo("o/r")
	for i := range 250 {
		s.AddIssue("o/r", Issue{Title: fmt.Sprint("issue ", i+1)})
	}
	page3 := s.URL + "/repos/o/r/issues?per_page=100&page=3"
	s.Fail(Fault{Path: "/repos/o/r/issues", Page: 3, NextPage: 2})
	if r, _ := get(t, s.URL+"/repos/o/r/issues?per_page=100&page=2"); !strings.Contains(links(r.Header.Get("Link"))["next"], "page=3") {
		t.Fatalf("page 2 was hit by a page-3 fault: %s", r.Header.Get("Link"))
	}
	r, looped := get(t, page3)
	if l := links(r.Header.Get("Link")); r.StatusCode != 200 || !strings.Contains(l["next"], "page=2") {
		t.Fatalf("looping page 3: %d %v", r.StatusCode, l)
	}
	etag := r.Header.Get("ETag")
	s.ClearFaults()
	r, mended := get(t, page3)
	if l := links(r.Header.Get("Link")); l["next"] != "" || string(mended) != string(looped) || r.Header.Get("ETag") != etag {
		t.Fatalf("mended page 3: next %q, same body %v, etag %q → %q", l["next"], string(mended) == string(looped), etag, r.Header.Get("ETag"))
	}
	if r, _ = get(t, page3, "If-None-Match", etag); r.StatusCode != 304 || r.Header.Get("Link") != "" {
		t.Fatalf("revalidation: %d, Link %q", r.StatusCode, r.Header.Get("Link"))
	}
}

func TestETagAnswers304WithoutSpendingBudget(t *testing.T) {
	s := New(t, WithToken("tok", "alice"), WithRateLimit(100))
	s.AddRepo("o/r")
	n := s.AddIssue("o/r", Issue{Title: "a"})
	url := s.URL + "/repos/o/r/issues"
	r1, _ := get(t, url, "Authorization", "Bearer tok")
	etag := r1.Header.Get("ETag")
	if !strings.HasPrefix(etag, `W/"`) || r1.Header.Get("X-RateLimit-Remaining") != "99" {
		t.Fatalf("etag %q remaining %q", etag, r1.Header.Get("X-RateLimit-Remaining"))
	}
	for range 3 {
		r, body := get(t, url, "Authorization", "Bearer tok", "If-None-Match", etag)
		if r.StatusCode != 304 || len(body) != 0 {
			t.Fatalf("conditional: %d %q", r.StatusCode, body)
		}
		if r.Header.Get("X-RateLimit-Remaining") != "99" || r.Header.Get("ETag") != etag {
			t.Fatalf("304 headers: %v", r.Header)
		}
	}
	if got := s.Remaining("alice"); got != 99 {
		t.Fatalf("remaining %d after 304s, want 99", got)
	}
	// Another token sees another ETag (GitHub varies on Authorization).
	s.AddComment("o/r", n, "bob", "hi")
	r2, _ := get(t, url, "Authorization", "token tok", "If-None-Match", etag)
	if r2.StatusCode != 200 || r2.Header.Get("ETag") == etag {
		t.Fatalf("after a change: %d etag %q", r2.StatusCode, r2.Header.Get("ETag"))
	}
	if r2.Header.Get("X-RateLimit-Remaining") != "98" || r2.Header.Get("X-RateLimit-Used") != "2" {
		t.Fatalf("remaining %s used %s", r2.Header.Get("X-RateLimit-Remaining"), r2.Header.Get("X-RateLimit-Used"))
	}
}

func TestSinceIsInclusiveAndFiltersOnUpdate(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s := New(t, WithClock(func() time.Time { return now }))
	s.AddRepo("o/r")
	a := s.AddIssue("o/r", Issue{Title: "a"})
	now = now.Add(time.Hour)
	s.AddIssue("o/r", Issue{Title: "b"})
	c1 := s.AddComment("o/r", a, "x", "first")
	now = now.Add(time.Hour)
	s.EditComment("o/r", c1, "edited")
	s.AddComment("o/r", a, "y", "second")

	count := func(url string) int {
		_, body := get(t, url)
		var v []json.RawMessage
		if err := json.Unmarshal(body, &v); err != nil {
			t.Fatalf("%s: %v: %s", url, err, body)
		}
		return len(v)
	}
	at := func(d time.Duration) string {
		return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).Add(d).Format(time.RFC3339)
	}
	if got := count(s.URL + "/repos/o/r/issues?since=" + at(time.Hour)); got != 2 {
		t.Fatalf("issues since 13:00: %d, want 2 (a was updated by its comment)", got)
	}
	if got := count(s.URL + "/repos/o/r/issues?since=" + at(2*time.Hour+time.Second)); got != 0 {
		t.Fatalf("issues after the last update: %d", got)
	}
	if got := count(s.URL + "/repos/o/r/issues/comments?since=" + at(2*time.Hour)); got != 2 {
		t.Fatalf("comments since 14:00 (inclusive): %d, want 2 (one edited)", got)
	}
	resp, _ := get(t, s.URL+"/repos/o/r/issues?since=yesterday")
	if resp.StatusCode != 422 {
		t.Fatalf("bad since: %d", resp.StatusCode)
	}
}

func TestAuthAndPrivateRepos(t *testing.T) {
	s := New(t, WithToken("alice-tok", "alice"), WithToken("bob-tok", "bob"))
	s.AddRepo("o/secret", "alice")
	r, body := get(t, s.URL+"/repos/o/secret/issues", "Authorization", "Bearer wrong")
	var e errBody
	_ = json.Unmarshal(body, &e)
	if r.StatusCode != 401 || e.Message != "Bad credentials" || e.Status != "401" {
		t.Fatalf("bad token: %d %s", r.StatusCode, body)
	}
	r, body = get(t, s.URL+"/repos/o/secret/issues", "Authorization", "Bearer bob-tok")
	_ = json.Unmarshal(body, &e)
	if r.StatusCode != 404 || e.Message != "Not Found" {
		t.Fatalf("bob on alice's private repo: %d %s", r.StatusCode, body)
	}
	if r, _ = get(t, s.URL+"/repos/o/secret/issues", "Authorization", "Bearer alice-tok"); r.StatusCode != 200 {
		t.Fatalf("alice: %d", r.StatusCode)
	}
	if r, _ = get(t, s.URL+"/repos/o/secret/issues"); r.StatusCode != 404 || r.Header.Get("X-RateLimit-Limit") != "60" {
		t.Fatalf("anonymous: %d limit %s", r.StatusCode, r.Header.Get("X-RateLimit-Limit"))
	}
}

func TestPrimaryRateLimitRefusesAndResets(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s := New(t, WithToken("tok", "alice"), WithRateLimit(2), WithClock(func() time.Time { return now }))
	s.AddRepo("o/r")
	auth := []string{"Authorization", "Bearer tok"}
	r, _ := get(t, s.URL+"/repos/o/r/issues", auth...)
	etag := r.Header.Get("ETag")
	get(t, s.URL+"/repos/o/r/pulls", auth...)
	r, body := get(t, s.URL+"/repos/o/r/issues", auth...)
	if r.StatusCode != 403 || r.Header.Get("X-RateLimit-Remaining") != "0" || !strings.Contains(string(body), "rate limit exceeded") {
		t.Fatalf("over budget: %d %s %s", r.StatusCode, r.Header.Get("X-RateLimit-Remaining"), body)
	}
	reset, _ := strconv.ParseInt(r.Header.Get("X-RateLimit-Reset"), 10, 64)
	if want := now.Add(time.Hour).Unix(); reset != want {
		t.Fatalf("reset %d, want %d", reset, want)
	}
	// A conditional request is refused too while the budget is spent.
	if r, _ = get(t, s.URL+"/repos/o/r/issues", append(auth, "If-None-Match", etag)...); r.StatusCode != 403 {
		t.Fatalf("conditional over budget: %d", r.StatusCode)
	}
	if r, _ = get(t, s.URL+"/rate_limit", auth...); r.StatusCode != 200 {
		t.Fatalf("/rate_limit is free: %d", r.StatusCode)
	}
	now = now.Add(time.Hour)
	if r, _ = get(t, s.URL+"/repos/o/r/issues", auth...); r.StatusCode != 200 || r.Header.Get("X-RateLimit-Remaining") != "1" {
		t.Fatalf("after reset: %d %s", r.StatusCode, r.Header.Get("X-RateLimit-Remaining"))
	}
}

func TestFaults(t *testing.T) {
	s := New(t)
	s.AddRepo("o/r")
	s.AddIssue("o/r", Issue{Title: "a"})
	url := s.URL + "/repos/o/r/issues"

	s.Fail(Fault{Path: "/repos/o/r/issues", Status: 429, RetryAfter: 30 * time.Second, Times: 1})
	r, body := get(t, url)
	if r.StatusCode != 429 || r.Header.Get("Retry-After") != "30" || !strings.Contains(string(body), "secondary rate limit") {
		t.Fatalf("429: %d %v %s", r.StatusCode, r.Header, body)
	}
	if r, _ = get(t, url); r.StatusCode != 200 {
		t.Fatalf("a Times:1 fault hit twice: %d", r.StatusCode)
	}
	s.Fail(Fault{Status: 502, Times: 1})
	if r, body = get(t, url); r.StatusCode != 502 || !strings.HasPrefix(string(body), "<html>") {
		t.Fatalf("502: %d %s", r.StatusCode, body)
	}
	s.Fail(Fault{Malformed: true, Times: 1})
	r, body = get(t, url)
	if r.StatusCode != 200 || json.Valid(body) {
		t.Fatalf("malformed: %d valid=%v", r.StatusCode, json.Valid(body))
	}
	s.Fail(Fault{Method: "POST", Status: 500})
	if r, _ = get(t, url); r.StatusCode != 200 {
		t.Fatalf("a POST fault hit a GET: %d", r.StatusCode)
	}
	s.ClearFaults()
	s.Fail(Fault{Delay: 300 * time.Millisecond, Times: 1})
	start := time.Now()
	if r, _ = get(t, url); r.StatusCode != 200 || time.Since(start) < 300*time.Millisecond {
		t.Fatalf("slow: %d after %s", r.StatusCode, time.Since(start))
	}
	reqs := s.Requests()
	if len(reqs) != 6 || reqs[0].Status != 429 || reqs[2].Status != 502 {
		t.Fatalf("request log %+v", reqs)
	}
}

func TestOrderingsAndWrites(t *testing.T) {
	s := New(t, WithToken("tok", "alice"))
	s.AddRepo("o/r")
	a := s.AddIssue("o/r", Issue{Title: "a"})
	s.AddLabel("o/r", a, "bug", "bob")
	s.AddLabel("o/r", a, "orcr", "bob")
	if id := s.AddLabel("o/r", a, "orcr", "bob"); id != 0 {
		t.Fatalf("relabel recorded event %d", id)
	}
	_, body := get(t, s.URL+"/repos/o/r/issues/events")
	var evs []struct {
		ID    int64  `json:"id"`
		Event string `json:"event"`
		Label struct {
			Name string `json:"name"`
		} `json:"label"`
		Issue struct {
			Number int `json:"number"`
		} `json:"issue"`
	}
	if err := json.Unmarshal(body, &evs); err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].Label.Name != "orcr" || evs[0].ID < evs[1].ID || evs[0].Issue.Number != a {
		t.Fatalf("events (newest first): %+v", evs)
	}

	post := func(path, body string) (int, []byte) {
		req, _ := http.NewRequest("POST", s.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	if st, b := post("/repos/o/r/pulls", `{"title":"t","head":"feat","base":"main"}`); st != 201 {
		t.Fatalf("create pull: %d %s", st, b)
	}
	if st, b := post("/repos/o/r/pulls", `{"title":"t2","head":"o:feat","base":"main"}`); st != 422 || !strings.Contains(string(b), "already exists") {
		t.Fatalf("duplicate pull: %d %s", st, b)
	}
	if st, _ := post("/repos/o/r/pulls", `{"head":"x","base":"main"}`); st != 422 {
		t.Fatalf("pull without title: %d", st)
	}
	_, body = get(t, s.URL+"/repos/o/r/pulls?head=o:feat")
	var prs []struct {
		Number int `json:"number"`
		Head   struct {
			Ref   string `json:"ref"`
			Label string `json:"label"`
		} `json:"head"`
	}
	_ = json.Unmarshal(body, &prs)
	if len(prs) != 1 || prs[0].Head.Ref != "feat" || prs[0].Head.Label != "o:feat" {
		t.Fatalf("pulls by head: %s", body)
	}
	if st, b := post(fmt.Sprintf("/repos/o/r/issues/%d/comments", a), `{"body":"hello"}`); st != 201 || !strings.Contains(string(b), `"issue_url"`) {
		t.Fatalf("comment: %d %s", st, b)
	}
	if got := s.Comments("o/r", a); len(got) != 1 || got[0] != "hello" {
		t.Fatalf("comments %q", got)
	}
	s.AddReview("o/r", prs[0].Number, "carol", "CHANGES_REQUESTED", "fix it")
	s.AddReview("o/r", prs[0].Number, "carol", "APPROVED", "")
	_, body = get(t, fmt.Sprintf("%s/repos/o/r/pulls/%d/reviews", s.URL, prs[0].Number))
	var rvs []struct{ State string }
	_ = json.Unmarshal(body, &rvs)
	if len(rvs) != 2 || rvs[0].State != "CHANGES_REQUESTED" {
		t.Fatalf("reviews (chronological): %s", body)
	}
	if r, _ := get(t, s.URL+"/repos/o/r/nothing/here"); r.StatusCode != 404 || r.Header.Get("Content-Type") != "application/json; charset=utf-8" {
		t.Fatalf("unknown route: %d %s", r.StatusCode, r.Header.Get("Content-Type"))
	}
}

package github_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"orcr/github"
	"orcr/github/githubtest"
	"orcr/testutil/wait"
)

// newClient is a client of s. Its request timeout scales with the test waits
// (ORCR_TEST_WAIT_SCALE): a page of 100 label events, each with its issue and the
// issue's 120 labels (TestCommentsEventsPullsReviews), is megabytes of JSON that
// took 0.8 s a request under -race at a load of 9, and past the fixed 5 s at a load
// of 40 the client reported the test server unreachable.
func newClient(t testing.TB, s *githubtest.Server, token string, mod ...func(*github.Options)) *github.Client {
	t.Helper()
	o := github.Options{Token: token, APIURL: s.URL, Backoff: 10 * time.Millisecond, Timeout: wait.Scale(5 * time.Second)}
	for _, m := range mod {
		m(&o)
	}
	c, err := github.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// seed1000 fills o/r with 1,000 open issues created a minute apart.
func seed1000(s *githubtest.Server) time.Time {
	s.AddRepo("o/r")
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 1000 {
		s.AddIssue("o/r", githubtest.Issue{Title: fmt.Sprint("issue ", i+1), Body: strings.Repeat("x", 200),
			Labels: []string{"triage"}, CreatedAt: base.Add(time.Duration(i) * time.Minute)})
	}
	return base.Add(999 * time.Minute)
}

// TestRepeatedTickIsOneConditionalRequest is the listener's steady state over a big
// repository: the first walk reads all pages, then a since cursor narrows the listing,
// and from then on a tick with nothing new is one request answered 304 that spends no
// rate limit.
func TestRepeatedTickIsOneConditionalRequest(t *testing.T) {
	s := githubtest.New(t, githubtest.WithToken("tok", "alice"))
	newest := seed1000(s)
	c := newClient(t, s, "tok")
	ctx := context.Background()

	all, pg, err := c.ListIssues(ctx, "o/r", github.IssueQuery{Labels: []string{"triage"}, Sort: "updated", Direction: "asc"})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1000 || pg.Requests != 10 || pg.NotModified {
		t.Fatalf("first walk: %d issues in %d requests (notModified %v)", len(all), pg.Requests, pg.NotModified)
	}
	if all[0].Number != 1 || all[999].Number != 1000 || !all[999].UpdatedAt.Equal(newest) || all[0].Labels[0] != "triage" {
		t.Fatalf("order or fields: first %+v last %+v", all[0], all[999])
	}
	cursor := all[999].UpdatedAt
	q := github.IssueQuery{Labels: []string{"triage"}, Since: cursor, Sort: "updated", Direction: "asc"}
	got, pg, err := c.ListIssues(ctx, "o/r", q)
	if err != nil || len(got) != 1 || pg.Requests != 1 || pg.NotModified {
		t.Fatalf("first since tick: %d issues, %+v, %v", len(got), pg, err)
	}
	before := s.Remaining("alice")
	s.ResetRequests()
	for range 3 {
		got, pg, err = c.ListIssues(ctx, "o/r", q)
		if err != nil || pg.Requests != 1 || !pg.NotModified || len(got) != 1 {
			t.Fatalf("steady tick: %d issues, %+v, %v", len(got), pg, err)
		}
	}
	reqs := s.Requests()
	if len(reqs) != 3 || reqs[0].Status != 304 || !reqs[0].Conditional {
		t.Fatalf("server saw %+v", reqs)
	}
	if after := s.Remaining("alice"); after != before {
		t.Fatalf("304s spent rate limit: %d → %d", before, after)
	}
	if r := c.Rate(); r.Limit != 5000 || r.Remaining != before {
		t.Fatalf("client rate %+v", r)
	}
	// Something new changes the answer: a full 200 with the new issue.
	s.AddIssue("o/r", githubtest.Issue{Title: "new", Labels: []string{"triage"}, CreatedAt: newest.Add(time.Minute)})
	got, pg, err = c.ListIssues(ctx, "o/r", q)
	if err != nil || pg.NotModified || len(got) != 2 || got[1].Title != "new" {
		t.Fatalf("after a new issue: %+v %+v %v", got, pg, err)
	}
}

// TestBigPageIsReadWhole: a page of 100 issues with bodies at GitHub's 65,536-character
// bound in two-byte characters is over 12 MiB. It was cut at 8 MiB by the ETag cache and
// failed as "malformed" on every call; it must decode whole, and the next call must be
// answered 304 and replayed from the cache, as for any page.
func TestBigPageIsReadWhole(t *testing.T) {
	s := githubtest.New(t, githubtest.WithToken("tok", "alice"))
	s.AddRepo("o/r")
	body := strings.Repeat("é", githubtest.MaxBody)
	for i := range 100 {
		s.AddIssue("o/r", githubtest.Issue{Title: fmt.Sprint("big ", i+1), Body: body})
	}
	// A long timeout: under -race on a loaded machine the fake server's 12.6 MiB
	// answer (encoded and hashed for its ETag at every request) takes seconds.
	long := func(o *github.Options) { o.Timeout = 2 * time.Minute }
	c := newClient(t, s, "tok", long)
	ctx := context.Background()
	for i, want304 := range []bool{false, true} {
		s.ResetRequests()
		got, pg, err := c.ListIssues(ctx, "o/r", github.IssueQuery{})
		if err != nil || len(got) != 100 || pg.NotModified != want304 {
			t.Fatalf("call %d: %d issues, %+v, %v", i+1, len(got), pg, err)
		}
		for _, is := range got {
			if is.Body != body {
				t.Fatalf("call %d: issue #%d has a body of %d bytes, want %d", i+1, is.Number, len(is.Body), len(body))
			}
		}
		if reqs := s.Requests(); len(reqs) != 1 || reqs[0].Conditional != want304 {
			t.Fatalf("call %d: server saw %+v", i+1, reqs)
		}
	}
	// Larger than the whole cache (a 1.3 MiB page, a 1 MiB cache): streamed to the
	// caller, never cut, and not kept.
	s.AddRepo("o/s")
	for i := range 10 {
		s.AddIssue("o/s", githubtest.Issue{Title: fmt.Sprint("big ", i+1), Body: body})
	}
	small := newClient(t, s, "tok", long, func(o *github.Options) { o.CacheBytes = 1 << 20 })
	for i := range 2 {
		got, pg, err := small.ListIssues(ctx, "o/s", github.IssueQuery{})
		if err != nil || len(got) != 10 || pg.NotModified || got[0].Body != body || got[9].Body != body {
			t.Fatalf("over the cache, call %d: %d issues, %+v, %v", i+1, len(got), pg, err)
		}
	}
}

// A Link header that loops (page 3's next is page 2) ends the listing with an error that
// says so, after the pages it could fetch; before, a listing never ended (6,000–8,000
// requests every 5 s). Once GitHub mends it the next listing reads every page, though
// page 3 is unchanged and revalidating it from the cache would replay the looping Link;
// and after that an unchanged listing is all 304s again.
func TestLinkLoopStops(t *testing.T) {
	s := githubtest.New(t, githubtest.WithToken("tok", "alice"))
	s.AddRepo("o/r")
	for i := range 250 {
		s.AddIssue("o/r", githubtest.Issue{Title: fmt.Sprint("issue ", i+1)})
	}
	c := newClient(t, s, "tok")
	// The deadline only keeps a broken client from spinning for ever.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s.Fail(githubtest.Fault{Path: "/repos/o/r/issues", Page: 3, NextPage: 2})
	for range 2 {
		s.ResetRequests()
		_, pg, err := c.ListIssues(ctx, "o/r", github.IssueQuery{})
		if !errors.Is(err, github.ErrMalformed) || !strings.Contains(err.Error(), "GitHub's Link header loops at page 3") ||
			!strings.Contains(err.Error(), "stopped") {
			t.Fatalf("looping Link: %v", err)
		}
		if n := len(s.Requests()); n != 3 || pg.Requests != 3 {
			t.Fatalf("looping Link: %d requests sent (page says %d), want 3", n, pg.Requests)
		}
	}
	s.ClearFaults()
	got, pg, err := c.ListIssues(ctx, "o/r", github.IssueQuery{})
	if err != nil || len(got) != 250 || pg.Requests != 3 {
		t.Fatalf("after GitHub mends the Link: %d issues in %d requests, %v", len(got), pg.Requests, err)
	}
	got, pg, err = c.ListIssues(ctx, "o/r", github.IssueQuery{})
	if err != nil || len(got) != 250 || pg.Requests != 3 || !pg.NotModified {
		t.Fatalf("unchanged listing: %d issues, %+v, %v", len(got), pg, err)
	}
}

// BenchmarkTickNotModified measures the client's CPU for one steady-state tick (one
// conditional request answered 304) against a repository of 1,000 open issues.
func BenchmarkTickNotModified(b *testing.B) {
	s := githubtest.New(b, githubtest.WithToken("tok", "alice"), githubtest.WithRateLimit(1<<30))
	newest := seed1000(s)
	c := newClient(b, s, "tok")
	ctx := context.Background()
	q := github.IssueQuery{Since: newest, Sort: "updated", Direction: "asc"}
	if _, _, err := c.ListIssues(ctx, "o/r", q); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		_, pg, err := c.ListIssues(ctx, "o/r", q)
		if err != nil || !pg.NotModified {
			b.Fatalf("%+v %v", pg, err)
		}
	}
}

func TestTypedErrors(t *testing.T) {
	s := githubtest.New(t, githubtest.WithToken("tok", "alice"), githubtest.WithToken("bob", "bob"))
	s.AddRepo("o/r")
	s.AddRepo("o/private", "alice")
	s.AddIssue("o/r", githubtest.Issue{Title: "a"})
	ctx := context.Background()
	c := newClient(t, s, "tok")

	_, _, err := newClient(t, s, "wrong").ListIssues(ctx, "o/r", github.IssueQuery{})
	if !errors.Is(err, github.ErrUnauthorized) || !strings.Contains(err.Error(), "GH_TOKEN") {
		t.Fatalf("401: %v", err)
	}
	_, _, err = newClient(t, s, "bob").ListIssues(ctx, "o/private", github.IssueQuery{})
	if !errors.Is(err, github.ErrNotFound) || !strings.Contains(err.Error(), "repo o/private not visible to this token") {
		t.Fatalf("404: %v", err)
	}
	if _, _, err = c.ListIssues(ctx, "nonsense", github.IssueQuery{}); !errors.Is(err, github.ErrInvalid) {
		t.Fatalf("bad repo name: %v", err)
	}

	s.Fail(githubtest.Fault{Status: 403, RetryAfter: 30 * time.Second, Times: 1})
	start := time.Now()
	_, _, err = c.ListIssues(ctx, "o/r", github.IssueQuery{})
	at, ok := github.RetryAt(err)
	if !errors.Is(err, github.ErrRateLimited) || !ok || at.Before(start.Add(29*time.Second)) || at.After(time.Now().Add(31*time.Second)) {
		t.Fatalf("403 retry-after: %v (retry at %s)", err, at)
	}
	c = newClient(t, s, "tok") // a fresh client: the client remembers the secondary limit
	s.Fail(githubtest.Fault{Status: 429, RetryAfter: 5 * time.Second, Times: 1})
	if _, _, err = c.ListIssues(ctx, "o/r", github.IssueQuery{}); !errors.Is(err, github.ErrRateLimited) {
		t.Fatalf("429: %v", err)
	}
	c = newClient(t, s, "tok")
	s.Fail(githubtest.Fault{Status: 403, Times: 1})
	if _, _, err = c.ListIssues(ctx, "o/r", github.IssueQuery{}); !errors.Is(err, github.ErrForbidden) || errors.Is(err, github.ErrRateLimited) {
		t.Fatalf("plain 403: %v", err)
	}

	// A 5xx on a read is retried with back-off; persistent ones surface after Retries.
	s.ResetRequests()
	s.Fail(githubtest.Fault{Status: 500, Times: 1})
	if got, _, err := c.ListIssues(ctx, "o/r", github.IssueQuery{}); err != nil || len(got) != 1 {
		t.Fatalf("one 500 then success: %v", err)
	}
	if n := len(s.Requests()); n != 2 {
		t.Fatalf("requests for a retried 500: %d", n)
	}
	s.ResetRequests()
	s.Fail(githubtest.Fault{Status: 502})
	_, pg, err := c.ListIssues(ctx, "o/r", github.IssueQuery{})
	if !errors.Is(err, github.ErrServer) || len(s.Requests()) != 3 || pg.Requests != 3 {
		t.Fatalf("persistent 502 (html body): %v after %d requests (%+v)", err, len(s.Requests()), pg)
	}
	s.ClearFaults()

	// A malformed body is its own kind, and the next call asks afresh.
	s.Fail(githubtest.Fault{Malformed: true, Times: 1})
	if _, _, err = c.ListIssues(ctx, "o/r", github.IssueQuery{State: "all"}); !errors.Is(err, github.ErrMalformed) {
		t.Fatalf("malformed: %v", err)
	}
	if got, pg, err := c.ListIssues(ctx, "o/r", github.IssueQuery{State: "all"}); err != nil || len(got) != 1 || pg.NotModified {
		t.Fatalf("after malformed: %v %+v", err, pg)
	}

	// A slow answer hits the request timeout (retried, then reported).
	slow := newClient(t, s, "tok", func(o *github.Options) { o.Timeout = 100 * time.Millisecond; o.Retries = -1 })
	s.Fail(githubtest.Fault{Delay: 2 * time.Second, Times: 1})
	if _, _, err = slow.ListIssues(ctx, "o/r", github.IssueQuery{}); !errors.Is(err, github.ErrUnreachable) || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("timeout: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err = c.ListIssues(cctx, "o/r", github.IssueQuery{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}

	// Writes are not retried: GitHub may have done them.
	s.ResetRequests()
	s.Fail(githubtest.Fault{Method: "POST", Status: 500, Times: 1})
	if _, err = c.CreateComment(ctx, "o/r", 1, "hi"); !errors.Is(err, github.ErrServer) || len(s.Requests()) != 1 {
		t.Fatalf("POST 500: %v after %d requests", err, len(s.Requests()))
	}
}

func TestPrimaryRateLimitPausesUntilReset(t *testing.T) {
	s := githubtest.New(t, githubtest.WithToken("tok", "alice"))
	s.AddRepo("o/r")
	ctx := context.Background()
	reset := time.Now().Add(1500 * time.Millisecond)
	s.SetRemaining("alice", 1, reset)

	c := newClient(t, s, "tok")
	if _, _, err := c.ListIssues(ctx, "o/r", github.IssueQuery{}); err != nil {
		t.Fatal(err)
	}
	if r := c.Rate(); r.Remaining != 0 {
		t.Fatalf("rate after the last request: %+v", r)
	}
	// Spent: the client refuses without sending and says when to come back.
	s.ResetRequests()
	_, _, err := c.ListIssues(ctx, "o/r", github.IssueQuery{})
	at, _ := github.RetryAt(err)
	if !errors.Is(err, github.ErrRateLimited) || len(s.Requests()) != 0 || !at.Equal(reset.Truncate(time.Second)) {
		t.Fatalf("at the ceiling: %v (retry at %s), %d requests sent", err, at, len(s.Requests()))
	}
	// With MaxRateWait the call blocks until the reset instead.
	waiting := newClient(t, s, "tok", func(o *github.Options) { o.MaxRateWait = 5 * time.Second })
	if _, _, err := waiting.ListIssues(ctx, "o/r", github.IssueQuery{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := waiting.ListIssues(ctx, "o/r", github.IssueQuery{}); err != nil {
		t.Fatalf("waited: %v", err)
	}
	if time.Now().Before(reset.Truncate(time.Second)) {
		t.Fatal("a request went out before the reset")
	}
}

func TestCommentsEventsPullsReviews(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s := githubtest.New(t, githubtest.WithToken("tok", "alice"), githubtest.WithClock(func() time.Time { return now }))
	s.AddRepo("o/r")
	ctx := context.Background()
	c := newClient(t, s, "tok")
	a := s.AddIssue("o/r", githubtest.Issue{Title: "a"})
	for i := range 150 {
		now = now.Add(time.Second)
		s.AddComment("o/r", a, "bob", fmt.Sprint("comment ", i))
	}
	cms, pg, err := c.ListComments(ctx, "o/r", time.Time{}, 0)
	if err != nil || len(cms) != 150 || pg.Requests != 2 || cms[149].Body != "comment 149" || cms[0].IssueNumber != a {
		t.Fatalf("comments: %d %+v %v", len(cms), pg, err)
	}
	cms, _, err = c.ListComments(ctx, "o/r", cms[149].UpdatedAt, 0)
	if err != nil || len(cms) != 1 {
		t.Fatalf("comments since the last: %d %v", len(cms), err)
	}

	// Label events: 120 events (two pages), then the walk stops at the page reaching the cursor.
	var last int64
	for i := range 120 {
		last = s.AddLabel("o/r", a, fmt.Sprint("l", i), "carol")
	}
	evs, pg, err := c.ListLabelEvents(ctx, "o/r", 0, 0)
	if err != nil || len(evs) != 120 || pg.Requests != 2 || evs[0].Label != "l0" || evs[119].ID != last || evs[0].Actor != "carol" || evs[0].Issue.Number != a {
		t.Fatalf("events: %d %+v %v", len(evs), pg, err)
	}
	s.CloseIssue("o/r", a, "carol") // not a label: ignored
	s.AddLabel("o/r", a, "orcr", "dave")
	evs, pg, err = c.ListLabelEvents(ctx, "o/r", last, 0)
	if err != nil || len(evs) != 1 || evs[0].Label != "orcr" || pg.Requests != 1 {
		t.Fatalf("new events: %+v %+v %v", evs, pg, err)
	}
	_, pg, _ = c.ListLabelEvents(ctx, "o/r", evs[0].ID, 0)
	if !pg.NotModified || pg.Requests != 1 {
		t.Fatalf("no new events: %+v", pg)
	}

	// Pull requests: find, create, refuse a duplicate, reviews.
	if _, found, err := c.FindPullRequest(ctx, "o/r", "feat", "main"); err != nil || found {
		t.Fatalf("find before create: %v %v", found, err)
	}
	pr, err := c.CreatePullRequest(ctx, "o/r", github.NewPullRequest{Title: "Feat", Head: "feat", Base: "main", Body: "does it"})
	if err != nil || pr.Number == 0 || pr.Head != "feat" || pr.User != "alice" {
		t.Fatalf("create: %+v %v", pr, err)
	}
	got, found, err := c.FindPullRequest(ctx, "o/r", "feat", "main")
	if err != nil || !found || got.Number != pr.Number {
		t.Fatalf("find: %+v %v %v", got, found, err)
	}
	if _, err = c.CreatePullRequest(ctx, "o/r", github.NewPullRequest{Title: "again", Head: "feat", Base: "main"}); !errors.Is(err, github.ErrInvalid) || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("duplicate: %v", err)
	}
	s.AddReview("o/r", pr.Number, "carol", "CHANGES_REQUESTED", "please fix")
	rvs, _, err := c.ListReviews(ctx, "o/r", pr.Number)
	if err != nil || len(rvs) != 1 || rvs[0].State != "CHANGES_REQUESTED" || rvs[0].User != "carol" || rvs[0].Body != "please fix" {
		t.Fatalf("reviews: %+v %v", rvs, err)
	}
	prs, _, err := c.ListPullRequests(ctx, "o/r", github.PullQuery{Sort: "updated", Direction: "desc"})
	if err != nil || len(prs) != 1 || !prs[0].UpdatedAt.Equal(now) {
		t.Fatalf("pulls: %+v %v", prs, err)
	}
	cm, err := c.CreateComment(ctx, "o/r", pr.Number, "on it")
	if err != nil || cm.IssueNumber != pr.Number || cm.User != "alice" {
		t.Fatalf("comment: %+v %v", cm, err)
	}
	if bodies := s.Comments("o/r", pr.Number); len(bodies) != 1 || bodies[0] != "on it" {
		t.Fatalf("server has %q", bodies)
	}
	is, err := c.GetIssue(ctx, "o/r", a)
	if err != nil || is.Title != "a" || is.State != "closed" || len(is.Labels) != 121 {
		t.Fatalf("get issue: %+v %v", is, err)
	}
	if _, err := c.GetIssue(ctx, "o/r", 99); !errors.Is(err, github.ErrNotFound) || !strings.Contains(err.Error(), "issue #99 not found") {
		t.Fatalf("missing issue: %v", err)
	}
	// Issues listed through the issues API know pull requests apart.
	all, _, err := c.ListIssues(ctx, "o/r", github.IssueQuery{State: "all"})
	if err != nil || len(all) != 2 || !all[0].PullRequest || all[1].PullRequest {
		t.Fatalf("issues with a PR: %+v %v", all, err)
	}
}

// BenchmarkRaw304 is the same 304 exchange with a bare net/http client, so the
// difference from BenchmarkTickNotModified is what this client adds (its REST layer,
// the ETag cache, decoding the replayed page).
func BenchmarkRaw304(b *testing.B) {
	s := githubtest.New(b, githubtest.WithToken("tok", "alice"), githubtest.WithRateLimit(1<<30))
	newest := seed1000(s)
	url := s.URL + "/repos/o/r/issues?direction=asc&per_page=100&since=" + newest.Format(time.RFC3339) + "&sort=updated"
	get := func(etag string) (int, string) {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Authorization", "Bearer tok")
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("ETag")
	}
	_, etag := get("")
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if st, _ := get(etag); st != http.StatusNotModified {
			b.Fatalf("status %d", st)
		}
	}
}

// A secondary rate limit is remembered: until its Retry-After has passed, the client
// sends nothing (GitHub counts requests made during the wait against the integration),
// and answers with when to come back.
func TestSecondaryLimitHoldsRequestsBack(t *testing.T) {
	s := githubtest.New(t, githubtest.WithToken("tok", "alice"))
	s.AddRepo("o/r")
	ctx := context.Background()
	c := newClient(t, s, "tok")
	s.Fail(githubtest.Fault{Status: 403, RetryAfter: 2 * time.Second, Times: 1})
	if _, _, err := c.ListIssues(ctx, "o/r", github.IssueQuery{}); !errors.Is(err, github.ErrRateLimited) {
		t.Fatalf("secondary limit: %v", err)
	}
	s.ResetRequests()
	_, _, err := c.ListIssues(ctx, "o/r", github.IssueQuery{})
	at, ok := github.RetryAt(err)
	if !errors.Is(err, github.ErrRateLimited) || !ok || len(s.Requests()) != 0 || time.Until(at) <= 0 {
		t.Fatalf("during the wait: %v (retry at %s), %d requests sent", err, at, len(s.Requests()))
	}
	waiting := newClient(t, s, "tok", func(o *github.Options) { o.MaxRateWait = 5 * time.Second })
	s.Fail(githubtest.Fault{Status: 429, RetryAfter: time.Second, Times: 1})
	start := time.Now()
	if got, _, err := waiting.ListIssues(ctx, "o/r", github.IssueQuery{}); err != nil || got == nil {
		t.Fatalf("waited out: %v", err)
	}
	if time.Since(start) < time.Second {
		t.Fatalf("retried %s after a 1 s Retry-After", time.Since(start))
	}
}

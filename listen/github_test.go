package listen

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"orcr/github"
	"orcr/github/githubtest"
)

// ghRig is a listener over the real client against the fake GitHub, ticked by hand on a
// clock both share.
type ghRig struct {
	t     testing.TB
	now   time.Time
	srv   *githubtest.Server
	ag    *agents
	rec   *Records
	tk    *Ticker
	ctx   context.Context
	store *memStore
}

func newGHRig(t testing.TB, doc string) *ghRig {
	r := &ghRig{t: t, now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC), ctx: context.Background()}
	clock := func() time.Time { return r.now }
	r.srv = githubtest.New(t, githubtest.WithToken("tok", "orcr-bot"), githubtest.WithClock(clock))
	r.srv.AddRepo("o/r")
	c, err := github.New(github.Options{Token: "tok", APIURL: r.srv.URL, Backoff: time.Millisecond, Timeout: 5 * time.Second, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	l := mustParse(t, "gh", doc)
	r.ag = newAgents(clock)
	r.store = newMemStore()
	r.rec = NewRecords(r.store)
	r.tk = &Ticker{Listener: l, Records: r.rec, Source: GitHubSource{Client: c, Source: l.Source, Now: clock},
		Dispatcher: r.ag, Now: clock, Backoff: GitHubBackoff}
	return r
}

// tick advances the clock past the interval and ticks once.
func (r *ghRig) tick() TickResult {
	r.t.Helper()
	r.now = r.now.Add(time.Minute)
	res, err := r.tk.Tick(r.ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	return res
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

const issuesDoc = `interval = "1m"
[source]
type = "github-issues"
repos = ["o/r"]
labels = ["orcr"]
[action]
path = "gh/{{repo}}/{{number}}"
role = "implementor"
prompt = "Issue #{{number}} {{title}}: {{body}}"
`

func TestGitHubIssuesSource(t *testing.T) {
	r := newGHRig(t, issuesDoc)
	r.srv.AddIssue("o/r", githubtest.Issue{Title: "old work", Labels: []string{"orcr"}})
	r.srv.AddIssue("o/r", githubtest.Issue{Title: "not ours"})
	r.srv.AddPR("o/r", githubtest.PullRequest{Title: "a pr", Head: "x"})
	if res := r.tick(); res.Dispatched != 1 || r.ag.order[0] != "o/r#1" {
		t.Fatalf("first tick: %+v %v", res, r.ag.order)
	}
	r.now = r.now.Add(time.Second)
	n := r.srv.AddIssue("o/r", githubtest.Issue{Title: "new work", Body: "do it", Labels: []string{"orcr", "bug"}})
	r.srv.AddComment("o/r", 1, "alice", "bumps #1's updated_at") // already processed: no second fire
	if res := r.tick(); res.Dispatched != 1 || r.ag.order[1] != "o/r#"+strconv.Itoa(n) {
		t.Fatalf("second tick: %+v %v", res, r.ag.order)
	}
	// Steady state: each tick is one conditional request answered 304.
	r.tick()
	r.srv.ResetRequests()
	for range 3 {
		if res := r.tick(); res.Dispatched != 0 || res.Err != nil {
			t.Fatalf("idle tick: %+v", res)
		}
	}
	reqs := r.srv.Requests()
	if len(reqs) != 3 || reqs[0].Status != 304 || reqs[2].Status != 304 {
		t.Fatalf("idle ticks sent %+v", reqs)
	}
}

// BenchmarkIssuesIdleTick is DESIGN's number: a tick over a repository with 1,000 open
// issues and nothing new (one conditional request answered 304), client and records
// included; the fake server's own work is in the figure too.
func BenchmarkIssuesIdleTick(b *testing.B) {
	r := newGHRig(b, issuesDoc)
	for i := range 1000 {
		r.srv.AddIssue("o/r", githubtest.Issue{Title: "issue " + strconv.Itoa(i), Body: strings.Repeat("x", 200),
			Labels: []string{"orcr"}, CreatedAt: r.now.Add(time.Duration(i-1000) * time.Minute)})
	}
	r.tk.Listener.RateLimits = nil
	if res := r.tick(); res.Dispatched != 1000 {
		b.Fatalf("first tick: %+v", res)
	}
	r.tick()
	r.srv.ResetRequests()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if res := r.tick(); res.Dispatched != 0 || res.Err != nil {
			b.Fatalf("idle tick: %+v", res)
		}
	}
	b.StopTimer()
	reqs := r.srv.Requests()
	for _, q := range reqs {
		if q.Status != 304 {
			b.Fatalf("an idle tick sent %+v", q)
		}
	}
	if len(reqs) != b.N {
		b.Fatalf("%d requests for %d ticks", len(reqs), b.N)
	}
}

func TestGitHubCommentsSource(t *testing.T) {
	r := newGHRig(t, `interval = "1m"
[source]
type = "github-comments"
repos = ["o/r"]
trigger = "@orcr"
authorized_users = ["alice"]
[action]
path = "gh/{{repo}}/{{number}}"
role = "implementor"
prompt = "Issue #{{number}} {{title}}: {{body}} ({{user}})"
`)
	n := r.srv.AddIssue("o/r", githubtest.Issue{Title: "Crash", Body: "stack trace"})
	r.srv.AddComment("o/r", n, "alice", "@orcr please fix (before the listener existed)")
	if res := r.tick(); res.Dispatched != 0 {
		t.Fatalf("the baseline fired history: %+v", res)
	}
	r.now = r.now.Add(time.Second)
	r.srv.AddComment("o/r", n, "bob", "@orcr do it") // not authorized
	r.srv.AddComment("o/r", n, "alice", "no trigger here")
	c := r.srv.AddComment("o/r", n, "Alice", "hey @ORCR fix the crash")
	res := r.tick()
	if res.Dispatched != 1 || r.ag.order[0] != "o/r#1/comment-"+itoa64(c) {
		t.Fatalf("comments tick: %+v %v", res, r.ag.order)
	}
	d, _ := r.rec.PendingDispatches(r.ctx, "gh")
	st, _ := r.rec.State(r.ctx, "gh")
	if len(d) != 0 || st.Fires != 1 || st.Cursor["o/r"] == "" {
		t.Fatalf("state %+v", st)
	}
	// The event's vars: issue title, the comment's body and author.
	p, _ := r.processed("o/r#1/comment-" + itoa64(c))
	if p.Target != "gh/o/r/1" {
		t.Fatalf("target %q", p.Target)
	}
	if res := r.tick(); res.Dispatched != 0 {
		t.Fatalf("re-fired: %+v", res)
	}
}

func (r *ghRig) processed(id string) (Processed, error) {
	var p Processed
	b, err := r.store.Get(r.ctx, BucketProcessed, "gh/"+id)
	if err != nil {
		return p, err
	}
	return p, jsonUnmarshal(b, &p)
}

func TestGitHubLabelsSource(t *testing.T) {
	r := newGHRig(t, `interval = "1m"
[source]
type = "github-labels"
repos = ["o/r"]
labels = ["orcr"]
[action]
path = "gh/{{repo}}/{{number}}"
role = "implementor"
prompt = "{{title}} labelled {{label}} by {{user}}"
`)
	n := r.srv.AddIssue("o/r", githubtest.Issue{Title: "a"})
	r.srv.AddLabel("o/r", n, "orcr", "alice") // before the listener: history
	if res := r.tick(); res.Dispatched != 0 {
		t.Fatalf("baseline fired: %+v", res)
	}
	m := r.srv.AddIssue("o/r", githubtest.Issue{Title: "b"})
	r.srv.AddLabel("o/r", m, "bug", "alice")
	e := r.srv.AddLabel("o/r", m, "orcr", "carol")
	if res := r.tick(); res.Dispatched != 1 || r.ag.order[0] != "o/r/label-event-"+itoa64(e) {
		t.Fatalf("labels tick: %+v %v", res, r.ag.order)
	}
	r.srv.ResetRequests()
	r.tick()
	if reqs := r.srv.Requests(); len(reqs) != 1 || reqs[0].Status != 304 {
		t.Fatalf("idle labels tick: %+v", reqs)
	}
}

func TestGitHubReviewsSource(t *testing.T) {
	r := newGHRig(t, `interval = "1m"
[source]
type = "github-pr-reviews"
repos = ["o/r"]
states = ["changes_requested"]
[action]
path = "fix/{{repo}}/{{number}}"
provider = "claude"
prompt = "{{user}} wants changes on {{head}}: {{body}}"
`)
	pr := r.srv.AddPR("o/r", githubtest.PullRequest{Title: "feat", Head: "feat"})
	r.srv.AddReview("o/r", pr, "carol", "CHANGES_REQUESTED", "old review")
	if res := r.tick(); res.Dispatched != 0 {
		t.Fatalf("baseline fired: %+v", res)
	}
	r.now = r.now.Add(time.Second)
	r.srv.AddReview("o/r", pr, "carol", "APPROVED", "")
	rv := r.srv.AddReview("o/r", pr, "dave", "CHANGES_REQUESTED", "rename it")
	if res := r.tick(); res.Dispatched != 1 || r.ag.order[0] != "o/r#1/review-"+itoa64(rv) {
		t.Fatalf("reviews tick: %+v %v", res, r.ag.order)
	}
	if res := r.tick(); res.Dispatched != 0 {
		t.Fatalf("re-fired: %+v", res)
	}
	// A pull request opened after the baseline: its reviews are all new.
	r.now = r.now.Add(time.Second)
	pr2 := r.srv.AddPR("o/r", githubtest.PullRequest{Title: "other", Head: "other"})
	r.srv.AddReview("o/r", pr2, "erin", "CHANGES_REQUESTED", "no")
	if res := r.tick(); res.Dispatched != 1 {
		t.Fatalf("new PR's review: %+v %v", res, r.ag.order)
	}
}

func TestGitHubFaultsAreRecordedWithBackoff(t *testing.T) {
	r := newGHRig(t, issuesDoc)
	r.srv.AddRepo("o/hidden", "someone-else")
	r.tk.Listener.Source.Repos = []string{"o/hidden"}
	r.tk.Source = GitHubSource{Client: r.tk.Source.(GitHubSource).Client, Source: r.tk.Listener.Source, Now: r.tk.Now}
	res := r.tick()
	st, _ := r.rec.State(r.ctx, "gh")
	if !errors.Is(res.Err, github.ErrNotFound) || !strings.Contains(st.LastError, "repo o/hidden not visible to this token") {
		t.Fatalf("404: %v / %q", res.Err, st.LastError)
	}
	r.tk.Listener.Source.Repos = []string{"o/r"}
	r.tk.Source = GitHubSource{Client: r.tk.Source.(GitHubSource).Client, Source: r.tk.Listener.Source, Now: r.tk.Now}
	r.srv.Fail(githubtest.Fault{Status: 429, RetryAfter: 10 * time.Minute, Times: 1})
	r.now = r.now.Add(5 * time.Minute)
	res = r.tick()
	if !errors.Is(res.Err, github.ErrRateLimited) || res.NextPoll.Sub(r.now) < 9*time.Minute {
		t.Fatalf("429: %v, next poll in %s", res.Err, res.NextPoll.Sub(r.now))
	}
}

// Every way GitHub fails is the listener's error, backed off, and the issue waiting
// behind it is dispatched exactly once when GitHub answers again.
func TestGitHubFaultsHoldNothingBack(t *testing.T) {
	r := newGHRig(t, issuesDoc)
	c, err := github.New(github.Options{Token: "tok", APIURL: r.srv.URL, Timeout: 300 * time.Millisecond, Retries: -1, Now: r.tk.Now})
	if err != nil {
		t.Fatal(err)
	}
	r.tk.Source = GitHubSource{Client: c, Source: r.tk.Listener.Source, Now: r.tk.Now}
	r.srv.AddIssue("o/r", githubtest.Issue{Title: "waiting", Labels: []string{"orcr"}})
	faults := []struct {
		f    githubtest.Fault
		kind error
		want string
	}{
		{githubtest.Fault{Status: 503}, github.ErrServer, "server error (503)"},
		{githubtest.Fault{Delay: 2 * time.Second}, github.ErrUnreachable, "o/r"},
		{githubtest.Fault{Malformed: true}, github.ErrMalformed, "malformed"},
		{githubtest.Fault{Status: 401}, github.ErrUnauthorized, "unauthorized (401)"},
		{githubtest.Fault{Status: 403, RetryAfter: time.Hour}, github.ErrRateLimited, "rate limited until"},
	}
	for i, f := range faults {
		r.srv.ClearFaults()
		r.srv.Fail(f.f)
		r.now = r.now.Add(2 * time.Hour) // past any back-off
		res := r.tick()
		st, _ := r.rec.State(r.ctx, "gh")
		if !errors.Is(res.Err, f.kind) || !strings.Contains(st.LastError, f.want) || st.Failures != i+1 {
			t.Fatalf("fault %d: %v / %q, failures %d", i, res.Err, st.LastError, st.Failures)
		}
		if res.NextPoll.Sub(r.now) <= time.Minute && i > 0 {
			t.Fatalf("fault %d: no back-off (next poll in %s)", i, res.NextPoll.Sub(r.now))
		}
		if res.Dispatched != 0 || len(r.ag.order) != 0 {
			t.Fatalf("fault %d dispatched", i)
		}
	}
	if res := r.tick(); res.Skipped != "not due" {
		t.Fatalf("polled before retry-after: %+v", res)
	}
	r.srv.ClearFaults()
	// The recovery uses a fresh client, as a restarted server would: the client keeps
	// the secondary limit's block itself (on Options.Now's clock).
	c, err = github.New(github.Options{Token: "tok", APIURL: r.srv.URL, Timeout: time.Second, Retries: -1, Now: r.tk.Now})
	if err != nil {
		t.Fatal(err)
	}
	r.tk.Source = GitHubSource{Client: c, Source: r.tk.Listener.Source, Now: r.tk.Now}
	r.now = r.now.Add(time.Hour)
	if res := r.tick(); res.Dispatched != 1 || res.Err != nil {
		t.Fatalf("after recovery: %+v", res)
	}
	r.now = r.now.Add(time.Hour)
	if res := r.tick(); res.Dispatched != 0 {
		t.Fatalf("dispatched again: %+v", res)
	}
}

// A GitHub page over 8 MiB with an ETag — 100 issues with bodies at GitHub's bound of
// 65,536 characters, in two-byte characters (12.6 MiB) — was cut at 8 MiB and failed the
// listener with "malformed response" on every poll. Every issue must be dispatched and
// the listener must not fail; and the page answered 304 is replayed whole (the first
// tick's prune asks for the full listing again: the same URL, answered 304).
func TestGitHubBigPage(t *testing.T) {
	r := newGHRig(t, `interval = "1m"
[source]
type = "github-issues"
repos = ["o/r"]
labels = ["orcr"]
[action]
path = "gh/{{repo}}/{{number}}"
role = "implementor"
prompt = "Issue #{{number}} {{title}}"
`)
	var log logBuf
	r.tk.Logger = slog.New(slog.NewTextHandler(&log, nil))
	// A long timeout: under -race on a loaded machine the fake server's 12.6 MiB
	// answer (encoded and hashed for its ETag at every request) takes seconds.
	c, err := github.New(github.Options{Token: "tok", APIURL: r.srv.URL, Backoff: time.Millisecond, Timeout: 2 * time.Minute,
		Now: func() time.Time { return r.now }})
	if err != nil {
		t.Fatal(err)
	}
	r.tk.Source = GitHubSource{Client: c, Source: r.tk.Listener.Source, Now: func() time.Time { return r.now }}
	body := strings.Repeat("é", githubtest.MaxBody)
	for i := range 100 {
		r.srv.AddIssue("o/r", githubtest.Issue{Title: "big " + strconv.Itoa(i+1), Body: body, Labels: []string{"orcr"},
			CreatedAt: r.now.Add(time.Duration(i-100) * time.Minute)})
	}
	res := r.tick()
	st, _ := r.rec.State(r.ctx, "gh")
	if res.Err != nil || res.Dispatched != 100 || st.Failures != 0 || len(r.ag.order) != 100 {
		t.Fatalf("first tick: %+v, failures %d, last error %q", res, st.Failures, st.LastError)
	}
	if reqs := r.srv.Requests(); len(reqs) != 2 || reqs[0].Status != 200 || reqs[1].Status != 304 || reqs[1].Path != reqs[0].Path {
		t.Fatalf("first tick's requests %+v: want the page, then the same page answered 304", reqs)
	}
	if strings.Contains(log.String(), "level=WARN") {
		t.Fatalf("the 304 replay of the big page failed:\n%s", log.String())
	}
	r.tick() // since the newest: that one issue again (since is inclusive), then 304s
	r.srv.ResetRequests()
	res = r.tick()
	st, _ = r.rec.State(r.ctx, "gh")
	if res.Err != nil || res.Dispatched != 0 || st.Failures != 0 || st.LastError != "" {
		t.Fatalf("steady tick: %+v, failures %d, last error %q", res, st.Failures, st.LastError)
	}
	if reqs := r.srv.Requests(); len(reqs) != 1 || reqs[0].Status != 304 {
		t.Fatalf("steady tick's requests %+v", reqs)
	}
}

// A Link header that loops is the listener's error, reported like any other GitHub fault,
// after a bounded number of requests; once GitHub mends it, the listing reads every page
// again (the looping Link is not replayed from the ETag cache) and new issues fire.
// Before, a tick never ended: 6,000–8,000 requests every 5 s, and no new issue fired
// even after GitHub recovered.
func TestGitHubLinkLoopIsReportedAndRecovers(t *testing.T) {
	r := newGHRig(t, issuesDoc)
	r.tk.Listener.RateLimits = nil
	var cancel context.CancelFunc
	// The deadline only keeps a tick that never ends from hanging the test.
	r.ctx, cancel = context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 150 {
		r.srv.AddIssue("o/r", githubtest.Issue{Title: "issue " + strconv.Itoa(i), Labels: []string{"orcr"},
			CreatedAt: r.now.Add(time.Duration(i-150) * time.Minute)})
	}
	r.srv.Fail(githubtest.Fault{Path: "/repos/o/r/issues", Page: 2, NextPage: 1})
	res := r.tick()
	st, _ := r.rec.State(r.ctx, "gh")
	if !errors.Is(res.Err, github.ErrMalformed) || !strings.Contains(st.LastError, "Link header loops at page 2") {
		t.Fatalf("looping Link: %v / %q", res.Err, st.LastError)
	}
	if n := len(r.srv.Requests()); n != 2 || res.Dispatched != 0 {
		t.Fatalf("looping Link: %d requests, %d dispatched; want 2 and none", n, res.Dispatched)
	}
	r.srv.ClearFaults()
	r.now = r.now.Add(time.Hour) // past the back-off
	if res := r.tick(); res.Err != nil || res.Dispatched != 150 {
		t.Fatalf("after GitHub mends the Link: %+v", res)
	}
	r.now = r.now.Add(time.Second)
	n := r.srv.AddIssue("o/r", githubtest.Issue{Title: "new work", Labels: []string{"orcr"}})
	if res := r.tick(); res.Err != nil || res.Dispatched != 1 || r.ag.order[150] != "o/r#"+strconv.Itoa(n) {
		t.Fatalf("a new issue: %+v", res)
	}
}

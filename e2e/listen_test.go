package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
	"orcr/github/githubtest"
	listenapi "orcr/listen/api"
	"orcr/testutil/wait"
)

// Listeners end to end: the real binary, listener files in its config dir, the fake
// GitHub as github.api_url, and the agents the listeners spawn.

func (e *env) configDir() string {
	for _, kv := range e.vars {
		if v, ok := strings.CutPrefix(kv, "XDG_CONFIG_HOME="); ok {
			return filepath.Join(v, "orcr")
		}
	}
	e.t.Fatal("no XDG_CONFIG_HOME")
	return ""
}

// writeListener writes (or replaces) a listener file.
func (e *env) writeListener(name, doc string) {
	e.t.Helper()
	dir := filepath.Join(e.configDir(), "listeners")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		e.t.Fatal(err)
	}
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(doc), 0o600); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name+".toml")); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) writeConfig(doc string) {
	e.t.Helper()
	if err := os.MkdirAll(e.configDir(), 0o700); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.configDir(), "config.toml"), []byte(doc), 0o600); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) listener(name string) (listenapi.Listener, error) {
	return e.client().ListenerGet(context.Background(), name)
}

// agentsUnder lists every agent record (all, not only the newest per path) under glob.
func (e *env) agentsUnder(glob string) []wire.Agent {
	e.t.Helper()
	as, err := e.client().List(context.Background(), wire.ListParams{Glob: glob, All: true})
	if err != nil {
		e.t.Fatal(err)
	}
	return as
}

// waitAgents waits until exactly n agents exist under glob (failing on more).
func (e *env) waitAgents(glob string, n int, within time.Duration) []wire.Agent {
	e.t.Helper()
	var as []wire.Agent
	wait.For(e.t, within, fmt.Sprintf("%d agents under %s", n, glob), func() bool {
		as = e.agentsUnder(glob)
		if len(as) > n {
			e.t.Fatalf("%d agents under %s, want %d: %v", len(as), glob, n, paths(as))
		}
		return len(as) == n
	})
	return as
}

func paths(as []wire.Agent) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.Path)
	}
	return out
}

// polled waits until the listener has polled after t (its baseline, for history sources).
func (e *env) polledAfter(name string, t time.Time) listenapi.Listener {
	e.t.Helper()
	var l listenapi.Listener
	wait.For(e.t, 20*time.Second, name+" polls", func() bool {
		var err error
		l, err = e.listener(name)
		return err == nil && l.LastPoll != nil && l.LastPoll.After(t)
	})
	return l
}

const shellAgent = `provider = "shell"
command = 'printf "%s\n" "$ORCR_PROMPT"; sleep 600'
`

func TestListenersGitHubSourcesEndToEnd(t *testing.T) {
	gh := githubtest.New(t, githubtest.WithToken("tok-e2e", "orcr-bot"))
	gh.AddRepo("acme/app")
	gh.AddRepo("acme/secret", "someone-else")
	e := newEnv(t)
	e.writeConfig(fmt.Sprintf("[github]\napi_url = %q\ntoken = \"tok-e2e\"\n", gh.URL))
	gh.AddIssue("acme/app", githubtest.Issue{Title: "Crash on start", Body: "stack trace", User: "alice", Labels: []string{"orcr"}})
	gh.AddIssue("acme/app", githubtest.Issue{Title: "Not for us", User: "bob"})
	pr := gh.AddPR("acme/app", githubtest.PullRequest{Title: "Fix crash", User: "alice", Head: "fix", Base: "main"})

	e.writeListener("issues", `interval = "1s"
[source]
type = "github-issues"
repos = ["acme/app"]
labels = ["orcr"]
[action]
path = "gh/issues/{{number}}"
prompt = "Issue #{{number}} {{title}}: {{body}}"
`+shellAgent)
	e.writeListener("comments", `interval = "1s"
[source]
type = "github-comments"
repos = ["acme/app"]
trigger = "@orcr"
authorized_users = ["alice"]
[action]
path = "gh/comments/{{number}}-{{comment_id}}"
prompt = "{{user}} on #{{number}}: {{body}}"
`+shellAgent)
	e.writeListener("labels", `interval = "1s"
[source]
type = "github-labels"
repos = ["acme/app"]
labels = ["triage"]
[action]
path = "gh/labels/{{number}}"
prompt = "label {{label}} on #{{number}} {{title}}"
`+shellAgent)
	e.writeListener("reviews", `interval = "1s"
[source]
type = "github-pr-reviews"
repos = ["acme/app"]
states = ["changes_requested"]
[action]
path = "gh/reviews/{{number}}-{{review_id}}"
prompt = "review {{state}} on #{{number}} ({{head}}): {{body}}"
`+shellAgent)
	e.writeListener("hidden", `interval = "1s"
[source]
type = "github-issues"
repos = ["acme/secret"]
[action]
path = "gh/hidden/{{number}}"
prompt = "x"
`+shellAgent)
	start := time.Now()
	e.serve()

	// github-issues: the open labelled issue is work from the start.
	as := e.waitAgents("gh/issues/**", 1, 20*time.Second)
	if as[0].Path != "gh/issues/1" || as[0].Prompt != "Issue #1 Crash on start: stack trace" {
		t.Fatalf("issue agent: %s %q", as[0].Path, as[0].Prompt)
	}
	// History sources fire only for what comes after their first poll.
	for _, n := range []string{"comments", "labels", "reviews"} {
		e.polledAfter(n, start)
	}
	gh.AddComment("acme/app", 1, "mallory", "@orcr please rm -rf")
	cid := gh.AddComment("acme/app", 1, "alice", "@orcr take a look")
	gh.AddComment("acme/app", 1, "alice", "no trigger here")
	gh.AddLabel("acme/app", 2, "triage", "bob")
	gh.AddLabel("acme/app", 2, "wontfix", "bob")
	gh.AddReview("acme/app", pr, "carol", "APPROVED", "lgtm")
	rid := gh.AddReview("acme/app", pr, "carol", "CHANGES_REQUESTED", "needs a test")

	as = e.waitAgents("gh/comments/**", 1, 20*time.Second)
	if want := fmt.Sprintf("gh/comments/1-%d", cid); as[0].Path != want || as[0].Prompt != "alice on #1: @orcr take a look" {
		t.Fatalf("comment agent: %s %q, want %s", as[0].Path, as[0].Prompt, want)
	}
	as = e.waitAgents("gh/labels/**", 1, 20*time.Second)
	if as[0].Prompt != "label triage on #2 Not for us" {
		t.Fatalf("label agent prompt %q", as[0].Prompt)
	}
	as = e.waitAgents("gh/reviews/**", 1, 20*time.Second)
	if want := fmt.Sprintf("gh/reviews/%d-%d", pr, rid); as[0].Path != want || as[0].Prompt != "review changes_requested on #3 (fix): needs a test" {
		t.Fatalf("review agent: %s %q", as[0].Path, as[0].Prompt)
	}
	// The agent sees its event through its environment (and prints its prompt).
	if as[0].Env["ORCR_LISTENER"] != "reviews" || as[0].Env["ORCR_LISTENER_EVENT"] == "" {
		t.Fatalf("review agent env %v", as[0].Env)
	}

	// A repository the token cannot see: said so plainly, backing off, nothing spawned.
	wait.For(t, 20*time.Second, "hidden fails", func() bool {
		l, err := e.listener("hidden")
		return err == nil && strings.Contains(l.LastError, "not visible to this token") && l.Failures >= 1
	})
	if n := len(e.agentsUnder("gh/hidden/**")); n != 0 {
		t.Fatalf("%d agents for a repo the token cannot see", n)
	}
	out := e.must("listener", "ls")
	for _, want := range []string{"issues", "github-issues", "comments", "github-comments", "failing"} {
		if !strings.Contains(out, want) {
			t.Fatalf("listener ls lacks %q:\n%s", want, out)
		}
	}
	// Nothing more fires while nothing changes; idle polls are conditional requests.
	before := time.Now()
	for _, n := range []string{"issues", "comments", "labels", "reviews"} {
		e.polledAfter(n, before)
	}
	// Idle polls are conditional requests answered 304.
	gh.ResetRequests()
	before = time.Now()
	for _, n := range []string{"issues", "comments", "labels"} {
		e.polledAfter(n, before)
	}
	for _, q := range gh.Requests() {
		if strings.Contains(q.Path, "/repos/acme/app/") && !strings.Contains(q.Path, "/pulls/") && (q.Status != 304 || !q.Conditional) {
			t.Fatalf("an idle poll sent %+v", q)
		}
	}
	for glob, n := range map[string]int{"gh/issues/**": 1, "gh/comments/**": 1, "gh/labels/**": 1, "gh/reviews/**": 1} {
		if got := len(e.agentsUnder(glob)); got != n {
			t.Fatalf("%s: %d agents after idle polls, want %d", glob, got, n)
		}
	}
}

func TestListenersHotReloadAndShell(t *testing.T) {
	e := newEnv(t)
	e.serve()
	// Added: picked up without a restart, within 15 s.
	e.writeListener("work", `interval = "1s"
[source]
type = "shell"
command = "printf 'alpha\n{\"id\": \"beta\", \"title\": \"Beta work\"}\n'"
[action]
path = "work/{{id}}"
prompt = "do {{id}}"
`+shellAgent)
	as := e.waitAgents("work/**", 2, 15*time.Second)
	got := map[string]string{}
	for _, a := range as {
		got[a.Path] = a.Prompt
	}
	if got["work/alpha"] != "do alpha" || got["work/beta"] != "do beta" {
		t.Fatalf("shell agents %v", got)
	}
	// Changed: the new command's new line fires; the old ids are not repeated.
	e.writeListener("work", `interval = "1s"
[source]
type = "shell"
command = "printf 'alpha\nbeta\ngamma\n'"
[action]
path = "work/{{id}}"
prompt = "now {{id}}"
`+shellAgent)
	as = e.waitAgents("work/**", 3, 15*time.Second)
	// Broken: the listener shows the error with its line; another keeps running.
	e.writeListener("other", `interval = "1s"
[source]
type = "shell"
command = "echo one"
[action]
path = "other/{{id}}"
prompt = "x"
`+shellAgent)
	e.waitAgents("other/**", 1, 15*time.Second)
	e.writeListener("work", "interval = \"1s\"\n[source]\ntype = \"shell\"\ncommand = \"echo delta\"\n[action]\npath = \"work/{{id}}\"\nprompt = \"{{nope\"\n"+shellAgent)
	wait.For(t, 15*time.Second, "work invalid", func() bool {
		l, err := e.listener("work")
		return err == nil && l.State == "invalid" && strings.Contains(l.Error, "line 7")
	})
	out := e.must("listener", "show", "work")
	if !strings.Contains(out, "line 7") {
		t.Fatalf("show lacks the line:\n%s", out)
	}
	before := time.Now()
	e.polledAfter("other", before)
	if n := len(e.agentsUnder("work/**")); n != 3 {
		t.Fatalf("a broken listener dispatched: %d agents", n)
	}
	// Removed: gone from the list.
	if err := os.Remove(filepath.Join(e.configDir(), "listeners", "work.toml")); err != nil {
		t.Fatal(err)
	}
	wait.For(t, 15*time.Second, "work removed", func() bool {
		_, err := e.listener("work")
		return err != nil && strings.Contains(err.Error(), "no listener")
	})

	// Shell faults: garbage is a warning; a non-zero exit and a hang are errors with
	// back-off, and neither starts work.
	e.writeListener("faulty", `interval = "1s"
[source]
type = "shell"
command = "echo partial; exit 3"
[action]
path = "faulty/{{id}}"
prompt = "x"
`+shellAgent)
	wait.For(t, 15*time.Second, "faulty fails", func() bool {
		l, err := e.listener("faulty")
		return err == nil && l.Failures >= 1 && strings.Contains(l.LastError, "3")
	})
	e.writeListener("faulty", `interval = "1s"
[source]
type = "shell"
command = "sleep 30"
timeout = "1s"
[action]
path = "faulty/{{id}}"
prompt = "x"
`+shellAgent)
	wait.For(t, 20*time.Second, "hang killed", func() bool {
		l, err := e.listener("faulty")
		return err == nil && l.Failures >= 1 && (strings.Contains(l.LastError, "timeout") || strings.Contains(l.LastError, "timed out") || strings.Contains(l.LastError, "killed"))
	})
	if n := len(e.agentsUnder("faulty/**")); n != 0 {
		t.Fatalf("failed shell polls started %d agents", n)
	}
	// The server is unaffected.
	e.must("agent", "ls")

	// Disable and enable.
	e.must("listener", "disable", "other")
	if l, _ := e.listener("other"); l.State != "disabled" {
		t.Fatalf("state %s after disable", l.State)
	}
	e.must("listener", "enable", "other")
	if l, _ := e.listener("other"); l.State != "enabled" {
		t.Fatalf("state %s after enable", l.State)
	}
}

func TestListenerAPIAndBadInput(t *testing.T) {
	e := newEnv(t)
	e.serve()
	c := e.client()
	ctx := context.Background()
	// A document that does not parse is refused with its line; nothing is stored.
	_, err := c.ListenerPut(ctx, listenapi.ListenerPutParams{Name: "api", Document: "interval = \"1s\"\n[source]\ntype = \"rss\"\n"})
	if err == nil || !strings.Contains(err.Error(), "line 3") || !strings.Contains(err.Error(), "unknown source type") {
		t.Fatalf("bad source type: %v", err)
	}
	for doc, want := range map[string]string{
		"[source]\ntype = \"shell\"\ncommand = \"true\"\n[action]\npath = \"a/{{nope}}\"\nprompt = \"x\"\nprovider = \"claude\"\n[[rate_limits]]\nmax = 0\nper = \"1h\"\n": "max = 0",
		"[source]\ntype = \"github-issues\"\nrepos = [\"o/r\"]\n[action]\npath = \"a/{{nope}}\"\nprompt = \"x\"\nprovider = \"claude\"\n":                                  "nope",
		"[source]\ntype = \"shell\"\ncommand = \"true\"\n[action]\npath = \"a\"\nprompt = \"x\"\nrole = \"../etc\"\n":                                                      "line 7: role",
		"[source]\ntype = \"shell\"\ncommand = \"true\"\n[action]\nplan = \"{{id}}\"\n":                                                                                    "a plan needs repo",
		"[source]\ntype = \"github-issues\"\nrepos = [\"o/r\"]\n[action]\nplan = \"{{nope}}\"\nrepo = \"/src\"\n":                                                          "line 5: plan",
	} {
		if _, err := c.ListenerPut(ctx, listenapi.ListenerPutParams{Name: "api", Document: doc}); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("document %q: %v, want %q", doc, err, want)
		}
	}
	if _, err := c.ListenerGet(ctx, "api"); err == nil {
		t.Fatal("a refused document was stored")
	}
	// A good one runs, survives a restart, and is removed through the API.
	l, err := c.ListenerPut(ctx, listenapi.ListenerPutParams{Name: "api", Document: "interval = \"1s\"\n[source]\ntype = \"shell\"\ncommand = \"echo one\"\n[action]\npath = \"api/{{id}}\"\nprompt = \"p {{id}}\"\n" + shellAgent})
	if err != nil || l.Origin != "api" {
		t.Fatalf("put: %v %+v", err, l)
	}
	e.waitAgents("api/**", 1, 15*time.Second)
	e.kill9()
	e.serve()
	if l, err := e.client().ListenerGet(ctx, "api"); err != nil || l.Fires != 1 {
		t.Fatalf("after restart: %v %+v", err, l)
	}
	e.polledAfter("api", time.Now())
	if n := len(e.agentsUnder("api/**")); n != 1 {
		t.Fatalf("%d agents after a restart, want 1", n)
	}
	if r := e.orcr("listener", "enable", "nosuch"); r.Code == 0 || !strings.Contains(r.Err, "no listener") {
		t.Fatalf("enable nosuch: %+v", r)
	}
	e.must("listener", "rm", "api")
	if r := e.orcr("listener", "show", "api"); r.Code == 0 {
		t.Fatal("removed listener still shown")
	}
}

func TestListenerRestartMidTickNeitherLosesNorRepeats(t *testing.T) {
	e := newEnv(t)
	const n = 40
	e.writeListener("burst", `interval = "1s"
[source]
type = "shell"
command = "seq 1 40"
[action]
path = "burst/{{id}}"
prompt = "n {{id}}"
`+shellAgent)
	e.serve()
	// Kill -9 while the tick is dispatching.
	mid := 0
	wait.For(t, 20*time.Second, "dispatching", func() bool { mid = len(e.agentsUnder("burst/**")); return mid >= 3 })
	e.kill9()
	e.serve()
	as := e.waitAgents("burst/**", n, 60*time.Second)
	seen := map[string]int{}
	for _, a := range as {
		seen[a.Path]++
	}
	for p, c := range seen {
		if c != 1 {
			t.Fatalf("%s dispatched %d times", p, c)
		}
	}
	t.Logf("killed with %d of %d dispatched", mid, n)
	l := e.polledAfter("burst", time.Now())
	if l.Fires != n || l.Held != 0 {
		t.Fatalf("fires %d held %d, want %d and 0", l.Fires, l.Held, n)
	}
}

// GitHub failing in every way the issue names: each is recorded on the listener with
// back-off, the server keeps answering, and once GitHub recovers the waiting issue is
// dispatched exactly once.
func TestListenerGitHubFaultsEndToEnd(t *testing.T) {
	gh := githubtest.New(t, githubtest.WithToken("tok-e2e", "orcr-bot"))
	gh.AddRepo("acme/app")
	gh.AddIssue("acme/app", githubtest.Issue{Title: "Waiting", User: "alice", Labels: []string{"orcr"}})
	e := newEnv(t)
	e.writeConfig(fmt.Sprintf("[github]\napi_url = %q\ntoken = \"tok-e2e\"\n", gh.URL))
	e.writeListener("flaky", `interval = "1s"
[source]
type = "github-issues"
repos = ["acme/app"]
labels = ["orcr"]
[action]
path = "gh/flaky/{{number}}"
prompt = "{{title}}"
`+shellAgent)
	gh.Fail(githubtest.Fault{Status: 502})
	e.serve()
	var last time.Time
	expect := func(what, want string) listenapi.Listener {
		t.Helper()
		var l listenapi.Listener
		wait.For(t, 40*time.Second, what, func() bool {
			var err error
			l, err = e.listener("flaky")
			return err == nil && l.ErrorAt != nil && l.ErrorAt.After(last) && strings.Contains(l.LastError, want)
		})
		last = *l.ErrorAt
		if l.Failures < 1 || l.NextPoll == nil {
			t.Fatalf("%s: failures %d next %v", what, l.Failures, l.NextPoll)
		}
		if n := len(e.agentsUnder("gh/flaky/**")); n != 0 {
			t.Fatalf("%s: %d agents while GitHub fails", what, n)
		}
		e.must("agent", "ls") // the server is unaffected
		return l
	}
	expect("5xx", "server error (502)")
	gh.ClearFaults()
	gh.Fail(githubtest.Fault{Malformed: true})
	expect("malformed body", "malformed")
	gh.ClearFaults()
	gh.Fail(githubtest.Fault{Status: 401})
	l := expect("401", "unauthorized (401)")
	failures := l.Failures
	gh.ClearFaults()
	gh.Fail(githubtest.Fault{Status: 403, RetryAfter: 4 * time.Second})
	l = expect("403 retry-after", "rate limited until")
	if l.Failures <= failures {
		t.Fatalf("failures did not grow: %d then %d", failures, l.Failures)
	}
	if l.NextPoll.Sub(*l.ErrorAt) < 3*time.Second {
		t.Fatalf("retry-after not honoured: next poll %s after the error", l.NextPoll.Sub(*l.ErrorAt))
	}
	gh.ClearFaults()
	as := e.waitAgents("gh/flaky/**", 1, 60*time.Second)
	if as[0].Prompt != "Waiting" {
		t.Fatalf("prompt %q", as[0].Prompt)
	}
	wait.For(t, 20*time.Second, "recovered", func() bool {
		l, err := e.listener("flaky")
		return err == nil && l.Failures == 0 && l.LastError == ""
	})
	// Events: failures and the dispatch are in the event log.
	ctx, cancel := context.WithTimeout(context.Background(), wait.Scale(10*time.Second))
	defer cancel()
	ch, err := e.client().Subscribe(ctx, wire.SubscribeParams{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for ev := range ch {
		if ev.Data["name"] == "flaky" {
			seen[ev.Event] = true
		}
		if seen[listenapi.EventListenerFailed] && seen[listenapi.EventListenerDispatched] && seen[listenapi.EventListenerPolled] && seen[listenapi.EventListenerLoaded] {
			break
		}
	}
	for _, k := range []string{listenapi.EventListenerLoaded, listenapi.EventListenerFailed, listenapi.EventListenerDispatched, listenapi.EventListenerPolled} {
		if !seen[k] {
			t.Fatalf("no %s event (saw %v)", k, seen)
		}
	}
}

// A rate limit paces dispatch through the real server: what does not fit is held and
// shown, never dropped.
func TestListenerRateLimitHoldsAndShows(t *testing.T) {
	e := newEnv(t)
	e.writeListener("paced", `interval = "1s"
[source]
type = "shell"
command = "seq 1 5"
[action]
path = "paced/{{id}}"
prompt = "n {{id}}"
`+shellAgent+`[[rate_limits]]
max = 2
per = "1h"
`)
	e.serve()
	e.waitAgents("paced/**", 2, 15*time.Second)
	var l listenapi.Listener
	wait.For(t, 15*time.Second, "held 3", func() bool {
		var err error
		l, err = e.listener("paced")
		return err == nil && l.Held == 3 && l.Fires == 2
	})
	if len(l.RateLimits) != 1 || l.RateLimits[0].Used != 2 || l.RateLimits[0].NextAt == nil {
		t.Fatalf("rate limits %+v", l.RateLimits)
	}
	out := e.must("listener", "show", "paced")
	want := "2 per 1h (2 used, next at " + l.RateLimits[0].NextAt.Local().Format("15:04") + ")"
	if !strings.Contains(out, want) || !strings.Contains(out, "held:       3") {
		t.Fatalf("show lacks %q:\n%s", want, out)
	}
	ls := e.must("listener", "ls")
	if !strings.Contains(ls, "paced") || !strings.Contains(ls, "shell") || !strings.Contains(ls, "enabled") {
		t.Fatalf("ls:\n%s", ls)
	}
	fields := strings.Fields(strings.Split(strings.TrimSpace(ls), "\n")[1])
	if fields[0] != "paced" || fields[len(fields)-3] != "2" || fields[len(fields)-2] != "3" {
		t.Fatalf("ls row %q", fields)
	}
	// Held across a restart, not re-dispatched early.
	e.kill9()
	e.serve()
	// (a bounded window in which a wrong dispatch would show; the ceiling is an hour away)
	wait.Never(t, 3*time.Second, "a listener at its ceiling dispatched after a restart", func() bool {
		n := len(e.agentsUnder("paced/**"))
		if n != 2 {
			t.Logf("%d agents after a restart at the ceiling", n)
		}
		return n != 2
	})
	if l, _ := e.listener("paced"); l.Held != 3 {
		t.Fatalf("held %d after restart", l.Held)
	}
}

// A poison event through the real server and kernel: a title 17 levels deep is folded
// into a path the kernel takes; an event whose prompt names a var it lacks is failed
// alone, shown by listener show with its reason, and the event behind it goes out.
func TestListenerPoisonEventEndToEnd(t *testing.T) {
	e := newEnv(t)
	events := filepath.Join(t.TempDir(), "events.jsonl")
	deep := strings.TrimSuffix(strings.Repeat("Level/", 17), "/")
	lines := fmt.Sprintf(`{"id":"deep","title":%q,"task":"t1"}`, deep) + "\n" +
		`{"id":"poison","title":"no task"}` + "\n" +
		`{"id":"fine","title":"Fine one","task":"t3"}` + "\n"
	if err := os.WriteFile(events, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	e.writeListener("poison", `interval = "1s"
[source]
type = "shell"
command = "cat `+events+`"
[action]
path = "ev/{{id}}/{{title}}"
prompt = "do {{task}}"
`+shellAgent)
	e.serve()
	as := e.waitAgents("ev/**", 2, 20*time.Second)
	folded := "ev/deep/" + strings.TrimSuffix(strings.Repeat("level/", 13), "/") + "/level-level-level-level"
	if got := paths(as); !slices.Contains(got, folded) || !slices.Contains(got, "ev/fine/fine-one") {
		t.Fatalf("agents %v, want %s and ev/fine/fine-one", got, folded)
	}
	wait.For(t, 20*time.Second, "the poison event failed", func() bool {
		l, err := e.listener("poison")
		return err == nil && l.Failed == 1 && l.Fires == 2
	})
	out := e.must("listener", "show", "poison")
	for _, want := range []string{"failed:     1 event(s), not retried (last", `poison: template "do {{task}}": the event has no "task"`, "held:       0", "state:      enabled"} {
		if !strings.Contains(out, want) {
			t.Fatalf("listener show lacks %q:\n%s", want, out)
		}
	}
}

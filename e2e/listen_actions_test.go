package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"orcr/core/secretenv"
	"orcr/github/githubtest"
	listenapi "orcr/listen/api"
	planapi "orcr/orchestrate/api"
	"orcr/testutil/modelserver"
	"orcr/testutil/wait"
)

// Listener actions end to end: agents from roles (resolved by the server's role
// resolver, as `orcr agent run --role` is), plans drafted by a real claude lead, a
// failing action backing off across a restart, and [github] reloaded on SIGHUP.

func (e *env) writeRole(name, doc string) {
	e.t.Helper()
	dir := filepath.Join(e.configDir(), "roles")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".toml"), []byte(doc), 0o600); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) waitListener(name, what string, within time.Duration, cond func(listenapi.Listener) bool) listenapi.Listener {
	e.t.Helper()
	var l listenapi.Listener
	wait.For(e.t, within, name+": "+what, func() bool {
		var err error
		l, err = e.listener(name)
		return err == nil && cond(l)
	})
	return l
}

const shellRoleAgent = `command = 'printf "%s\n" "$ORCR_EVENT_TITLE"; sleep 600'
`

func TestListenerRoleActionsEndToEnd(t *testing.T) {
	gh := githubtest.New(t, githubtest.WithToken("tok-e2e", "orcr-bot"))
	gh.AddRepo("acme/app")
	gh.AddIssue("acme/app", githubtest.Issue{Title: "Crash on start", Body: "stack trace", User: "alice", Labels: []string{"triage"}})
	e := newEnv(t)
	e.writeConfig(fmt.Sprintf("[github]\napi_url = %q\ntoken = \"tok-e2e\"\n", gh.URL))
	e.writeRole("triage", `providers = ["shell"]
prompt = "Triage {{repo}}#{{number}} by {{user}}: {{title}} / {{body}} (for {{path}})"
env = { TRIAGE = "1" }
`)
	e.writeRole("ticketed", `providers = ["shell"]
prompt = "Work on ticket {{ticket}}"
`)
	// The role's prompt, filled from the event.
	e.writeListener("triage", `interval = "1s"
[source]
type = "github-issues"
repos = ["acme/app"]
labels = ["triage"]
[action]
path = "gh/triage/{{number}}"
role = "triage"
`+shellRoleAgent)
	// A role that does not exist yet: the comments are held while it backs off.
	e.writeListener("mention", `interval = "1s"
[source]
type = "github-comments"
repos = ["acme/app"]
trigger = "@orcr"
[action]
path = "gh/mention/{{number}}-{{comment_id}}"
role = "reviewer"
prompt = "{{user}} asked on #{{number}}: {{body}}"
`+shellRoleAgent)
	// A role whose prompt names a variable no issue has.
	e.writeListener("ticketed", `interval = "1s"
[source]
type = "github-issues"
repos = ["acme/app"]
labels = ["triage"]
[action]
path = "gh/ticketed/{{number}}"
role = "ticketed"
`+shellRoleAgent)
	start := time.Now()
	e.serve()

	as := e.waitAgents("gh/triage/**", 1, 20*time.Second)
	a := as[0]
	if a.Role != "triage" || a.Prompt != "Triage acme/app#1 by alice: Crash on start / stack trace (for gh/triage/1)" ||
		a.Env["TRIAGE"] != secretenv.Redacted || a.Env["ORCR_LISTENER"] != "triage" || a.Provider != "shell" {
		t.Fatalf("role agent: role %q provider %s prompt %q env %v", a.Role, a.Provider, a.Prompt, a.Env)
	}
	if !strings.Contains(strings.Join(a.RoleNotes, "\n"), "choice 1 of 1 of role triage") {
		t.Fatalf("role notes %v", a.RoleNotes)
	}
	// The agent runs with the event in its environment (its command prints the title).
	wait.For(t, 20*time.Second, "the agent prints the title", func() bool {
		return strings.Contains(e.orcr("agent", "read", "gh/triage/1").Out, "Crash on start")
	})

	l := e.waitListener("ticketed", "the missing var recorded", 20*time.Second, func(l listenapi.Listener) bool { return l.Held == 1 && l.Failures >= 1 })
	if !strings.Contains(l.LastError, "ticket not given") || !strings.Contains(l.LastError, "this listener's events carry") ||
		!strings.Contains(l.LastError, "{{number}}") {
		t.Fatalf("ticketed last error %q", l.LastError)
	}

	e.polledAfter("mention", start)
	gh.AddComment("acme/app", 1, "bob", "@orcr have a look")
	l = e.waitListener("mention", "backing off", 30*time.Second, func(l listenapi.Listener) bool { return l.Failures >= 3 && l.Held == 1 })
	if !strings.Contains(l.LastError, `no role "reviewer"`) || l.NextPoll == nil || l.ErrorAt == nil ||
		l.NextPoll.Sub(*l.ErrorAt) < 3*time.Second {
		t.Fatalf("mention: %q, next %v after error %v (failures %d)", l.LastError, l.NextPoll, l.ErrorAt, l.Failures)
	}
	show := e.must("listener", "show", "mention")
	for _, want := range []string{"failing (", "back-off:", "failed in a row; next attempt at", `no role "reviewer"`, "held:       1"} {
		if !strings.Contains(show, want) {
			t.Fatalf("listener show lacks %q:\n%s", want, show)
		}
	}
	if n := len(e.agentsUnder("gh/mention/**")); n != 0 {
		t.Fatalf("%d agents from a missing role", n)
	}
	// The other listeners are unaffected.
	if l, _ := e.listener("triage"); l.Failures != 0 || l.Fires != 1 {
		t.Fatalf("triage: %+v", l)
	}

	// A restart keeps the held comment and the back-off; a second comment queues
	// behind it.
	e.kill9()
	e.serve()
	cid := gh.AddComment("acme/app", 1, "carol", "@orcr and this")
	l = e.waitListener("mention", "both held", 30*time.Second, func(l listenapi.Listener) bool { return l.Held == 2 })
	if l.Failures < 3 || l.Fires != 0 {
		t.Fatalf("after a restart: failures %d fires %d", l.Failures, l.Fires)
	}
	// The role appears; enable retries now; both comments go out once each.
	e.writeRole("reviewer", `providers = ["shell"]
system_prompt = "Answer briefly."
`)
	e.must("listener", "enable", "mention")
	as = e.waitAgents("gh/mention/**", 2, 20*time.Second)
	prompts := map[string]string{}
	for _, a := range as {
		if a.Role != "reviewer" {
			t.Fatalf("mention agent role %q", a.Role)
		}
		prompts[a.Path] = a.Prompt
	}
	if got := prompts[fmt.Sprintf("gh/mention/1-%d", cid)]; got != "carol asked on #1: @orcr and this" {
		t.Fatalf("mention prompts %v", prompts)
	}
	l = e.waitListener("mention", "recovered", 20*time.Second, func(l listenapi.Listener) bool {
		return l.Fires == 2 && l.Held == 0 && l.Failures == 0 && l.LastError == ""
	})
	e.polledAfter("mention", time.Now())
	if n := len(e.agentsUnder("gh/mention/**")); n != 2 {
		t.Fatalf("%d mention agents, want 2", n)
	}
}

// TestListenerGitHubReloadOnSIGHUP: a wrong token, then another api_url, fixed in
// config.toml and picked up by SIGHUP without a restart; the failing listener tries
// again at once rather than after its back-off.
func TestListenerGitHubReloadOnSIGHUP(t *testing.T) {
	gh := githubtest.New(t, githubtest.WithToken("tok-good", "orcr-bot"))
	gh.AddRepo("acme/app")
	gh.AddIssue("acme/app", githubtest.Issue{Title: "First", User: "alice", Labels: []string{"orcr"}})
	other := githubtest.New(t, githubtest.WithToken("tok-other", "orcr-bot"))
	other.AddRepo("acme/app")
	other.AddIssue("acme/app", githubtest.Issue{Title: "unlabelled", User: "alice"})
	other.AddIssue("acme/app", githubtest.Issue{Title: "From the other server", User: "alice", Labels: []string{"orcr"}})
	e := newEnv(t)
	e.writeConfig(fmt.Sprintf("[github]\napi_url = %q\ntoken = \"tok-wrong\"\n", gh.URL))
	// An hour's interval: only the reload can make it poll again within the test.
	e.writeListener("issues", `interval = "1h"
[source]
type = "github-issues"
repos = ["acme/app"]
labels = ["orcr"]
[action]
path = "gh/{{number}}"
prompt = "{{title}}"
`+shellAgent)
	e.serve()
	l := e.waitListener("issues", "401", 20*time.Second, func(l listenapi.Listener) bool {
		return l.Failures == 1 && strings.Contains(l.LastError, "unauthorized (401)")
	})
	if time.Until(*l.NextPoll) < 50*time.Minute {
		t.Fatalf("next poll %v", l.NextPoll)
	}
	hup := func() {
		t.Helper()
		if err := syscall.Kill(e.srv.PID(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	e.writeConfig(fmt.Sprintf("[github]\napi_url = %q\ntoken = \"tok-good\"\n", gh.URL))
	hup()
	as := e.waitAgents("gh/**", 1, 20*time.Second)
	if as[0].Prompt != "First" {
		t.Fatalf("prompt %q", as[0].Prompt)
	}
	e.waitListener("issues", "recovered", 10*time.Second, func(l listenapi.Listener) bool { return l.Failures == 0 && l.LastError == "" })

	// Another api_url (and its token): the client is made anew against it. The
	// listener is not failing, so it polls at its interval: make it due by editing
	// its file (a new interval takes effect at once).
	e.writeConfig(fmt.Sprintf("[github]\napi_url = %q\ntoken = \"tok-other\"\n", other.URL))
	hup()
	e.writeListener("issues", `interval = "1s"
[source]
type = "github-issues"
repos = ["acme/app"]
labels = ["orcr"]
[action]
path = "gh/{{number}}"
prompt = "{{title}}"
`+shellAgent)
	as = e.waitAgents("gh/**", 2, 30*time.Second)
	got := map[string]string{}
	for _, a := range as {
		got[a.Path] = a.Prompt
	}
	if got["gh/2"] != "From the other server" {
		t.Fatalf("agents %v", got)
	}
	// A config that does not load leaves the running client alone.
	e.writeConfig("[github\n")
	hup()
	before := time.Now()
	e.polledAfter("issues", before)
	if l, _ := e.listener("issues"); l.Failures != 0 {
		t.Fatalf("a broken config.toml broke the client: %+v", l)
	}
}

// TestListenerPlanActionEndToEnd: a github-issues listener with plan = … drafts a
// plan through the plan service; its lead is the real claude CLI driven by the
// scripted model server, whose Write really writes the plan file (the plan reaches
// drafted). A second issue whose name template gives the same plan name is held with
// the error, and no second lead starts.
func TestListenerPlanActionEndToEnd(t *testing.T) {
	e, srv, _, repo := claudeLeadEnv(t)
	gh := githubtest.New(t, githubtest.WithToken("tok-e2e", "orcr-bot"))
	gh.AddRepo("acme/app")
	gh.AddIssue("acme/app", githubtest.Issue{Title: "Import CSV", Body: "into the contacts table", User: "alice", Labels: []string{"plan"}})
	e.writeConfig(fmt.Sprintf("[github]\napi_url = %q\ntoken = \"tok-e2e\"\n", gh.URL))
	e.writeListener("planner", fmt.Sprintf(`interval = "1s"
[source]
type = "github-issues"
repos = ["acme/app"]
labels = ["plan"]
[action]
plan = "{{title}}"
repo = %q
lead = "claude:claude-opus-5"
`, repo))
	file := filepath.Join(repo, ".orcr", "plans", "import-csv.md")
	draft := strings.Replace(planV1, "# Plan: csv", "# Plan: import-csv", 1)
	srv.Push(modelserver.Turn{ToolCalls: []modelserver.ToolCall{{Name: "Write", Input: map[string]any{"file_path": file, "content": draft}}},
		Usage: modelserver.Usage{Input: 100, Output: 20}},
		modelserver.Turn{Text: "The plan is written.", Usage: modelserver.Usage{Input: 10, Output: 5}})
	e.serveWithLeads()

	var p planapi.PlanGetResult
	wait.For(t, 150*time.Second, "the plan drafted", func() bool {
		r := e.orcr("plan", "show", "import-csv", "--json")
		return r.Code == 0 && json.Unmarshal([]byte(r.Out), &p) == nil && p.Plan.State == "drafted"
	})
	if !strings.HasPrefix(p.Plan.Request, "Import CSV\n\ninto the contacts table\n\n(http") ||
		!strings.HasSuffix(p.Plan.Request, "/acme/app/issues/1)") || p.Plan.Repo != repo || p.Plan.Lead != "claude:claude-opus-5" ||
		len(p.Milestones) != 1 || p.Plan.LeadPath != "plans/import-csv/lead" {
		t.Fatalf("plan %+v milestones %d", p.Plan, len(p.Milestones))
	}
	if b, _ := os.ReadFile(file); string(b) != draft {
		t.Fatalf("the lead did not write the plan: %q", b)
	}
	reqs := modelserver.Conversation(srv.Requests())
	if len(reqs) == 0 || !strings.Contains(reqs[0].LastUser(), "into the contacts table") {
		t.Fatal("the issue is not in the lead's first request")
	}
	l, _ := e.listener("planner")
	if l.Fires != 1 || l.Held != 0 || !strings.Contains(l.Action, "plan {{title}}") {
		t.Fatalf("planner %+v", l)
	}

	// The same title again: the name is another request's plan. Held, said so, and
	// no second lead.
	played := srv.Played()
	gh.AddIssue("acme/app", githubtest.Issue{Title: "Import CSV", Body: "again", User: "bob", Labels: []string{"plan"}})
	l = e.waitListener("planner", "the duplicate held", 30*time.Second, func(l listenapi.Listener) bool { return l.Held == 1 && l.Failures >= 1 })
	if !strings.Contains(l.LastError, "plan import-csv exists already for another request") || l.Fires != 1 {
		t.Fatalf("duplicate: %+v", l)
	}
	if srv.Played() != played || len(e.agentsUnder("plans/**")) != 1 {
		t.Fatalf("a second lead started: %d turns played, %d leads", srv.Played()-played, len(e.agentsUnder("plans/**")))
	}
	ls := e.must("plan", "ls")
	if strings.Count(ls, "import-csv") != 1 {
		t.Fatalf("plan ls:\n%s", ls)
	}
}

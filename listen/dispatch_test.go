package listen

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"orcr/core/wire"
	listenapi "orcr/listen/api"
	planapi "orcr/orchestrate/api"
	"orcr/testutil/wait"
)

// fakePlans keeps plans as the plan service would: one per name, a taken name refused.
type fakePlans struct {
	mu    sync.Mutex
	plans map[string]planapi.Plan
	news  int
}

func newFakePlans() *fakePlans { return &fakePlans{plans: map[string]planapi.Plan{}} }

func (f *fakePlans) PlanNew(_ context.Context, p planapi.PlanNewParams) (planapi.Plan, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.news++
	if old, ok := f.plans[p.Name]; ok {
		return planapi.Plan{}, wire.Errorf(wire.CodeNameTaken, "plan %s exists already (%s): pick another name", p.Name, old.State)
	}
	pl := planapi.Plan{Name: p.Name, Request: p.Request, Repo: p.Repo, Lead: p.Lead, LeadPath: "plans/" + p.Name + "/lead",
		State: "drafting", CreatedAt: time.Now()}
	f.plans[p.Name] = pl
	return pl, nil
}

func (f *fakePlans) PlanGet(_ context.Context, name string) (planapi.PlanGetResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.plans[name]
	if !ok {
		return planapi.PlanGetResult{}, wire.Errorf(wire.CodeNotFound, "no plan named %s", name)
	}
	return planapi.PlanGetResult{Plan: p}, nil
}

func (f *fakePlans) get(name string) (planapi.Plan, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.plans[name]
	return p, ok
}

func (f *fakePlans) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.plans)
}

func (r *svcRig) waitListener(what, name string, cond func(listenapi.Listener) bool) listenapi.Listener {
	r.t.Helper()
	var l listenapi.Listener
	wait.For(r.t, 10*time.Second, what, func() bool {
		var err error
		l, err = r.get(name)
		return err == nil && cond(l)
	})
	return l
}

// A role-based spawn hands agent.run the role and the event's vars, so the kernel's
// resolver (the one `agent run --role` uses) fills the role's prompt from them; a
// listener prompt, when given, is the request's and wins.
func TestServiceRoleAction(t *testing.T) {
	r := newSvcRig(t)
	r.write("triage", `interval = "1s"
[source]
type = "shell"
command = "echo '{\"id\": \"T1\", \"title\": \"Crash on start\"}'"
[action]
path = "tri/{{id}}"
role = "triage"
identity = "maintainer"
command = "true"
`)
	wait.For(t, 5*time.Second, "triage dispatches", func() bool { return len(r.ag.paths()) == 1 })
	r.ag.mu.Lock()
	p := r.ag.params[0]
	r.ag.mu.Unlock()
	if p.Role != "triage" || p.Identity != "maintainer" || p.Provider != "" || p.Prompt != "" || p.Vars["title"] != "Crash on start" || p.Vars["id"] != "T1" ||
		p.Vars["listener"] != "triage" || p.Env[EnvListenerEvent] != "T1" || p.Env["ORCR_EVENT_TITLE"] != "Crash on start" ||
		strings.Join(p.Argv, " ") != "sh -c true" {
		t.Fatalf("run params %+v", p)
	}

	r.write("prompted", `interval = "1s"
[source]
type = "shell"
command = "echo P1"
[action]
path = "pr/{{id}}"
role = "triage"
prompt = "look at {{id}}"
`)
	wait.For(t, 5*time.Second, "prompted dispatches", func() bool { return len(r.ag.paths()) == 2 })
	r.ag.mu.Lock()
	p = r.ag.params[1]
	r.ag.mu.Unlock()
	if p.Role != "triage" || p.Prompt != "look at P1" || p.Vars["id"] != "P1" || p.Argv != nil {
		t.Fatalf("run params %+v", p)
	}

	// The resolver refuses (a role prompt naming a var the event lacks): held, the error
	// says which vars the events do carry, the listener backs off; the others run on.
	r.ag.mu.Lock()
	r.ag.err = wire.Errorf(wire.CodeBadRole, "role triage: prompt: template variable ticket not given: pass --var ticket=…")
	r.ag.mu.Unlock()
	r.write("more", `interval = "1s"
[source]
type = "shell"
command = "echo M1"
[action]
path = "more/{{id}}"
role = "triage"
`)
	l := r.waitListener("more held", "more", func(l listenapi.Listener) bool { return l.Held == 1 && l.Failures >= 2 })
	if !strings.Contains(l.LastError, "ticket not given") || !strings.Contains(l.LastError, "this listener's events carry {{id}}, {{line}}, {{listener}}, {{source}}") {
		t.Fatalf("last error %q", l.LastError)
	}
	if l.NextPoll == nil || l.ErrorAt == nil || !l.NextPoll.After(*l.ErrorAt) {
		t.Fatalf("no back-off: next %v error at %v", l.NextPoll, l.ErrorAt)
	}
	r.ag.mu.Lock()
	r.ag.err = nil
	r.ag.mu.Unlock()
	r.waitListener("more recovers", "more", func(l listenapi.Listener) bool {
		return l.Held == 0 && l.Fires == 1 && l.Failures == 0 && l.LastError == ""
	})
}

// A plan action drafts a plan through the plan service: the name from its template
// (slugged), the request and repo from theirs. A name another request holds is the
// listener's error and holds the event (nothing lost) until the template is fixed;
// the plan of this very event, found existing, counts as done, not as a second plan.
func TestServicePlanAction(t *testing.T) {
	r := newSvcRig(t)
	r.plans.plans["old-work-o"] = planapi.Plan{Name: "old-work-o", Request: "old work (o)", State: "drafted", CreatedAt: time.Now().Add(-time.Hour)}
	doc := func(name string) string {
		return `interval = "1s"
[source]
type = "shell"
command = "printf '{\"id\": \"a\", \"title\": \"Import CSV files\"}\n{\"id\": \"b\", \"title\": \"Import CSV files\"}\n{\"id\": \"o\", \"title\": \"old work\"}\n'"
[action]
plan = "` + name + `"
request = "{{title}} ({{id}})"
repo = "/src/app-{{id}}"
lead = "claude:opus"
`
	}
	r.write("plans", doc("{{title}}"))
	l := r.waitListener("b held", "plans", func(l listenapi.Listener) bool { return l.Fires == 1 && l.Held == 2 && l.Failures >= 1 })
	p, ok := r.plans.get("import-csv-files")
	if !ok || p.Request != "Import CSV files (a)" || p.Repo != "/src/app-a" || p.Lead != "claude:opus" {
		t.Fatalf("plan %+v (%v)", p, ok)
	}
	if !strings.Contains(l.LastError, "dispatch b: plan import-csv-files exists already for another request") || !strings.Contains(l.Action, "plan {{title}}") {
		t.Fatalf("listener %+v", l)
	}
	if r.k.count(listenapi.EventListenerDispatched, "plans") != 1 {
		t.Fatalf("dispatched events %d", r.k.count(listenapi.EventListenerDispatched, "plans"))
	}
	// The template fixed: b goes out under its own name; o's plan exists with o's
	// request, so it is done without a second plan.
	r.write("plans", doc("{{title}}-{{id}}"))
	r.waitListener("all out", "plans", func(l listenapi.Listener) bool {
		return l.Fires == 3 && l.Held == 0 && l.Failures == 0 && l.LastError == ""
	})
	if p, ok := r.plans.get("import-csv-files-b"); !ok || p.Request != "Import CSV files (b)" || p.Repo != "/src/app-b" {
		t.Fatalf("plan b %+v (%v)", p, ok)
	}
	if n := r.plans.count(); n != 3 {
		t.Fatalf("%d plans, want 3 (the old one, a, b)", n)
	}
	if done, _ := r.svc.rec.IsProcessed(context.Background(), "plans", "o"); !done {
		t.Fatal("o not processed")
	}

	// After a restart, a pending plan dispatch is settled by asking the plan service.
	d := &dispatcher{s: r.svc}
	at := time.Now().Add(-time.Minute)
	for _, c := range []struct {
		target string
		at     time.Time
		want   bool
	}{{"import-csv-files-b", at, true}, {"old-work-o", at, false}, {"nothing", at, false}} {
		got, err := d.Done(context.Background(), Dispatch{Plan: true, Target: c.target, At: c.at})
		if err != nil || got != c.want {
			t.Fatalf("Done(%s) = %v %v, want %v", c.target, got, err, c.want)
		}
	}
}

// Enabling a listener that backs off retries it now (the user fixed what failed);
// RetryGitHub does the same for github listeners when the client changed.
func TestEnableRetriesAFailingListenerNow(t *testing.T) {
	r := newSvcRig(t)
	r.ag.mu.Lock()
	r.ag.err = wire.Errorf(wire.CodeUnknownRole, "no role \"triage\"")
	r.ag.mu.Unlock()
	r.write("slow", strings.Replace(shellDoc("echo one", "p"), `interval = "1s"`, `interval = "1h"`, 1))
	l := r.waitListener("slow fails", "slow", func(l listenapi.Listener) bool { return l.Failures == 1 && l.Held == 1 })
	if l.NextPoll == nil || time.Until(*l.NextPoll) < 50*time.Minute {
		t.Fatalf("next poll %v, want an hour away", l.NextPoll)
	}
	r.ag.mu.Lock()
	r.ag.err = nil
	r.ag.mu.Unlock()
	if _, err := r.svc.ListenerEnable(context.Background(), "slow", true); err != nil {
		t.Fatal(err)
	}
	r.waitListener("slow retried", "slow", func(l listenapi.Listener) bool { return l.Fires == 1 && l.Failures == 0 && l.Held == 0 })

	// Editing a failing listener's file (most likely the fix) retries it at once too.
	r.ag.mu.Lock()
	r.ag.err = wire.Errorf(wire.CodeUnknownRole, "no role \"triage\"")
	r.ag.mu.Unlock()
	r.write("slow2", strings.Replace(shellDoc("echo two", "p"), `interval = "1s"`, `interval = "1h"`, 1))
	r.waitListener("slow2 fails", "slow2", func(l listenapi.Listener) bool { return l.Failures == 1 && l.Held == 1 })
	r.ag.mu.Lock()
	r.ag.err = nil
	r.ag.mu.Unlock()
	r.write("slow2", strings.Replace(shellDoc("echo two", "q"), `interval = "1s"`, `interval = "1h"`, 1))
	r.waitListener("slow2 retried after the edit", "slow2", func(l listenapi.Listener) bool { return l.Fires == 1 && l.Failures == 0 })
}

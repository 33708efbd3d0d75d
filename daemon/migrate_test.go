package daemon

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"orcr/accounts"
	acctapi "orcr/accounts/api"
	"orcr/adapters/shell"
	"orcr/core"
	"orcr/core/wire"
	"orcr/listen"
	listenapi "orcr/listen/api"
	"orcr/orchestrate"
	"orcr/orchestrate/run"
	"orcr/pty"
	"orcr/roles"
	"orcr/schedule"
	schedapi "orcr/schedule/api"
	"orcr/store"
)

// serverFeatures is the server's features over one store: each writes what a user
// would leave behind, and each reads it back.
type serverFeatures struct {
	st    *store.Store
	eng   *core.Engine
	sched *schedule.Service
	acct  *accounts.Service
	ls    *listen.Service
	plans *orchestrate.Service
	runs  *run.Service
	all   []core.Feature
}

func startFeatures(t *testing.T, home string) *serverFeatures {
	t.Helper()
	st, err := store.Open(filepath.Join(home, "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &serverFeatures{st: st}
	eng, err := core.NewEngine(core.Options{Store: st, Host: pty.New(pty.Options{}), Providers: []core.Provider{shell.New()},
		Home: home, Socket: filepath.Join(home, "orcr.sock")})
	if err != nil {
		t.Fatal(err)
	}
	f.eng = eng
	now := func() time.Time { return time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC) }
	if f.acct, err = accounts.New(accounts.Options{Now: now,
		Accounts: []accounts.Spec{{Provider: "claude", Label: "work", Env: map[string]string{"CLAUDE_CODE_OAUTH_TOKEN": "t"}}}}); err != nil {
		t.Fatal(err)
	}
	if f.sched, err = schedule.New(schedule.Options{Home: home, Socket: filepath.Join(home, "orcr.sock")}); err != nil {
		t.Fatal(err)
	}
	if f.plans, err = orchestrate.NewService(orchestrate.ServiceOptions{}); err != nil {
		t.Fatal(err)
	}
	if f.ls, err = listen.NewService(listen.ServiceOptions{Dir: filepath.Join(home, "listeners")}); err != nil {
		t.Fatal(err)
	}
	if f.runs, err = run.NewService(run.Options{Home: home}); err != nil {
		t.Fatal(err)
	}
	f.all = []core.Feature{roles.New(roles.Options{Dir: filepath.Join(home, "roles")}), f.acct, f.sched, f.plans, f.ls, f.runs}
	if err := eng.Start(context.Background(), f.all...); err != nil {
		f.stop()
		t.Fatal(err)
	}
	return f
}

func (f *serverFeatures) stop() {
	for i := len(f.all) - 1; i >= 0; i-- {
		f.all[i].Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f.eng.Close(ctx)
	f.st.Close()
}

// A store written before the features had their own namespaces (schema 1: every
// feature's bucket under its bare name, as main kept them) opens with every feature's
// records where that feature reads them: schedules, accounts' readings and budgets,
// listeners, plans and runs. It fails if a feature's bucket is missing from the move's
// table (LayOutAsSchema1 names it) or is moved under another feature's name.
func TestStoreOfSchema1OpensIntact(t *testing.T) {
	home := t.TempDir()
	ctx := context.Background()
	f := startFeatures(t, home)
	if _, err := f.sched.ScheduleAdd(ctx, schedapi.ScheduleAddParams{Name: "nightly", Cron: "0 3 * * *", Command: []string{"true"}, Cwd: home}); err != nil {
		t.Fatal(err)
	}
	usd := 5.0
	if _, err := f.acct.BudgetSet(ctx, acctapi.BudgetSetParams{Glob: "review/**", USD: &usd, Action: "hold"}); err != nil {
		t.Fatal(err)
	}
	reset := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f.acct.Observe(wire.LimitReading{Provider: "claude", Account: "work", Window: "5h", UsedPct: 42, ResetsAt: &reset,
		ObservedAt: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)})
	doc := "interval = \"1h\"\n[source]\ntype = \"shell\"\ncommand = \"true\"\n[action]\npath = \"l/{{id}}\"\nprovider = \"shell\"\ncommand = \"true\"\nprompt = \"x\"\n"
	if _, err := f.ls.ListenerPut(ctx, listenapi.ListenerPutParams{Name: "gh", Document: doc}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ls.ListenerEnable(ctx, "gh", false); err != nil {
		t.Fatal(err)
	}
	pr, err := orchestrate.NewRecord("demo", "a request", home, "claude:sonnet", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pr.State = orchestrate.PlanRejected // nothing for the plans feature to do at start
	if err := orchestrate.NewPlans(core.FeatureBuckets(f.st, orchestrate.Name)).Create(ctx, pr); err != nil {
		t.Fatal(err)
	}
	if _, err := run.NewRuns(core.FeatureBuckets(f.st, run.Name)).Create(ctx, run.Record{Run: run.Run{Name: "demo", Stopped: true}, Repo: home}, nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	f.stop()

	if err := store.LayOutAsSchema1(filepath.Join(home, "store")); err != nil {
		t.Fatal(err)
	}
	// The next Open moves the records; the features must find them all.
	f = startFeatures(t, home)
	defer f.stop()
	if ss, err := f.sched.Schedules(ctx); err != nil || len(ss) != 1 || ss[0].Name != "nightly" {
		t.Errorf("schedules after the move: %+v, %v", ss, err)
	}
	if bs, err := f.acct.Budgets(ctx); err != nil || len(bs) != 1 || bs[0].Glob != "review/**" {
		t.Errorf("budgets after the move: %+v, %v", bs, err)
	}
	if l, err := f.acct.Accounts(ctx); err != nil || len(l.Accounts) == 0 || len(l.Accounts[0].Windows) != 1 || l.Accounts[0].Windows[0].UsedPct != 42 {
		t.Errorf("usage windows after the move: %+v, %v", l.Accounts, err)
	}
	if l, err := f.ls.ListenerGet(ctx, "gh"); err != nil || l.Origin != "api" || l.State != "disabled" {
		t.Errorf("listener after the move: %+v, %v", l, err)
	}
	if ps, err := f.plans.Plans(ctx); err != nil || len(ps) != 1 || ps[0].Name != "demo" {
		t.Errorf("plans after the move: %+v, %v", ps, err)
	}
	if rs, err := f.runs.Runs(ctx); err != nil || len(rs) != 1 || rs[0].Name != "demo" {
		t.Errorf("runs after the move: %+v, %v", rs, err)
	}
}

package ui

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/charmbracelet/x/exp/golden"

	"orcr/core/socket"
	"orcr/core/wire"
	planapi "orcr/orchestrate/api"
	runapi "orcr/orchestrate/run/api"
)

// runControl serves run.start, run.stop and run.finish in-process, recording the calls.
type runControl struct {
	mu    sync.Mutex
	calls []string
}

func (r *runControl) transport(t testing.TB) wire.Transport {
	rec := func(verb, name string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.calls = append(r.calls, verb+" "+name)
	}
	ip, err := socket.NewInProcess([]wire.Handler{
		wire.Handle(runapi.RunStartM, func(_ context.Context, p *runapi.RunStartParams) (runapi.RunResult, error) {
			rec("start", p.Name)
			return runapi.RunResult{Run: runapi.RunView{Name: p.Name, State: "running"}}, nil
		}),
		wire.Handle(runapi.RunStopM, func(_ context.Context, p *runapi.RunNameParams) (runapi.RunResult, error) {
			rec("stop", p.Name)
			return runapi.RunResult{Run: runapi.RunView{Name: p.Name, State: "stopped"}}, nil
		}),
		wire.Handle(runapi.RunFinishM, func(_ context.Context, p *runapi.RunNameParams) (runapi.RunFinishResult, error) {
			rec("finish", p.Name)
			return runapi.RunFinishResult{Run: runapi.RunView{Name: p.Name, State: "finished"}}, nil
		}),
		wire.Handle(runapi.RunListM, func(context.Context, *wire.Empty) (runapi.RunListResult, error) {
			return runapi.RunListResult{Runs: fixtureRuns()}, nil
		}),
		wire.Handle(planapi.PlanList, func(context.Context, *wire.Empty) (planapi.PlanListResult, error) {
			return planapi.PlanListResult{}, nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	return ip
}

// TestRunStopFinishKeys: X and f in the runs view ask first (naming what happens);
// any key but y keeps the run; y stops or finishes it through run.stop / run.finish.
func TestRunStopFinishKeys(t *testing.T) {
	rc := &runControl{}
	m := openRunsView(t, 160, 48, Options{})
	m.svc = rc.transport(t)
	d := m.runsView()
	pressSettle(t, m, "X")
	if !strings.Contains(d.notice, "stop run csv-import?") {
		t.Fatalf("X said %q", d.notice)
	}
	if s := plain(screen(t, m)); !strings.Contains(s, "stop run csv-import?") {
		t.Fatalf("the question is not on screen:\n%s", s)
	}
	pressSettle(t, m, "n")
	if len(rc.calls) != 0 || !strings.Contains(d.notice, "left as it is") {
		t.Fatalf("n: calls %v notice %q", rc.calls, d.notice)
	}
	pressSettle(t, m, "X", "y")
	pressSettle(t, m, "f")
	if !strings.Contains(d.notice, "finish run csv-import?") {
		t.Fatalf("f said %q", d.notice)
	}
	pressSettle(t, m, "y")
	if strings.Join(rc.calls, ",") != "stop csv-import,finish csv-import" || !strings.Contains(d.notice, "finished run csv-import: now finished") {
		t.Fatalf("calls %v notice %q", rc.calls, d.notice)
	}
}

// TestPlanStartRunKey: s on an approved plan starts its run through run.start; on a
// plan that is not approved it says why and calls nothing.
func TestPlanStartRunKey(t *testing.T) {
	rc := &runControl{}
	m := openPlans(t, 120, 40)
	m.svc = rc.transport(t)
	d := m.dialogs[0].(*plansDialog)
	for i, p := range d.plans {
		if p.Name == "csv-import" { // drafted
			d.sel = i
		}
	}
	pressSettle(t, m, "s")
	if len(rc.calls) != 0 || !strings.Contains(plain(d.notice), "is drafted: a run starts from an approved plan") {
		t.Fatalf("s on a drafted plan: calls %v notice %q", rc.calls, d.notice)
	}
	d.plans[d.sel].State = "approved"
	pressSettle(t, m, "s")
	if strings.Join(rc.calls, ",") != "start csv-import" || !strings.Contains(d.notice, "run csv-import started (running)") {
		t.Fatalf("calls %v notice %q", rc.calls, d.notice)
	}
}

// TestPlanNewKey: n in the plans view opens the new-plan form (the selected plan's
// repository offered); its answers become plan.new; esc leaves it without a call.
func TestPlanNewKey(t *testing.T) {
	var got []planapi.PlanNewParams
	ip, err := socket.NewInProcess([]wire.Handler{
		wire.Handle(planapi.PlanNew, func(_ context.Context, p *planapi.PlanNewParams) (planapi.PlanResult, error) {
			got = append(got, *p)
			return planapi.PlanResult{Plan: planapi.Plan{Name: p.Name, State: "drafting"}}, nil
		}),
		wire.Handle(planapi.PlanList, func(context.Context, *wire.Empty) (planapi.PlanListResult, error) {
			return planapi.PlanListResult{}, nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	m := openPlans(t, 120, 40)
	m.svc = ip
	d := m.dialogs[0].(*plansDialog)
	press(m, "n", "esc")
	if d.mode != planList || d.newPlan || len(got) != 0 {
		t.Fatalf("esc: mode %v newPlan %v calls %v", d.mode, d.newPlan, got)
	}
	pressSettle(t, m, "n")
	if !strings.Contains(plain(screen(t, m)), "start a plan") {
		t.Fatalf("no new-plan form:\n%s", plain(screen(t, m)))
	}
	d.newRepo = ""
	for _, r := range "csv2" {
		pressSettle(t, m, string(r))
	}
	pressSettle(t, m, "enter")
	for _, r := range "/src/app" {
		pressSettle(t, m, string(r))
	}
	pressSettle(t, m, "enter")
	for _, r := range "import more CSV" {
		if r == ' ' {
			pressSettle(t, m, "space")
			continue
		}
		pressSettle(t, m, string(r))
	}
	pressSettle(t, m, "enter")
	if len(got) != 1 || got[0] != (planapi.PlanNewParams{Name: "csv2", Repo: "/src/app", Request: "import more CSV"}) {
		t.Fatalf("plan.new got %+v (mode %v)\n%s", got, d.mode, plain(screen(t, m)))
	}
	if !strings.Contains(d.notice, "plan csv2 started") {
		t.Fatalf("notice %q", d.notice)
	}
}

func TestGoldenPlanNew(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {200, 50}} {
		t.Run(fmt.Sprintf("%dx%d", sz[0], sz[1]), func(t *testing.T) {
			m := openPlans(t, sz[0], sz[1])
			press(m, "n")
			golden.RequireEqual(t, screen(t, m))
		})
	}
}

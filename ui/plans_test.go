package ui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"

	"orcr/core/socket"
	"orcr/core/wire"
	planapi "orcr/orchestrate/api"
)

const fixturePlanSource = `# Plan: csv-import
request: import CSV files into the contacts table
check: go test ./...

## M1 · Shared types for the importer
depends: -
tier: high
model-why: the contract M2 and M3 build on
estimate: 20m

### Goal
One Go type for an imported row and one interface for a row sink.

### Acceptance
- [x] ` + "`go test ./import/...`" + ` passes

## M2 · CSV parser
depends: M1
tier: medium
estimate: 30m

### Goal
CSV rows parse into the row type.

### Acceptance
- [ ] parser tests pass
`

// fixturePlans is a drafted plan with its file, and one still drafting.
func fixturePlans() plansMsg {
	drafted := planapi.Plan{Name: "csv-import", Request: "import CSV files into the contacts table", State: "drafted",
		Lead: "claude:claude-opus-5", LeadPath: "plans/csv-import/lead", File: "/src/app/.orcr/plans/csv-import.md",
		Rounds: 1, CreatedAt: t0.Add(-2 * time.Minute)}
	drafting := planapi.Plan{Name: "auth", Request: "session cookies", State: "drafting", Lead: "codex:gpt-5.5",
		LeadPath: "plans/auth/lead", File: "/src/app/.orcr/plans/auth.md", Rounds: 1, CreatedAt: t0.Add(-30 * time.Second)}
	det := planapi.PlanGetResult{Plan: drafted, Check: "go test ./...", Mode: "worktree", Source: fixturePlanSource,
		Milestones: []planapi.PlanMilestone{
			{ID: "M1", Title: "Shared types for the importer", Depends: []string{}, Tier: "high", EstimateSeconds: 1200, ModelWhy: "the contract M2 and M3 build on"},
			{ID: "M2", Title: "CSV parser", Depends: []string{"M1"}, Tier: "medium", EstimateSeconds: 1800},
		}}
	missing := planapi.PlanGetResult{Plan: drafting, Missing: true,
		Problems: []planapi.PlanProblem{{Code: "unreadable", Message: "/src/app/.orcr/plans/auth.md does not exist: the lead has not written it yet, or it was deleted"}}}
	return plansMsg{plans: []planapi.Plan{drafting, drafted}, details: map[string]planapi.PlanGetResult{"csv-import": det, "auth": missing}}
}

// openPlans opens the plans view on the fixture with csv-import selected.
func openPlans(t *testing.T, w, h int) *Model {
	t.Helper()
	m := newTestModel(t, w, h, Options{})
	press(m, "P")
	if len(m.dialogs) != 1 {
		t.Fatal("P opened no dialog")
	}
	m.Update(fixturePlans())
	press(m, "down")
	return m
}

func TestGoldenPlans(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {120, 40}} {
		name := fmt.Sprintf("%dx%d", sz[0], sz[1])
		t.Run("list_"+name, func(t *testing.T) {
			m := openPlans(t, sz[0], sz[1])
			golden.RequireEqual(t, screen(t, m))
		})
		t.Run("view_"+name, func(t *testing.T) {
			m := openPlans(t, sz[0], sz[1])
			press(m, "enter")
			golden.RequireEqual(t, screen(t, m))
		})
		t.Run("form_"+name, func(t *testing.T) {
			m := openPlans(t, sz[0], sz[1])
			press(m, "enter", "A")
			golden.RequireEqual(t, screen(t, m))
		})
	}
}

// planRecorder is the Service the plan view's calls reach in tests: it records
// approve and reject (anything else is not expected and panics on the nil embed).
type planRecorder struct {
	approved, rejected, reason string
}

// transport serves the recorder's methods in-process.
func (r *planRecorder) transport(t testing.TB) wire.Transport {
	ip, err := socket.NewInProcess([]wire.Handler{
		wire.Handle(planapi.PlanApprove, func(ctx context.Context, p *planapi.PlanNameParams) (planapi.PlanResult, error) {
			pl, err := r.PlanApprove(ctx, p.Name)
			return planapi.PlanResult{Plan: pl}, err
		}),
		wire.Handle(planapi.PlanReject, func(ctx context.Context, p *planapi.PlanRejectParams) (planapi.PlanResult, error) {
			pl, err := r.PlanReject(ctx, *p)
			return planapi.PlanResult{Plan: pl}, err
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	return ip
}

func (r *planRecorder) PlanApprove(ctx context.Context, name string) (planapi.Plan, error) {
	r.approved = name
	return planapi.Plan{Name: name, State: "approved"}, nil
}

func (r *planRecorder) PlanReject(ctx context.Context, p planapi.PlanRejectParams) (planapi.Plan, error) {
	r.rejected, r.reason = p.Name, p.Reason
	return planapi.Plan{Name: p.Name, State: "rejected"}, nil
}

// decided runs the call an action asks for against svc and feeds its answer back.
func decided(t *testing.T, d *plansDialog, act action, svc *planRecorder) {
	t.Helper()
	ca, ok := act.(callAction)
	if !ok {
		t.Fatalf("action = %#v, want a call", act)
	}
	d.Update(ca.fn(context.Background(), svc.transport(t)))
}

// TestPlanFormDecides: the form's answers become the calls — approve, and reject with
// the reason typed; a reject without a reason is refused by the form.
func TestPlanFormDecides(t *testing.T) {
	svc := &planRecorder{}
	m := openPlans(t, 100, 30)
	d := m.dialogs[0].(*plansDialog)
	decided(t, d, runDialog(t, d, keys("enter", "A", "enter")...), svc) // Approve is preselected
	if svc.approved != "csv-import" || !strings.Contains(d.notice, "approved") {
		t.Fatalf("approve called for %q; notice %q", svc.approved, d.notice)
	}

	if act := runDialog(t, d, keys("R", "enter", "enter")...); act != nil || svc.rejected != "" {
		t.Fatalf("rejected without a reason: %#v", act)
	}
	if d.mode != planForm {
		t.Fatal("the form closed on an empty reason")
	}
	act := runDialog(t, d, append(textKeys("split M2: parser and sink are independent"), key("enter"))...)
	decided(t, d, act, svc)
	if svc.rejected != "csv-import" || svc.reason != "split M2: parser and sink are independent" {
		t.Fatalf("reject %q reason %q", svc.rejected, svc.reason)
	}
	if d.mode != planView || !strings.Contains(d.notice, "rejected") {
		t.Fatalf("after the reject: mode %d notice %q", d.mode, d.notice)
	}
	if act := runDialog(t, d, keys("esc", "esc")...); act != (closeAction{}) {
		t.Fatalf("esc esc: %#v", act)
	}
}

// TestPlanEditRunsTheEditor: "e" is an ExecProcess of the user's editor on the file,
// and its end re-reads the plans.
func TestPlanEditRunsTheEditor(t *testing.T) {
	m := openPlans(t, 100, 30)
	d := m.dialogs[0].(*plansDialog)
	if cmd, _ := d.Update(key("e")); cmd == nil {
		t.Fatal("e returned no command")
	}
	_, act := d.Update(planEditedMsg{name: "csv-import"})
	if _, ok := act.(callAction); !ok || !strings.Contains(d.notice, "checked again") {
		t.Fatalf("after the editor: %#v, notice %q", act, d.notice)
	}
}

// TestPlansNoOverflow draws every mode of the plans view at many sizes: each frame is
// exactly the terminal's size.
func TestPlansNoOverflow(t *testing.T) {
	for _, h := range []int{10, 24, 37} {
		for w := minW; w <= 200; w += 7 {
			m := openPlans(t, w, h)
			screen(t, m)
			press(m, "enter")
			screen(t, m)
			press(m, "pgdown", "down", "down")
			screen(t, m)
			press(m, "A")
			screen(t, m)
			press(m, "esc", "esc", "up", "enter") // the plan without a file
			screen(t, m)
		}
	}
}

// TestPlansFollowEvents: a plan's state event, or its lead's, reloads the open plans
// view at once; other events and an open form do not.
func TestPlansFollowEvents(t *testing.T) {
	m := openPlans(t, 100, 30)
	d := m.dialogs[0].(*plansDialog)
	if act := d.followEvents([]wire.Event{{Event: wire.EventAgentState, Agent: &wire.Agent{Path: "demo/a"}}}); act != nil {
		t.Fatalf("an unrelated agent reloaded the plans: %#v", act)
	}
	for _, ev := range []wire.Event{{Event: planapi.EventPlanState}, {Event: wire.EventAgentState, Agent: &wire.Agent{Path: "plans/csv-import/lead"}}} {
		if _, ok := d.followEvents([]wire.Event{ev}).(callAction); !ok {
			t.Fatalf("%s did not reload the plans", ev.Event)
		}
	}
	_, cmd := m.Update(eventsMsg{ch: make(chan wire.Event), events: []wire.Event{{Event: planapi.EventPlanState, Seq: 500}}})
	if cmd == nil {
		t.Fatal("a plan event through the root asked for nothing")
	}
	d.mode = planForm
	if act := d.followEvents([]wire.Event{{Event: planapi.EventPlanState}}); act != nil {
		t.Fatal("a plan event reloaded under an open form")
	}
}

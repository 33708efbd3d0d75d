package ui

import (
	"context"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/huh/v2"

	"orcr/core"
	"orcr/core/wire"
	planapi "orcr/orchestrate/api"
	runapi "orcr/orchestrate/run/api"
)

// The plans view (DESIGN §8 "Plan"): a dialog over the dashboard with three modes —
// the list of plans with the selected plan's milestones (state, tiers, estimates), one
// plan rendered from its Markdown, and the approval form (approve, or reject with a
// reason). Like every dialog it does no I/O: server calls go out as callActions the
// root runs with its context and service, and "edit" is tea.ExecProcess on $EDITOR.

// callAction asks the root to run fn as a command with its context and service; a
// dialog that needs the server returns one instead of holding the service.
type callAction struct {
	fn func(ctx context.Context, svc wire.Transport) tea.Msg
}

type (
	// plansMsg is the list of plans with each plan's file as it is now.
	plansMsg struct {
		plans   []planapi.Plan
		details map[string]planapi.PlanGetResult
		err     error
	}
	// planDecidedMsg answers an approve or a reject.
	planDecidedMsg struct {
		verb string
		plan planapi.Plan
		err  error
	}
	// planEditedMsg says the editor on a plan's file exited.
	planEditedMsg struct {
		name string
		err  error
	}
	// planTickMsg re-reads the plans while the view is open.
	planTickMsg struct{ gen int }
)

// runStartedMsg answers the start of a plan's run.
type runStartedMsg struct {
	name string
	run  runapi.RunView
	err  error
}

// startRunCall starts the run of approved plan name with the plan's defaults (as
// `orcr run start NAME` does).
func startRunCall(name string) func(context.Context, wire.Transport) tea.Msg {
	return func(ctx context.Context, svc wire.Transport) tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, callTimeout*3) // it makes a branch and spawns the lead
		defer cancel()
		res, err := wire.Call(ctx, svc, runapi.RunStartM, runapi.RunStartParams{Name: name})
		return runStartedMsg{name, res.Run, err}
	}
}

// loadPlans is the call behind the view: every plan, and each one's file.
func loadPlans(ctx context.Context, svc wire.Transport) tea.Msg {
	psRes, err := wire.Call(ctx, svc, planapi.PlanList, wire.Empty{})
	ps := psRes.Plans
	if err != nil {
		return plansMsg{err: err}
	}
	details := make(map[string]planapi.PlanGetResult, len(ps))
	for _, p := range ps {
		if d, err := wire.Call(ctx, svc, planapi.PlanGet, planapi.PlanNameParams{Name: p.Name}); err == nil {
			details[p.Name] = d
		}
	}
	return plansMsg{plans: ps, details: details}
}

// plansCmd loads the plans (the root runs it when it opens the view).
func plansCmd(ctx context.Context, svc wire.Transport) tea.Cmd {
	return func() tea.Msg { return loadPlans(ctx, svc) }
}

// planRefresh is how often the open view re-reads the plans, so a lead finishing its
// draft shows without a key press.
const planRefresh = 3 * time.Second

type planMode int

const (
	planList planMode = iota
	planView
	planForm
)

// plansDialog is the plans view.
type plansDialog struct {
	size
	c       *common
	mode    planMode
	plans   []planapi.Plan
	details map[string]planapi.PlanGetResult
	loaded  bool
	err     string
	notice  string
	sel     int
	scroll  int // first shown line in planView
	page    int // lines there is room for in planView (layout)
	gen     int // refresh chain generation

	form     *huh.Form
	decision string
	reason   string
	// The new-plan form's answers (newPlan is set while that form is open).
	newPlan                   bool
	newName, newRepo, newText string
}

func newPlansDialog(c *common) *plansDialog {
	return &plansDialog{c: c, details: map[string]planapi.PlanGetResult{}}
}

func (d *plansDialog) Init() tea.Cmd { return d.tick() }

func (d *plansDialog) tick() tea.Cmd {
	d.gen++
	gen := d.gen
	return tea.Tick(planRefresh, func(time.Time) tea.Msg { return planTickMsg{gen} })
}

// current is the selected plan, if any.
func (d *plansDialog) current() (planapi.Plan, planapi.PlanGetResult, bool) {
	if d.sel < 0 || d.sel >= len(d.plans) {
		return planapi.Plan{}, planapi.PlanGetResult{}, false
	}
	p := d.plans[d.sel]
	return p, d.details[p.Name], true
}

func (d *plansDialog) update(msg tea.Msg) (tea.Cmd, action) {
	switch msg := msg.(type) {
	case plansMsg:
		d.setPlans(msg)
		return nil, nil
	case planTickMsg:
		if msg.gen != d.gen || d.mode == planForm {
			return nil, nil
		}
		return d.tick(), callAction{loadPlans}
	case planDecidedMsg:
		if msg.err != nil {
			d.notice = d.c.styles.Error.Render(oneLine(msg.err.Error()))
		} else {
			d.notice = fmt.Sprintf("plan %s %s", msg.plan.Name, msg.verb)
		}
		return nil, callAction{loadPlans}
	case runStartedMsg:
		if msg.err != nil {
			d.notice = d.c.styles.Error.Render(oneLine("start run " + msg.name + ": " + msg.err.Error()))
		} else {
			d.notice = fmt.Sprintf("run %s started (%s): O shows it", msg.name, msg.run.State)
		}
		return nil, callAction{loadPlans}
	case planEditedMsg:
		if msg.err != nil {
			d.notice = d.c.styles.Error.Render("editor: " + oneLine(msg.err.Error()))
		} else {
			d.notice = "plan " + msg.name + " saved; checked again"
		}
		return nil, callAction{loadPlans}
	case tea.KeyPressMsg:
		return d.key(msg)
	}
	if d.mode == planForm && d.form != nil {
		return d.updateForm(msg)
	}
	return nil, nil
}

// followEvents reloads the plans when one of them changed (a plan's state or file) or
// its lead moved, so a drafted plan shows the moment it is drafted, not at the next
// refresh.
func (d *plansDialog) followEvents(evs []wire.Event) action {
	if d.mode == planForm {
		return nil
	}
	for _, ev := range evs {
		if ev.Event == planapi.EventPlanState || ev.Event == planapi.EventPlanEdited ||
			(ev.Agent != nil && strings.HasPrefix(ev.Agent.Path, "plans/")) {
			return callAction{loadPlans}
		}
	}
	return nil
}

func (d *plansDialog) setPlans(msg plansMsg) {
	if msg.err != nil {
		d.err = msg.err.Error()
		return
	}
	name := ""
	if p, _, ok := d.current(); ok {
		name = p.Name
	}
	d.plans, d.details, d.loaded, d.err = msg.plans, msg.details, true, ""
	d.sel = 0
	for i, p := range d.plans {
		if p.Name == name {
			d.sel = i
		}
	}
}

func (d *plansDialog) key(k tea.KeyPressMsg) (tea.Cmd, action) {
	if d.mode == planForm {
		if d.c.keys.Dialog.Cancel.Matches(k) {
			d.mode, d.form = planView, nil
			if d.newPlan {
				d.mode, d.newPlan = planList, false
			}
			return nil, nil
		}
		return d.updateForm(k)
	}
	km, dk := d.c.keys.Plans, d.c.keys.Dialog
	p, _, ok := d.current()
	switch s := k.String(); {
	case dk.Cancel.Matches(k):
		if d.mode == planView {
			d.mode = planList
			return nil, nil
		}
		return nil, closeAction{}
	case km.Refresh.Matches(k):
		return nil, callAction{loadPlans}
	case km.New.Matches(k):
		return d.openNewForm(), nil
	case s == "up" || s == "k":
		if d.mode == planView {
			d.scroll = max(0, d.scroll-1)
		} else if d.sel > 0 {
			d.sel--
		}
	case s == "down" || s == "j":
		if d.mode == planView {
			d.scroll++
		} else if d.sel < len(d.plans)-1 {
			d.sel++
		}
	case s == "pgdown" || s == "ctrl+d":
		d.scroll += max(1, d.page-1)
	case s == "pgup" || s == "ctrl+u":
		d.scroll = max(0, d.scroll-max(1, d.page-1))
	case !ok:
	case km.Open.Matches(k) && d.mode == planList:
		d.mode, d.scroll = planView, 0
	case km.Approve.Matches(k):
		return d.openForm(p, "approve"), nil
	case km.Reject.Matches(k):
		return d.openForm(p, "reject"), nil
	case km.StartRun.Matches(k):
		if p.State != "approved" {
			d.notice = d.c.styles.Error.Render(fmt.Sprintf("plan %s is %s: a run starts from an approved plan (%s approves)", p.Name, p.State, km.Approve.Label()))
			return nil, nil
		}
		d.notice = "starting the run of " + p.Name + "…"
		return nil, callAction{startRunCall(p.Name)}
	case km.Edit.Matches(k):
		name := p.Name
		return tea.ExecProcess(core.EditorCommand(p.File), func(err error) tea.Msg { return planEditedMsg{name, err} }), nil
	}
	return nil, nil
}

// openForm shows the approval form for p with decision preselected.
func (d *plansDialog) openForm(p planapi.Plan, decision string) tea.Cmd {
	d.mode, d.decision, d.reason, d.notice = planForm, decision, "", ""
	d.form = newPlanForm(d.c, p, &d.decision, &d.reason)
	return d.form.Init()
}

func (d *plansDialog) updateForm(msg tea.Msg) (tea.Cmd, action) {
	m, cmd := d.form.Update(msg)
	if f, ok := m.(*huh.Form); ok {
		d.form = f
	}
	switch st := d.form.State; {
	case st == huh.StateCompleted && d.newPlan:
		d.mode, d.form, d.newPlan = planList, nil, false
		d.notice = "starting plan " + d.newName + "…"
		return nil, newPlanCall(planapi.PlanNewParams{Name: strings.TrimSpace(d.newName),
			Repo: strings.TrimSpace(d.newRepo), Request: strings.TrimSpace(d.newText)})
	case st == huh.StateAborted && d.newPlan:
		d.mode, d.form, d.newPlan = planList, nil, false
	case st == huh.StateCompleted:
		p, _, _ := d.current()
		d.mode, d.form = planView, nil
		return nil, decide(p.Name, d.decision, strings.TrimSpace(d.reason))
	case st == huh.StateAborted:
		d.mode, d.form = planView, nil
	}
	return cmd, nil
}

// openNewForm asks for a new plan: its name, the repository its lead works in (the
// selected plan's by default) and the request the lead drafts from.
func (d *plansDialog) openNewForm() tea.Cmd {
	d.mode, d.newPlan, d.newName, d.newText, d.notice = planForm, true, "", "", ""
	if p, _, ok := d.current(); ok {
		d.newRepo = p.Repo
	}
	need := func(what string) func(string) error {
		return func(s string) error {
			if strings.TrimSpace(s) == "" {
				return fmt.Errorf("give %s", what)
			}
			return nil
		}
	}
	d.form = huh.NewForm(huh.NewGroup(
		huh.NewInput().Title("Name").Description("plans/NAME/lead drafts .orcr/plans/NAME.md").Value(&d.newName).Validate(need("a name")),
		huh.NewInput().Title("Repository").Description("an absolute path inside a git repository").Value(&d.newRepo).
			Validate(func(s string) error {
				if !strings.HasPrefix(strings.TrimSpace(s), "/") {
					return fmt.Errorf("give an absolute path")
				}
				return nil
			}),
		huh.NewText().Title("Request").Description("what the plan is for").Value(&d.newText).Lines(3).Validate(need("the request")),
	)).WithTheme(huhTheme(d.c)).WithShowHelp(false).WithWidth(64)
	return d.form.Init()
}

// newPlanCall starts a plan (plan.new).
func newPlanCall(p planapi.PlanNewParams) action {
	return callAction{func(ctx context.Context, svc wire.Transport) tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, callTimeout*3) // it spawns the lead
		defer cancel()
		res, err := wire.Call(ctx, svc, planapi.PlanNew, p)
		return planDecidedMsg{verb: "started; its lead drafts it", plan: res.Plan, err: err}
	}}
}

// decide is the call an approval form's answer makes.
func decide(name, decision, reason string) action {
	if decision == "approve" {
		return callAction{func(ctx context.Context, svc wire.Transport) tea.Msg {
			pRes, err := wire.Call(ctx, svc, planapi.PlanApprove, planapi.PlanNameParams{Name: name})
			p := pRes.Plan
			return planDecidedMsg{verb: "approved", plan: p, err: err}
		}}
	}
	return callAction{func(ctx context.Context, svc wire.Transport) tea.Msg {
		pRes, err := wire.Call(ctx, svc, planapi.PlanReject, planapi.PlanRejectParams{Name: name, Reason: reason})
		p := pRes.Plan
		return planDecidedMsg{verb: "rejected; the reason went to its lead", plan: p, err: err}
	}}
}

// newPlanForm is the approval form: approve, or reject with the reason the lead
// redrafts from (asked only for a rejection, and required).
func newPlanForm(c *common, p planapi.Plan, decision, reason *string) *huh.Form {
	title := fmt.Sprintf("Plan %s (%s)", p.Name, p.State)
	return huh.NewForm(
		huh.NewGroup(
			huh.NewSelect[string]().Title(title).Description(p.Request).
				Options(huh.NewOption("Approve: record its hash; later edits are events", "approve"),
					huh.NewOption("Reject with a reason: the lead redrafts", "reject")).
				Value(decision),
		),
		huh.NewGroup(
			huh.NewText().Title("Why? The lead redrafts from this.").Value(reason).Lines(4).
				Validate(func(s string) error {
					if strings.TrimSpace(s) == "" {
						return fmt.Errorf("give a reason")
					}
					return nil
				}),
		).WithHideFunc(func() bool { return *decision != "reject" }),
	).WithTheme(huhTheme(c)).WithShowHelp(false).WithWidth(64)
}

func (d plansDialog) View() string {
	w, h := d.width, d.height
	var lines []string
	title := "plans"
	switch {
	case d.err != "":
		lines = []string{d.c.styles.Error.Render(oneLine(d.err))}
	case !d.loaded:
		lines = []string{d.c.styles.Muted.Render("loading…")}
	case d.mode == planList:
		lines = d.listLines(w - 4)
	case d.mode == planView:
		p, det, _ := d.current()
		title = "plan " + p.Name
		lines = d.viewLines(p, det, w-4)
	case d.mode == planForm && d.newPlan:
		title = "start a plan"
		lines = strings.Split(strings.TrimRight(d.form.View(), "\n"), "\n")
	case d.mode == planForm:
		p, _, _ := d.current()
		title = "approve or reject " + p.Name
		lines = strings.Split(strings.TrimRight(d.form.View(), "\n"), "\n")
	}
	if d.notice != "" {
		lines = append(lines, "", d.notice)
	}
	lines = append(lines, "", d.c.styles.Subtle.Render(d.hints()))
	body := make([]string, 0, len(lines)+1)
	body = append(body, "")
	for _, l := range lines {
		body = append(body, " "+l)
	}
	if len(body) > h-2 {
		body = append(body[:h-3], body[len(body)-1])
	}
	return d.c.frame(&d.c.styles.DialogBorder, &d.c.styles.DialogTitle, title, body, w, h)
}

func (d plansDialog) hints() string {
	km, dk := d.c.keys.Plans, d.c.keys.Dialog
	switch d.mode {
	case planList:
		return fmt.Sprintf("%s open · %s approve · %s reject · %s edit · %s close",
			km.Open.Label(), km.Approve.Label(), km.Reject.Label(), km.Edit.Label(), dk.Cancel.Label())
	case planView:
		return fmt.Sprintf("↑/↓ pgup/pgdn scroll · %s approve · %s reject · %s edit · %s back",
			km.Approve.Label(), km.Reject.Label(), km.Edit.Label(), dk.Cancel.Label())
	}
	return "enter next/submit · " + dk.Cancel.Label() + " back"
}

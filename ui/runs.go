package ui

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/huh/v2"

	"orcr/core"
	"orcr/core/wire"
	runapi "orcr/orchestrate/run/api"
	wfapi "orcr/workflow/api"
)

// The runs view (DESIGN §8 "Run"): a dialog over the dashboard, reached like the plans
// view, with three modes — the list of runs, one run (its milestones as rows, what each
// waits on, the coder pool, the lead's undelivered inbox and the run's latest log
// entries) and its summary.md once written. From a run the user answers an asking
// milestone, holds one, retries one at a tier, dispatches a ready one, or jumps to a
// milestone's coder in the tree (runs/NAME/coder-N). Like every dialog it does no I/O:
// server calls go out as callActions and come back as typed messages. It follows the
// run.* events of the one subscription: a batch of them re-reads the runs (one call in
// flight at a time, one more if events came meanwhile) and appends their log entries,
// so nothing polls.

type runMode int

const (
	runList runMode = iota
	runView
	runSummary
	runForm
)

// runsDialog is the runs view.
type runsDialog struct {
	size
	c *common
	// agentAt finds the agent at a tree path (the root's index), for the coders' states.
	agentAt func(path string) *wire.Agent

	mode      runMode
	runs      []runapi.RunView
	workflows []wfapi.RunView // workflow runs, listed under the runs
	at        time.Time       // when runs was read
	loaded    bool
	err       string
	notice    string
	// confirm is the run action waiting for y ("stop", "finish") on run confirmRun.
	confirm, confirmRun string
	sel                 int    // selected run in the list
	open                string // the run shown in the view and summary modes
	msel                int    // selected milestone

	log     []runapi.RunEntry // the open run's newest entries, by seq
	wlog    []wfapi.Entry     // the open workflow run's newest entries, by seq
	summary runSummaryMsg

	scroll int // first shown line of the summary
	page   int // summary lines there is room for (layout)

	inFlight, dirty bool

	form     *huh.Form
	formVerb string // answer | hold | retry
	formM    string
	text     string
	tier     string
}

func newRunsDialog(c *common, agentAt func(string) *wire.Agent) *runsDialog {
	return &runsDialog{c: c, agentAt: agentAt}
}

func (d *runsDialog) Init() tea.Cmd { return nil }

// reload reads the runs again, keeping at most one read in flight.
func (d *runsDialog) reload() action {
	if d.inFlight {
		d.dirty = true
		return nil
	}
	d.inFlight, d.dirty = true, false
	return callAction{loadRuns}
}

// current is the selected run in the list, or the open one in the other modes.
func (d *runsDialog) current() (runapi.RunView, bool) {
	if d.mode != runList {
		for _, r := range d.runs {
			if r.Name == d.open {
				return r, true
			}
		}
		return runapi.RunView{}, false
	}
	if d.sel < 0 || d.sel >= len(d.runs) {
		return runapi.RunView{}, false
	}
	return d.runs[d.sel], true
}

// milestone is the selected milestone of the open run.
func (d *runsDialog) milestone() (runapi.RunView, runapi.RunMilestone, bool) {
	r, ok := d.current()
	if !ok || d.mode == runList || d.msel < 0 || d.msel >= len(r.Milestones) {
		return r, runapi.RunMilestone{}, false
	}
	return r, r.Milestones[d.msel], true
}

// followEvents takes a batch of events from the subscription: the open run's log
// entries are appended, and any run event re-reads the runs.
func (d *runsDialog) followEvents(evs []wire.Event) action {
	changed, wf := false, false
	for _, ev := range evs {
		if ev.Event == wfapi.EventWorkflowChanged {
			changed, wf = true, true
			continue
		}
		if ev.Event != runapi.EventRun && ev.Event != runapi.EventRunNotify {
			continue
		}
		changed = true
		if ev.Event == runapi.EventRun && dataString(ev.Data, "run") == d.open && d.open != "" {
			d.addLog([]runapi.RunEntry{{Seq: dataSeq(ev.Data["seq"]), At: ev.At, Type: dataString(ev.Data, "type"),
				Kind: dataString(ev.Data, "kind"), M: dataString(ev.Data, "m"), Text: dataString(ev.Data, "text")}})
		}
	}
	if !changed {
		return nil
	}
	if wf && d.mode == runWorkflow {
		return batchAction{d.reload(), loadWorkflowLog(d.open)}
	}
	return d.reload()
}

// addLog merges entries into the log by seq (a read and live events can overlap and
// arrive in either order) and keeps the newest runLogKeep.
func (d *runsDialog) addLog(es []runapi.RunEntry) {
	d.log = append(d.log, es...)
	slices.SortStableFunc(d.log, func(a, b runapi.RunEntry) int { return cmp.Compare(a.Seq, b.Seq) })
	d.log = slices.CompactFunc(d.log, func(a, b runapi.RunEntry) bool { return a.Seq == b.Seq })
	if len(d.log) > runLogKeep {
		d.log = d.log[len(d.log)-runLogKeep:]
	}
}

func (d *runsDialog) update(msg tea.Msg) (tea.Cmd, action) {
	switch msg := msg.(type) {
	case runsMsg:
		return nil, d.setRuns(msg)
	case runLogMsg:
		if msg.err == nil && msg.name == d.open {
			d.addLog(msg.entries)
		}
		return nil, nil
	case runSummaryMsg:
		if msg.name == d.open {
			d.summary = msg
		}
		return nil, nil
	case runActedMsg:
		d.acted(msg)
		return nil, nil
	case wfLogMsg:
		if msg.err == nil && msg.id == d.open && d.mode == runWorkflow {
			d.addWorkflowLog(msg.entries)
		}
		return nil, nil
	case wfActedMsg:
		if msg.err != nil {
			d.notice = d.c.styles.Error.Render(oneLine(msg.notice()))
			return nil, nil
		}
		d.notice = msg.notice()
		for i := range d.workflows {
			if d.workflows[i].ID == msg.id {
				d.workflows[i] = msg.run
			}
		}
		return nil, nil
	case tea.KeyPressMsg:
		return d.key(msg)
	}
	if d.mode == runForm && d.form != nil {
		return d.updateForm(msg)
	}
	return nil, nil
}

func (d *runsDialog) setRuns(msg runsMsg) action {
	d.inFlight = false
	if msg.err != nil {
		d.err = msg.err.Error()
	} else {
		name, wfID := "", ""
		if r, ok := d.current(); ok && d.mode == runList {
			name = r.Name
		}
		if r, ok := d.selWorkflow(); ok && d.mode == runList {
			wfID = r.ID
		}
		d.runs, d.workflows, d.at, d.loaded, d.err = msg.runs, msg.workflows, msg.at, true, ""
		for i, r := range d.runs {
			if r.Name == name {
				d.sel = i
			}
		}
		for i, r := range d.workflows {
			if r.ID == wfID && wfID != "" {
				d.sel = len(d.runs) + i
			}
		}
		d.sel = min(d.sel, max(0, len(d.runs)+len(d.workflows)-1))
		if r, ok := d.current(); ok && d.mode != runList {
			d.msel = min(d.msel, max(0, len(r.Milestones)-1))
		}
	}
	if d.dirty {
		return d.reload()
	}
	return nil
}

// acted takes the answer to an action: the run as the server now has it, or the error.
func (d *runsDialog) acted(msg runActedMsg) {
	if msg.err != nil {
		d.notice = d.c.styles.Error.Render(oneLine(msg.verb + " " + msg.m + ": " + msg.err.Error()))
		return
	}
	d.notice = msg.notice()
	for i := range d.runs {
		if d.runs[i].Name == msg.run.Name {
			d.runs[i] = msg.run
			d.at = d.c.now
		}
	}
}

// notice is what the status bar says after an action.
func (msg runActedMsg) notice() string {
	if msg.err != nil {
		return "run " + msg.verb + " " + msg.name + " " + msg.m + ": " + msg.err.Error()
	}
	for _, m := range msg.run.Milestones {
		if m.ID == msg.m {
			return fmt.Sprintf("%s %s of %s: now %s", msg.verb, msg.m, msg.name, m.State)
		}
	}
	if msg.m == "" {
		return msg.verb + " run " + msg.name + ": now " + msg.run.State
	}
	return msg.verb + " " + msg.m + " of " + msg.name
}

func (d *runsDialog) key(k tea.KeyPressMsg) (tea.Cmd, action) {
	if d.mode == runForm {
		if d.c.keys.Dialog.Cancel.Matches(k) {
			d.mode, d.form = runView, nil
			return nil, nil
		}
		return d.updateForm(k)
	}
	km, dk := d.c.keys.Runs, d.c.keys.Dialog
	if d.confirm != "" {
		return nil, d.confirmed(k)
	}
	if act, ok := d.workflowKey(k); ok {
		return nil, act
	}
	if d.mode == runWorkflow {
		if dk.Cancel.Matches(k) {
			for i, r := range d.workflows {
				if r.ID == d.open {
					d.sel = len(d.runs) + i // back on the row it was opened from
				}
			}
			d.mode, d.open, d.wlog, d.notice = runList, "", nil, ""
		}
		return nil, nil
	}
	switch s := k.String(); {
	case (km.Stop.Matches(k) || km.Finish.Matches(k)) && d.mode != runSummary:
		r, ok := d.current()
		if !ok {
			return nil, nil
		}
		d.confirm, d.confirmRun = "finish", r.Name
		d.notice = fmt.Sprintf("finish run %s? its worktrees go, feature/%s is pushed and the pull request opened — y finishes, any other key keeps it", r.Name, r.Name)
		if km.Stop.Matches(k) {
			d.confirm = "stop"
			d.notice = fmt.Sprintf("stop run %s? every open milestone is held and its coder stopped (retry undoes it) — y stops, any other key keeps it", r.Name)
		}
		return nil, nil
	case dk.Cancel.Matches(k):
		switch d.mode {
		case runSummary:
			d.mode = runView
		case runView:
			d.mode, d.open, d.log, d.notice = runList, "", nil, ""
		default:
			return nil, closeAction{}
		}
		return nil, nil
	case km.Refresh.Matches(k):
		return nil, d.refresh()
	case s == "up" || s == "k":
		d.move(-1)
	case s == "down" || s == "j":
		d.move(1)
	case s == "pgdown" || s == "ctrl+d":
		d.scroll += max(1, d.page-1)
	case s == "pgup" || s == "ctrl+u":
		d.scroll = max(0, d.scroll-max(1, d.page-1))
	case km.Open.Matches(k) && d.mode == runList:
		r, ok := d.current()
		if !ok {
			return nil, nil
		}
		d.mode, d.open, d.msel, d.log, d.notice = runView, r.Name, 0, nil, ""
		return nil, loadRunLog(r.Name, r.Seq)
	case km.Summary.Matches(k):
		return nil, d.openSummary()
	case d.mode == runView:
		return d.milestoneKey(k)
	}
	return nil, nil
}

// confirmed acts on the answer to a stop or finish question: y does it, anything else
// keeps the run as it is.
func (d *runsDialog) confirmed(k tea.KeyPressMsg) action {
	verb, name := d.confirm, d.confirmRun
	d.confirm, d.confirmRun = "", ""
	if k.String() != "y" {
		d.notice = "run " + name + " left as it is"
		if verb == "stop workflow" {
			d.notice = "workflow run " + name + " left as it is"
		}
		return nil
	}
	if verb == "stop workflow" {
		d.notice = "stopping workflow run " + name + "…"
		return stopWorkflow(name)
	}
	d.notice = verb + "ing run " + name + "…"
	if verb == "stop" {
		return runAct("stopped", name, "", func(ctx context.Context, svc wire.Transport) (runapi.RunResult, error) {
			return wire.Call(ctx, svc, runapi.RunStopM, runapi.RunNameParams{Name: name})
		})
	}
	return runAct("finished", name, "", func(ctx context.Context, svc wire.Transport) (runapi.RunResult, error) {
		res, err := wire.Call(ctx, svc, runapi.RunFinishM, runapi.RunNameParams{Name: name})
		return runapi.RunResult{Run: res.Run}, err
	})
}

func (d *runsDialog) move(by int) {
	switch d.mode {
	case runList:
		d.sel = min(max(0, d.sel+by), max(0, len(d.runs)+len(d.workflows)-1))
	case runView:
		r, _ := d.current()
		d.msel = min(max(0, d.msel+by), max(0, len(r.Milestones)-1))
	case runSummary:
		d.scroll = max(0, d.scroll+by)
	}
}

// refresh re-reads the runs, and the open run's log and summary.
func (d *runsDialog) refresh() action {
	acts := []action{d.reload()}
	if r, ok := d.current(); ok && d.mode != runList {
		acts = append(acts, loadRunLog(r.Name, r.Seq))
		if d.mode == runSummary && r.Summary != "" {
			acts = append(acts, loadSummary(r.Name, r.Summary))
		}
	}
	return batchAction(acts)
}

func (d *runsDialog) openSummary() action {
	r, ok := d.current()
	if !ok {
		return nil
	}
	if r.Summary == "" {
		d.notice = "run " + r.Name + " has no summary yet: it is written when every milestone is merged and the final check passed"
		return nil
	}
	if d.mode == runList {
		d.msel, d.log = 0, nil
	}
	d.mode, d.open, d.scroll, d.notice = runSummary, r.Name, 0, ""
	if d.summary.name != r.Name {
		d.summary = runSummaryMsg{name: r.Name}
	}
	return loadSummary(r.Name, r.Summary)
}

// milestoneKey handles the keys that act on the selected milestone.
func (d *runsDialog) milestoneKey(k tea.KeyPressMsg) (tea.Cmd, action) {
	km := d.c.keys.Runs
	r, ms, ok := d.milestone()
	if !ok {
		return nil, nil
	}
	name, id := r.Name, ms.ID
	switch {
	case km.Answer.Matches(k):
		if ms.State != "asking" {
			d.notice = fmt.Sprintf("%s is %s, not asking: only a question waits for an answer", id, ms.State)
			return nil, nil
		}
		return d.openForm("answer", ms), nil
	case km.Hold.Matches(k):
		if ms.State == "merged" || ms.State == "held" {
			d.notice = fmt.Sprintf("%s is %s already", id, ms.State)
			return nil, nil
		}
		return d.openForm("hold", ms), nil
	case km.Retry.Matches(k):
		if ms.State != "held" && ms.State != "failed" {
			d.notice = fmt.Sprintf("%s is %s: only a held or failed milestone is retried (hold it first)", id, ms.State)
			return nil, nil
		}
		return d.openForm("retry", ms), nil
	case km.Dispatch.Matches(k):
		if ms.State != "ready" {
			d.notice = fmt.Sprintf("%s is %s: only a ready milestone is dispatched", id, ms.State)
			return nil, nil
		}
		return nil, runAct("dispatched", name, id, func(ctx context.Context, svc wire.Transport) (runapi.RunResult, error) {
			return wire.Call(ctx, svc, runapi.RunDispatchM, runapi.RunMilestonesParams{Name: name, Milestones: []string{id}})
		})
	case km.Coder.Matches(k):
		coder := ms.Coder
		if coder == "" {
			d.notice = id + " has no coder now (" + core.Dash(ms.Waits) + ")"
			return nil, nil
		}
		return nil, runCoderAction{path: coderPath(name, coder)}
	}
	return nil, nil
}

// coderPath is where a run's coder lives in the tree.
func coderPath(run, coder string) string { return "runs/" + run + "/" + coder }

// openForm shows the form of verb for milestone ms.
func (d *runsDialog) openForm(verb string, ms runapi.RunMilestone) tea.Cmd {
	d.mode, d.formVerb, d.formM, d.text, d.tier, d.notice = runForm, verb, ms.ID, "", "", ""
	d.form = newRunForm(d.c, verb, ms, &d.text, &d.tier)
	return d.form.Init()
}

func (d *runsDialog) updateForm(msg tea.Msg) (tea.Cmd, action) {
	m, cmd := d.form.Update(msg)
	if f, ok := m.(*huh.Form); ok {
		d.form = f
	}
	switch d.form.State {
	case huh.StateCompleted:
		d.mode, d.form = runView, nil
		return nil, d.submit()
	case huh.StateAborted:
		d.mode, d.form = runView, nil
	}
	return cmd, nil
}

// submit is the call a completed form makes.
func (d *runsDialog) submit() action {
	name, id, text, tier := d.open, d.formM, strings.TrimSpace(d.text), d.tier
	switch d.formVerb {
	case "answer":
		return runAct("answered", name, id, func(ctx context.Context, svc wire.Transport) (runapi.RunResult, error) {
			return wire.Call(ctx, svc, runapi.RunAnswerM, runapi.RunTextParams{Name: name, Milestone: id, Text: text})
		})
	case "hold":
		return runAct("held", name, id, func(ctx context.Context, svc wire.Transport) (runapi.RunResult, error) {
			return wire.Call(ctx, svc, runapi.RunHoldM, runapi.RunMilestonesParams{Name: name, Milestones: []string{id}, Reason: text})
		})
	case "retry":
		return runAct("retried", name, id, func(ctx context.Context, svc wire.Transport) (runapi.RunResult, error) {
			return wire.Call(ctx, svc, runapi.RunRetryM, runapi.RunMilestonesParams{Name: name, Milestones: []string{id}, Tier: tier})
		})
	}
	return nil
}

// newRunForm is the form of an action on a milestone: the answer (required), the
// reason for a hold (optional; submitting is the confirmation), or the tier of a retry.
func newRunForm(c *common, verb string, ms runapi.RunMilestone, text, tier *string) *huh.Form {
	var field huh.Field
	switch verb {
	case "answer":
		field = huh.NewText().Title(ms.ID + " asks: " + oneLine(ms.Question)).
			Description("Your answer goes back to " + core.Dash(ms.Coder) + ", the coder that asked.").
			Value(text).Lines(3).Validate(func(s string) error {
			if strings.TrimSpace(s) == "" {
				return fmt.Errorf("type the answer")
			}
			return nil
		})
	case "hold":
		field = huh.NewInput().Title("Hold " + ms.ID + " (" + ms.State + ")? Its coder stops; retry starts it again.").
			Description("Why (optional; enter holds it)").Value(text)
	default:
		keep := "keep its tier (" + ms.TierNow + ")"
		field = huh.NewSelect[string]().Title("Retry "+ms.ID+" ("+ms.State+") from a fresh start").
			Description(core.Dash(ms.Reason)).
			Options(huh.NewOption(keep, ""), huh.NewOption("small", "small"), huh.NewOption("medium", "medium"), huh.NewOption("high", "high")).
			Value(tier)
	}
	return huh.NewForm(huh.NewGroup(field)).WithTheme(huhTheme(c)).WithShowHelp(false).WithWidth(64)
}

package ui

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"orcr/core"
	"orcr/core/wire"
	wfapi "orcr/workflow/api"
)

// Workflow runs in the runs view (DESIGN §18 "the dashboard shows workflows beside
// runs"): they are listed under the runs, and the list's selection goes on from the
// last run into them. On a workflow run the runs view's keys do the same as on a run:
// Open shows its steps (each one's state, items done/failed/running and why, the
// agents of the steps under way) and the newest entries of its log, followed live by
// its workflow.changed events; Stop asks y/n and stops it (its agents are stopped,
// nothing more starts). Like the rest of the view it does no I/O: the calls go out as
// callActions and come back as wfLogMsg and wfActedMsg.

type (
	// wfLogMsg is the tail of one workflow run's log.
	wfLogMsg struct {
		id      string
		entries []wfapi.Entry
		err     error
	}
	// wfActedMsg answers a stop of a workflow run.
	wfActedMsg struct {
		verb, id string
		run      wfapi.RunView
		err      error
	}
)

// runWorkflow is the mode showing one workflow run.
const runWorkflow runMode = 100

// loadWorkflowLog reads the newest entries of workflow run id's log.
func loadWorkflowLog(id string) callAction {
	return callAction{func(ctx context.Context, svc wire.Transport) tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		var all []wfapi.Entry
		after := uint64(0)
		// Page through to the end, keeping the newest runLogKeep.
		for {
			res, err := wire.Call(ctx, svc, wfapi.WorkflowEvents, wfapi.EventsParams{Name: id, After: after, Limit: 1000})
			if err != nil {
				return wfLogMsg{id: id, err: err}
			}
			all = append(all, res.Entries...)
			if len(all) > runLogKeep {
				all = all[len(all)-runLogKeep:]
			}
			if res.Next == 0 || res.Next <= after {
				break
			}
			after = res.Next
		}
		return wfLogMsg{id: id, entries: all}
	}}
}

// stopWorkflow is the call behind a confirmed stop.
func stopWorkflow(id string) callAction {
	return callAction{func(ctx context.Context, svc wire.Transport) tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		res, err := wire.Call(ctx, svc, wfapi.WorkflowStop, wfapi.StopParams{Name: id})
		return wfActedMsg{verb: "stopped", id: id, run: res.Run, err: err}
	}}
}

// notice is what the status bar says after a stop.
func (msg wfActedMsg) notice() string {
	if msg.err != nil {
		return "stop workflow run " + msg.id + ": " + msg.err.Error()
	}
	return msg.verb + " workflow run " + msg.id + ": now " + msg.run.State
}

// selWorkflow is the workflow run selected in the list (the selection past the runs),
// or the open one in the workflow mode.
func (d *runsDialog) selWorkflow() (wfapi.RunView, bool) {
	if d.mode == runWorkflow {
		for _, r := range d.workflows {
			if r.ID == d.open {
				return r, true
			}
		}
		return wfapi.RunView{}, false
	}
	i := d.sel - len(d.runs)
	if d.mode != runList || i < 0 || i >= len(d.workflows) {
		return wfapi.RunView{}, false
	}
	return d.workflows[i], true
}

// addWorkflowLog merges entries into the open workflow run's log by seq.
func (d *runsDialog) addWorkflowLog(es []wfapi.Entry) {
	d.wlog = append(d.wlog, es...)
	slices.SortStableFunc(d.wlog, func(a, b wfapi.Entry) int { return cmp.Compare(a.Seq, b.Seq) })
	d.wlog = slices.CompactFunc(d.wlog, func(a, b wfapi.Entry) bool { return a.Seq == b.Seq })
	if len(d.wlog) > runLogKeep {
		d.wlog = d.wlog[len(d.wlog)-runLogKeep:]
	}
}

// workflowKey handles a key on a selected or open workflow run; ok says it was one
// of the workflow's keys.
func (d *runsDialog) workflowKey(k tea.KeyPressMsg) (action, bool) {
	r, sel := d.selWorkflow()
	km := d.c.keys.Runs
	switch {
	case !sel:
		return nil, false
	case km.Stop.Matches(k):
		if r.State != "running" {
			d.notice = "workflow run " + r.ID + " is " + r.State + ": nothing to stop"
			return nil, true
		}
		d.confirm, d.confirmRun = "stop workflow", r.ID
		d.notice = fmt.Sprintf("stop workflow run %s? its agents are stopped and nothing more starts — y stops, any other key keeps it", r.ID)
		return nil, true
	case km.Finish.Matches(k) || km.Summary.Matches(k):
		d.notice = "a workflow run has no finish or summary: its steps' outputs are in its view (" + km.Open.Label() + ")"
		return nil, true
	case km.Open.Matches(k) && d.mode == runList:
		d.mode, d.open, d.wlog, d.notice, d.scroll = runWorkflow, r.ID, nil, "", 0
		return loadWorkflowLog(r.ID), true
	case km.Refresh.Matches(k) && d.mode == runWorkflow:
		return batchAction{d.reload(), loadWorkflowLog(r.ID)}, true
	}
	return nil, false
}

// workflowLines is the workflow mode: the run's head, its steps, the agents of the
// steps under way, and the newest entries of its log.
func (d runsDialog) workflowViewLines(r wfapi.RunView, w, room int) []string {
	st := &d.c.styles
	head := d.c.p(runStateStyle(d.c, r.State), r.State) + d.c.p(&st.Muted, " · workflow "+r.Workflow+" · started "+core.FormatAge(d.c.now.Sub(r.StartedAt))+" ago")
	if r.Trigger != "" {
		head += d.c.p(&st.Muted, " by "+r.Trigger)
	}
	out := []string{head}
	if r.Why != "" {
		out = append(out, d.c.p(&st.Muted, "why: ")+oneLine(r.Why))
	}
	rows := [][]string{{"STEP", "KIND", "STATE", "ITEMS", "WHY"}}
	for _, s := range r.Steps {
		items := "-"
		if s.Items > 0 {
			items = fmt.Sprintf("%d/%d", s.Done, s.Items)
			if s.Running > 0 {
				items += fmt.Sprintf(" (%d running)", s.Running)
			}
			if s.Failed > 0 {
				items += fmt.Sprintf(" %d failed", s.Failed)
			}
		}
		rows = append(rows, []string{s.Name, s.Kind, s.State, items, capCell(core.Dash(s.Why), 48)})
	}
	out = append(out, "")
	out = append(out, planColumns(rows, w, func(row, col int, cell string) string {
		switch {
		case row == 0:
			return d.c.p(&st.Muted, cell)
		case col == 2:
			return d.c.p(runStateStyle(d.c, stepRunState(strings.TrimSpace(cell))), cell)
		}
		return cell
	})...)
	var agents []string
	for _, s := range r.Steps {
		for _, it := range s.Agents {
			if it.State != "running" && it.Error == "" {
				continue
			}
			line := fmt.Sprintf("%s[%d] %s %s", s.Name, it.I, it.State, core.Dash(it.Agent))
			if it.Error != "" {
				line += " — " + it.Error
			}
			agents = append(agents, fit(line, w))
		}
	}
	if len(agents) > 0 {
		out = append(out, "", d.c.p(&st.Muted, "agents:"))
		out = append(out, agents[:min(len(agents), 8)]...)
		if len(agents) > 8 {
			out = append(out, d.c.p(&st.Muted, fmt.Sprintf("… %d more", len(agents)-8)))
		}
	}
	if n := room - len(out) - 2; n > 0 && len(d.wlog) > 0 {
		out = append(out, "", d.c.p(&st.Muted, "log:"))
		out = append(out, d.workflowLogLines(w, n)...)
	}
	return out
}

// stepRunState maps a step's state to the run state colours.
func stepRunState(s string) string {
	if s == "skipped" || s == "waiting" {
		return "stopped"
	}
	return s
}

// workflowLogLines is the newest n entries of the open workflow run's log.
func (d runsDialog) workflowLogLines(w, n int) []string {
	st := &d.c.styles
	es := d.wlog[max(0, len(d.wlog)-n):]
	out := make([]string, 0, len(es))
	for _, e := range es {
		age := fitRight(core.FormatAge(d.c.now.Sub(e.At)), 4)
		kind := e.Kind
		if e.Type != "fact" && e.Type != e.Kind {
			kind = e.Type + " " + kind
		}
		who := e.Step
		if who != "" && e.Agent != "" {
			who += fmt.Sprintf("[%d]", e.I)
		}
		text := e.Text
		if text == "" && len(e.Actions) > 0 {
			text = strings.Join(e.Actions, "; ")
		}
		line := d.c.p(&st.Subtle, age) + " " + d.c.p(&st.Muted, fit(kind, 16)) + " " + fit(who, 10) + " " + oneLine(text)
		out = append(out, fit(line, w))
	}
	return out
}

// markWorkflow highlights the selected workflow run's row in the list's lines.
func (d runsDialog) markWorkflow(lines []string, w int) []string {
	i := d.sel - len(d.runs)
	if i < 0 || i >= len(d.workflows) || len(lines) < i+3 {
		return lines
	}
	// lines: "", the header, then one row per workflow run.
	lines[i+2] = d.c.styles.Selected.Render(fit(ansi.Strip(lines[i+2]), w))
	return lines
}

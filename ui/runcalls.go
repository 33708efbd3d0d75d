package ui

import (
	"context"
	"time"

	tea "charm.land/bubbletea/v2"

	"orcr/core/wire"
	"orcr/internal/regfile"
	runapi "orcr/orchestrate/run/api"
	wfapi "orcr/workflow/api"
)

// How the runs view reaches the server and the root: its messages, the calls behind
// them (each a callAction the root runs with its context and service), the actions it
// hands the root (select a coder in the tree), and the root's side — opening the view,
// routing the answers to it wherever it is on the stack, and handing it the run events
// of the one subscription.

type (
	// runsMsg is every run, read at at (elapsed times count on from there).
	runsMsg struct {
		runs []runapi.RunView
		// workflows are the workflow runs shown beside the runs (nil when the
		// server has no workflows).
		workflows []wfapi.RunView
		at        time.Time
		err       error
	}
	// runLogMsg is the tail of one run's log.
	runLogMsg struct {
		name    string
		entries []runapi.RunEntry
		err     error
	}
	// runSummaryMsg is a run's summary file as read.
	runSummaryMsg struct {
		name, path, text string
		err              error
	}
	// runActedMsg answers answer, hold, retry and dispatch.
	runActedMsg struct {
		verb, name, m string
		run           runapi.RunView
		err           error
	}
)

// rootAction is an action a dialog hands the root to perform on itself (select in the
// tree, close dialogs), for what needs the root's state rather than the server.
type rootAction interface{ apply(m *Model) tea.Cmd }

// runCoderAction closes the runs view and selects a coder's agent in the tree.
type runCoderAction struct{ path string }

func (a runCoderAction) apply(m *Model) tea.Cmd {
	n, ok := m.idx.byPath[a.path]
	if !ok || n.agent == nil {
		m.status.notify(m.c.now, a.path+" is not in the tree (it has not started, or it was removed)", true)
		return nil
	}
	m.dialogs = m.dialogs[:0]
	before := m.selectedID()
	m.tree.selectNode(n)
	m.setFocus(focusTree)
	m.status.notify(m.c.now, "selected "+a.path, false)
	return m.afterSelection(before)
}

// runLogKeep is how many log entries the view keeps for the open run.
const runLogKeep = 200

func loadRuns(ctx context.Context, svc wire.Transport) tea.Msg {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	rsRes, err := wire.Call(ctx, svc, runapi.RunListM, wire.Empty{})
	rs := rsRes.Runs
	// Workflow runs are shown beside them; a server without workflows has none.
	wf, _ := wire.Call(ctx, svc, wfapi.WorkflowStatus, wfapi.StatusParams{})
	return runsMsg{runs: rs, workflows: wf.Runs, at: time.Now(), err: err}
}

// loadRunLog reads the newest entries of a run's log; seq is the run's latest.
func loadRunLog(name string, seq uint64) callAction {
	return callAction{func(ctx context.Context, svc wire.Transport) tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		esRes, err := wire.Call(ctx, svc, runapi.RunEventsM, runapi.RunEventsParams{Name: name, After: seq - min(seq, runLogKeep), Limit: runLogKeep})
		es := esRes.Entries
		return runLogMsg{name, es, err}
	}}
}

// summaryLimit bounds how much of a summary file the view reads.
const summaryLimit = 1 << 20

// loadSummary reads the summary file the run names. The socket is a local one, so the
// server's path is this machine's.
func loadSummary(name, path string) callAction {
	return callAction{func(ctx context.Context, _ wire.Transport) tea.Msg {
		// A regular file only: a FIFO in its place would hold this command forever.
		b, err := regfile.ReadMax(ctx, path, summaryLimit)
		return runSummaryMsg{name: name, path: path, text: string(b), err: err}
	}}
}

// runAct is the call behind an action on a milestone.
func runAct(verb, name, m string, fn func(ctx context.Context, svc wire.Transport) (runapi.RunResult, error)) callAction {
	return callAction{func(ctx context.Context, svc wire.Transport) tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		r, err := fn(ctx, svc)
		return runActedMsg{verb: verb, name: name, m: m, run: r.Run, err: err}
	}}
}

func dataString(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

// dataSeq reads a number from event data: a uint64 in-process, a float64 once it has
// crossed the socket as JSON.
func dataSeq(v any) uint64 {
	switch n := v.(type) {
	case uint64:
		return n
	case int:
		return uint64(n)
	case int64:
		return uint64(n)
	case float64:
		return uint64(n)
	}
	return 0
}

// batchAction is several actions as one (the root runs each).
type batchAction []action

func (b batchAction) apply(m *Model) tea.Cmd {
	var cmds []tea.Cmd
	for _, a := range b {
		cmds = append(cmds, m.updateAction(a))
	}
	return tea.Batch(cmds...)
}

// runsView is the open runs view, if any.
func (m *Model) runsView() *runsDialog {
	for _, d := range m.dialogs {
		if r, ok := d.(*runsDialog); ok {
			return r
		}
	}
	return nil
}

// openRuns opens the runs view and reads the runs.
func (m *Model) openRuns() tea.Cmd {
	idx := m.idx
	d := newRunsDialog(m.c, func(p string) *wire.Agent {
		if n := idx.byPath[p]; n != nil {
			return n.agent
		}
		return nil
	})
	return tea.Batch(m.pushDialog(d), m.updateAction(d.reload()))
}

// updateRuns handles the runs view's messages; ok says msg was one. The answers reach
// the view wherever it is on the stack, and an action's outcome is also said in the
// status bar, so it is seen after the view is closed.
func (m *Model) updateRuns(msg tea.Msg) (tea.Cmd, bool) {
	switch msg := msg.(type) {
	case runsMsg, runLogMsg, runSummaryMsg:
	case runActedMsg:
		m.status.notify(m.c.now, msg.notice(), msg.err != nil)
	case wfLogMsg:
	case wfActedMsg:
		m.status.notify(m.c.now, msg.notice(), msg.err != nil)
	default:
		return nil, false
	}
	d := m.runsView()
	if d == nil {
		return nil, true
	}
	cmd, act := d.Update(msg)
	return tea.Batch(cmd, m.updateAction(act)), true
}

// followRuns tells the open runs view about a batch of events, and says in the status
// bar what a run needs the user for (run.notify) as it happens.
func (m *Model) followRuns(evs []wire.Event) tea.Cmd {
	for _, ev := range evs {
		if ev.Event == runapi.EventRunNotify && ev.Seq > m.info.LastSeq {
			who := dataString(ev.Data, "run")
			if ms := dataString(ev.Data, "m"); ms != "" {
				who += " " + ms
			}
			m.status.notify(m.c.now, "run "+who+": "+dataString(ev.Data, "text"), false)
		}
	}
	var cmd tea.Cmd
	for _, d := range m.dialogs {
		if p, ok := d.(*plansDialog); ok {
			cmd = tea.Batch(cmd, m.updateAction(p.followEvents(evs)))
		}
	}
	d := m.runsView()
	if d == nil {
		return cmd
	}
	return tea.Batch(cmd, m.updateAction(d.followEvents(evs)))
}

package ui

import (
	"context"

	tea "charm.land/bubbletea/v2"

	"orcr/core"
	"orcr/core/wire"
)

// Waking and resuming. Enter on a hibernated agent wakes it in place (its provider's
// resume of its session); the history view resumes an ended agent as a new record
// continuing the old one's session (resumedMsg, from history.go).

// wokenMsg answers a wake.
type wokenMsg struct {
	path string
	err  error
}

// resumeCmd wakes a hibernated agent (enter on it).
func resumeCmd(ctx context.Context, svc wire.Transport, a wire.Agent) tea.Cmd {
	id, path := a.ID, a.Path
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		_, err := wire.Call(ctx, svc, wire.AgentResume, wire.ResumeParams{Target: id})
		return wokenMsg{path, err}
	}
}

// resumeEntryCmd resumes an ended agent from the history view.
func resumeEntryCmd(ctx context.Context, svc wire.Transport, a resumeAction) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		agRes, err := wire.Call(ctx, svc, wire.AgentResume, a.p)
		ag := agRes.Agent
		return resumedMsg{a.from, ag, err}
	}
}

// updateResume handles the answers to wakes and resumes; ok says msg was one.
func (m *Model) updateResume(msg tea.Msg) (tea.Cmd, bool) {
	switch msg := msg.(type) {
	case wokenMsg:
		if msg.err != nil {
			m.status.notify(m.c.now, "wake "+msg.path+": "+msg.err.Error(), true)
		} else {
			m.status.notify(m.c.now, "woke "+msg.path+": its session resumes", false)
		}
	case resumedMsg:
		if msg.err != nil {
			m.status.notify(m.c.now, "resume "+msg.from.Path+": "+msg.err.Error(), true)
			return m.toDialog(msg), true
		}
		// The history view has done its part: close it and show the new record.
		if len(m.dialogs) > 0 {
			if _, ok := m.dialogs[len(m.dialogs)-1].(*historyDialog); ok {
				m.popDialog()
			}
		}
		before := m.selectedID()
		m.upsert(msg.agent)
		m.status.notify(m.c.now, "resumed "+msg.agent.Path+" (continues "+core.ShortID(msg.from.ID)+")", false)
		if n, ok := m.idx.byID[msg.agent.ID]; ok {
			m.tree.selectNode(n)
		}
		return m.afterSelection(before), true
	default:
		return nil, false
	}
	return nil, true
}

package ui

import (
	"fmt"

	"github.com/charmbracelet/x/ansi"

	"orcr/core/wire"
)

// Telling the operator that an agent waits for them: the status line counts blocked
// agents all the time; an agent that becomes blocked while the dashboard watches also
// rings the terminal bell once per batch of events and names itself in a notice, and
// the window title carries the count, so a dashboard in a background tab or window
// still says that someone waits.

// applyAgent folds one agent snapshot from an event into the index. It reports whether
// the agent's state changed, and whether this event is the agent becoming blocked now:
// a live event (not part of the replay of the past on connect) that moved a held
// agent, or a new one, into blocked.
func (m *Model) applyAgent(ev wire.Event) (changed, nowBlocked bool) {
	a := ev.Agent
	var was wire.State
	if n, ok := m.idx.byID[a.ID]; ok && n.agent != nil {
		was = n.agent.State
	}
	m.upsert(*a)
	n, ok := m.idx.byID[a.ID]
	if !ok || n.agent == nil || n.agent.UpdatedAt != a.UpdatedAt {
		return false, false // an older snapshot than the one held
	}
	changed = was != "" && was != a.State
	nowBlocked = a.State == wire.StateBlocked && was != wire.StateBlocked &&
		ev.Event == wire.EventAgentState && ev.Seq > m.info.LastSeq
	return changed, nowBlocked
}

// announceBlocked says in the status bar which agents just became blocked (the bell
// and the desktop notification are tell's, in tell.go).
func (m *Model) announceBlocked(paths []string) {
	if len(paths) == 0 {
		return
	}
	next := m.c.keys.Tree.NextBlocked.Label()
	if len(paths) == 1 {
		m.status.notify(m.c.now, fmt.Sprintf("▲ %s is blocked (%s jumps to it)", paths[0], next), false)
	} else {
		m.status.notify(m.c.now, fmt.Sprintf("▲ %d agents became blocked (%s jumps to the next)", len(paths), next), false)
	}
}

// bell is BEL as a string: tea.Raw prints its value with fmt.Sprint, and ansi.BEL is a
// number.
const bell = string(rune(ansi.BEL))

// windowTitle is "orcr", or "orcr · 2 blocked" while agents wait.
func (m *Model) windowTitle() string {
	if n := m.idx.root.roll.groups[gBlocked]; n > 0 {
		return fmt.Sprintf("orcr · %d blocked", n)
	}
	return "orcr"
}

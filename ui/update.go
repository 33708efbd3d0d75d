package ui

import (
	"os/exec"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"orcr/core"
	"orcr/core/wire"
	"orcr/themes"
)

// updateKey routes a key: the top dialog first, then the filter line, then global keys,
// then agent actions, then the focused pane.
func (m *Model) updateKey(k tea.KeyPressMsg) tea.Cmd {
	if len(m.dialogs) > 0 {
		return m.toDialog(k)
	}
	if m.tree.filtering {
		before := m.selectedID()
		m.tree.Update(k)
		return m.afterSelection(before)
	}
	g := m.c.keys.Global
	switch {
	case g.Quit.Matches(k):
		return m.askQuit()
	case g.Help.Matches(k):
		return m.pushDialog(&helpDialog{c: m.c})
	case g.FocusNext.Matches(k):
		m.setFocus((m.focus + 1) % nFocus)
		return nil
	case g.FocusPrev.Matches(k):
		m.setFocus((m.focus + nFocus - 1) % nFocus)
		return nil
	case g.Plans.Matches(k):
		return tea.Batch(m.pushDialog(newPlansDialog(m.c)), plansCmd(m.ctx, m.svc))
	case g.Runs.Matches(k):
		return m.openRuns()
	case g.History.Matches(k):
		return m.openHistory()
	case g.Web.Matches(k):
		return tea.Batch(m.pushDialog(&webDialog{c: m.c, st: m.web, loaded: m.webLoaded}), webStatusCmd(m.ctx, m.svc))
	case g.Theme.Matches(k):
		names := themes.Names(m.opts.UserThemes)
		next := names[0]
		for i, n := range names {
			if n == m.themeName {
				next = names[(i+1)%len(names)]
			}
		}
		if err := m.setTheme(next); err != nil {
			m.status.notify(m.c.now, err.Error(), true)
		} else {
			m.status.notify(m.c.now, "theme "+next, false)
		}
		return nil
	}
	if cmd, ok := m.agentAction(k); ok {
		return cmd
	}
	before := m.selectedID()
	switch m.focus {
	case focusTree:
		m.tree.Update(k)
	case focusPreview:
		m.preview.Update(k)
		if m.preview.wantsMore() {
			return m.requestRead(m.selectedID())
		}
	case focusPanel:
		if cmd := m.panel.Update(k); cmd != nil {
			return cmd
		}
	}
	return m.afterSelection(before)
}

func (m *Model) selectedID() string {
	if a := m.tree.selected(); a != nil {
		return a.ID
	}
	return ""
}

// afterSelection reads the new selection's screen when the selection moved.
func (m *Model) afterSelection(before string) tea.Cmd {
	id := m.selectedID()
	if id == before {
		return nil
	}
	m.syncPreview()
	return m.requestRead(id)
}

// requestRead asks for an agent's screen, keeping at most one read in flight.
func (m *Model) requestRead(id string) tea.Cmd {
	if id == "" {
		return nil
	}
	m.readWant = id
	if m.readInFlight {
		m.readDirty = true
		return nil
	}
	m.readInFlight, m.readDirty = true, false
	return readCmd(m.ctx, m.svc, id, m.preview.screenLines())
}

// agentAction handles the keys that act on the selected agent or open a dialog.
func (m *Model) agentAction(k tea.KeyPressMsg) (tea.Cmd, bool) {
	t := m.c.keys.Tree
	a := m.tree.selected()
	dw := max(20, min(m.w-8, 70))
	switch {
	case t.Spawn.Matches(k):
		under := ""
		if n := m.tree.sel; n != nil {
			under = n.path
			if n.agent != nil && len(n.children) == 0 {
				under = ""
				if n.parent != nil && n.parent != &m.idx.root {
					under = n.parent.path
				}
			}
		}
		return m.pushDialog(newSpawnDialog(m.c, under, dw, m.info.Providers)), true
	case t.NextBlocked.Matches(k):
		return m.nextBlocked(), true
	case t.Answer.Matches(k) && m.idx.root.roll.groups[gBlocked] == 0:
		m.status.notify(m.c.now, "nothing is blocked", false)
		return nil, true
	case t.Kill.Matches(k):
		glob := ""
		if n := m.tree.sel; n != nil {
			glob = n.path
			if len(n.children) > 0 {
				glob += "/**"
			}
		}
		return m.pushDialog(newKillDialog(m.c, glob)), true
	}
	if a == nil {
		return nil, false
	}
	switch {
	case t.Restart.Matches(k):
		return m.pushDialog(newAgainDialog(m.c, *a, false, "", dw)), true
	case t.Fork.Matches(k):
		return m.pushDialog(newAgainDialog(m.c, *a, true, m.forkPath(a.Path), dw-4)), true
	case t.Rename.Matches(k):
		d := newAgainDialog(m.c, *a, true, a.Path, dw-4)
		d.rename = true
		return m.pushDialog(d), true
	case t.Attach.Matches(k):
		if a.State == wire.StateHibernated {
			m.status.notify(m.c.now, "waking "+a.Path+" (resuming its session)", false)
			return resumeCmd(m.ctx, m.svc, *a), true
		}
		if !a.State.Live() {
			m.status.notify(m.c.now, a.Path+" is "+string(a.State)+": nothing to attach to", true)
			return nil, true
		}
		return attachCmd(m.ctx, m.svc, a.ID, m.w, m.h), true
	case t.Steer.Matches(k), t.SteerMulti.Matches(k):
		if !a.State.Live() && a.State != wire.StateHibernated { // a send wakes a hibernated agent
			m.status.notify(m.c.now, a.Path+" is "+string(a.State)+": it cannot take input", true)
			return nil, true
		}
		if core.WaitsForChoice(a.State, a.Blocked) {
			// Text typed into a prompt would answer it (the server refuses it too):
			// the steer is an answer here, with the text as its reason.
			m.status.notify(m.c.now, a.Path+" waits for an answer: steer it through the prompt's options", false)
			return m.pushDialog(newAnswerDialog(m.c, a, dw)), true
		}
		return m.pushDialog(newSteerDialog(m.c, a, t.SteerMulti.Matches(k), dw-4)), true
	case t.Answer.Matches(k):
		if a.State != wire.StateBlocked {
			m.status.notify(m.c.now, a.Path+" is not blocked (press "+t.NextBlocked.Label()+" for the next blocked agent)", true)
			return nil, true
		}
		return m.pushDialog(newAnswerDialog(m.c, a, dw)), true
	case t.Diff.Matches(k):
		return m.openDiff(a), true
	}
	return nil, false
}

// nextBlocked selects the next blocked agent in tree order, or says there is none.
func (m *Model) nextBlocked() tea.Cmd {
	after := ""
	if m.tree.sel != nil {
		after = m.tree.sel.path
	}
	n := m.idx.nextBlocked(after)
	switch {
	case n == nil:
		m.status.notify(m.c.now, "nothing is blocked", false)
		return nil
	case n == m.tree.sel:
		m.status.notify(m.c.now, n.path+" is the only blocked agent", false)
		return nil
	}
	before := m.selectedID()
	m.tree.selectNode(n)
	return m.afterSelection(before)
}

// askQuit quits, or asks first when quitting would stop something: a dashboard that
// hosts the server in-process takes the server's listeners, schedules and runs'
// autopilots down with it (and the agents too on the embedded host), so it says what
// stops and offers to keep it all running under a background orcr serve.
func (m *Model) askQuit() tea.Cmd {
	if m.opts.Mode == "in-process" {
		if q := m.quitStops(); q.any() {
			return m.pushDialog(&quitDialog{c: m.c, stops: q})
		}
	}
	m.quit, m.quitting = QuitPlain, true
	m.farewell = m.farewellText()
	return tea.Quit
}

// quitStops counts what ends with an in-process server: agents on the embedded host,
// listeners and schedules (as the panel last read them), and the runs whose autopilot
// is running (those with a live agent under runs/NAME/).
func (m *Model) quitStops() quitStops {
	q := quitStops{host: m.info.Host, listeners: len(m.panel.listeners.ls), schedules: len(m.panel.schedules.s)}
	runs := map[string]bool{}
	for _, n := range m.idx.byID {
		a := n.agent
		if a == nil || !a.State.Live() {
			continue
		}
		if m.opts.EmbeddedHost && (a.Host == "pty" || a.Host == "") {
			q.agents++
		}
		if rest, ok := strings.CutPrefix(a.Path, "runs/"); ok {
			if name, _, ok := strings.Cut(rest, "/"); ok {
				runs[name] = true
			}
		}
	}
	q.runs = len(runs)
	return q
}

// updateAction turns a dialog's action into commands.
func (m *Model) updateAction(act action) tea.Cmd {
	switch a := act.(type) {
	case nil:
		return nil
	case closeAction:
		m.popDialog()
	case sendAction:
		m.popDialog()
		return sendCmd(m.ctx, m.svc, a.p)
	case answerAction:
		m.popDialog()
		return answerCmd(m.ctx, m.svc, a.p)
	case runAction:
		m.popDialog()
		return runCmd(m.ctx, m.svc, a.p)
	case dryRunAction:
		return dryRunCmd(m.ctx, m.svc, a.glob)
	case killAction:
		m.popDialog()
		return m.startKill(a)
	case resumeAction:
		return resumeEntryCmd(m.ctx, m.svc, a)
	case callAction:
		ctx, svc := m.ctx, m.svc
		return func() tea.Msg { return a.fn(ctx, svc) }
	case quitAction:
		m.popDialog()
		m.quit, m.quitting = a.choice, true
		if a.choice == QuitPlain {
			m.farewell = m.farewellText()
		}
		return tea.Quit
	case rootAction:
		return a.apply(m)
	}
	return nil
}

// updateCore handles the server connection: info, the subscription and its events.
func (m *Model) updateCore(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case infoMsg:
		if msg.err != nil {
			return m.connFailed("server", msg.err)
		}
		m.info = msg.info
		switch {
		case m.lastSeq == 0:
			// Replay the recent past so the event log is not empty on start. Replayed
			// snapshots older than what List returns are ignored (see upsert), and a
			// replayed spawn of a pruned agent is followed by its removal.
			m.lastSeq = msg.info.LastSeq - min(msg.info.LastSeq, replayEvents)
		case m.lastSeq > msg.info.LastSeq:
			// A server started afresh numbers its events anew: follow it from its
			// start (the list read on reconnect brings the agents up to date).
			m.lastSeq = msg.info.LastSeq
			m.toldSeq = min(m.toldSeq, msg.info.LastSeq)
		}
		return tea.Batch(subscribeCmd(m.ctx, m.svc, m.lastSeq), webStatusCmd(m.ctx, m.svc))
	case resubscribeMsg:
		if m.conn == connLost || (m.info.PID == 0 && m.info.Version == 0) {
			// The server went away: the one that answers now may be another process,
			// so its info is read again before subscribing.
			return infoCmd(m.ctx, m.svc)
		}
		return tea.Batch(subscribeCmd(m.ctx, m.svc, m.lastSeq), listCmd(m.ctx, m.svc))
	case subscribedMsg:
		if msg.err != nil {
			return m.connFailed("events", msg.err)
		}
		return tea.Batch(m.connUp(), waitEvents(msg.ch))
	case subEndedMsg:
		m.subOK = false
		if m.ctx.Err() != nil || m.quitting {
			return nil
		}
		return m.connFailed("events", nil)
	case eventsMsg:
		return tea.Batch(m.applyEvents(msg.events), waitEvents(msg.ch))
	}
	return nil
}

// applyEvents folds events into the index; only the selected agent's screen changes
// cause a read.
func (m *Model) applyEvents(evs []wire.Event) tea.Cmd {
	before := m.selectedID()
	var cmd tea.Cmd
	var newlyBlocked []string
	var tells []telling
	for _, ev := range evs {
		if ev.Seq > m.lastSeq {
			m.lastSeq = ev.Seq
		}
		switch ev.Event {
		case wire.EventAgentScreen:
			if id := eventAgentID(ev); id != "" && id == before {
				cmd = tea.Batch(cmd, m.requestRead(id), m.armSettle())
			}
			continue
		case wire.EventUsageReading:
			// A window moved: redraw its bar now, not at the next refresh.
			cmd = tea.Batch(cmd, usageCmd(m.ctx, m.svc))
		case wire.EventAgentRemoved:
			if id := eventAgentID(ev); id != "" {
				m.idx.remove(id)
			}
		default:
			if ev.Agent != nil {
				changed, blocked := m.applyAgent(ev)
				// A state change of the selected agent reads its screen again: an
				// agent that exited at once may never have announced a screen, and its
				// last screen is only kept once it has ended.
				if changed && ev.Agent.ID == before {
					cmd = tea.Batch(cmd, m.requestRead(before))
				}
				if blocked {
					newlyBlocked = append(newlyBlocked, ev.Agent.Path)
					if !m.opts.Notify.Off[NotifyBlocked] && ev.Seq > m.toldSeq {
						tells = append(tells, blockedTelling(*ev.Agent))
					}
				}
				for _, d := range m.dialogs {
					if f, ok := d.(interface{ follow(wire.Agent) }); ok {
						f.follow(*ev.Agent)
					}
				}
			}
		}
		if t, ok := m.tellingOf(ev); ok {
			tells = append(tells, t)
		}
		if ev.Seq > 0 {
			m.panel.events.add(ev)
		}
	}
	for _, ev := range evs {
		m.toldSeq = max(m.toldSeq, ev.Seq)
	}
	m.announceBlocked(newlyBlocked)
	cmd = tea.Batch(cmd, m.afterSelection(before), m.tell(tells), m.followRuns(evs))
	m.syncPreview()
	return cmd
}

// replayEvents is how many past events the dashboard asks for when it starts.
const replayEvents = 200

// settleAfter is when the preview reads the selected screen once more after a burst of
// screen events. The server announces screen changes at most every so often, so the
// last change of a burst can go unannounced; this trailing read picks it up. It only
// ever reads the selected agent.
const settleAfter = 300 * time.Millisecond

type settleMsg struct{}

// armSettle schedules the trailing read unless one is pending; events meanwhile are
// counted so the read is repeated while the screen keeps changing.
func (m *Model) armSettle() tea.Cmd {
	m.settleEvents++
	if m.settleArmed {
		return nil
	}
	m.settleArmed, m.settleEvents = true, 0
	return tea.Tick(settleAfter, func(time.Time) tea.Msg { return settleMsg{} })
}

func (m *Model) onSettle() tea.Cmd {
	m.settleArmed = false
	read := m.requestRead(m.selectedID())
	if m.settleEvents > 0 {
		return tea.Batch(read, m.armSettle())
	}
	return read
}

// upsert applies a snapshot unless a newer one is already held (list results and
// replayed events can arrive in either order).
func (m *Model) upsert(a wire.Agent) {
	if n, ok := m.idx.byID[a.ID]; ok && n.agent != nil && a.UpdatedAt.Before(n.agent.UpdatedAt) {
		return
	}
	m.idx.upsert(a)
}

func eventAgentID(ev wire.Event) string {
	if ev.Agent != nil {
		return ev.Agent.ID
	}
	for _, k := range []string{"agentId", "id"} {
		if s, ok := ev.Data[k].(string); ok {
			return s
		}
	}
	return ""
}

// updateResult handles the answers to commands.
func (m *Model) updateResult(msg tea.Msg) tea.Cmd {
	now := m.c.now
	switch msg := msg.(type) {
	case listMsg:
		if msg.err != nil {
			if m.conn != connLost { // while lost the badge says it; no raw dial error
				m.status.notify(now, "list: "+shortErr(msg.err), true)
			}
			return nil
		}
		before := m.selectedID()
		for _, a := range msg.agents {
			m.upsert(a)
		}
		m.loaded = true
		return m.afterSelection(before)
	case readMsg:
		m.readInFlight = false
		if msg.id == m.readWant {
			m.preview.setScreen(msg.id, msg.res, msg.err, msg.lines)
		}
		if m.readDirty || msg.id != m.readWant {
			return m.requestRead(m.readWant)
		}
	case queueMsg:
		m.panel.queue.set(msg.q, msg.err)
	case usageMsg:
		m.panel.usage.set(msg.u, msg.err)
	case schedulesMsg:
		m.panel.schedules.set(msg.s, msg.err)
	case dryRunMsg:
		return m.toDialog(msg)
	case answeredMsg:
		m.status.notify(now, msg.notice(), msg.err != nil)
	case sentMsg:
		if msg.err != nil {
			m.status.notify(now, "send: "+msg.err.Error(), true)
			if wire.CodeOf(msg.err) == wire.CodeAgentBlocked {
				// A prompt came up while the steer was being written: it goes on as
				// that prompt's answer, the text kept.
				return m.steerBlocked(msg)
			}
		} else {
			m.status.notify(now, "sent", false)
		}
	case spawnedMsg:
		if msg.err != nil {
			m.status.notify(now, "spawn: "+msg.err.Error(), true)
			return nil
		}
		m.upsert(msg.agent)
		if n, ok := m.idx.byID[msg.agent.ID]; ok {
			before := m.selectedID()
			m.tree.selectNode(n)
			m.status.notify(now, "spawned "+msg.agent.Path, false)
			return m.afterSelection(before)
		}
	case attachMsg:
		return m.startAttach(msg)
	case attachDoneMsg:
		m.attaching = false
		if msg.err != nil {
			m.status.notify(now, "attach: "+msg.err.Error(), true)
		} else {
			m.status.notify(now, "detached", false)
		}
		return tea.Batch(m.requestRead(m.selectedID()), listCmd(m.ctx, m.svc))
	}
	return nil
}

// startAttach hands the terminal to the host's own attach command; bubbletea restores
// the dashboard when it exits.
func (m *Model) startAttach(msg attachMsg) tea.Cmd {
	if msg.err != nil {
		m.status.notify(m.c.now, "attach: "+msg.err.Error(), true)
		return nil
	}
	var c *exec.Cmd
	switch {
	case len(msg.res.Argv) > 0:
		c = exec.Command(msg.res.Argv[0], msg.res.Argv[1:]...)
	case msg.res.Stream:
		if m.opts.Self == "" {
			m.status.notify(m.c.now, "attach: run `orcr agent attach "+msg.id+"` in another terminal", true)
			return nil
		}
		c = exec.Command(m.opts.Self, "agent", "attach", msg.id)
	default:
		m.status.notify(m.c.now, "attach: the host offers no attach for this agent", true)
		return nil
	}
	m.attaching = true
	id := msg.id
	hc := &hintedCmd{Cmd: c, hint: attachHint(msg.res.Agent.Path, msg.res.Argv, m.opts.InTmux)}
	return tea.Exec(hc, func(err error) tea.Msg { return attachDoneMsg{id, err} })
}

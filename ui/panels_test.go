package ui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"orcr/core/wire"
	nodeapi "orcr/nodes/api"
)

func panelText(t *testing.T, m *Model) string {
	t.Helper()
	return plain(m.panel.View())
}

func TestPanelTabs(t *testing.T) {
	m := newTestModel(t, 160, 48, Options{})
	press(m, "tab", "tab") // focus: tree → preview → panel
	if m.focus != focusPanel || !m.panel.focus {
		t.Fatal("tab did not reach the panel")
	}
	want := []string{"running 6/8", "claude", "nightly-review", "no events yet"}
	for i, w := range want {
		if i > 0 {
			press(m, "]")
		}
		if got := panelText(t, m); !strings.Contains(got, w) {
			t.Fatalf("tab %d lacks %q:\n%s", i, w, got)
		}
	}
	press(m, "]", "]")
	if m.panel.tab != tabQueue {
		t.Fatal("] did not wrap")
	}
	press(m, "[")
	if m.panel.tab != tabListeners {
		t.Fatal("[ did not go back")
	}
}

func TestQueueView(t *testing.T) {
	m := newTestModel(t, 160, 48, Options{})
	v := panelText(t, m)
	for _, w := range []string{"running 6/8", "queued 1", "free 3120 MB (min 512)", "3/4", "2/2", "pi       1 running, no cap", "1 demo/c  claude p0  claude cap 4"} {
		if !strings.Contains(v, w) {
			t.Fatalf("queue lacks %q:\n%s", w, v)
		}
	}
	// at the codex cap the gauge is drawn in the danger colour, below it in the ok colour
	lines := strings.Split(m.panel.View(), "\n")
	var codex, claude string
	for _, l := range lines {
		switch {
		case strings.Contains(plain(l), "codex"):
			codex = l
		case strings.Contains(plain(l), "claude   "):
			claude = l
		}
	}
	st := m.c.styles
	danger := st.GaugeDanger.Render("█")
	danger = danger[:strings.IndexByte(danger, 'm')+1]
	if !strings.Contains(codex, danger) || strings.Contains(claude, danger) {
		t.Fatalf("gauge colours: codex %q claude %q", codex, claude)
	}
	m.Update(queueMsg{err: wire.Errorf(wire.CodeUnavailable, "server gone")})
	if !strings.Contains(panelText(t, m), "server gone") {
		t.Fatal("queue error not shown")
	}
}

func TestUsageView(t *testing.T) {
	m := newTestModel(t, 160, 48, Options{})
	m.panel.tab = tabUsage
	v := panelText(t, m)
	for _, w := range []string{"claude", "tokens 200k/77k  cost $4.93", "5h", "82%", "weekly", "31%", "resets Nov 30 14:00 (in 2h)", "codex", "100% LIMIT"} {
		if !strings.Contains(v, w) {
			t.Fatalf("usage lacks %q:\n%s", w, v)
		}
	}
	m.Update(usageMsg{u: wire.UsageResult{}})
	if !strings.Contains(panelText(t, m), "no usage recorded yet") {
		t.Fatal("empty usage")
	}
}

func TestSchedulesView(t *testing.T) {
	m := newTestModel(t, 160, 48, Options{})
	m.panel.tab = tabSchedules
	v := panelText(t, m)
	for _, w := range []string{"nightly-review", "0 3 * * *", "next 12:04 (in 4m)", "last 11:58 ok", "triage", "every 10m", "never run"} {
		if !strings.Contains(v, w) {
			t.Fatalf("schedules lack %q:\n%s", w, v)
		}
	}
}

func TestEventsNewestFirstBounded(t *testing.T) {
	m := newTestModel(t, 160, 48, Options{})
	m.panel.tab = tabEvents
	a := fixture()[0]
	var evs []wire.Event
	for i := 1; i <= 600; i++ {
		a.State = []wire.State{wire.StateWorking, wire.StateDone}[i%2]
		a.UpdatedAt = t0.Add(time.Duration(i) * time.Second)
		cp := a
		evs = append(evs, wire.Event{Event: wire.EventAgentState, Seq: uint64(100 + i), At: a.UpdatedAt, Agent: &cp, From: wire.StateWorking, To: a.State})
	}
	evs = append(evs, wire.Event{Event: wire.EventAgentScreen, Agent: &a}) // transient: not logged
	m.Update(eventsMsg{events: evs})
	if len(m.panel.events.ring) != 500 {
		t.Fatalf("ring holds %d", len(m.panel.events.ring))
	}
	first := strings.Split(panelText(t, m), "\n")[1]
	if !strings.Contains(first, "12:10:00") || !strings.Contains(first, "state") || !strings.Contains(first, "demo/a") {
		t.Fatalf("newest event not first: %q", first)
	}
	if m.lastSeq != 700 {
		t.Fatalf("lastSeq = %d", m.lastSeq)
	}
	if got := m.idx.byID["0001"].agent.State; got != wire.StateWorking {
		t.Fatalf("agent state after events = %s", got)
	}
}

func TestPreviewScreenAndScroll(t *testing.T) {
	m := newTestModel(t, 160, 48, Options{})
	selectPath(t, m, "demo/a")
	var text strings.Builder
	for i := 0; i < 100; i++ {
		text.WriteString("line " + string(rune('A'+i%26)) + "\n")
	}
	text.WriteString("\x1b[31mred\x1b[0m \x1b]0;title\x07end\n")
	m.Update(readMsg{id: "0001", res: wire.ReadResult{Text: text.String(), Live: true}})
	v := plain(pv(m))
	// The agent's colours are kept (SGR only); its title sequence is not.
	if !strings.Contains(v, "red end") || !strings.Contains(pv(m), "\x1b[31mred") || strings.Contains(v, "title") {
		t.Fatalf("pane text not sanitised:\n%s", v)
	}
	press(m, "tab") // focus the preview
	press(m, "up", "up", "up")
	if v2 := plain(pv(m)); strings.Contains(v2, "red end") {
		t.Fatal("scrolling up still shows the last line")
	}
	// a read for another agent (a late answer) does not replace the screen
	m.Update(readMsg{id: "0002", res: wire.ReadResult{Text: "other"}})
	if strings.Contains(plain(pv(m)), "other") {
		t.Fatal("late read of another agent shown")
	}
	// the last screen of an ended agent is labelled
	m.Update(readMsg{id: "0001", res: wire.ReadResult{Text: "bye", Live: false}})
	if !strings.Contains(plain(pv(m)), "demo/a (last screen)") {
		t.Fatal("kept screen not labelled")
	}
}

func TestScreenEventsReadOnlyTheSelection(t *testing.T) {
	m := newTestModel(t, 160, 48, Options{})
	selectPath(t, m, "demo/a")
	m.readInFlight = false
	other := fixture()[1]
	_, cmd := m.Update(eventsMsg{events: []wire.Event{{Event: wire.EventAgentScreen, Agent: &other}}})
	if m.readInFlight {
		t.Fatal("a screen event of an unselected agent caused a read")
	}
	if cmd == nil {
		t.Fatal("events did not re-arm the subscription")
	}
	sel := fixture()[0]
	m.Update(eventsMsg{events: []wire.Event{{Event: wire.EventAgentScreen, Agent: &sel}}})
	if !m.readInFlight || m.readWant != "0001" {
		t.Fatal("a screen event of the selected agent did not read it")
	}
	// more screen events while reading only mark it dirty; the answer reads once more
	m.Update(eventsMsg{events: []wire.Event{{Event: wire.EventAgentScreen, Agent: &sel}, {Event: wire.EventAgentScreen, Agent: &sel}}})
	_, cmd = m.Update(readMsg{id: "0001", res: wire.ReadResult{Text: "x", Live: true}})
	if cmd == nil || !m.readInFlight {
		t.Fatal("dirty preview not re-read")
	}
	_, cmd = m.Update(readMsg{id: "0001", res: wire.ReadResult{Text: "y", Live: true}})
	if cmd != nil || m.readInFlight {
		t.Fatal("clean preview read again")
	}
}

// TestPreviewOfAgentThatExitedAtOnce: an agent spawned from the form that ends before
// it ever announced a screen still shows its last screen, without moving the selection
// away and back: its state change reads the screen again.
func TestPreviewOfAgentThatExitedAtOnce(t *testing.T) {
	m := newTestModel(t, 160, 48, Options{})
	quick := wire.Agent{ID: "0100", Path: "demo/quick", State: wire.StateQueued, Provider: "shell", Host: "tmux",
		CreatedAt: t0, StateAt: t0, UpdatedAt: t0}
	m.Update(spawnedMsg{agent: quick})
	if m.selectedID() != "0100" || !m.readInFlight || m.readWant != "0100" {
		t.Fatalf("the spawned agent is not selected and read: %q", m.selectedID())
	}
	m.Update(readMsg{id: "0100", res: wire.ReadResult{}}) // queued: no screen yet
	for i, st := range []wire.State{wire.StateStarting, wire.StateWorking, wire.StateExited} {
		a := quick
		a.State, a.UpdatedAt = st, t0.Add(time.Duration(i+1)*time.Millisecond)
		if st == wire.StateExited {
			code := 0
			a.ExitCode = &code
		}
		m.Update(eventsMsg{events: []wire.Event{{Event: wire.EventAgentState, Seq: uint64(20 + i), At: t0, Agent: &a, To: st}}})
		if !m.readInFlight || m.readWant != "0100" {
			t.Fatalf("%s: the state change did not read the selected screen", st)
		}
		text := ""
		if st == wire.StateExited {
			text = "ok\n"
		}
		m.Update(readMsg{id: "0100", res: wire.ReadResult{Text: text, Live: st != wire.StateExited}})
	}
	v := plain(pv(m))
	if !strings.Contains(v, "demo/quick (last screen)") || !strings.Contains(v, "│ok ") {
		t.Fatalf("the exited agent's last screen is not shown:\n%s", v)
	}
	// An event of the selected agent that does not change its state reads nothing.
	a := *m.idx.byID["0100"].agent
	a.LastMessage, a.UpdatedAt = "done", a.UpdatedAt.Add(time.Millisecond)
	m.Update(eventsMsg{events: []wire.Event{{Event: wire.EventAgentUpdated, Seq: 30, At: t0, Agent: &a}}})
	if m.readInFlight {
		t.Fatal("an update without a state change read the screen")
	}
}

func TestSubscriptionRearms(t *testing.T) {
	m := newTestModel(t, 160, 48, Options{})
	ch := make(chan wire.Event, 2)
	_, cmd := m.Update(subscribedMsg{ch: ch})
	a := fixture()[0]
	a.State, a.UpdatedAt = wire.StateBlocked, t0.Add(time.Hour)
	ch <- wire.Event{Event: wire.EventAgentState, Seq: 50, At: t0, Agent: &a}
	msg := cmd()
	em, ok := msg.(eventsMsg)
	if !ok || len(em.events) != 1 {
		t.Fatalf("subscription command returned %#v", msg)
	}
	m.Update(em)
	if m.idx.byID["0001"].agent.State != wire.StateBlocked {
		t.Fatal("event not applied")
	}
	close(ch)
	if _, ok := waitEvents(ch)().(subEndedMsg); !ok {
		t.Fatal("closed subscription not reported")
	}
	_, cmd = m.Update(subEndedMsg{})
	if m.subOK || cmd == nil || !strings.Contains(plain(screen(t, m)), "offline") {
		t.Fatal("ended subscription not shown or not retried")
	}
}

func TestOlderSnapshotIgnored(t *testing.T) {
	m := newTestModel(t, 160, 48, Options{})
	a := fixture()[0]
	a.State, a.UpdatedAt = wire.StateDone, t0.Add(time.Hour)
	m.Update(eventsMsg{events: []wire.Event{{Event: wire.EventAgentState, Seq: 60, Agent: &a}}})
	m.Update(listMsg{agents: fixture()}) // an older list answer arriving late
	if m.idx.byID["0001"].agent.State != wire.StateDone {
		t.Fatal("late list overwrote a newer event")
	}
	m.Update(eventsMsg{events: []wire.Event{{Event: wire.EventAgentRemoved, Seq: 61, Agent: &a}}})
	if _, ok := m.idx.byID["0001"]; ok {
		t.Fatal("removed agent kept")
	}
}

func TestStatusBar(t *testing.T) {
	m := newTestModel(t, 120, 30, Options{Mode: "connected"})
	line := plain(m.status.View(m.statusInfo()))
	for _, w := range []string{"connected", "host tmux", "9 agents", "2 working", "▲ 1 blocked", "? help", "q quit"} {
		if !strings.Contains(line, w) {
			t.Fatalf("status lacks %q: %q", w, line)
		}
	}
	m.Update(sentMsg{target: "x", err: wire.Errorf(wire.CodeNotRunning, "demo/a is not running")})
	if !strings.Contains(plain(m.status.View(m.statusInfo())), "send: demo/a is not running") {
		t.Fatal("error notice not shown")
	}
	m.Update(tickMsg(t0.Add(10 * time.Second)))
	if strings.Contains(plain(m.status.View(m.statusInfo())), "not running") {
		t.Fatal("notice did not expire")
	}
	// very narrow: hints give way, the line still fits
	m.Update(tea.WindowSizeMsg{Width: 40, Height: 10})
	if w := len([]rune(plain(m.status.View(m.statusInfo())))); w != 40 {
		t.Fatalf("narrow status is %d wide", w)
	}
}

// pv renders the preview as the root would, pointed at the current selection.
func pv(m *Model) string {
	m.syncPreview()
	return m.preview.View()
}

func TestTrailingReadAfterScreenBurst(t *testing.T) {
	m := newTestModel(t, 160, 48, Options{})
	selectPath(t, m, "demo/a")
	sel := fixture()[0]
	screenEv := eventsMsg{events: []wire.Event{{Event: wire.EventAgentScreen, Agent: &sel}}}
	m.Update(screenEv)
	if !m.settleArmed {
		t.Fatal("no trailing read scheduled")
	}
	m.Update(screenEv) // more changes while armed
	m.Update(readMsg{id: "0001", res: wire.ReadResult{Text: "a"}})
	m.Update(readMsg{id: "0001", res: wire.ReadResult{Text: "b"}})
	_, cmd := m.Update(settleMsg{})
	if cmd == nil || !m.readInFlight || !m.settleArmed {
		t.Fatal("trailing read not made or not re-armed after further events")
	}
	m.Update(readMsg{id: "0001", res: wire.ReadResult{Text: "c"}})
	m.Update(settleMsg{})
	if m.settleArmed {
		t.Fatal("still armed after a quiet period")
	}
}

func TestStartReplaysRecentEvents(t *testing.T) {
	m, err := New(t.Context(), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, cmd := m.Update(infoMsg{info: wire.InfoResult{LastSeq: 1000}}); cmd == nil || m.lastSeq != 1000-replayEvents {
		t.Fatalf("subscribe after %d", m.lastSeq)
	}
	// an early, small log is replayed whole
	m2, _ := New(t.Context(), nil, Options{})
	defer m2.Close()
	m2.Update(infoMsg{info: wire.InfoResult{LastSeq: 7}})
	if m2.lastSeq != 0 {
		t.Fatalf("subscribe after %d", m2.lastSeq)
	}
}

// The nodes tab appears once the server has nodes: each node's state, agents of its
// cap, free memory, version and last answer, and the error of one that is not up.
func TestNodesPanel(t *testing.T) {
	m := newTestModel(t, 160, 48, Options{})
	if strings.Contains(plain(m.panel.View()), "nodes") {
		t.Fatal("a nodes tab with no nodes")
	}
	seen := m.c.now.Add(-3 * time.Second)
	m.Update(nodesMsg{ns: []nodeapi.Node{
		{Name: "big", State: nodeapi.StateUp, Agents: 2, MaxAgents: 3, FreeMB: 4096, Version: "v1.2.0", LastSeen: &seen},
		{Name: "lab", State: nodeapi.StateUnreachable, Error: "ssh connection lost: EOF"},
	}})
	press(m, "tab", "tab")
	press(m, "[") // back from the queue wraps to the last tab: nodes
	if m.panel.tab != tabNodes {
		t.Fatalf("tab %s", m.panel.tab)
	}
	v := panelText(t, m)
	for _, w := range []string{"[nodes]", "big", "up", "2/3", "4096 MB", "v1.2.0", "3s ago", "lab", "unreachable", "0/-", "never", "ssh connection lost: EOF"} {
		if !strings.Contains(v, w) {
			t.Fatalf("nodes tab lacks %q:\n%s", w, v)
		}
	}
	// The last node removed: the tab goes, and the panel shows the queue.
	m.Update(nodesMsg{ns: []nodeapi.Node{}})
	if m.panel.tab != tabQueue || strings.Contains(plain(m.panel.View()), "nodes") {
		t.Fatalf("after the last node: tab %s\n%s", m.panel.tab, plain(m.panel.View()))
	}
}

package ui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"orcr/core/wire"
)

// rings reports whether running cmd prints the bell. Every command runs to its end (see
// doCmdNoService); one that calls the (nil) service yields nothing.
func rings(t *testing.T, cmd tea.Cmd) bool {
	t.Helper()
	for _, msg := range doCmdNoService(t, cmd) {
		if raw, ok := msg.(tea.RawMsg); ok && raw.Msg == "\a" {
			return true
		}
	}
	return false
}

func blockedEvent(a wire.Agent, seq uint64) wire.Event {
	from := a.State
	a.State, a.UpdatedAt = wire.StateBlocked, a.UpdatedAt.Add(time.Duration(seq)*time.Second)
	a.Blocked = &wire.Blocked{Kind: "question", Detail: "Proceed? [y/N]"}
	return wire.Event{Event: wire.EventAgentState, Seq: seq, At: t0, Agent: &a, From: from, To: wire.StateBlocked}
}

// TestBlockedNotification feeds events the way the subscription delivers them
// (applyEvents is the eventsMsg handler without re-arming the subscription).
func TestBlockedNotification(t *testing.T) {
	m := newTestModel(t, 160, 48, Options{})
	fx := fixture()
	if got := m.View().WindowTitle; got != "orcr · 1 blocked" {
		t.Fatalf("title with one blocked agent on load: %q", got)
	}
	// Replayed history (seq ≤ the server's LastSeq when the dashboard connected) is old
	// news: the state is applied, nothing rings.
	cmd := m.applyEvents([]wire.Event{blockedEvent(fx[1], 9)})
	if rings(t, cmd) || m.status.notice != "" {
		t.Fatalf("a replayed block rang or said %q", m.status.notice)
	}
	if m.idx.byID["0002"].agent.State != wire.StateBlocked {
		t.Fatal("the replayed state was not applied")
	}
	// A live one rings once and names the agent.
	cmd = m.applyEvents([]wire.Event{blockedEvent(fx[0], 11)})
	if !rings(t, cmd) {
		t.Fatal("an agent becoming blocked did not ring the bell")
	}
	v := plain(screen(t, m))
	if !strings.Contains(v, "▲ demo/a is blocked (b jumps to it)") || !strings.Contains(v, "▲ 3 blocked") {
		t.Fatalf("status line:\n%s", v)
	}
	if got := m.View().WindowTitle; got != "orcr · 3 blocked" {
		t.Fatalf("title: %q", got)
	}
	// An agent already blocked (a new prompt) does not ring again.
	m.status.notice = ""
	cmd = m.applyEvents([]wire.Event{blockedEvent(*m.idx.byID["0007"].agent, 12)})
	if rings(t, cmd) || m.status.notice != "" {
		t.Fatal("an agent that stayed blocked rang")
	}
	// Several at once: one bell, one notice with the count.
	cmd = m.applyEvents([]wire.Event{blockedEvent(fx[3], 13), blockedEvent(fx[5], 14)})
	if !rings(t, cmd) || !strings.Contains(m.status.notice, "2 agents became blocked") {
		t.Fatalf("a burst: notice %q", m.status.notice)
	}
	// All unblocked: the title is plain again.
	var evs []wire.Event
	for _, n := range m.idx.byID {
		if a := *n.agent; a.State == wire.StateBlocked {
			a.State, a.Blocked, a.UpdatedAt = wire.StateWorking, nil, a.UpdatedAt.Add(time.Minute)
			evs = append(evs, wire.Event{Event: wire.EventAgentState, Seq: uint64(20 + len(evs)), At: t0, Agent: &a, From: wire.StateBlocked, To: wire.StateWorking})
		}
	}
	m.Update(eventsMsg{events: evs})
	if got := m.View().WindowTitle; got != "orcr" {
		t.Fatalf("title with nothing blocked: %q", got)
	}
}

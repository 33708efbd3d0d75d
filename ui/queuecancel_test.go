package ui

import (
	"context"
	"strings"
	"sync"
	"testing"

	"orcr/core/socket"
	"orcr/core/wire"
)

// TestQueueCancelKey: in the focused queue panel the arrows select a queued entry and
// x cancels it through agent.kill of its id; the queue is read again after.
func TestQueueCancelKey(t *testing.T) {
	var mu sync.Mutex
	var killed []string
	reads := 0
	ip, err := socket.NewInProcess([]wire.Handler{
		wire.Handle(wire.AgentKill, func(_ context.Context, p *wire.KillParams) (wire.KillResult, error) {
			mu.Lock()
			defer mu.Unlock()
			killed = append(killed, p.Glob)
			return wire.KillResult{}, nil
		}),
		wire.Handle(wire.QueueGet, func(context.Context, *wire.Empty) (wire.QueueResult, error) {
			mu.Lock()
			defer mu.Unlock()
			reads++
			return wire.QueueResult{}, nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	m := newTestModel(t, 120, 40, Options{})
	q := fixtureQueue()
	q.Entries = append(q.Entries, wire.QueueEntry{Pos: 2, AgentID: "0011", Path: "demo/later", Provider: "codex", QueuedAt: t0, Waiting: "codex cap 2"})
	m.Update(queueMsg{q: q})
	m.svc = ip
	press(m, "tab", "tab") // the panel, on its queue tab
	if m.focus != focusPanel || m.panel.tab != tabQueue {
		t.Fatalf("focus %v tab %v", m.focus, m.panel.tab)
	}
	row := func(path string) string {
		for _, l := range strings.Split(screen(t, m), "\n") {
			if strings.Contains(plain(l), path) {
				return l
			}
		}
		return ""
	}
	firstSel, laterBefore := row("demo/c"), row("demo/later")
	press(m, "down")
	if row("demo/later") == laterBefore || row("demo/c") == firstSel {
		t.Fatal("down did not move the selection to the second entry")
	}
	pressSettle(t, m, "x")
	if strings.Join(killed, ",") != "0011" || reads != 1 || !strings.Contains(m.status.notice, "cancelled demo/later (it was queued)") {
		t.Fatalf("killed %v, queue reads %d, notice %q", killed, reads, m.status.notice)
	}
}

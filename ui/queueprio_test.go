package ui

import (
	"context"
	"strings"
	"sync"
	"testing"

	"orcr/core/socket"
	"orcr/core/wire"
)

// TestQueuePriorityKeys: in the focused queue panel + raises and - lowers the selected
// entry's priority through queue.priority, the queue is read again after, and the
// selection follows the entry to its new place.
func TestQueuePriorityKeys(t *testing.T) {
	var mu sync.Mutex
	var calls []string
	reads := 0
	q := fixtureQueue()
	q.Entries = append(q.Entries, wire.QueueEntry{Pos: 2, AgentID: "0011", Path: "demo/later", Provider: "codex", QueuedAt: t0, Waiting: "codex cap 2"})
	moved := q
	moved.Entries = []wire.QueueEntry{q.Entries[1], q.Entries[0]}
	moved.Entries[0].Pos, moved.Entries[0].Priority, moved.Entries[1].Pos = 1, 1, 2
	ip, err := socket.NewInProcess([]wire.Handler{
		wire.Handle(wire.QueuePriority, func(_ context.Context, p *wire.PriorityParams) (wire.AgentResult, error) {
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, p.Target+" "+map[int]string{1: "+1", -1: "-1"}[p.By])
			return wire.AgentResult{Agent: wire.Agent{ID: p.Target, Path: "demo/later", Priority: 1, QueuePos: 1, State: wire.StateQueued}}, nil
		}),
		wire.Handle(wire.QueueGet, func(context.Context, *wire.Empty) (wire.QueueResult, error) {
			mu.Lock()
			defer mu.Unlock()
			reads++
			return moved, nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	m := newTestModel(t, 120, 40, Options{})
	m.Update(queueMsg{q: q})
	m.svc = ip
	press(m, "tab", "tab") // the panel, on its queue tab
	if m.focus != focusPanel || m.panel.tab != tabQueue {
		t.Fatalf("focus %v tab %v", m.focus, m.panel.tab)
	}
	press(m, "down") // demo/later
	pressSettle(t, m, "+")
	if strings.Join(calls, ",") != "0011 +1" || reads != 1 || !strings.Contains(m.status.notice, "demo/later: priority 1, queue position 1") {
		t.Fatalf("calls %v, queue reads %d, notice %q", calls, reads, m.status.notice)
	}
	if m.panel.queue.sel != 0 {
		t.Fatalf("selection at %d after the entry moved to the front, want 0", m.panel.queue.sel)
	}
	pressSettle(t, m, "-")
	if strings.Join(calls, ",") != "0011 +1,0011 -1" {
		t.Fatalf("calls %v after -", calls)
	}
	// The help says the keys.
	press(m, "?")
	if s := plain(screen(t, m)); !strings.Contains(s, "queue: raise priority") || !strings.Contains(s, "queue: lower priority") {
		t.Fatalf("help does not say the queue keys:\n%s", s)
	}
}

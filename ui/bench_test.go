package ui

import (
	"context"
	"testing"

	tea "charm.land/bubbletea/v2"

	"orcr/core/wire"
	roleapi "orcr/roles/api"
)

func benchModel(b *testing.B, n int) *Model {
	m, err := New(context.Background(), nil, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(m.Close)
	m.c.now = t0
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	m.Update(listMsg{agents: manyAgents(n)})
	m.Update(queueMsg{q: fixtureQueue()})
	m.Update(usageMsg{u: fixtureUsage()})
	m.View()
	return m
}

// benchKeystroke measures one key press through Update plus the View that follows it.
func benchKeystroke(b *testing.B, n int) {
	m := benchModel(b, n)
	down, up := key("down"), key("up")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := down
		if i%2 == 1 {
			k = up
		}
		m.Update(k)
		_ = m.View()
	}
}

func BenchmarkKeystroke100(b *testing.B)   { benchKeystroke(b, 100) }
func BenchmarkKeystroke10000(b *testing.B) { benchKeystroke(b, 10_000) }

// BenchmarkFirstFrame1000 is model construction plus the first full frame after the
// initial List result with 1,000 agents.
func BenchmarkFirstFrame1000(b *testing.B) {
	agents := manyAgents(1000)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		m, err := New(context.Background(), nil, Options{})
		if err != nil {
			b.Fatal(err)
		}
		m.c.now = t0
		m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
		m.Update(listMsg{agents: agents})
		_ = m.View()
		m.Close()
	}
}

// BenchmarkStateEvent10000 is one agent.state event (an existing agent changes state)
// plus the frame after it, with 10,000 agents.
func BenchmarkStateEvent10000(b *testing.B) {
	m := benchModel(b, 10_000)
	agents := manyAgents(10_000)
	states := []wire.State{wire.StateWorking, wire.StateBlocked, wire.StateDone}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a := agents[(i*7919)%len(agents)]
		a.State = states[i%3]
		a.UpdatedAt = t0.Add(1)
		m.Update(eventsMsg{events: []wire.Event{{Event: wire.EventAgentState, Seq: uint64(i + 1), At: t0, Agent: &a}}})
		_ = m.View()
	}
}

// BenchmarkHistoryKeystroke10000 is one key press in the history view over 10,000
// finished agents plus the frame after it (the dashboard's 10,000 agents behind it).
func BenchmarkHistoryKeystroke10000(b *testing.B) {
	m := benchModel(b, 10_000)
	m.Update(key("H"))
	d := m.dialogs[len(m.dialogs)-1].(*historyDialog)
	m.Update(historyMsg{seq: d.seq, res: roleapi.AgentHistoryResult{Entries: manyHistory(10_000)}})
	m.View()
	down, up := key("down"), key("up")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := down
		if i%2 == 1 {
			k = up
		}
		m.Update(k)
		_ = m.View()
	}
}

// BenchmarkFind10000 is one key typed into the finder (a letter, then its backspace,
// in turn) over 10,000 agents, plus the frame after it: the tree is searched again on
// every keystroke. The budget is 16 ms.
func BenchmarkFind10000(b *testing.B) {
	m := benchModel(b, 10_000)
	m.Update(key("/"))
	typeText(m, "tm12")
	letter, back := key("3"), key("backspace")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := letter
		if i%2 == 1 {
			k = back
		}
		m.Update(k)
		_ = m.View()
	}
}

// BenchmarkSortedStateEvent10000 is one agent.state event with the tree sorted by state
// (the rows are rebuilt and resorted) plus the frame after it, with 10,000 agents.
func BenchmarkSortedStateEvent10000(b *testing.B) {
	m := benchModel(b, 10_000)
	for range 3 {
		m.Update(key(">"))
	}
	agents := manyAgents(10_000)
	states := []wire.State{wire.StateWorking, wire.StateBlocked, wire.StateDone}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a := agents[(i*7919)%len(agents)]
		a.State = states[i%3]
		a.UpdatedAt = t0.Add(1)
		m.Update(eventsMsg{events: []wire.Event{{Event: wire.EventAgentState, Seq: uint64(i + 1), At: t0, Agent: &a}}})
		_ = m.View()
	}
}

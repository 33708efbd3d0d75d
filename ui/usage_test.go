package ui

import (
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
)

// TestUsageBarsPerAccount: the usage panel draws one bar per account and window
// (per model family), ending at the limit, with the reset and what the window holds
// in the queue; the tree shows the account beside the model.
func TestUsageBarsPerAccount(t *testing.T) {
	m := newTestModel(t, 220, 40, Options{})
	r1, r2 := t0.Add(2*time.Hour), t0.Add(50*time.Hour)
	a := agent("0001", "q/x", wire.StateWorking, "claude", "claude-opus-4-5", time.Minute, 10, nil)
	a.Account = "work"
	m.Update(listMsg{agents: []wire.Agent{a}})
	m.Update(queueMsg{q: wire.QueueResult{Entries: []wire.QueueEntry{{Pos: 1, Path: "q/y", Provider: "claude",
		Waiting: "claude/work weekly opus window full, resets 14:00"}}}})
	m.Update(usageMsg{u: wire.UsageResult{Readings: []wire.LimitReading{
		{Provider: "claude", Account: "work", Window: "5h", UsedPct: 63, ResetsAt: &r1, ObservedAt: t0},
		{Provider: "claude", Account: "work", Window: "weekly", Family: "opus", UsedPct: 100, LimitHit: true, ResetsAt: &r2, ObservedAt: t0},
		{Provider: "claude", Account: "spare", Window: "5h", UsedPct: 12, ResetsAt: &r1, ObservedAt: t0},
	}}})
	m.panel.tab = tabUsage
	view := plain(m.panel.View()) + "\n" + plain(m.tree.View())
	for _, want := range []string{"  spare", "  work", "5h", "weekly opus", "63%", "100% LIMIT", "holds 1", "resets " + r2.UTC().Format("Jan 2 15:04"), "@work claude-"} {
		if !strings.Contains(view, want) {
			t.Errorf("view lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(view)
	}
	// The opus bar is full to its end (the axis is the limit); spare's is short.
	var opus, spare string
	for _, l := range strings.Split(view, "\n") {
		if strings.Contains(l, "weekly opus") {
			opus = l
		}
		if strings.Contains(l, "12%") {
			spare = l
		}
	}
	if strings.Contains(opus, "░") || !strings.Contains(spare, "░") {
		t.Errorf("bars: opus %q spare %q", opus, spare)
	}
}

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

// TestUsageNoReadingsYet: an account agents ran on without a limit reading says "no
// readings yet" under its provider, as does a provider with no reading at all; an
// account with readings draws its bars only.
func TestUsageNoReadingsYet(t *testing.T) {
	m := newTestModel(t, 160, 40, Options{})
	r1 := t0.Add(2 * time.Hour)
	m.Update(usageMsg{u: wire.UsageResult{
		Rows: []wire.UsageRow{
			{Provider: "claude", Account: "work", Window: "total", Agents: 1, Usage: wire.Usage{InputTokens: 100}},
			{Provider: "claude", Account: "spare", Window: "total", Agents: 1, Usage: wire.Usage{InputTokens: 50}},
			{Provider: "codex", Window: "total", Agents: 1, Usage: wire.Usage{InputTokens: 10}},
		},
		Readings: []wire.LimitReading{{Provider: "claude", Account: "work", Window: "5h", UsedPct: 40, ResetsAt: &r1, ObservedAt: t0}},
	}})
	m.panel.tab = tabUsage
	lines := strings.Split(plain(strings.Join(m.panel.usage.lines(m.c, 120, nil), "\n")), "\n")
	has := func(words ...string) bool {
		for _, l := range lines {
			ok := true
			for _, w := range words {
				ok = ok && strings.Contains(l, w)
			}
			if ok {
				return true
			}
		}
		return false
	}
	if !has("spare", "no readings yet") || has("work", "no readings yet") {
		t.Errorf("per account:\n%s", strings.Join(lines, "\n"))
	}
	n := 0
	for _, l := range lines {
		if strings.Contains(l, "no readings yet") {
			n++
		}
	}
	if n != 2 { // spare, and codex
		t.Errorf("%d lines say no readings yet, want 2:\n%s", n, strings.Join(lines, "\n"))
	}
	screen(t, m)
}

package ui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"orcr/core/wire"
	schedapi "orcr/schedule/api"
)

// t0 is the fixed clock of every test, so ages and golden files are stable.
var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func cost(c float64) *float64 { return &c }

func agent(id, path string, st wire.State, prov, model string, age time.Duration, tok int64, usd *float64) wire.Agent {
	return wire.Agent{ID: id, Path: path, State: st, Provider: prov, Model: model, Host: "tmux",
		CreatedAt: t0.Add(-age), StateAt: t0.Add(-age / 2), UpdatedAt: t0.Add(-age / 2),
		Usage: wire.Usage{InputTokens: tok * 3 / 4, OutputTokens: tok / 4, CostUSD: usd, Priced: usd != nil}}
}

// fixture is a small fleet covering every state group, nesting, roll-ups and a blocked
// agent with options.
func fixture() []wire.Agent {
	blocked := agent("0007", "review/auth/security", wire.StateBlocked, "claude", "sonnet-4.5", 12*time.Minute, 48_000, cost(0.61))
	blocked.StateSource, blocked.StateReason = "hook", "PermissionRequest"
	blocked.Blocked = permissionPrompt()
	blocked.LastMessage = "I need to clean the build directory before running the tests."
	lead := agent("0006", "review/auth", wire.StateWorking, "claude", "opus-4.1", 30*time.Minute, 220_000, cost(4.2))
	lead.StateSource, lead.StateReason = "transcript", "assistant turn in progress"
	code := 1
	exited := agent("0009", "build/lint", wire.StateExited, "shell", "", 3*time.Hour, 0, nil)
	exited.ExitCode = &code
	return []wire.Agent{
		agent("0001", "demo/a", wire.StateWorking, "codex", "gpt-5-codex", 90*time.Second, 5_400, cost(0.05)),
		agent("0002", "demo/b", wire.StateIdle, "pi", "", 5*time.Minute, 0, nil),
		agent("0003", "demo/c", wire.StateQueued, "claude", "haiku-4.5", 10*time.Second, 0, nil),
		agent("0004", "demo/nested/deep/d", wire.StateDone, "opencode", "qwen3-coder", 2*time.Hour, 1_250_000, cost(12.5)),
		agent("0005", "review/api", wire.StateStarting, "codex", "gpt-5", 3*time.Second, 0, nil),
		lead, blocked,
		agent("0008", "review/auth/tests", wire.StateLost, "claude", "sonnet-4.5", 26*time.Hour, 9_000, cost(0.12)),
		exited,
	}
}

func fixtureQueue() wire.QueueResult {
	return wire.QueueResult{Global: 8, Caps: map[string]int{"claude": 4, "codex": 2}, MinFreeMB: 512, FreeMB: 3120,
		Running: map[string]int{"claude": 3, "codex": 2, "pi": 1}, Total: 6,
		Entries: []wire.QueueEntry{{Pos: 1, AgentID: "0003", Path: "demo/c", Provider: "claude", QueuedAt: t0, Waiting: "claude cap 4"}}}
}

func fixtureUsage() wire.UsageResult {
	r1, r2 := t0.Add(2*time.Hour), t0.Add(100*time.Hour)
	return wire.UsageResult{
		Rows: []wire.UsageRow{
			{Provider: "claude", Model: "sonnet-4.5", Window: "total", Agents: 3, Usage: wire.Usage{InputTokens: 200_000, OutputTokens: 77_000, CostUSD: cost(4.93)}},
			{Provider: "codex", Model: "gpt-5-codex", Window: "total", Agents: 2, Usage: wire.Usage{InputTokens: 5_000, OutputTokens: 400, CostUSD: cost(0.05)}},
		},
		Readings: []wire.LimitReading{
			{Provider: "claude", Window: "5h", UsedPct: 82, ResetsAt: &r1, ObservedAt: t0},
			{Provider: "claude", Window: "weekly", UsedPct: 31, ResetsAt: &r2, ObservedAt: t0},
			{Provider: "codex", Window: "5h", UsedPct: 100, LimitHit: true, ResetsAt: &r1, ObservedAt: t0},
		},
	}
}

func fixtureSchedules() []schedapi.Schedule {
	next := t0.Add(4 * time.Minute)
	code := 0
	end := t0.Add(-time.Minute)
	return []schedapi.Schedule{
		{Name: "nightly-review", Cron: "0 3 * * *", NextAt: &next, LastRun: &schedapi.ScheduleRun{StartedAt: t0.Add(-2 * time.Minute), EndedAt: &end, ExitCode: &code}},
		{Name: "triage", EverySeconds: 600, NextAt: &next},
	}
}

// newTestModel builds a dashboard fed with the fixture through typed messages only; the
// commands it returns are not run (svc is nil: any call would panic, so none may happen
// inside Update).
func newTestModel(t testing.TB, w, h int, opts Options) *Model {
	t.Helper()
	if opts.Mode == "" {
		opts.Mode = "in-process"
	}
	m, err := New(context.Background(), nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	m.c.now = t0
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	m.Update(infoMsg{info: wire.InfoResult{Version: 1, Host: "tmux", LastSeq: 10,
		Providers: []string{"claude", "codex", "opencode", "pi", "shell"}}})
	m.Update(subscribedMsg{ch: make(chan wire.Event)})
	m.Update(listMsg{agents: fixture()})
	m.Update(queueMsg{q: fixtureQueue()})
	m.Update(usageMsg{u: fixtureUsage()})
	m.Update(schedulesMsg{s: fixtureSchedules()})
	return m
}

func key(s string) tea.KeyPressMsg {
	switch s {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "left":
		return tea.KeyPressMsg{Code: tea.KeyLeft}
	case "right":
		return tea.KeyPressMsg{Code: tea.KeyRight}
	case "space":
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	case "pgdown":
		return tea.KeyPressMsg{Code: tea.KeyPgDown}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	case "ctrl+r":
		return tea.KeyPressMsg{Code: 'r', Mod: tea.ModCtrl}
	case "ctrl+s":
		return tea.KeyPressMsg{Code: 's', Mod: tea.ModCtrl}
	}
	r := []rune(s)[0]
	return tea.KeyPressMsg{Code: r, Text: s}
}

// press sends keys and returns the last command.
func press(m *Model, keys ...string) tea.Cmd {
	var cmd tea.Cmd
	for _, k := range keys {
		_, cmd = m.Update(key(k))
	}
	return cmd
}

// typeText sends each rune as a key press.
func typeText(m *Model, s string) {
	for _, r := range s {
		m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
}

// screen renders and checks the frame is exactly w×h cells.
func screen(t testing.TB, m *Model) string {
	t.Helper()
	out := m.View().Content
	lines := strings.Split(out, "\n")
	if len(lines) != m.h {
		t.Fatalf("frame has %d lines, want %d", len(lines), m.h)
	}
	for i, l := range lines {
		if w := ansi.StringWidth(l); w != m.w {
			t.Fatalf("line %d is %d cells wide, want %d: %q", i, w, m.w, ansi.Strip(l))
		}
	}
	return out
}

func plain(s string) string { return ansi.Strip(s) }

// manyAgents builds n agents spread over a few levels of paths.
func manyAgents(n int) []wire.Agent {
	states := []wire.State{wire.StateWorking, wire.StateIdle, wire.StateDone, wire.StateQueued, wire.StateBlocked, wire.StateExited}
	out := make([]wire.Agent, n)
	for i := range out {
		out[i] = agent(fmt.Sprintf("id%05d", i), fmt.Sprintf("team%02d/sub%02d/agent%05d", i%20, (i/20)%10, i),
			states[i%len(states)], "claude", "sonnet-4.5", time.Duration(i)*time.Second, int64(i*100), cost(float64(i)/100))
	}
	return out
}

// permissionPrompt is claude 2.1.328's Bash prompt as the adapter reads it.
func permissionPrompt() *wire.Blocked {
	return &wire.Blocked{Kind: wire.BlockedPermission, Detail: "Bash(rm -rf build)", Question: "Do you want to proceed?",
		Options: []wire.Option{
			{Label: "Yes", Key: "1", Meaning: wire.MeaningAllowOnce},
			{Label: "Yes, and always allow access to /w/build from this project", Key: "2", Meaning: wire.MeaningAllowAlways},
			{Label: "Yes, and switch to auto mode", Key: "3", Meaning: wire.MeaningOther},
			{Label: "No", Key: "4", Meaning: wire.MeaningDeny, Text: true},
		}}
}

// planPrompt is claude 2.1.328's plan approval as the adapter reads it.
func planPrompt() *wire.Blocked {
	var plan strings.Builder
	plan.WriteString("# Split the parser\n\n")
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&plan, "%d. Step %d: move one token kind into the lexer and keep the old API as a thin wrapper around it.\n", i, i)
	}
	return &wire.Blocked{Kind: wire.BlockedPlan, Detail: "plan", Text: strings.TrimSpace(plan.String()),
		Question: "Claude has written up a plan and is ready to execute. Would you like to proceed?",
		Options: []wire.Option{
			{Label: "Yes, and use auto mode", Key: "1", Meaning: wire.MeaningOther},
			{Label: "Yes, manually approve edits", Key: "2", Meaning: wire.MeaningAllowOnce},
			{Label: "Tell Claude what to change", Key: "3", Meaning: wire.MeaningDeny, Text: true},
		}}
}

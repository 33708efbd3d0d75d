package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/golden"

	"orcr/core/wire"
	roleapi "orcr/roles/api"
	"orcr/themes"
)

// fixtureHistory is what history.list answers for a small fleet, newest first: a
// reviewer with a role and a cost, a resumed one, a killed one, a failure, a shell.
func fixtureHistory() []roleapi.AgentHistoryEntry {
	code0, code1 := "exit 0", "exit 1"
	return []roleapi.AgentHistoryEntry{
		{ID: "0101", Path: "audit/auth", Role: "reviewer", Provider: "claude", Model: "sonnet", State: wire.StateExited,
			Result: code0, EndedAt: t0.Add(-2 * time.Minute), DurationSeconds: 754, Tokens: 48_200, CostUSD: cost(0.61), Resumable: true},
		{ID: "0102", Path: "audit/api", Role: "reviewer", Provider: "codex", Model: "gpt-5.5", State: wire.StateKilled,
			Result: "killed: hard_timeout (40m)", EndedAt: t0.Add(-50 * time.Minute), DurationSeconds: 2400, Tokens: 310_000,
			CostUSD: cost(2.02), Resumable: true, ResumedFrom: "0090"},
		{ID: "0103", Path: "impl/parser", Role: "implementor", Provider: "claude", Model: "opus", State: wire.StateFailed,
			Result: "failed: claude not found; install it with npm i -g @anthropic-ai/claude-code", EndedAt: t0.Add(-3 * time.Hour)},
		{ID: "0104", Path: "build/lint", Provider: "shell", State: wire.StateExited, Result: code1,
			EndedAt: t0.Add(-26 * time.Hour), DurationSeconds: 12},
	}
}

// openHistory opens the history view on the fixture.
func openHistory(t testing.TB, w, h int, opts Options) (*Model, *historyDialog) {
	t.Helper()
	m := newTestModel(t, w, h, opts)
	press(m, "H")
	d, ok := topDialog(m).(*historyDialog)
	if !ok {
		t.Fatal("H opened no history view")
	}
	m.Update(historyMsg{seq: d.seq, res: roleapi.AgentHistoryResult{Entries: fixtureHistory()}})
	return m, d
}

func topDialog(m *Model) dialog {
	if len(m.dialogs) == 0 {
		return nil
	}
	return m.dialogs[len(m.dialogs)-1]
}

func TestGoldenHistory(t *testing.T) {
	for _, theme := range themes.BuiltinNames {
		for _, sz := range [][2]int{{80, 24}, {160, 48}} {
			t.Run(fmt.Sprintf("%s_%dx%d", theme, sz[0], sz[1]), func(t *testing.T) {
				m, _ := openHistory(t, sz[0], sz[1], Options{Theme: theme})
				press(m, "down")
				golden.RequireEqual(t, screen(t, m))
			})
		}
	}
	for _, sz := range [][2]int{{80, 24}, {160, 48}} {
		t.Run(fmt.Sprintf("resume_%dx%d", sz[0], sz[1]), func(t *testing.T) {
			m, _ := openHistory(t, sz[0], sz[1], Options{})
			press(m, "enter")
			typeText(m, "now check the session cookie too")
			golden.RequireEqual(t, screen(t, m))
		})
		t.Run(fmt.Sprintf("filter_%dx%d", sz[0], sz[1]), func(t *testing.T) {
			m, _ := openHistory(t, sz[0], sz[1], Options{})
			press(m, "/")
			typeText(m, "audit/** --since 24h")
			golden.RequireEqual(t, screen(t, m))
		})
	}
}

func TestHistoryListsLikeTheCLI(t *testing.T) {
	m, d := openHistory(t, 160, 48, Options{})
	s := plain(screen(t, m))
	// Newest first, each with role, duration, tokens, cost and result as core.HistoryRow has them.
	var last int
	for _, e := range fixtureHistory() {
		r := roleapi.HistoryRow(e, t0)
		i := strings.Index(s, e.Path)
		if i < last {
			t.Fatalf("%s not after the entry before it:\n%s", e.Path, s)
		}
		last = i
		line := lineWith(s, e.Path)
		for _, col := range []string{r[0], r[2], r[5], r[6], r[7]} {
			if !strings.Contains(line, col) {
				t.Fatalf("row of %s lacks %q: %q", e.Path, col, line)
			}
		}
	}
	if !strings.Contains(lineWith(s, "audit/auth"), "↻") || strings.Contains(lineWith(s, "build/lint"), "↻") {
		t.Fatalf("resumable marks wrong:\n%s", s)
	}
	if !strings.Contains(s, "1/4") || !strings.Contains(s, "─ history ") {
		t.Fatalf("no position or title:\n%s", s)
	}
	// An answer to an older request (a filter since changed) is dropped.
	d.seq++
	m.Update(historyMsg{seq: d.seq - 1, res: roleapi.AgentHistoryResult{}})
	if len(d.entries) != 4 {
		t.Fatal("a stale answer replaced the list")
	}
	press(m, "esc")
	if len(m.dialogs) != 0 {
		t.Fatal("esc did not close the view")
	}
}

func lineWith(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

func TestHistoryFilter(t *testing.T) {
	m, d := openHistory(t, 120, 40, Options{})
	before := d.seq
	press(m, "/")
	typeText(m, "audit/** --since 24h")
	if d.seq != before {
		t.Fatal("typing the filter asked the server already")
	}
	press(m, "enter")
	if d.params != (roleapi.AgentHistoryParams{Glob: "audit/**", SinceSeconds: 86400}) || d.seq != before+1 || d.mode != historyList {
		t.Fatalf("filter applied as %+v (seq %d, mode %d)", d.params, d.seq, d.mode)
	}
	m.Update(historyMsg{seq: d.seq, res: roleapi.AgentHistoryResult{Entries: fixtureHistory()[:2]}})
	s := plain(screen(t, m))
	if !strings.Contains(s, "history · audit/** --since 24h") || strings.Contains(s, "impl/parser") {
		t.Fatalf("filtered view:\n%s", s)
	}
	// A bad filter says why and keeps the last one.
	press(m, "/")
	typeText(m, " --since soon")
	press(m, "enter")
	if s := plain(screen(t, m)); !strings.Contains(s, `--since "soon": use a duration`) || d.filter != "audit/** --since 24h" {
		t.Fatalf("bad filter:\n%s", s)
	}
	// Nothing matching says so.
	m.Update(historyMsg{seq: d.seq, res: roleapi.AgentHistoryResult{}})
	if s := plain(screen(t, m)); !strings.Contains(s, "no finished agents match audit/** --since 24h") {
		t.Fatalf("empty view:\n%s", s)
	}
}

func TestParseHistoryFilter(t *testing.T) {
	for _, c := range []struct {
		in   string
		want roleapi.AgentHistoryParams
		err  string
	}{
		{"", roleapi.AgentHistoryParams{}, ""},
		{"review/**", roleapi.AgentHistoryParams{Glob: "review/**"}, ""},
		{"--since 7d", roleapi.AgentHistoryParams{SinceSeconds: 7 * 86400}, ""},
		{"--since=90m 'a b/**'", roleapi.AgentHistoryParams{Glob: "a b/**", SinceSeconds: 5400}, ""},
		{"--since", roleapi.AgentHistoryParams{}, "needs a duration"},
		{"--since -1h", roleapi.AgentHistoryParams{}, "use a duration"},
		{"a/** b/**", roleapi.AgentHistoryParams{}, "one glob at most"},
		{"--json", roleapi.AgentHistoryParams{}, "unknown flag --json"},
		{"$HOME", roleapi.AgentHistoryParams{}, "sh -c"},
	} {
		got, err := parseHistoryFilter(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %+v %v, want %+v", c.in, got, err, c.want)
		}
	}
}

func TestHistoryResume(t *testing.T) {
	m, d := openHistory(t, 120, 40, Options{})
	// The shell entry cannot be resumed: it says why, nothing is asked.
	press(m, "G")
	if cmd := press(m, "enter"); cmd != nil || d.mode != historyList {
		t.Fatal("enter on a shell entry did something")
	}
	if s := plain(screen(t, m)); !strings.Contains(s, "build/lint cannot be resumed: the shell provider keeps no session") {
		t.Fatalf("no reason shown:\n%s", s)
	}
	// The first entry can: the message line, then agent.resume with it.
	press(m, "g", "enter")
	if d.mode != historyResume {
		t.Fatal("enter on a resumable entry offered no resume")
	}
	typeText(m, "now check the session cookie too")
	_, act := d.Update(key("enter"))
	ra, ok := act.(resumeAction)
	if !ok || ra.p != (wire.ResumeParams{Target: "0101", Prompt: "now check the session cookie too"}) {
		t.Fatalf("resume action %#v", act)
	}
	if cmd := m.updateAction(act); cmd == nil {
		t.Fatal("the root made no call of the resume")
	}
	// A refusal stays in the view.
	m.Update(resumedMsg{from: fixtureHistory()[0], err: &wire.Error{Code: wire.CodePathTaken, Message: "audit/auth is working again"}})
	if topDialog(m) != d || !strings.Contains(plain(screen(t, m)), "resume: audit/auth is working again") {
		t.Fatalf("refusal:\n%s", plain(screen(t, m)))
	}
	// Success closes the view and selects the new record in the tree.
	nu := agent("0201", "audit/auth", wire.StateQueued, "claude", "sonnet", 0, 0, nil)
	nu.Role, nu.ResumedFrom = "reviewer", "0101"
	m.Update(resumedMsg{from: fixtureHistory()[0], agent: nu})
	if len(m.dialogs) != 0 || m.selectedID() != "0201" {
		t.Fatalf("after resume: %d dialogs, selected %q", len(m.dialogs), m.selectedID())
	}
	if s := plain(screen(t, m)); !strings.Contains(s, "resumed audit/auth (continues 0101)") || !strings.Contains(s, "role reviewer") {
		t.Fatalf("after resume:\n%s", s)
	}
	// Esc backs out of the message line without resuming.
	m, d = openHistory(t, 120, 40, Options{})
	press(m, "enter", "esc")
	if d.mode != historyList || topDialog(m) != d {
		t.Fatal("esc on the message line")
	}
}

// TestHistoryRefreshesWhenAgentsEnd: the open view re-reads only after an agent ended.
func TestHistoryRefreshesWhenAgentsEnd(t *testing.T) {
	m, d := openHistory(t, 120, 40, Options{})
	seq := d.seq
	m.Update(historyTickMsg{d, d.gen})
	if d.seq != seq {
		t.Fatal("re-read with nothing ended")
	}
	ended := fixture()[0]
	ended.State, ended.UpdatedAt = wire.StateKilled, t0.Add(time.Second)
	m.Update(eventsMsg{events: []wire.Event{{Event: wire.EventAgentState, Seq: 12, At: t0, Agent: &ended, To: wire.StateKilled}}})
	m.Update(historyTickMsg{d, d.gen - 1}) // an older chain's tick
	if d.seq != seq {
		t.Fatal("an old tick drove a read")
	}
	other := newHistoryDialog(m.c)
	m.Update(historyTickMsg{other, d.gen}) // a closed view's tick
	if d.seq != seq {
		t.Fatal("another view's tick drove a read")
	}
	m.Update(historyTickMsg{d, d.gen})
	if d.seq != seq+1 || d.stale {
		t.Fatalf("no re-read after an agent ended (seq %d→%d)", seq, d.seq)
	}
	// A slow read spaces the refreshes out; a fast one keeps the floor.
	m.Update(historyMsg{seq: d.seq, res: roleapi.AgentHistoryResult{Entries: fixtureHistory()}, took: 400 * time.Millisecond})
	if d.every != 8*time.Second {
		t.Fatalf("refresh every %v after a 400 ms read", d.every)
	}
	m.Update(historyMsg{seq: d.seq, res: roleapi.AgentHistoryResult{Entries: fixtureHistory()}, took: time.Millisecond})
	if d.every != historyRefresh {
		t.Fatalf("refresh every %v after a 1 ms read", d.every)
	}
}

// TestHistoryScrollsLongLists: 10,000 entries, the selection stays on screen and the
// last one is reachable.
func TestHistoryScrollsLongLists(t *testing.T) {
	m, d := openHistory(t, 100, 30, Options{})
	m.Update(historyMsg{seq: d.seq, res: roleapi.AgentHistoryResult{Entries: manyHistory(10_000)}})
	press(m, "G")
	s := plain(screen(t, m))
	if !strings.Contains(s, "10000/10000") || !strings.Contains(s, "done/a09999") {
		t.Fatalf("bottom:\n%s", s)
	}
	press(m, "pgup", "up")
	s = plain(screen(t, m))
	if sel := fmt.Sprintf("a%05d", d.sel); !strings.Contains(lineWith(s, sel), "›") {
		t.Fatalf("selection %d not shown:\n%s", d.sel, s)
	}
	// A smaller terminal: the page shrinks around the selection.
	press(m, "G")
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 14})
	if s := plain(screen(t, m)); !strings.Contains(lineWith(s, "a09999"), "›") || !strings.Contains(s, "10000/10000") {
		t.Fatalf("after a resize:\n%s", s)
	}
}

func manyHistory(n int) []roleapi.AgentHistoryEntry {
	out := make([]roleapi.AgentHistoryEntry, n)
	for i := range out {
		out[i] = roleapi.AgentHistoryEntry{ID: fmt.Sprintf("h%05d", i), Path: fmt.Sprintf("done/a%05d", i), Role: "reviewer",
			Provider: "claude", Model: "sonnet", State: wire.StateExited, Result: "exit 0", EndedAt: t0.Add(-time.Duration(i) * time.Minute),
			DurationSeconds: i, Tokens: int64(i * 100), CostUSD: cost(float64(i) / 100), Resumable: i%2 == 0}
	}
	return out
}

// TestHibernatedAgentDrawnAndWoken: a hibernated agent shows z in the tree and says so
// in the preview; enter wakes it (agent.resume) instead of attaching, and the answer
// names it; steering it is allowed (the send wakes it with the text).
func TestHibernatedAgentDrawnAndWoken(t *testing.T) {
	m := newTestModel(t, 160, 48, Options{})
	z := agent("0301", "mem/sleepy", wire.StateHibernated, "claude", "sonnet", time.Hour, 1200, cost(0.02))
	z.Role, z.StateSource, z.StateReason = "reviewer", "server", "gc.idle_after (1s)"
	m.Update(listMsg{agents: []wire.Agent{z}})
	selectPath(t, m, "mem/sleepy")
	s := plain(screen(t, m))
	row := lineWith(s, " sleepy ")
	if !strings.Contains(row, "z sleepy") {
		t.Fatalf("tree row %q", row)
	}
	for _, want := range []string{"z hibernated  claude · sonnet · role reviewer", "asleep: its process stopped, its session kept · ⏎/a wakes it"} {
		if !strings.Contains(s, want) {
			t.Fatalf("preview lacks %q:\n%s", want, s)
		}
	}
	cmd := press(m, "enter")
	if cmd == nil || m.attaching || len(m.dialogs) != 0 {
		t.Fatal("enter on a hibernated agent did not wake it")
	}
	if !strings.Contains(plain(screen(t, m)), "waking mem/sleepy (resuming its session)") {
		t.Fatal("no waking notice")
	}
	m.Update(wokenMsg{path: "mem/sleepy"})
	if !strings.Contains(plain(screen(t, m)), "woke mem/sleepy: its session resumes") {
		t.Fatal("no woken notice")
	}
	m.Update(wokenMsg{path: "mem/sleepy", err: &wire.Error{Code: wire.CodeNoSession, Message: "the session file of mem/sleepy is gone"}})
	if !strings.Contains(plain(screen(t, m)), "wake mem/sleepy: the session file of mem/sleepy is gone") {
		t.Fatal("no wake error")
	}
	press(m, "s")
	if _, ok := topDialog(m).(*steerDialog); !ok {
		t.Fatal("steering a hibernated agent refused")
	}
	// Once woken it is drawn live again.
	press(m, "esc")
	z.State, z.UpdatedAt = wire.StateIdle, t0.Add(time.Second)
	m.Update(eventsMsg{events: []wire.Event{{Event: wire.EventAgentState, Seq: 12, At: t0, Agent: &z, From: wire.StateQueued, To: wire.StateIdle}}})
	if row := lineWith(plain(screen(t, m)), " sleepy "); !strings.Contains(row, "○ sleepy") {
		t.Fatalf("woken row %q", row)
	}
}

// TestHistoryNoOverflowAnyWidth: every width from the minimum, each mode, exactly w×h.
func TestHistoryNoOverflowAnyWidth(t *testing.T) {
	for _, h := range []int{10, 24, 37} {
		for w := minW; w <= 200; w += 3 {
			m, _ := openHistory(t, w, h, Options{Theme: "high-contrast"})
			screen(t, m)
			press(m, "/")
			screen(t, m)
			press(m, "esc", "enter")
			screen(t, m)
			press(m, "esc", "G", "enter")
			screen(t, m)
		}
	}
}

// TestRoleShownPerAgent: the preview names an agent's role; a tree wide enough for the
// role column shows it on the agent's row (and nothing on rows without one).
func TestRoleShownPerAgent(t *testing.T) {
	for _, w := range []int{120, 160, 230} {
		m := newTestModel(t, w, 40, Options{})
		rv := agent("0401", "audit/cookies", wire.StateWorking, "claude", "sonnet", time.Minute, 100, cost(0.01))
		rv.Role = "reviewer"
		m.Update(listMsg{agents: []wire.Agent{rv}})
		selectPath(t, m, "audit/cookies")
		s := plain(screen(t, m))
		if !strings.Contains(s, "● working  claude · sonnet · role reviewer") {
			t.Fatalf("%d: preview lacks the role:\n%s", w, s)
		}
		inTree := layoutColumns(m.tree.w-2, m.tree.wants()).role > 0
		treePart := func(l string) string { return string([]rune(l)[:m.tree.w]) }
		row, other := treePart(lineWith(s, " cookies ")), treePart(lineWith(s, " security "))
		if strings.Contains(row, "reviewer") != inTree || strings.Contains(other, "reviewer") {
			t.Fatalf("%d: role column %v, rows:\n%q\n%q", w, inTree, row, other)
		}
		if w == 230 && !inTree {
			t.Fatal("no role column at 230 columns")
		}
	}
}

// TestHistoryLoadsPagesAsItScrolls: the view holds the first page of a long history;
// the next is asked for once the selection nears the last entry loaded (once, not per
// key), goes after the entries, and a page answering entries a refresh replaced since
// is dropped.
func TestHistoryLoadsPagesAsItScrolls(t *testing.T) {
	m, d := openHistory(t, 100, 30, Options{})
	all := manyHistory(3 * historyChunk)
	m.Update(historyMsg{seq: d.seq, res: roleapi.AgentHistoryResult{Entries: all[:historyChunk], Next: "c1"}})
	if d.more != "" {
		t.Fatal("the next page was asked for with the selection at the top")
	}
	if s := plain(screen(t, m)); !strings.Contains(s, fmt.Sprintf("1/%d+", historyChunk)) {
		t.Fatalf("the count does not say more entries follow:\n%s", s)
	}
	press(m, "G")
	if d.more != "c1" {
		t.Fatalf("at the last loaded entry the next page was not asked for (more %q)", d.more)
	}
	seq := d.seq
	press(m, "up", "down")
	if d.more != "c1" || d.seq != seq {
		t.Fatal("a second key asked again")
	}
	m.Update(historyMsg{seq: d.seq, after: "c1", res: roleapi.AgentHistoryResult{Entries: all[historyChunk : 2*historyChunk], Next: "c2"}})
	if len(d.entries) != 2*historyChunk || d.next != "c2" || d.more != "" || d.entries[historyChunk].ID != all[historyChunk].ID {
		t.Fatalf("the page did not go after the entries: %d entries, next %q", len(d.entries), d.next)
	}
	press(m, "G")
	if d.more != "c2" {
		t.Fatalf("the third page was not asked for (more %q)", d.more)
	}
	// A refresh replaces the entries before the page arrives: the page is dropped.
	press(m, "r")
	m.Update(historyMsg{seq: d.seq, res: roleapi.AgentHistoryResult{Entries: all[:historyChunk], Next: "c1"}})
	m.Update(historyMsg{seq: d.seq, after: "c2", res: roleapi.AgentHistoryResult{Entries: all[2*historyChunk:]}})
	if len(d.entries) != historyChunk {
		t.Fatalf("a page for replaced entries was appended: %d entries", len(d.entries))
	}
}

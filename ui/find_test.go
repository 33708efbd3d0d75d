package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"

	"orcr/core/wire"
	"orcr/themes"
)

// rowPaths is the tree's rows, by path.
func rowPaths(m *Model) string {
	var out []string
	for _, n := range m.idx.rows() {
		out = append(out, n.path)
	}
	return strings.Join(out, " ")
}

// zeta adds agents the fixture lacks: a fuzzy target, a role, a long model name and
// numbered siblings that sort naturally.
func zeta(m *Model) {
	a12 := agent("0031", "zeta/alpha/a12", wire.StateWorking, "claude", "claude-sonnet-4-5-20250929", time.Minute, 100, cost(0.01))
	a12.Role = "reviewer"
	a2 := agent("0032", "zeta/alpha/a2", wire.StateIdle, "codex", "gpt-5", 2*time.Minute, 100, cost(0.02))
	a10 := agent("0033", "zeta/alpha/a10", wire.StateDone, "pi", "", 3*time.Minute, 100, cost(0.03))
	m.Update(listMsg{agents: []wire.Agent{a12, a2, a10}})
}

// TestFindFuzzy: `/alp12` finds zeta/alpha/a12 (letters in order, not adjacent), selects
// it as the letters are typed, and enter leaves the tree narrowed with it selected; the
// finder also searches roles, providers, models and what an agent is blocked on.
func TestFindFuzzy(t *testing.T) {
	m := newTestModel(t, 120, 30, Options{})
	zeta(m)
	press(m, "/")
	typeText(m, "alp12")
	if got := rowPaths(m); got != "zeta zeta/alpha zeta/alpha/a12" {
		t.Fatalf("/alp12 rows: %s", got)
	}
	if a := m.tree.selected(); a == nil || a.Path != "zeta/alpha/a12" {
		t.Fatalf("/alp12 selects %+v", a)
	}
	press(m, "enter")
	if m.tree.filtering || m.idx.filter != "alp12" {
		t.Fatal("enter did not keep the finder's words")
	}
	if s := plain(screen(t, m)); !strings.Contains(s, "/ alp12  1 match") {
		t.Fatalf("finder line:\n%s", s)
	}
	for word, want := range map[string]string{
		"reviewer":  "zeta/alpha/a12",       // role
		"opencode":  "demo/nested/deep/d",   // provider
		"qwen3":     "demo/nested/deep/d",   // model
		"rmrfbuild": "review/auth/security", // blocked on Bash(rm -rf build)
		"permreq":   "review/auth/security", // the state's reason (PermissionRequest)
		"dmnstd":    "demo/nested/deep/d",   // fuzzy within the path
	} {
		press(m, "/")
		for range 20 {
			press(m, "backspace")
		}
		typeText(m, word)
		press(m, "enter")
		if a := m.tree.selected(); a == nil || a.Path != want {
			t.Errorf("/%s selects %+v, want %s (rows %s)", word, a, want, rowPaths(m))
		}
	}
	// Several words must all match; words spread over two fields do not match one.
	m.idx.setFilter("claude sec")
	if got := rowPaths(m); got != "review review/auth review/auth/security" {
		t.Fatalf("two words: %s", got)
	}
	m.idx.setFilter("sec")
	if got := rowPaths(m); strings.Contains(got, "demo") {
		t.Fatalf("sec matches across fields: %s", got)
	}
	press(m, "esc")
	if m.idx.filter != "" || strings.Contains(plain(screen(t, m)), "/ sec") {
		t.Fatal("esc did not clear the finder")
	}
}

// TestFindBestMatchFirst: of several matches the one matching in the path, at word
// starts, adjacent, is selected.
func TestFindBestMatchFirst(t *testing.T) {
	m := newTestModel(t, 120, 30, Options{})
	zeta(m)
	press(m, "/")
	typeText(m, "a10")
	if a := m.tree.selected(); a == nil || a.Path != "zeta/alpha/a10" {
		t.Fatalf("/a10 selects %+v (rows %s)", a, rowPaths(m))
	}
}

// TestFindState: `state:blocked` keeps the blocked agents; a status name works too, an
// ended state shows the ended agents it names, and an unknown one says which exist.
func TestFindState(t *testing.T) {
	m := newTestModel(t, 120, 30, Options{})
	press(m, "/")
	typeText(m, "state:blocked")
	press(m, "enter")
	if got := rowPaths(m); got != "review review/auth review/auth/security" {
		t.Fatalf("state:blocked: %s", got)
	}
	m.idx.setFilter("state:exited,lost")
	if got := rowPaths(m); got != "build build/lint review review/auth review/auth/tests" {
		t.Fatalf("state:exited,lost: %s", got)
	}
	m.idx.setFilter("state:working auth")
	if got := rowPaths(m); got != "review review/auth" {
		t.Fatalf("state:working auth: %s", got)
	}
	press(m, "/")
	for range 30 {
		press(m, "backspace")
	}
	typeText(m, "state:nope")
	press(m, "enter")
	if s := plain(screen(t, m)); !strings.Contains(s, `unknown state "nope": queued`) {
		t.Fatalf("unknown state not said:\n%s", s)
	}
	if got := rowPaths(m); got != "" {
		t.Fatalf("an unknown state matches: %s", got)
	}
}

// TestStatusCycle: f cycles all → needs-me → working → ended → all; the finder's line
// names the status, and esc goes back to all.
func TestStatusCycle(t *testing.T) {
	m := newTestModel(t, 120, 30, Options{})
	want := []struct{ status, rows string }{
		{"needs-me", "build build/lint demo demo/nested demo/nested/deep demo/nested/deep/d review review/auth review/auth/security review/auth/tests"},
		{"working", "demo demo/a demo/c review review/api review/auth"},
		{"ended", "build build/lint review review/auth review/auth/tests"},
		// The ended agent selected in the last status keeps its row (it is pinned).
		{"all", "build build/lint demo demo/a demo/b demo/c demo/nested demo/nested/deep demo/nested/deep/d review review/api review/auth review/auth/security"},
	}
	for _, w := range want {
		press(m, "f")
		if m.idx.status.String() != w.status {
			t.Fatalf("f: status %s, want %s", m.idx.status, w.status)
		}
		if got := rowPaths(m); got != w.rows {
			t.Fatalf("%s rows:\n%s\nwant\n%s", w.status, got, w.rows)
		}
		s := plain(screen(t, m))
		if on := strings.Contains(s, w.status+" · "); on != (w.status != "all") {
			t.Fatalf("%s: finder line shown %v:\n%s", w.status, on, s)
		}
	}
	press(m, "f")
	press(m, "esc")
	if m.idx.status != statusAll {
		t.Fatal("esc did not reset the status")
	}
}

// TestEndedHiddenByDefault: killed and exited agents do not grow the tree; `.` shows
// them and hides them again; the title says how many are hidden.
func TestEndedHiddenByDefault(t *testing.T) {
	m := newTestModel(t, 120, 30, Options{})
	base := len(m.idx.rows())
	var evs []wire.Event
	for i := range 40 {
		st := wire.StateKilled
		if i%2 == 1 {
			st = wire.StateExited
		}
		a := agent(fmt.Sprintf("k%03d", i), fmt.Sprintf("old/w%d", i), st, "claude", "sonnet-4.5", time.Hour, 0, nil)
		evs = append(evs, wire.Event{Event: wire.EventAgentState, Seq: uint64(11 + i), At: t0, Agent: &a})
	}
	m.Update(eventsMsg{events: evs})
	if got := len(m.idx.rows()); got != base {
		t.Fatalf("ended agents grew the tree: %d rows, was %d", got, base)
	}
	if s := plain(screen(t, m)); !strings.Contains(s, "agents 49 · 1 blocked · 42 ended hidden") {
		t.Fatalf("title:\n%s", strings.SplitN(s, "\n", 2)[0])
	}
	press(m, ".")
	if got := len(m.idx.rows()); got != base+3+41 { // build, build/lint, tests; old and 40 below
		t.Fatalf(". shows %d rows, want %d", got, base+3+41)
	}
	press(m, ".")
	if got := len(m.idx.rows()); got != base {
		t.Fatalf(". again: %d rows, want %d", got, base)
	}
}

// TestSelectedAgentThatEndsKeepsItsRow: the agent under the cursor keeps its row when it
// exits; once the selection moves on, the row goes.
func TestSelectedAgentThatEndsKeepsItsRow(t *testing.T) {
	m := newTestModel(t, 120, 30, Options{})
	selectPath(t, m, "demo/a")
	a := fixture()[0]
	a.State, a.UpdatedAt = wire.StateKilled, t0.Add(time.Second)
	m.Update(eventsMsg{events: []wire.Event{{Event: wire.EventAgentState, Seq: 11, At: t0, Agent: &a}}})
	if s := m.tree.selected(); s == nil || s.Path != "demo/a" || !strings.Contains(rowPaths(m), "demo/a") {
		t.Fatalf("the killed agent lost its row: sel %+v rows %s", s, rowPaths(m))
	}
	press(m, "down")
	if s := m.tree.selected(); s == nil || s.Path != "demo/b" || strings.Contains(rowPaths(m), "demo/a ") {
		t.Fatalf("after moving on: sel %+v rows %s", s, rowPaths(m))
	}
}

// TestSortCycle: > cycles path → age → cost → state → path; path is natural (a2 before
// a10); the header marks the order.
func TestSortCycle(t *testing.T) {
	m := newTestModel(t, 200, 50, Options{})
	zeta(m)
	leaves := func() string {
		var out []string
		for _, n := range m.idx.rows() {
			if strings.HasPrefix(n.path, "zeta/alpha/") {
				out = append(out, n.name)
			}
		}
		return strings.Join(out, " ")
	}
	tops := func() string {
		var out []string
		for _, n := range m.idx.rows() {
			if n.depth == 0 {
				out = append(out, n.name)
			}
		}
		return strings.Join(out, " ")
	}
	if got := leaves(); got != "a2 a10 a12" {
		t.Fatalf("path order: %s", got)
	}
	header := func() string { return lineWith(plain(screen(t, m)), "PATH") }
	if h := header(); !strings.Contains(h, "PATH▾") {
		t.Fatalf("header: %s", h)
	}
	press(m, ">")
	if got := leaves(); got != "a12 a2 a10" { // newest first
		t.Fatalf("age order: %s", got)
	}
	if h := header(); !strings.Contains(h, "AGE▾") {
		t.Fatalf("header: %s", h)
	}
	press(m, ">")
	if got := tops(); got != "demo review zeta" { // $12.55, $4.93, $0.06
		t.Fatalf("cost order: %s", got)
	}
	if got := leaves(); got != "a10 a2 a12" {
		t.Fatalf("cost order: %s", got)
	}
	press(m, ">")
	if got := tops(); got != "review demo zeta" { // blocked first, then working
		t.Fatalf("state order: %s", got)
	}
	if h := header(); !strings.Contains(h, "STATE▾") {
		t.Fatalf("header: %s", h)
	}
	press(m, ">")
	if m.idx.sort != sortPath || leaves() != "a2 a10 a12" {
		t.Fatalf("back to path: %s %s", m.idx.sort, leaves())
	}
	// Narrow, the sorted column is not shown: the path header says the order.
	m = newTestModel(t, 80, 24, Options{})
	press(m, ">", ">")
	if h := header(); !strings.Contains(h, "PATH · by cost▾") {
		t.Fatalf("narrow header: %s", h)
	}
}

// TestColumnHeaders: the header names every column shown, at every width.
func TestColumnHeaders(t *testing.T) {
	for w := minW; w <= 260; w += 7 {
		m := newTestModel(t, w, 30, Options{})
		h := lineWith(plain(screen(t, m)), "PATH")
		cols := layoutColumns(m.tree.w-2, m.tree.wants())
		for _, c := range []struct {
			label string
			on    bool
		}{{"STATE", cols.state > 0}, {"PROVIDER", cols.provider > 0}, {"MODEL", cols.model > 0},
			{"AGE", cols.age > 0}, {"TOKENS", cols.tokens > 0}, {"COST", cols.cost > 0}} {
			if strings.Contains(h, c.label) != c.on {
				t.Fatalf("%d: %s shown %v, header %q", w, c.label, c.on, h)
			}
		}
	}
}

// TestNoLabelCut: an inner node's roll-up is never cut mid-word ("48 agen… 4 blocked"),
// and a long model name is whole at 250 columns.
func TestNoLabelCut(t *testing.T) {
	for w := minW; w <= 260; w++ {
		m := newTestModel(t, w, 30, Options{})
		zeta(m)
		var evs []wire.Event
		for i := range 48 {
			st := wire.StateWorking
			if i%12 == 0 {
				st = wire.StateBlocked
			}
			a := agent(fmt.Sprintf("f%03d", i), fmt.Sprintf("fleet/w%d", i), st, "claude", "sonnet-4.5", time.Minute, 0, nil)
			evs = append(evs, wire.Event{Event: wire.EventAgentState, Seq: uint64(11 + i), At: t0, Agent: &a})
		}
		m.Update(eventsMsg{events: evs})
		selectPath(t, m, "fleet/w0")
		s := plain(screen(t, m))
		row := lineWith(s, " fleet/ ")
		row = string([]rune(row)[:m.tree.w])
		if strings.Contains(row, "…") {
			t.Fatalf("%d: roll-up cut: %q", w, row)
		}
		if cols := layoutColumns(m.tree.w-2, m.tree.wants()); cols.provider > 0 && cols.model > 0 && !strings.Contains(row, "48 agents · 4 blocked") {
			t.Fatalf("%d: roll-up %q", w, row)
		}
		if w >= 250 {
			selectPath(t, m, "zeta/alpha/a12")
			s = plain(screen(t, m))
			if r := lineWith(s, " a12 "); !strings.Contains(r, "claude-sonnet-4-5-20250929") {
				t.Fatalf("%d: model cut: %q", w, r)
			}
		}
	}
}

// TestGoldenTree: the finder, a status, a sort order and the ended agents shown, in
// every theme at 80×24 and 200×50.
func TestGoldenTree(t *testing.T) {
	views := []struct {
		name string
		keys func(m *Model)
	}{
		{"find", func(m *Model) { press(m, "/"); typeText(m, "alp12") }},
		{"find_state", func(m *Model) { press(m, "/"); typeText(m, "state:blocked,working"); press(m, "enter") }},
		{"status_needs_me", func(m *Model) { press(m, "f") }},
		{"sort_cost", func(m *Model) { press(m, ">", ">") }},
		{"ended_shown", func(m *Model) { press(m, ".") }},
	}
	for _, theme := range themes.BuiltinNames {
		for _, sz := range [][2]int{{80, 24}, {200, 50}} {
			for _, v := range views {
				t.Run(fmt.Sprintf("%s_%s_%dx%d", v.name, theme, sz[0], sz[1]), func(t *testing.T) {
					m := newTestModel(t, sz[0], sz[1], Options{Theme: theme})
					zeta(m)
					v.keys(m)
					golden.RequireEqual(t, screen(t, m))
				})
			}
		}
	}
}

// TestHelpListsFinderKeys: the help dialog lists the finder's, status, ended and sort
// keys.
func TestHelpListsFinderKeys(t *testing.T) {
	m := newTestModel(t, 200, 50, Options{})
	press(m, "?")
	s := plain(screen(t, m))
	for _, want := range []string{"find: fuzzy, state:X", "status filter (cycle)", "show/hide ended agents", "sort order (cycle)"} {
		if !strings.Contains(s, want) {
			t.Errorf("help lacks %q:\n%s", want, s)
		}
	}
}

// TestFindStatePrefix: a state: value narrows while it is typed: empty it constrains
// nothing, "bl" is blocked.
func TestFindStatePrefix(t *testing.T) {
	m := newTestModel(t, 120, 30, Options{})
	all := rowPaths(m)
	m.idx.setFilter("state:")
	if got := rowPaths(m); got != all {
		t.Fatalf("state: alone: %s", got)
	}
	m.idx.setFilter("state:bl")
	if got := rowPaths(m); got != "review review/auth review/auth/security" {
		t.Fatalf("state:bl: %s", got)
	}
}

// TestJumpClearsWhatHidesTheTarget: b while a status hides every blocked agent clears
// the status and lands on the blocked agent.
func TestJumpClearsWhatHidesTheTarget(t *testing.T) {
	m := newTestModel(t, 120, 30, Options{})
	press(m, "f", "f") // working
	press(m, "b")
	if a := m.tree.selected(); a == nil || a.Path != "review/auth/security" || m.idx.status != statusAll {
		t.Fatalf("b under a status: sel %+v, status %s", a, m.idx.status)
	}
	if m.tree.sel != m.idx.rows()[m.tree.cursor] {
		t.Fatal("the cursor is not on the selection")
	}
}

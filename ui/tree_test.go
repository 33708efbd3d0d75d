package ui

import (
	"strings"
	"testing"
	"time"

	"orcr/core"
	"orcr/core/wire"
)

func TestIndexRollupsIncremental(t *testing.T) {
	x := newIndex()
	for _, a := range fixture() {
		x.upsert(a)
	}
	x.setShowEnded(true)
	rows := x.rows()
	if len(rows) != 14 {
		t.Fatalf("rows = %d, want 14", len(rows))
	}
	review := x.byPath["review"]
	if review.roll.agents != 4 || review.roll.groups[gBlocked] != 1 || review.roll.worst() != gBlocked {
		t.Fatalf("review roll-up = %+v", review.roll)
	}
	if got := x.root.roll.usage.In + x.root.roll.usage.Out; got != 5_400+1_250_000+220_000+48_000+9_000 {
		t.Fatalf("root tokens = %d", got)
	}
	// A state change touches the node and its ancestors only: no rebuild of the rows.
	a := *x.byID["0007"].agent
	a.State, a.Blocked = wire.StateWorking, nil
	x.upsert(a)
	if x.dirty {
		t.Fatal("a state change rebuilt the rows")
	}
	if review.roll.groups[gBlocked] != 0 || review.roll.groups[gWorking] != 2 || x.byPath["review/auth"].roll.worst() != gWorking {
		t.Fatalf("after unblock: %+v", review.roll)
	}
	// Removing the last agent under a branch prunes the empty inner nodes.
	x.remove("0004")
	if _, ok := x.byPath["demo/nested"]; ok {
		t.Fatal("empty inner node demo/nested kept")
	}
	if x.byPath["demo"].roll.agents != 3 {
		t.Fatalf("demo roll-up after remove = %+v", x.byPath["demo"].roll)
	}
}

func TestIndexNaturalOrder(t *testing.T) {
	x := newIndex()
	for _, p := range []string{"run/w10", "run/w2", "run/w1", "run/w10/a", "run/lead", "run/w3"} {
		x.upsert(agent("id-"+p, p, wire.StateWorking, "claude", "", time.Minute, 0, nil))
	}
	var got []string
	for _, n := range x.rows() {
		got = append(got, n.path)
	}
	if want := "run run/lead run/w1 run/w2 run/w3 run/w10 run/w10/a"; strings.Join(got, " ") != want {
		t.Fatalf("rows %v, want %s", got, want)
	}
}

func TestIndexFilter(t *testing.T) {
	x := newIndex()
	for _, a := range fixture() {
		x.upsert(a)
	}
	paths := func() string {
		var out []string
		for _, n := range x.rows() {
			out = append(out, n.path)
		}
		return strings.Join(out, " ")
	}
	x.setFilter("sec")
	if got := paths(); got != "review review/auth review/auth/security" {
		t.Fatalf("text filter: %s", got)
	}
	x.setFilter("demo/*")
	if got := paths(); got != "demo demo/a demo/b demo/c" {
		t.Fatalf("glob filter: %s", got)
	}
	x.setFilter("demo/**")
	if !strings.Contains(paths(), "demo/nested/deep/d") {
		t.Fatalf("doublestar filter: %s", paths())
	}
	x.setFilter("")
	x.setFolded(x.byPath["review"], true)
	if got := paths(); strings.Contains(got, "review/api") || !strings.Contains(got, "review") {
		t.Fatalf("fold: %s", got)
	}
}

func TestNextBlockedWrapsAndReveals(t *testing.T) {
	m := newTestModel(t, 120, 30, Options{})
	b2 := agent("0010", "build/stuck", wire.StateBlocked, "codex", "gpt-5", time.Minute, 0, nil)
	m.Update(eventsMsg{events: []wire.Event{{Event: wire.EventAgentSpawned, Seq: 11, At: t0, Agent: &b2}}})
	m.idx.setFolded(m.idx.byPath["review"], true)
	press(m, ".", "g") // ended agents shown, the first row (build) selected
	if cmd := press(m, "b"); cmd == nil {
		t.Fatal("moving the selection did not ask for the preview screen")
	}
	if a := m.tree.selected(); a == nil || a.Path != "build/stuck" {
		t.Fatalf("first b: %+v", a)
	}
	// While that read is in flight, a second move only marks the preview dirty; the
	// answer to the first read then asks again for the new selection.
	if cmd := press(m, "b"); cmd != nil {
		t.Fatal("a second read was started while one is in flight")
	}
	_, cmd := m.Update(readMsg{id: "0010", res: wire.ReadResult{Text: "old", Live: true}})
	if a := m.tree.selected(); a == nil || a.Path != "review/auth/security" {
		t.Fatalf("second b: %+v", a)
	}
	if m.idx.byPath["review"].folded {
		t.Fatal("jump did not unfold the blocked agent's ancestors")
	}
	if cmd == nil || m.readWant != "0007" {
		t.Fatal("the finished read did not start one for the new selection")
	}
	press(m, "b")
	if a := m.tree.selected(); a.Path != "build/stuck" {
		t.Fatalf("b did not wrap: %s", a.Path)
	}
	// b works from the other panes too.
	press(m, "tab")
	press(m, "b")
	if a := m.tree.selected(); a.Path != "review/auth/security" {
		t.Fatalf("b from the preview: %s", a.Path)
	}
}

// TestNothingBlockedSaysSo: b and r with nothing blocked leave the selection alone and
// say why in the status line; b on the only blocked agent says it is the only one.
func TestNothingBlockedSaysSo(t *testing.T) {
	m := newTestModel(t, 120, 30, Options{})
	press(m, "b", "b")
	if v := plain(screen(t, m)); m.selectedID() != "0007" || !strings.Contains(v, "review/auth/security is the only blocked agent") {
		t.Fatalf("b on the only blocked agent:\n%s", v)
	}
	a := *m.idx.byID["0007"].agent
	a.State, a.Blocked, a.UpdatedAt = wire.StateWorking, nil, t0.Add(time.Second)
	m.Update(eventsMsg{events: []wire.Event{{Event: wire.EventAgentState, Seq: 11, At: t0, Agent: &a}}})
	selectPath(t, m, "demo/a")
	for _, k := range []string{"b", "r"} {
		m.status.notice = ""
		if cmd := press(m, k); cmd != nil || len(m.dialogs) != 0 {
			t.Fatalf("%s with nothing blocked did something", k)
		}
		if m.selectedID() != "0001" {
			t.Fatalf("%s moved the selection to %s", k, m.selectedID())
		}
		if v := plain(screen(t, m)); !strings.Contains(v, "nothing is blocked") {
			t.Fatalf("%s with nothing blocked:\n%s", k, v)
		}
	}
}

// TestTreeLetterMotions: the default keymap moves with j/k/g/G as well as the arrows.
func TestTreeLetterMotions(t *testing.T) {
	m := newTestModel(t, 100, 30, Options{})
	rows := m.idx.rows()
	for _, c := range []struct {
		key  string
		want *node
	}{{"j", rows[1]}, {"j", rows[2]}, {"k", rows[1]}, {"G", rows[len(rows)-1]}, {"g", rows[0]}, {"down", rows[1]}} {
		press(m, c.key)
		if m.tree.sel != c.want {
			t.Fatalf("%s: at %s, want %s", c.key, m.tree.sel.path, c.want.path)
		}
	}
	// In the preview, j/k scroll its screen.
	press(m, "tab")
	press(m, "k")
	if m.preview.scroll != 1 {
		t.Fatalf("k in the preview: scroll %d", m.preview.scroll)
	}
}

func TestTreeKeysAndView(t *testing.T) {
	m := newTestModel(t, 100, 30, Options{})
	press(m, ".", "g", "down")
	if a := m.tree.selected(); a == nil || a.Path != "build/lint" {
		t.Fatalf("down: %+v", a)
	}
	press(m, "left") // on a leaf: go to the parent
	if m.tree.sel.path != "build" {
		t.Fatalf("left on leaf: %s", m.tree.sel.path)
	}
	press(m, "left") // on an open inner node: fold it
	if !m.idx.byPath["build"].folded {
		t.Fatal("left did not fold")
	}
	v := plain(screen(t, m))
	if strings.Contains(v, "lint") || !strings.Contains(v, "▸ ✗ build/") {
		t.Fatalf("folded view:\n%s", v)
	}
	press(m, "space")
	if strings.Contains(plain(screen(t, m)), "▸") {
		t.Fatal("space did not unfold")
	}
	// filter by typing
	press(m, "/")
	typeText(m, "tests")
	press(m, "enter")
	v = plain(screen(t, m))
	if !strings.Contains(v, "/ tests") || strings.Contains(v, "● demo/") || !strings.Contains(v, "? tests") {
		t.Fatalf("filtered view:\n%s", v)
	}
	press(m, "esc")
	if m.idx.filter != "" {
		t.Fatal("esc did not clear the filter")
	}
}

func TestTreeVirtualisedWindow(t *testing.T) {
	m := newTestModel(t, 100, 30, Options{})
	m.Update(listMsg{agents: manyAgents(10_000)})
	out := plain(screen(t, m))
	if !strings.Contains(out, "agents 10009") {
		t.Fatalf("title: %s", strings.SplitN(out, "\n", 2)[0])
	}
	press(m, "end")
	if a := m.tree.selected(); a == nil || !strings.HasPrefix(a.Path, "team19/") {
		t.Fatalf("end: %+v", a)
	}
	if m.tree.offset == 0 || m.tree.cursor-m.tree.offset >= m.tree.bodyHeight() {
		t.Fatalf("window not following the cursor: cursor %d offset %d", m.tree.cursor, m.tree.offset)
	}
}

func TestVimKeymap(t *testing.T) {
	m := newTestModel(t, 100, 30, Options{Keymap: "vim"})
	press(m, ".", "g", "j", "j")
	if m.tree.sel.path != "demo" {
		t.Fatalf("j j: %s", m.tree.sel.path)
	}
	press(m, "G")
	if m.tree.sel.path != "review/auth/tests" {
		t.Fatalf("G: %s", m.tree.sel.path)
	}
	press(m, "g")
	if m.tree.sel.path != "build" {
		t.Fatalf("g: %s", m.tree.sel.path)
	}
	press(m, "h") // fold build
	if !m.idx.byPath["build"].folded {
		t.Fatal("h did not fold")
	}
	press(m, "l")
	if m.idx.byPath["build"].folded {
		t.Fatal("l did not unfold")
	}
	if _, err := New(t.Context(), nil, Options{KeyOverrides: map[string][]string{"tree.nope": {"x"}}}); err == nil {
		t.Fatal("bad override accepted")
	}
	if _, err := New(t.Context(), nil, Options{Keymap: "emacs"}); err == nil {
		t.Fatal("unknown keymap accepted")
	}
}

// TestExitCodeColours: an agent that exited with a code other than 0 is drawn in the
// failure colour (the lost token) in the tree and the preview; a clean exit is not.
func TestExitCodeColours(t *testing.T) {
	m := newTestModel(t, 160, 48, Options{})
	zero := 0
	clean := agent("0020", "build/fmt", wire.StateExited, "shell", "", time.Hour, 0, nil)
	clean.ExitCode = &zero
	m.upsert(clean)
	press(m, ".") // ended agents are hidden by default
	st := &m.c.styles
	failGlyph, cleanGlyph := m.c.p(&st.Lost, "■"), m.c.p(&st.Exited, "■")
	if failGlyph == cleanGlyph {
		t.Fatal("the theme draws failures like clean exits")
	}
	rowOf := func(name string) string {
		for _, l := range strings.Split(m.tree.View(), "\n") {
			if strings.Contains(plain(l), " "+name+" ") {
				return l
			}
		}
		t.Fatalf("no row %s", name)
		return ""
	}
	if r := rowOf("lint"); !strings.Contains(r, failGlyph) {
		t.Fatalf("exit 1 not coloured as a failure: %q", r)
	}
	if r := rowOf("fmt"); !strings.Contains(r, cleanGlyph) {
		t.Fatalf("exit 0 coloured as a failure: %q", r)
	}
	selectPath(t, m, "build/lint")
	if v := pv(m); !strings.Contains(v, st.Lost.Render("exit code 1")) || !strings.Contains(v, st.Lost.Render("■ exited")) {
		t.Fatalf("preview of exit 1:\n%s", v)
	}
	selectPath(t, m, "build/fmt")
	if v := pv(m); strings.Contains(v, st.Lost.Render("exit code 0")) || !strings.Contains(v, st.Muted.Render("exit code 0")) {
		t.Fatalf("preview of exit 0:\n%s", v)
	}
}

// TestPreviewShowsTokensAndCost: the preview says what the tree's columns say, in the
// same notation as agent ls, also where the tree is too narrow for those columns.
func TestPreviewShowsTokensAndCost(t *testing.T) {
	m := newTestModel(t, 80, 24, Options{})
	a := agent("0021", "demo/cached", wire.StateDone, "claude", "sonnet-4.5", time.Minute, 0, cost(0.07))
	a.Usage.InputTokens, a.Usage.CacheReadTokens, a.Usage.OutputTokens = 400, 25_500, 500
	unpriced := agent("0022", "demo/mystery", wire.StateDone, "opencode", "mystery", time.Minute, 1200, nil)
	m.upsert(a)
	m.upsert(unpriced)
	selectPath(t, m, "demo/cached")
	if v := plain(pv(m)); !strings.Contains(v, "tokens "+core.FormatTokens(a.Usage)+"  cost $0.07") || !strings.Contains(v, "26k/500") {
		t.Fatalf("preview:\n%s", v)
	}
	selectPath(t, m, "demo/mystery")
	if v := plain(pv(m)); !strings.Contains(v, "cost unpriced") {
		t.Fatalf("preview of an unpriced model:\n%s", v)
	}
	selectPath(t, m, "build/lint") // a shell agent: nothing to show
	if v := plain(pv(m)); strings.Contains(v, "tokens") || strings.Contains(v, "$") {
		t.Fatalf("preview of a shell agent:\n%s", v)
	}
}

// TestTreeReadsLikeAgentLs: for the same agent the tree's token and cost columns say
// exactly what `orcr agent ls` says (both come from core's formatting).
func TestTreeReadsLikeAgentLs(t *testing.T) {
	m := newTestModel(t, 160, 48, Options{})
	a := agent("0021", "demo/cached", wire.StateDone, "claude", "sonnet-4.5", time.Minute, 0, cost(0.07))
	a.Usage.InputTokens, a.Usage.CacheReadTokens, a.Usage.OutputTokens = 400, 25_500, 500
	unpriced := agent("0022", "demo/mystery", wire.StateDone, "opencode", "mystery", time.Minute, 1200, nil)
	m.upsert(a)
	m.upsert(unpriced)
	press(m, ".") // build/lint has ended: shown on demand
	v := plain(m.tree.View())
	for _, x := range []wire.Agent{a, unpriced, fixture()[0], fixture()[8]} {
		ls := core.TableRow(x, t0)
		name := x.Path[strings.LastIndexByte(x.Path, '/')+1:]
		var f []string
		for _, l := range strings.Split(v, "\n") {
			if fs := strings.Fields(strings.Trim(l, "│")); len(fs) > 2 && fs[1] == name {
				f = fs
			}
		}
		if len(f) < 4 || f[len(f)-2] != ls[5] || f[len(f)-1] != ls[6] {
			t.Errorf("%s: tree row %q, agent ls says %s %s", x.Path, f, ls[5], ls[6])
		}
	}
}

// The NODE column appears once an agent runs on a node (DESIGN §14), "local" for this
// machine's, and an agent whose node stopped answering is drawn unreachable; with no
// node agent the tree has no such column.
func TestTreeNodeColumn(t *testing.T) {
	m := newTestModel(t, 300, 48, Options{})
	here := agent("0031", "fleet/here", wire.StateWorking, "claude", "sonnet-4.5", time.Minute, 0, nil)
	m.upsert(here)
	if v := plain(m.tree.View()); strings.Contains(v, "NODE") || strings.Contains(v, "local") {
		t.Fatalf("a NODE column with no agent on a node:\n%s", v)
	}
	far := agent("0032", "fleet/far", wire.StateWorking, "claude", "sonnet-4.5", time.Minute, 0, nil)
	far.Node, far.Unreachable = "big", true
	m.upsert(far)
	v := plain(m.tree.View())
	row := func(name string) []string {
		for _, l := range strings.Split(v, "\n") {
			if fs := strings.Fields(strings.Trim(l, "│")); len(fs) > 3 && fs[1] == name {
				return fs
			}
		}
		return nil
	}
	if !strings.Contains(v, "NODE") {
		t.Fatalf("no NODE column:\n%s", v)
	}
	if f := row("far"); len(f) < 4 || f[2] != "unreachable" || f[3] != "big" {
		t.Fatalf("the node agent's row %q:\n%s", f, v)
	}
	if f := row("here"); len(f) < 4 || f[2] != "working" || f[3] != "local" {
		t.Fatalf("the local agent's row %q:\n%s", f, v)
	}
	// Reachable again: its state.
	far.Unreachable = false
	m.upsert(far)
	v = plain(m.tree.View())
	if f := row("far"); len(f) < 4 || f[2] != "working" {
		t.Fatalf("reachable again %q", f)
	}
}

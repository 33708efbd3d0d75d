package ui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"orcr/core/wire"
)

// rowAt is the screen line whose tree column shows text, -1 when none does.
func rowAt(t *testing.T, m *Model, text string) int {
	t.Helper()
	for y, l := range strings.Split(plain(screen(t, m)), "\n") {
		if strings.Contains(ansiCut(l, m.tree.w), text) {
			return y
		}
	}
	t.Fatalf("no tree row shows %q:\n%s", text, plain(screen(t, m)))
	return -1
}

// ansiCut is the first w cells of a plain line.
func ansiCut(l string, w int) string {
	r := []rune(l)
	return string(r[:min(len(r), w)])
}

// TestMouse: a click selects the tree row under it and focuses the pane; the wheel
// moves the tree's selection, scrolls the preview (reading scrollback when it runs
// out) and the panel; a click on a tab's name shows it; the wheel scrolls an open
// diff; the view turns mouse reporting on.
func TestMouse(t *testing.T) {
	m := newTestModel(t, 160, 48, Options{})
	if v := m.View(); v.MouseMode != tea.MouseModeCellMotion {
		t.Fatal("the dashboard does not ask for mouse events")
	}
	y := rowAt(t, m, "○ b")
	m.setFocus(focusPanel)
	m.Update(tea.MouseClickMsg{X: 8, Y: y, Button: tea.MouseLeft})
	if a := m.tree.selected(); a == nil || a.Path != "demo/b" || m.focus != focusTree {
		t.Fatalf("a click on demo/b's row selected %v (focus %d)", a, m.focus)
	}
	m.Update(tea.MouseWheelMsg{X: 8, Y: 10, Button: tea.MouseWheelDown})
	if a := m.tree.selected(); a == nil || a.Path != "demo/c" {
		t.Fatalf("a wheel notch down over the tree selected %v, want demo/c", a)
	}
	m.Update(tea.MouseWheelMsg{X: 8, Y: 10, Button: tea.MouseWheelUp})
	if a := m.tree.selected(); a == nil || a.Path != "demo/b" {
		t.Fatalf("a wheel notch up over the tree selected %v, want demo/b", a)
	}

	// The wheel over the preview scrolls its screen, and asks for scrollback at the top.
	selectPath(t, m, "demo/a")
	m.readInFlight = false
	var text strings.Builder
	for i := range 60 {
		text.WriteString("screen line " + string(rune('A'+i%26)) + "\n")
	}
	m.Update(readMsg{id: "0001", res: wire.ReadResult{Text: text.String(), Live: true}})
	px := m.tree.w + 5
	m.Update(tea.MouseWheelMsg{X: px, Y: 5, Button: tea.MouseWheelUp})
	if m.preview.scroll != wheelStep {
		t.Fatalf("a wheel notch up over the preview scrolled %d, want %d", m.preview.scroll, wheelStep)
	}
	for range 20 {
		m.Update(tea.MouseWheelMsg{X: px, Y: 5, Button: tea.MouseWheelUp})
	}
	if !m.readInFlight || m.preview.screenLines() <= len(strings.Split(strings.TrimSpace(text.String()), "\n")) {
		t.Fatalf("the wheel at the top of the screen read no scrollback (lines %d)", m.preview.screenLines())
	}
	m.Update(tea.MouseClickMsg{X: px, Y: 5, Button: tea.MouseLeft})
	if m.focus != focusPreview {
		t.Fatal("a click on the preview did not focus it")
	}

	// A click on a tab's name in the panel's title shows that tab.
	title := strings.Split(plain(screen(t, m)), "\n")[m.preview.h]
	col := strings.Index(string([]rune(title)[m.tree.w:]), "events")
	if col < 0 {
		t.Fatalf("no events tab in the strip %q", title)
	}
	x := m.tree.w + len([]rune(string([]rune(title)[m.tree.w:])[:col]))
	m.Update(tea.MouseClickMsg{X: x + 1, Y: m.preview.h, Button: tea.MouseLeft})
	if m.panel.tab != tabEvents || m.focus != focusPanel {
		t.Fatalf("a click on \"events\" shows tab %s (focus %d)", m.panel.tab, m.focus)
	}

	// The wheel scrolls an open diff, and nothing under it.
	press(m, "D")
	d := m.dialogs[len(m.dialogs)-1].(*diffDialog)
	m.Update(diffMsg{d: d, seq: d.seq, res: sampleDiff()})
	sel := m.selectedID()
	m.Update(tea.MouseWheelMsg{X: 8, Y: 10, Button: tea.MouseWheelDown})
	if d.scroll != wheelStep || m.selectedID() != sel {
		t.Fatalf("the wheel over the diff scrolled it %d (selection %s→%s)", d.scroll, sel, m.selectedID())
	}
}

// TestMouseNarrowTabs: on a narrow panel the strip is "◂ [tab] ▸"; a click on ◂ or ▸
// shows the tab before or after.
func TestMouseNarrowTabs(t *testing.T) {
	m := newTestModel(t, 60, 24, Options{})
	title := []rune(strings.Split(plain(screen(t, m)), "\n")[m.preview.h])
	right := string(title[m.tree.w:])
	if !strings.Contains(right, "◂ [") {
		t.Fatalf("the strip is not narrow at 60 columns: %q", right)
	}
	before := m.panel.tab
	m.Update(tea.MouseClickMsg{X: m.tree.w + 3, Y: m.preview.h, Button: tea.MouseLeft})
	if m.panel.tab != (before+nTabs-1)%nTabs {
		t.Fatalf("a click on ◂ shows %s", m.panel.tab)
	}
	title = []rune(strings.Split(plain(screen(t, m)), "\n")[m.preview.h])
	x := strings.Index(string(title[m.tree.w:]), "▸")
	m.Update(tea.MouseClickMsg{X: m.tree.w + len([]rune(string(title[m.tree.w:])[:x])), Y: m.preview.h, Button: tea.MouseLeft})
	if m.panel.tab != before {
		t.Fatalf("a click on ▸ shows %s, want %s", m.panel.tab, before)
	}
}

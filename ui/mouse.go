package ui

import (
	"strings"

	tea "charm.land/bubbletea/v2"
)

// The mouse, as in htop or lazygit: a click selects a tree row (and focuses the pane
// it lands in), a click on a panel tab's name shows that tab (on ◂ or ▸ the one
// before or after when the strip is narrow), and the wheel scrolls what is under the
// pointer — the tree's selection, the preview's screen and scrollback, the panel, an
// open diff. The terminal's own text selection stays on shift+drag. Where things are
// is computed from the layout Update made (resize), as View draws it.

// wheelStep is how many lines one wheel notch scrolls the preview.
const wheelStep = 3

// updateMouse routes a mouse message by where it happened.
func (m *Model) updateMouse(msg tea.MouseMsg) tea.Cmd {
	ms := msg.Mouse()
	if len(m.dialogs) > 0 {
		// Only the diff view scrolls under the wheel; other dialogs take keys.
		if d, ok := m.dialogs[len(m.dialogs)-1].(*diffDialog); ok {
			if _, wheel := msg.(tea.MouseWheelMsg); wheel {
				d.scroll += wheelDelta(ms.Button) * wheelStep
				d.clamp()
			}
		}
		return nil
	}
	if m.w < minW || m.h < minH {
		return nil
	}
	pane := m.paneAt(ms.X, ms.Y)
	switch msg.(type) {
	case tea.MouseClickMsg:
		if ms.Button != tea.MouseLeft {
			return nil
		}
		switch pane {
		case focusTree:
			m.setFocus(focusTree)
			return m.clickTree(ms.Y)
		case focusPreview:
			m.setFocus(focusPreview)
		case focusPanel:
			m.setFocus(focusPanel)
			if ms.Y == m.preview.h {
				m.clickTab(ms.X - m.tree.w)
			}
		}
	case tea.MouseWheelMsg:
		n := wheelDelta(ms.Button)
		if n == 0 {
			return nil
		}
		switch pane {
		case focusTree:
			before := m.selectedID()
			m.tree.sync()
			m.tree.move(n)
			return m.afterSelection(before)
		case focusPreview:
			m.preview.clampScroll()
			m.preview.scrollBy(-n * wheelStep)
			if m.preview.wantsMore() {
				return m.requestRead(m.selectedID())
			}
		case focusPanel:
			p := m.panel
			p.scroll[p.tab] = max(0, p.top()+n)
			p.scroll[p.tab] = p.top()
		}
	}
	return nil
}

// wheelDelta is +1 for a notch down (towards the end), -1 up, 0 for other buttons.
func wheelDelta(b tea.MouseButton) int {
	switch b {
	case tea.MouseWheelDown:
		return 1
	case tea.MouseWheelUp:
		return -1
	}
	return 0
}

// paneAt says which pane cell (x, y) belongs to; nFocus for the status bar.
func (m *Model) paneAt(x, y int) focus {
	switch {
	case y >= m.h-1:
		return nFocus
	case x < m.tree.w:
		return focusTree
	case y < m.preview.h:
		return focusPreview
	}
	return focusPanel
}

// clickTree selects the row drawn at screen line y. The tree's rows start below its
// top border and whatever lines it draws above them (the filter line …): the lines
// its frame holds beyond its body.
func (m *Model) clickTree(y int) tea.Cmd {
	first := 1 + max(0, m.tree.h-2-m.tree.bodyHeight())
	i := y - first
	if i < 0 || i >= m.tree.bodyHeight() {
		return nil
	}
	rows, _ := m.idx.visible()
	i += m.tree.offset
	if i >= len(rows) {
		return nil
	}
	before := m.selectedID()
	m.tree.selectNode(rows[i])
	return m.afterSelection(before)
}

// clickTab shows the panel tab whose name is drawn at column x of the panel (its
// title strip, as panelModel.View lays it out after the frame's "╭─ ").
func (m *Model) clickTab(x int) {
	p := m.panel
	var names []string
	for t := panelTab(0); t < nTabs; t++ {
		n := t.String()
		if t == p.tab {
			n = "[" + n + "]"
		}
		names = append(names, n)
	}
	x -= 3 // "╭─ "
	if width(strings.Join(names, " ")) > p.w-6 {
		// The narrow strip: "◂ [tab] ▸".
		switch strip := "◂ [" + p.tab.String() + "] ▸"; {
		case x == 0:
			p.tab = (p.tab + nTabs - 1) % nTabs
		case x == width(strip)-1:
			p.tab = (p.tab + 1) % nTabs
		}
		return
	}
	at := 0
	for t, n := range names {
		if x >= at && x < at+width(n) {
			p.tab = panelTab(t)
			return
		}
		at += width(n) + 1
	}
}

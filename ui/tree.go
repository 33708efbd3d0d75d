package ui

import (
	"fmt"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"

	"orcr/core"
	"orcr/core/wire"
)

// treeModel is the agent path tree. It renders only the rows in its window, so its cost
// follows the pane height, not the number of agents.
type treeModel struct {
	c      *common
	idx    *index
	w, h   int
	cursor int   // index into idx.rows()
	offset int   // first visible row
	sel    *node // selected node, kept across rebuilds
	focus  bool

	filtering bool   // the filter line is being edited
	filterIn  string // text typed so far
}

func newTree(c *common, idx *index) *treeModel { return &treeModel{c: c, idx: idx} }

// SetSize sets the pane's outer size.
func (t *treeModel) SetSize(w, h int) { t.w, t.h = w, h }

// bodyHeight is the rows available for agents.
func (t *treeModel) bodyHeight() int {
	h := t.h - 2
	if t.filtering || t.idx.filter != "" {
		h--
	}
	return max(0, h)
}

// selected returns the selected agent, or nil on an inner node without one.
func (t *treeModel) selected() *wire.Agent {
	t.sync()
	if t.sel == nil {
		return nil
	}
	return t.sel.agent
}

// sync re-finds the selection after the rows were rebuilt, and keeps the cursor in the
// window.
func (t *treeModel) sync() {
	wasDirty := t.idx.dirty
	t.follow(t.idx.rows(), wasDirty)
}

// follow puts the cursor on the selected node among rows (rebuilt says they may have
// moved) and scrolls the window to show it.
func (t *treeModel) follow(rows []*node, rebuilt bool) {
	if len(rows) == 0 {
		t.cursor, t.offset, t.sel = 0, 0, nil
		return
	}
	if rebuilt || t.cursor < 0 || t.cursor >= len(rows) || rows[t.cursor] != t.sel {
		found := false
		if t.sel != nil {
			for i, n := range rows {
				if n == t.sel {
					t.cursor, found = i, true
					break
				}
			}
		}
		if !found {
			t.cursor = min(max(t.cursor, 0), len(rows)-1)
		}
		t.sel = rows[t.cursor]
	}
	t.scroll(len(rows))
}

// scroll moves the window of n rows so the cursor is in it.
func (t *treeModel) scroll(n int) {
	h := t.bodyHeight()
	if h <= 0 {
		return
	}
	if t.cursor < t.offset {
		t.offset = t.cursor
	}
	if t.cursor >= t.offset+h {
		t.offset = t.cursor - h + 1
	}
	t.offset = max(0, min(t.offset, n-h))
}

func (t *treeModel) move(d int) {
	rows := t.idx.rows()
	if len(rows) == 0 {
		return
	}
	t.cursor = min(max(t.cursor+d, 0), len(rows)-1)
	t.sel = rows[t.cursor]
	t.scroll(len(rows))
}

func (t *treeModel) selectNode(n *node) {
	t.idx.reveal(n)
	t.sel = n
	t.cursor = -1
	t.sync()
}

// Update handles the tree's own keys; the root handles the agent actions (and the
// jump to the next blocked agent, which works from any pane).
func (t *treeModel) Update(msg tea.Msg) tea.Cmd {
	k, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return nil
	}
	if t.filtering {
		return t.updateFilter(k)
	}
	t.sync()
	km := t.c.keys.Tree
	switch {
	case km.Up.Matches(k):
		t.move(-1)
	case km.Down.Matches(k):
		t.move(1)
	case km.PageUp.Matches(k):
		t.move(-max(1, t.bodyHeight()-1))
	case km.PageDown.Matches(k):
		t.move(max(1, t.bodyHeight()-1))
	case km.Top.Matches(k):
		t.move(-len(t.idx.rows()))
	case km.Bottom.Matches(k):
		t.move(len(t.idx.rows()))
	case km.Expand.Matches(k):
		if t.sel != nil {
			t.idx.setFolded(t.sel, false)
		}
	case km.Collapse.Matches(k):
		if t.sel != nil {
			if len(t.sel.children) > 0 && !t.sel.folded {
				t.idx.setFolded(t.sel, true)
			} else if t.sel.parent != nil && t.sel.parent != &t.idx.root {
				t.selectNode(t.sel.parent)
			}
		}
	case km.Toggle.Matches(k), km.Attach.Matches(k):
		// Attach on an inner node without an agent (the root only gets here then) folds it.
		if t.sel != nil {
			t.idx.toggle(t.sel)
		}
	case km.Filter.Matches(k):
		t.filtering, t.filterIn = true, t.idx.filter
	case km.ClearFilter.Matches(k):
		t.idx.setFilter("")
	}
	t.sync()
	return nil
}

// updateFilter edits the filter line; the tree narrows as the user types.
func (t *treeModel) updateFilter(k tea.KeyPressMsg) tea.Cmd {
	switch k.String() {
	case "enter":
		t.filtering = false
	case "esc":
		t.filtering = false
		t.filterIn = ""
	case "backspace":
		if r := []rune(t.filterIn); len(r) > 0 {
			t.filterIn = string(r[:len(r)-1])
		}
	default:
		if k.Text != "" {
			t.filterIn += k.Text
		}
	}
	t.idx.setFilter(t.filterIn)
	t.sync()
	return nil
}

// Column widths of tokens ("999k/999k", core.HumanCount's widest pair) and cost
// ("unpriced", "$99.99+"), each with its separating space.
const (
	tokensW = 10
	costW   = 9
)

// columns decides which columns fit in width w; the name keeps at least 14 cells. The
// role comes last: a wide terminal shows it in the tree, any terminal in the preview.
type columns struct{ provider, model, age, tokens, cost, role int }

func layoutColumns(w int) columns {
	var c columns
	rest := w - 8 - 14 // cursor, indent, glyphs; the name's minimum
	for _, col := range []struct {
		p *int
		n int
	}{{&c.age, 5}, {&c.tokens, tokensW}, {&c.cost, costW}, {&c.provider, 9}, {&c.model, 15}, {&c.role, 13}} {
		if rest >= col.n {
			*col.p = col.n
			rest -= col.n
		}
	}
	return c
}

// View draws the visible window of rows inside a frame. Update has laid the tree out
// (Model.layout); View works on a copy, so following the selection here, should the
// rows have changed since, moves only the copy's cursor.
func (t treeModel) View() string {
	rows := t.idx.visible()
	t.follow(rows, t.idx.dirty)
	inner := t.w - 2
	bh := t.bodyHeight()
	body := make([]string, 0, t.h)
	if t.filtering || t.idx.filter != "" {
		cur := ""
		if t.filtering {
			cur = "█"
		}
		kind := "text"
		if t.idx.glob {
			kind = "glob"
		}
		body = append(body, t.c.styles.Accent.Render("/ ")+t.c.styles.Text.Render(t.filterIn+cur)+
			t.c.styles.Subtle.Render(fmt.Sprintf("  (%s, %d rows)", kind, len(rows))))
	}
	cols := layoutColumns(inner)
	end := min(len(rows), t.offset+bh)
	for i := t.offset; i < end; i++ {
		body = append(body, t.row(rows[i], inner, cols, i == t.cursor))
	}
	if len(rows) == 0 && t.idx.len() == 0 {
		body = append(body, t.c.styles.Muted.Render(" no agents yet — press "+t.c.keys.Tree.Spawn.Label()+" to spawn one"))
	}
	title := fmt.Sprintf("agents %d", t.idx.len())
	if r := t.idx.root.roll; r.groups[gBlocked] > 0 {
		title += fmt.Sprintf(" · %d blocked", r.groups[gBlocked])
	}
	return t.c.paneFrame(title, body, t.w, t.h, t.focus)
}

// row renders one node in exactly w cells. Widths are computed on plain text and only
// then painted, so no styled string is measured.
func (t treeModel) row(n *node, w int, cols columns, selected bool) string {
	c := t.c
	st := &c.styles
	fold := "  "
	if len(n.children) > 0 {
		fold = "▾ "
		if n.folded && t.idx.filter == "" {
			fold = "▸ "
		}
	}
	g := n.roll.worst()
	gl := "·"
	if n.agent != nil {
		g = groupOfAgent(n.agent)
		gl = glyph(n.agent.State)
	} else if g < nGroups {
		gl = glyphOfGroup(g)
	}
	name := n.name
	if len(n.children) > 0 {
		name += "/"
	}
	colSum := cols.provider + cols.model + cols.age + cols.tokens + cols.cost + cols.role
	// mark(1) + indent + fold(2) + glyph(1) + space(1) + name + columns = w
	indentW := max(0, min(2*n.depth, w-5-colSum-8))
	nameW := w - 5 - indentW - colSum
	if nameW < 1 {
		return fit("", w)
	}
	var provider, model, age, tokens, cost, role string
	r := n.roll
	if n.agent != nil && len(n.children) == 0 {
		a := n.agent
		provider, model, role = a.Provider, a.Model, a.Role
		if a.Account != "" && a.Account != "default" {
			// The account it runs on, first: a narrow column cuts the model, not it.
			model = strings.TrimSuffix("@"+a.Account+" "+model, " ")
		}
		age = core.FormatAge(c.now.Sub(a.CreatedAt))
		tokens, cost = core.FormatTokens(a.Usage), core.FormatCost(*a)
	} else {
		provider = plural(r.agents, "agent", "agents")
		if cols.model == 0 {
			provider = strconv.Itoa(r.agents)
		}
		if r.groups[gBlocked] > 0 {
			model = strconv.Itoa(r.groups[gBlocked]) + " blocked"
		} else if r.groups[gWorking] > 0 {
			model = strconv.Itoa(r.groups[gWorking]) + " working"
		}
		tokens, cost = r.usage.Tokens(), r.usage.Cost()
	}
	var right strings.Builder
	right.Grow(colSum)
	cell := func(s string, cw int, alignRight bool) {
		if cw == 0 {
			return
		}
		if alignRight {
			right.WriteString(fitRight(s, cw-1))
		} else {
			right.WriteString(fit(s, cw-1))
		}
		right.WriteByte(' ')
	}
	cell(role, cols.role, false)
	cell(provider, cols.provider, false)
	cell(model, cols.model, false)
	cell(age, cols.age, true)
	cell(tokens, cols.tokens, true)
	cell(cost, cols.cost, true)
	indent := strings.Repeat(" ", indentW)
	if selected {
		return c.p(&st.Selected, "›"+indent+fold+gl+" "+fit(name, nameW)+right.String())
	}
	nameSt := &st.Text
	if len(n.children) > 0 {
		nameSt = &st.Bold
	}
	return " " + indent + c.p(&st.Subtle, fold) + c.p(c.groupStylePtr(g), gl) + " " +
		c.p(nameSt, fit(name, nameW)) + c.p(&st.Muted, right.String())
}

func glyphOfGroup(g group) string {
	switch g {
	case gBlocked:
		return glyph(wire.StateBlocked)
	case gWorking:
		return glyph(wire.StateWorking)
	case gQueued:
		return glyph(wire.StateQueued)
	case gDone:
		return glyph(wire.StateDone)
	case gLost:
		return glyph(wire.StateFailed) // "something below failed" reads better than "lost"
	}
	return glyph(wire.StateExited)
}

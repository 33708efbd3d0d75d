package ui

import (
	"fmt"
	"slices"
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

// bodyHeight is the rows available for agents: the frame less the column header and
// the finder's line when it shows.
func (t *treeModel) bodyHeight() int {
	h := t.h - 3
	if t.findLine() {
		h--
	}
	return max(0, h)
}

// findLine says whether the finder's line shows: while typing, or while words or a
// status narrow the tree.
func (t *treeModel) findLine() bool {
	return t.filtering || t.idx.filter != "" || t.idx.status != statusAll
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
	for range 2 {
		wasDirty := t.idx.dirty
		t.follow(t.idx.rows(), wasDirty)
		// Pinning the new selection may drop the ended agent pinned before from the
		// rows; follow once more over the rebuilt rows.
		t.idx.pin(t.sel)
		if !t.idx.dirty {
			return
		}
	}
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

// selectNode selects n, unfolding its ancestors; when the finder or a status hides it,
// they are cleared, so a jump (next blocked, a spawn, a run's coder) lands on it.
func (t *treeModel) selectNode(n *node) {
	t.idx.reveal(n)
	if t.idx.searching() && !slices.Contains(t.idx.rows(), n) {
		t.idx.setFilter("")
		t.idx.setStatus(statusAll)
		t.filterIn = ""
	}
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
		t.idx.setStatus(statusAll)
	case km.Status.Matches(k):
		t.idx.setStatus((t.idx.status + 1) % nStatus)
		t.selectBest()
	case km.Ended.Matches(k):
		t.idx.setShowEnded(!t.idx.showEnded)
	case km.Sort.Matches(k):
		t.idx.setSort((t.idx.sort + 1) % nSort)
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
	t.selectBest()
	return nil
}

// selectBest moves the selection to the finder's best match, so enter after a few
// letters acts on the agent they name; with no words the selection stays where it was,
// or on the first row when it no longer shows.
func (t *treeModel) selectBest() {
	t.idx.rows()
	if b := t.idx.best; b != nil {
		t.sel, t.cursor = b, -1
	}
	t.sync()
}

// Column widths of tokens ("999k/999k", core.HumanCount's widest pair) and cost
// ("unpriced", "$99.99+"), each with its separating space.
const (
	tokensW = 10
	costW   = 9
)

// columns are the widths of the tree's columns (0: not shown), each with its separating
// space.
type columns struct{ state, node, role, provider, model, age, tokens, cost int }

func (c columns) sum() int {
	return c.state + c.node + c.role + c.provider + c.model + c.age + c.tokens + c.cost
}

// wants are the widths the widest values need (0: no value), from the index's
// histograms.
type wants struct{ name, provider, model, role, node int }

// layoutColumns decides which columns fit in width w and how wide they are. Each column
// gets its minimum in priority order while the name keeps 14 cells; the role comes last
// (a wide terminal shows it in the tree, any terminal in the preview). Room left over
// goes to the name up to its widest value, then to the model, provider and role up to
// theirs, then to the tokens header, then back to the name, so no label is cut while
// there is room for it.
func layoutColumns(w int, want wants) columns {
	var c columns
	rest := w - 8 - 14 // cursor, indent, glyphs; the name's minimum
	type col struct {
		p *int
		n int
	}
	stateW := 9
	if want.node > 0 {
		stateW = len("unreachable") + 1 // what an agent of a node that stopped answering shows
	}
	cols := []col{{&c.age, 5}, {&c.tokens, tokensW}, {&c.cost, costW}, {&c.provider, 9},
		{&c.model, 15}, {&c.state, stateW}}
	if want.node > 0 {
		// Some agent runs on a node: a NODE column ("local" for this machine's).
		cols = append(cols, col{&c.node, max(want.node, len("local")) + 1})
	}
	for _, cl := range append(cols, col{&c.role, 13}) {
		if rest >= cl.n {
			*cl.p = cl.n
			rest -= cl.n
		}
	}
	extra := w - 5 - c.sum() - max(17, want.name+1)
	for _, g := range []col{{&c.model, want.model + 1}, {&c.provider, want.provider + 1},
		{&c.role, want.role + 1}, {&c.tokens, len(tokensHeader) + 1}} {
		if extra <= 0 {
			break
		}
		if *g.p > 0 && g.n > *g.p {
			d := min(extra, g.n-*g.p)
			*g.p += d
			extra -= d
		}
	}
	return c
}

const tokensHeader = "TOKENS in/out"

// wants is what the widest values of the indexed agents need.
func (t treeModel) wants() wants {
	x := t.idx
	return wants{name: x.wName.max(), provider: x.wProvider.max(), model: x.wModel.max(), role: x.wRole.max(), node: x.wNode.max()}
}

// View draws the visible window of rows inside a frame. Update has laid the tree out
// (Model.layout); View works on a copy, so following the selection here, should the
// rows have changed since, moves only the copy's cursor.
func (t treeModel) View() string {
	rows, matched := t.idx.visible()
	t.follow(rows, t.idx.dirty)
	inner := t.w - 2
	bh := t.bodyHeight()
	body := make([]string, 0, t.h)
	if t.findLine() {
		body = append(body, t.findView(matched, inner))
	}
	cols := layoutColumns(inner, t.wants())
	body = append(body, t.header(inner, cols))
	end := min(len(rows), t.offset+bh)
	for i := t.offset; i < end; i++ {
		body = append(body, t.row(rows[i], inner, cols, i == t.cursor))
	}
	switch {
	case t.idx.len() == 0:
		body = append(body, t.c.styles.Muted.Render(" no agents yet — press "+t.c.keys.Tree.Spawn.Label()+" to spawn one"))
	case len(rows) == 0 && !t.idx.searching():
		body = append(body, t.c.styles.Muted.Render(" every agent has ended — press "+t.c.keys.Tree.Ended.Label()+" to show them"))
	case len(rows) == 0:
		body = append(body, t.c.styles.Muted.Render(" nothing matches — esc clears the finder"))
	}
	return t.c.paneFrame(t.title(inner-4), body, t.w, t.h, t.focus)
}

// title counts the agents, the blocked ones and the ended ones hidden, dropping the
// last parts whole when they do not fit in w cells rather than cutting a word.
func (t treeModel) title(w int) string {
	r := t.idx.root.roll
	parts := []string{"agents " + strconv.Itoa(r.agents)}
	if n := r.groups[gBlocked]; n > 0 {
		parts = append(parts, strconv.Itoa(n)+" blocked")
	}
	if t.idx.hidesEnded() && r.ended > 0 {
		parts = append(parts, strconv.Itoa(r.ended)+" ended hidden")
	}
	title := parts[0]
	for _, p := range parts[1:] {
		if width(title)+3+width(p) > w {
			break
		}
		title += " · " + p
	}
	return title
}

// findView is the finder's line: the text with a cursor while typing, then the status
// and how many agents match, or what is wrong with a state: word.
func (t treeModel) findView(n, w int) string {
	st := &t.c.styles
	cur := ""
	if t.filtering {
		cur = "█"
	}
	text := t.idx.filter
	if t.filtering {
		text = t.filterIn
	}
	var info string
	switch {
	case t.idx.q.bad != "":
		names := make([]string, 0, len(allStates)+3)
		for _, s := range allStates {
			names = append(names, string(s))
		}
		names = append(names, "needs-me", "ended", "live")
		info = fmt.Sprintf("unknown state %q: %s", t.idx.q.bad, strings.Join(names, ", "))
	default:
		info = fmt.Sprintf("%d %s", n, map[bool]string{true: "match", false: "matches"}[n == 1])
		if t.idx.status != statusAll {
			info = t.idx.status.String() + " · " + info
		}
	}
	if !t.filtering && text == "" {
		return t.c.p(&st.Subtle, fit(" "+info, w)) // a status alone: no finder text to show
	}
	head := "/ " + text + cur
	if width(head) > w {
		return t.c.p(&st.Accent, "/ ") + t.c.p(&st.Text, fit(text+cur, max(0, w-2)))
	}
	return t.c.p(&st.Accent, "/ ") + t.c.p(&st.Text, text+cur) + t.c.p(&st.Subtle, fit("  "+info, w-width(head)))
}

// header is the column header row; the sorted column is marked ▾ (the path column says
// the order when the sorted column does not fit).
func (t treeModel) header(w int, cols columns) string {
	mark := func(label string, k sortKey) string {
		if t.idx.sort == k {
			return label + "▾"
		}
		return label
	}
	var right strings.Builder
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
	cell(mark("STATE", sortState), cols.state, false)
	cell("NODE", cols.node, false)
	cell("ROLE", cols.role, false)
	cell("PROVIDER", cols.provider, false)
	cell("MODEL", cols.model, false)
	cell(mark("AGE", sortAge), cols.age, true)
	tok := tokensHeader
	if cols.tokens-1 < len(tok) {
		tok = "TOKENS"
	}
	cell(tok, cols.tokens, true)
	cell(mark("COST", sortCost), cols.cost, true)
	name := mark("PATH", sortPath)
	if k := t.idx.sort; k == sortAge && cols.age == 0 || k == sortCost && cols.cost == 0 || k == sortState && cols.state == 0 {
		name = "PATH · by " + k.String() + "▾"
	}
	nameW := w - 3 - cols.sum()
	return "   " + t.c.p(&t.c.styles.Subtle, fit(name, nameW)+right.String())
}

// row renders one node in exactly w cells. Widths are computed on plain text and only
// then painted, so no styled string is measured.
func (t treeModel) row(n *node, w int, cols columns, selected bool) string {
	c := t.c
	st := &c.styles
	fold := "  "
	if len(n.children) > 0 {
		fold = "▾ "
		if n.folded && !t.idx.searching() {
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
	colSum := cols.sum()
	// mark(1) + indent + fold(2) + glyph(1) + space(1) + name + columns = w
	indentW := max(0, min(2*n.depth, w-5-colSum-8))
	nameW := w - 5 - indentW - colSum
	if nameW < 1 {
		return fit("", w)
	}
	var state, provider, model, age, tokens, cost, role string
	r := n.roll
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
	if n.agent != nil && len(n.children) == 0 {
		a := n.agent
		state, provider, model, role = string(a.State), a.Provider, modelLabel(a), a.Role
		if a.Unreachable && !a.State.Terminal() {
			// Its node stopped answering: its state is the last it reported.
			state = "unreachable"
		}
		age = core.FormatAge(c.now.Sub(a.CreatedAt))
		tokens, cost = core.FormatTokens(a.Usage), core.FormatCost(*a)
		cell(state, cols.state, false)
		where := a.Node
		if where == "" {
			where = "local"
		}
		cell(where, cols.node, false)
		cell(role, cols.role, false)
		cell(provider, cols.provider, false)
		cell(model, cols.model, false)
	} else {
		// An inner node sums its subtree across the text columns as one label, so
		// "48 agents · 4 blocked" is never cut into its columns' widths.
		span := cols.state + cols.node + cols.role + cols.provider + cols.model
		if span > 0 {
			right.WriteString(fit(t.summary(r, span-1), span-1))
			right.WriteByte(' ')
		}
		tokens, cost = r.usage.Tokens(), r.usage.Cost()
	}
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

// summary is an inner node's roll-up in at most w cells: the agents it shows, then what
// is blocked or working and the ended agents hidden, each part kept whole or left out.
func (t treeModel) summary(r rollup, w int) string {
	s := plural(t.idx.shown(r), "agent", "agents")
	var more []string
	if r.groups[gBlocked] > 0 {
		more = append(more, strconv.Itoa(r.groups[gBlocked])+" blocked")
	} else if r.groups[gWorking] > 0 {
		more = append(more, strconv.Itoa(r.groups[gWorking])+" working")
	}
	if width(s) > w {
		return strconv.Itoa(t.idx.shown(r))
	}
	for _, p := range more {
		if width(s)+3+width(p) > w {
			break
		}
		s += " · " + p
	}
	return s
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

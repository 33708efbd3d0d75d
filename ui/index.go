package ui

import (
	"sort"
	"strings"

	"orcr/core"
	"orcr/core/wire"
	"orcr/internal/natural"
)

// group is a state's display group, in urgency order: the first group present in a
// subtree decides the glyph of its inner node.
type group int

const (
	gBlocked group = iota
	gWorking
	gQueued
	gDone
	gLost
	gExited
	nGroups
)

func groupOf(s wire.State) group {
	switch s {
	case wire.StateBlocked:
		return gBlocked
	case wire.StateWorking:
		return gWorking
	case wire.StateQueued, wire.StateStarting:
		return gQueued
	case wire.StateIdle, wire.StateDone, wire.StateHibernated:
		return gDone
	case wire.StateFailed, wire.StateLost:
		return gLost
	}
	return gExited
}

// groupOfAgent is groupOf the agent's state, except that an agent whose process exited
// with a code other than 0 counts (and is coloured) with the failures.
func groupOfAgent(a *wire.Agent) group {
	if core.Failed(*a) {
		return gLost
	}
	return groupOf(a.State)
}

// glyph is the one-cell mark of a state.
func glyph(s wire.State) string {
	switch s {
	case wire.StateQueued:
		return "◌"
	case wire.StateStarting:
		return "◔"
	case wire.StateIdle:
		return "○"
	case wire.StateWorking:
		return "●"
	case wire.StateBlocked:
		return "▲"
	case wire.StateDone:
		return "✓"
	case wire.StateExited:
		return "■"
	case wire.StateKilled:
		return "✕"
	case wire.StateFailed:
		return "✗"
	case wire.StateLost:
		return "?"
	case wire.StateHibernated:
		return "z" // asleep: its session is kept, enter wakes it
	}
	return "·"
}

// rollup sums a subtree: agents by group, and their usage.
type rollup struct {
	agents int
	ended  int // agents whose process is gone for good (hidden unless shown)
	groups [nGroups]int
	usage  core.Total
}

func contrib(a *wire.Agent) rollup {
	if a == nil {
		return rollup{}
	}
	r := rollup{agents: 1, usage: core.TotalOf(a.Usage)}
	r.groups[groupOfAgent(a)] = 1
	if ended(a) {
		r.ended = 1
	}
	return r
}

func (r *rollup) add(o rollup, sign int) {
	r.agents += sign * o.agents
	r.ended += sign * o.ended
	for i := range r.groups {
		r.groups[i] += sign * o.groups[i]
	}
	if sign > 0 {
		r.usage.Add(o.usage)
	} else {
		r.usage.Sub(o.usage)
	}
}

// worst is the most urgent group present, or nGroups when empty.
func (r rollup) worst() group {
	for g := group(0); g < nGroups; g++ {
		if r.groups[g] > 0 {
			return g
		}
	}
	return nGroups
}

// node is one segment of the path tree. An inner node may also be an agent (a lead at
// "review" with children under "review/…").
type node struct {
	name     string
	path     string
	depth    int
	parent   *node
	children []*node // in natural order of their names (w2 before w10)
	agent    *wire.Agent
	folded   bool
	roll     rollup  // this node and everything below it
	hay      string  // what the finder searches, lowercased (haystack)
	ended    bool    // the agent has ended (kept here: a search reads it for every node)
	key      float64 // the sort key, set on rebuild when not sorting by path
}

// index is the agent tree, kept up to date one event at a time: an upsert touches the
// node and its ancestors (depth ≤ 16), never the whole tree. The flattened list of
// visible rows is rebuilt only when the shape changes (agent added or removed, fold,
// filter), not per frame or per state change.
type index struct {
	root   node
	byPath map[string]*node
	byID   map[string]*node

	flat  []*node
	dirty bool

	filter    string // the finder's text, as typed
	q         query  // the finder's text, parsed
	status    statusFilter
	showEnded bool
	sort      sortKey
	best      *node // the best-scoring match of the last rebuild, nil without words
	matched   int   // how many agents matched in the last rebuild, for the finder's line
	// pinned is the selected node: it stays in the rows when it ends, so an agent that
	// exits under the cursor keeps its row and preview until the selection moves on.
	pinned *node

	// Histograms of the widths of what the text columns show, kept per upsert, so the
	// tree can give a column the room its widest value needs without scanning agents.
	wProvider, wModel, wRole, wName widths
	// wNode counts the agents on nodes (DESIGN §14) by their node's width: the NODE
	// column is shown only while it has one.
	wNode widths
}

// widths counts values by display width; its max is the widest value present.
type widths map[int]int

func (w widths) add(n, sign int) {
	if n == 0 {
		return
	}
	w[n] += sign
	if w[n] <= 0 {
		delete(w, n)
	}
}

func (w widths) max() int {
	m := 0
	for n := range w {
		m = max(m, n)
	}
	return m
}

func newIndex() *index {
	return &index{byPath: map[string]*node{}, byID: map[string]*node{}, dirty: true,
		wProvider: widths{}, wModel: widths{}, wRole: widths{}, wName: widths{}, wNode: widths{}}
}

// len is the number of agents indexed.
func (x *index) len() int { return len(x.byID) }

// upsert records an agent's latest snapshot.
func (x *index) upsert(a wire.Agent) {
	if n, ok := x.byID[a.ID]; ok && n.path == a.Path {
		x.setAgent(n, &a)
		return
	} else if ok {
		x.remove(a.ID) // moved (should not happen, but stay consistent)
	}
	n := x.ensure(a.Path)
	if n.agent != nil && n.agent.ID != a.ID {
		// The path was reused: prefer a live agent, then the newest.
		old := n.agent
		if old.State.Live() && !a.State.Live() || a.CreatedAt.Before(old.CreatedAt) && !a.State.Live() {
			return
		}
		delete(x.byID, old.ID)
	}
	x.byID[a.ID] = n
	x.setAgent(n, &a)
}

func (x *index) setAgent(n *node, a *wire.Agent) {
	d := contrib(a)
	old := contrib(n.agent)
	x.measure(n, n.agent, -1)
	x.measure(n, a, +1)
	n.agent = a
	n.hay, n.ended = "", ended(a)
	if a != nil {
		n.hay = haystack(a)
	}
	for p := n; p != nil; p = p.parent {
		p.roll.add(old, -1)
		p.roll.add(d, +1)
	}
	// The shape depends on the agent's fields when anything filters, hides or sorts by
	// them; unfiltered, path-sorted, a state change leaves the rows as they are.
	if x.searching() || old.ended != d.ended || old.agents != d.agents || x.sortMoves(old, d) {
		x.dirty = true
	}
}

// sortMoves says whether an agent's change from old to d can move rows in the chosen
// order: its state group for state, its cost for cost (ages do not change).
func (x *index) sortMoves(old, d rollup) bool {
	switch x.sort {
	case sortState:
		return old.groups != d.groups
	case sortCost:
		return old.usage.USD != d.usage.USD
	}
	return false
}

// measure counts (sign +1) or uncounts (-1) the widths of what a's row shows.
func (x *index) measure(n *node, a *wire.Agent, sign int) {
	if a == nil {
		return
	}
	x.wProvider.add(width(a.Provider), sign)
	x.wModel.add(width(modelLabel(a)), sign)
	x.wRole.add(width(a.Role), sign)
	x.wNode.add(width(a.Node), sign)
	x.wName.add(2*n.depth+width(n.name), sign)
}

// modelLabel is the model column of an agent: the account it runs on first, when not
// the default, so a narrow column cuts the model, not it.
func modelLabel(a *wire.Agent) string {
	if a.Account != "" && a.Account != "default" {
		return strings.TrimSuffix("@"+a.Account+" "+a.Model, " ")
	}
	return a.Model
}

// ensure finds or creates the node for path and its ancestors.
func (x *index) ensure(path string) *node {
	if n, ok := x.byPath[path]; ok {
		return n
	}
	parent := &x.root
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		parent = x.ensure(path[:i])
	}
	name := path[strings.LastIndexByte(path, '/')+1:]
	n := &node{name: name, path: path, depth: parent.depth + 1, parent: parent}
	if parent == &x.root {
		n.depth = 0
	}
	i := sort.Search(len(parent.children), func(i int) bool { return natural.Compare(parent.children[i].name, name) >= 0 })
	parent.children = append(parent.children, nil)
	copy(parent.children[i+1:], parent.children[i:])
	parent.children[i] = n
	x.byPath[path] = n
	x.dirty = true
	return n
}

// remove drops an agent and prunes inner nodes left empty.
func (x *index) remove(id string) {
	n, ok := x.byID[id]
	if !ok {
		return
	}
	delete(x.byID, id)
	x.setAgent(n, nil)
	if x.pinned == n {
		x.pinned = nil
	}
	for n != &x.root && n.agent == nil && len(n.children) == 0 {
		p := n.parent
		for i, c := range p.children {
			if c == n {
				p.children = append(p.children[:i], p.children[i+1:]...)
				break
			}
		}
		delete(x.byPath, n.path)
		n = p
	}
	x.dirty = true
}

// setFilter sets the finder's text (find.go says what it matches).
func (x *index) setFilter(f string) {
	if f == x.filter {
		return
	}
	x.filter = f
	x.q = parseQuery(f)
	x.dirty = true
}

func (x *index) setStatus(s statusFilter) {
	if s != x.status {
		x.status = s
		x.dirty = true
	}
}

func (x *index) setShowEnded(on bool) {
	if on != x.showEnded {
		x.showEnded = on
		x.dirty = true
	}
}

func (x *index) setSort(s sortKey) {
	if s != x.sort {
		x.sort = s
		x.dirty = true
	}
}

// hidesEnded says whether ended agents are left out: unless shown with `.`, or a status
// or a state: word chooses the agents (needs-me includes the failed ones).
func (x *index) hidesEnded() bool {
	return !x.showEnded && x.status == statusAll && !x.q.hasState()
}

// searching says whether rows are chosen agent by agent (words, a status, a state),
// which shows every match with its ancestors, folded or not.
func (x *index) searching() bool { return !x.q.empty() || x.status != statusAll }

// matches scores an agent's node against the finder, the status and the ended rule.
func (x *index) matches(n *node) (int, bool) { return x.matchesHiding(n, x.hidesEnded()) }

// matchesHiding is matches with hidesEnded worked out once by the caller.
func (x *index) matchesHiding(n *node, hide bool) (int, bool) {
	a := n.agent
	if a == nil || hide && n.ended && n != x.pinned {
		return 0, false
	}
	if x.status != statusAll && !inStatus(a, x.status) || !x.q.stateOK(a) {
		return 0, false
	}
	return x.q.match(n)
}

// holdsPinned says whether the pinned node is n or below it.
func (x *index) holdsPinned(n *node) bool {
	p := x.pinned
	return p != nil && (p == n || strings.HasPrefix(p.path, n.path+"/"))
}

// pin keeps n in the rows; the rows are rebuilt when the node pinned before was held
// there only by its pin.
func (x *index) pin(n *node) {
	if n == x.pinned {
		return
	}
	if old := x.pinned; old != nil && ended(old.agent) && x.hidesEnded() {
		x.dirty = true
	}
	x.pinned = n
}

// shown is the number of agents the tree can show: all, less the ended ones hidden.
func (x *index) shown(r rollup) int {
	if x.hidesEnded() {
		return r.agents - r.ended
	}
	return r.agents
}

func (x *index) toggle(n *node) {
	if len(n.children) > 0 {
		n.folded = !n.folded
		x.dirty = true
	}
}

func (x *index) setFolded(n *node, folded bool) {
	if len(n.children) > 0 && n.folded != folded {
		n.folded = folded
		x.dirty = true
	}
}

// rows returns the visible rows, rebuilding them only when the shape changed.
func (x *index) rows() []*node {
	if x.dirty {
		x.flat = x.build(x.flat[:0])
		x.dirty = false
	}
	return x.flat
}

// visible is rows for View: the kept rows, or when the shape changed since they were
// built (Update lays out after every message, so it has not) a fresh list that is not
// kept — drawing changes nothing.
func (x *index) visible() ([]*node, int) {
	if x.dirty {
		cp := *x // build sets best and matched; the copy keeps them to itself
		rows := cp.build(nil)
		return rows, cp.matched
	}
	return x.flat, x.matched
}

// build appends the visible rows to flat. It sets best, which is why View calls it only
// on a copy's behalf when the kept rows are current (visible).
func (x *index) build(flat []*node) []*node {
	if x.sort != sortPath {
		x.computeKeys(&x.root)
	}
	x.best, x.matched = nil, 0
	if !x.searching() {
		// Folds hold; a subtree of ended agents only is skipped whole when they are
		// hidden, which the roll-ups say without walking it.
		hide := x.hidesEnded()
		var walk func(n *node)
		walk = func(n *node) {
			for _, c := range x.sorted(n) {
				if hide && c.roll.agents == c.roll.ended && !x.holdsPinned(c) {
					continue
				}
				flat = append(flat, c)
				if !c.folded {
					walk(c)
				}
			}
		}
		walk(&x.root)
		return flat
	}
	// A search shows every match with its ancestors, folded or not.
	bestScore, hide := 0, x.hidesEnded()
	var walk func(n *node) bool
	walk = func(n *node) bool {
		any := false
		for _, c := range x.sorted(n) {
			at := len(flat)
			flat = append(flat, c)
			sub := walk(c)
			score, ok := x.matchesHiding(c, hide)
			if ok {
				x.matched++
				if x.best == nil || score > bestScore {
					x.best, bestScore = c, score
				}
			}
			if !sub && !ok {
				flat = flat[:at]
				continue
			}
			any = true
		}
		return any
	}
	walk(&x.root)
	return flat
}

// nextBlocked finds the first blocked agent after path in tree order (wrapping), using
// the roll-ups to skip subtrees with nothing blocked.
func (x *index) nextBlocked(after string) *node {
	var first, found *node
	passed := after == ""
	var walk func(n *node) bool
	walk = func(n *node) bool {
		for _, c := range n.children {
			if c.roll.groups[gBlocked] == 0 {
				if !passed && (c.path == after || strings.HasPrefix(after, c.path+"/")) {
					passed = true // after lies inside a subtree with nothing blocked
				}
				continue
			}
			if c.agent != nil && c.agent.State == wire.StateBlocked {
				if first == nil {
					first = c
				}
				if passed && c.path != after {
					found = c
					return true
				}
			}
			if c.path == after {
				passed = true
			}
			if walk(c) {
				return true
			}
		}
		return false
	}
	walk(&x.root)
	if found != nil {
		return found
	}
	return first
}

// reveal unfolds n's ancestors so it is visible, and shows ended agents when n is one
// (a jump to an agent must land on it, not beside it).
func (x *index) reveal(n *node) {
	for p := n.parent; p != nil && p != &x.root; p = p.parent {
		x.setFolded(p, false)
	}
	if x.hidesEnded() && ended(n.agent) {
		x.setShowEnded(true)
	}
}

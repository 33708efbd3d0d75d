package ui

import (
	"sort"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"orcr/core"
	"orcr/core/wire"
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
	groups [nGroups]int
	usage  core.Total
}

func contrib(a *wire.Agent) rollup {
	if a == nil {
		return rollup{}
	}
	r := rollup{agents: 1, usage: core.TotalOf(a.Usage)}
	r.groups[groupOfAgent(a)] = 1
	return r
}

func (r *rollup) add(o rollup, sign int) {
	r.agents += sign * o.agents
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
	roll     rollup // this node and everything below it
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

	filter string
	glob   bool
}

func newIndex() *index {
	return &index{byPath: map[string]*node{}, byID: map[string]*node{}, dirty: true}
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
	n.agent = a
	for p := n; p != nil; p = p.parent {
		p.roll.add(old, -1)
		p.roll.add(d, +1)
	}
	if x.filter != "" && old.agents == 0 {
		x.dirty = true
	}
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
	i := sort.Search(len(parent.children), func(i int) bool { return naturalCompare(parent.children[i].name, name) >= 0 })
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

// setFilter selects agents by text (substring of the path) or, when the text has glob
// characters, by doublestar glob.
func (x *index) setFilter(f string) {
	if f == x.filter {
		return
	}
	x.filter = f
	x.glob = strings.ContainsAny(f, "*?[{")
	x.dirty = true
}

func (x *index) matches(n *node) bool {
	if n.agent == nil {
		return false
	}
	if x.glob {
		ok, err := doublestar.Match(x.filter, n.path)
		return err == nil && ok
	}
	return strings.Contains(n.path, x.filter)
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
func (x *index) visible() []*node {
	if x.dirty {
		return x.build(nil)
	}
	return x.flat
}

// build appends the visible rows to flat.
func (x *index) build(flat []*node) []*node {
	if x.filter == "" {
		var walk func(n *node)
		walk = func(n *node) {
			for _, c := range n.children {
				flat = append(flat, c)
				if !c.folded {
					walk(c)
				}
			}
		}
		walk(&x.root)
		return flat
	}
	// A filter shows every match with its ancestors, folded or not.
	var walk func(n *node) bool
	walk = func(n *node) bool {
		any := false
		for _, c := range n.children {
			at := len(flat)
			flat = append(flat, c)
			sub := walk(c)
			if !sub && !x.matches(c) {
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

// reveal unfolds n's ancestors so it is visible.
func (x *index) reveal(n *node) {
	for p := n.parent; p != nil && p != &x.root; p = p.parent {
		x.setFolded(p, false)
	}
}

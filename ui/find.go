package ui

import (
	"sort"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"orcr/core/wire"
)

// The finder: `/` narrows the tree as the user types. The text is split on spaces;
// each word must match (like fzf), fuzzily — its letters in order, not necessarily
// adjacent — somewhere in the agent's path, role, provider, model or blocked reason, so
// "alp12" finds zeta/alpha/a12. A word with glob characters matches the path as a
// doublestar glob instead, and "state:blocked,working" (or a status name: needs-me,
// working, ended, live) keeps only agents in those states. The best-scoring match is
// selected as the user types.

// statusFilter is the status the `f` key cycles through.
type statusFilter int

const (
	statusAll statusFilter = iota
	statusNeedsMe
	statusWorking
	statusEnded
	nStatus
)

func (s statusFilter) String() string {
	switch s {
	case statusNeedsMe:
		return "needs-me"
	case statusWorking:
		return "working"
	case statusEnded:
		return "ended"
	}
	return "all"
}

// ended reports whether an agent's process is gone for good (exited, killed, failed,
// lost): these are hidden unless asked for, so the tree does not grow with them.
func ended(a *wire.Agent) bool { return a != nil && a.State.Terminal() }

// inStatus reports whether an agent belongs to a status: needs-me is what waits on the
// operator (a prompt, a finished turn, a failure), working is what is under way.
func inStatus(a *wire.Agent, s statusFilter) bool {
	switch s {
	case statusNeedsMe:
		return a.State == wire.StateBlocked || a.State == wire.StateDone || groupOfAgent(a) == gLost
	case statusWorking:
		return a.State == wire.StateWorking || a.State == wire.StateStarting || a.State == wire.StateQueued
	case statusEnded:
		return ended(a)
	}
	return true
}

// allStates are the states a state: token names, for its error message.
var allStates = []wire.State{wire.StateQueued, wire.StateStarting, wire.StateIdle, wire.StateWorking,
	wire.StateBlocked, wire.StateDone, wire.StateHibernated, wire.StateExited, wire.StateKilled,
	wire.StateFailed, wire.StateLost}

// query is the parsed finder text.
type query struct {
	terms    []string // lowercased fuzzy words
	globs    []string // words with glob characters, matched against the path
	states   map[wire.State]bool
	statuses []statusFilter
	bad      string // an unknown state: value, said on the filter line
}

func (q *query) empty() bool {
	return len(q.terms) == 0 && len(q.globs) == 0 && q.states == nil && q.statuses == nil && q.bad == ""
}

// hasState says the query constrains states, which shows ended agents it names.
func (q *query) hasState() bool { return q.states != nil || q.statuses != nil || q.bad != "" }

func parseQuery(s string) query {
	var q query
	for _, w := range strings.Fields(s) {
		if v, ok := strings.CutPrefix(strings.ToLower(w), "state:"); ok {
			q.addStates(v)
			continue
		}
		if strings.ContainsAny(w, "*?[{") {
			q.globs = append(q.globs, w)
			continue
		}
		q.terms = append(q.terms, strings.ToLower(w))
	}
	return q
}

// addStates reads a state: value: names separated by commas, each a state or a status
// (needs-me, ended, live), or the start of one, so the tree narrows while the name is
// being typed ("state:bl" is blocked). An empty value constrains nothing yet.
func (q *query) addStates(v string) {
	for _, name := range strings.Split(v, ",") {
		if name == "" {
			continue
		}
		if q.states == nil {
			q.states = map[wire.State]bool{}
		}
		known := false
		for _, st := range allStates {
			if strings.HasPrefix(string(st), name) {
				q.states[st], known = true, true
			}
		}
		for _, g := range []struct {
			name string
			s    statusFilter
		}{{"needs-me", statusNeedsMe}, {"ended", statusEnded}} {
			if strings.HasPrefix(g.name, name) {
				q.statuses, known = append(q.statuses, g.s), true
			}
		}
		if strings.HasPrefix("live", name) {
			for _, st := range allStates {
				if st.Live() {
					q.states[st] = true
				}
			}
			known = true
		}
		if !known && q.bad == "" {
			q.bad = name
		}
	}
}

// stateOK reports whether a passes the query's state: words (any of them).
func (q *query) stateOK(a *wire.Agent) bool {
	if !q.hasState() {
		return true
	}
	if q.states[a.State] {
		return true
	}
	for _, s := range q.statuses {
		if inStatus(a, s) {
			return true
		}
	}
	return false
}

// match scores an agent's node against the words; ok is false when a word is missing.
func (q *query) match(n *node) (score int, ok bool) {
	for _, g := range q.globs {
		if m, err := doublestar.Match(g, n.path); err != nil || !m {
			return 0, false
		}
	}
	for _, t := range q.terms {
		s, ok := fuzzyFields(n.hay, t)
		if !ok {
			return 0, false
		}
		score += s
	}
	return score, true
}

// fuzzyFields matches a word within one field of the haystack at a time (a word's
// letters spread over path and model would match nearly anything), scoring the best
// field; a match in the path scores more.
func fuzzyFields(hay, pat string) (int, bool) {
	best, found := 0, false
	for i := 0; hay != ""; i++ {
		f := hay
		if j := strings.IndexByte(hay, 0); j >= 0 {
			f, hay = hay[:j], hay[j+1:]
		} else {
			hay = ""
		}
		s, ok := fuzzy(f, pat)
		if !ok {
			continue
		}
		if i == 0 {
			s += 8
		}
		if !found || s > best {
			best, found = s, true
		}
	}
	return best, found
}

// haystack is what the finder searches for an agent: its path first (so a match there
// scores best on ties), then role, provider, model and what it is blocked on, lowercased
// once when the snapshot arrives, not per keystroke.
func haystack(a *wire.Agent) string {
	var b strings.Builder
	b.WriteString(a.Path)
	for _, s := range []string{a.Role, a.Provider, a.Model, a.Account, a.StateReason} {
		if s != "" {
			b.WriteByte(0)
			b.WriteString(s)
		}
	}
	if bl := a.Blocked; bl != nil {
		for _, s := range []string{bl.Kind, bl.Detail, bl.Question} {
			if s != "" {
				b.WriteByte(0)
				b.WriteString(s)
			}
		}
	}
	return strings.ToLower(b.String())
}

// fuzzy finds pat's bytes in order in s (fzf's v1 algorithm: the first end, then the
// shortest span back from it) and scores the match: every matched byte counts, more
// when it follows the previous one or starts a word, less the longer the span.
func fuzzy(s, pat string) (int, bool) {
	if pat == "" {
		return 0, true
	}
	pi, end := 0, -1
	for i := 0; i < len(s); i++ {
		if s[i] == pat[pi] {
			pi++
			if pi == len(pat) {
				end = i
				break
			}
		}
	}
	if end < 0 {
		return 0, false
	}
	start := end
	pi = len(pat) - 1
	for i := end; i >= 0; i-- {
		if s[i] == pat[pi] {
			start = i
			if pi == 0 {
				break
			}
			pi--
		}
	}
	score, prev := 0, -2
	pi = 0
	for i := start; i <= end && pi < len(pat); i++ {
		if s[i] != pat[pi] {
			continue
		}
		score += 2
		if i == prev+1 {
			score += 4
		}
		if i == 0 || isBoundary(s[i-1]) {
			score += 6
		}
		prev = i
		pi++
	}
	score -= end - start + 1 - len(pat)
	return score, true
}

func isBoundary(c byte) bool {
	switch c {
	case 0, '/', '-', '_', '.', ' ', '@', ':', '(':
		return true
	}
	return false
}

// sortKey is the tree's sibling order, cycled by a key and shown in the column header.
type sortKey int

const (
	sortPath  sortKey = iota // natural: a2 before a10
	sortAge                  // newest first
	sortCost                 // dearest first
	sortState                // most urgent first: blocked, working, queued, done, failed, ended
	nSort
)

func (s sortKey) String() string {
	switch s {
	case sortAge:
		return "age"
	case sortCost:
		return "cost"
	case sortState:
		return "state"
	}
	return "path"
}

// computeKeys sets every node's sort key from its subtree (the newest agent for age,
// the roll-up for cost and state), once per rebuild.
func (x *index) computeKeys(n *node) {
	for _, c := range n.children {
		x.computeKeys(c)
	}
	switch x.sort {
	case sortAge:
		k := float64(0)
		if n.agent != nil {
			k = float64(n.agent.CreatedAt.UnixNano())
		}
		for _, c := range n.children {
			k = max(k, c.key)
		}
		n.key = k
	case sortCost:
		n.key = n.roll.usage.USD
	case sortState:
		g := n.roll.worst()
		if n.agent != nil && len(n.children) == 0 {
			g = groupOfAgent(n.agent)
		}
		n.key = -float64(g)
	}
}

// sorted is n's children in the chosen order: natural by name for path (the order they
// are kept in), else by key, highest first, ties in natural order.
func (x *index) sorted(n *node) []*node {
	if x.sort == sortPath || len(n.children) < 2 {
		return n.children
	}
	out := append([]*node(nil), n.children...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].key > out[j].key })
	return out
}

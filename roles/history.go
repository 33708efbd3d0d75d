package roles

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"orcr/core"
	"orcr/core/wire"

	roleapi "orcr/roles/api"
)

// AgentHistory lists finished agents (terminal records GC has not pruned), newest first.
func (s *Service) AgentHistory(ctx context.Context, p roleapi.AgentHistoryParams) (roleapi.AgentHistoryResult, error) {
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	if !started {
		return HistoryOf(ctx, s.k, p)
	}
	q, err := historyQuery(ctx, s.k, p)
	if err != nil {
		return roleapi.AgentHistoryResult{}, err
	}
	s.mu.Lock()
	pg := s.hist.match(q)
	s.mu.Unlock()
	return q.result(pg), nil
}

// Lister is what history reads: the agents, and who asks (for relative globs).
type Lister interface {
	List(ctx context.Context, p wire.ListParams) ([]wire.Agent, error)
	CallerAgent(ctx context.Context) (*wire.Agent, error)
}

// HistoryOf is history.list over k's agents.
func HistoryOf(ctx context.Context, k Lister, p roleapi.AgentHistoryParams) (roleapi.AgentHistoryResult, error) {
	q, err := historyQuery(ctx, k, p)
	if err != nil {
		return roleapi.AgentHistoryResult{}, err
	}
	as, err := k.List(ctx, wire.ListParams{All: true})
	if err != nil {
		return roleapi.AgentHistoryResult{}, err
	}
	var x histIndex
	x.load(as)
	return q.result(x.match(q)), nil
}

// histQuery is a history.list request read once: its glob, window, form and page.
type histQuery struct {
	g     *core.Glob
	now   time.Time
	since int64 // unix nanoseconds; 0: all
	text  bool
	limit int      // entries in one page; 0: all
	after *histRow // the cursor: the page starts after this (end, id)
}

func historyQuery(ctx context.Context, k Lister, p roleapi.AgentHistoryParams) (histQuery, error) {
	if p.SinceSeconds < 0 {
		return histQuery{}, wire.Errorf(wire.CodeInvalidParams, "--since must not be negative")
	}
	q := histQuery{now: time.Now().UTC(), text: p.Text}
	if p.Glob != "" {
		scope := ""
		if me, err := k.CallerAgent(ctx); err != nil {
			return histQuery{}, err
		} else if me != nil {
			scope = me.Path
		}
		gl, err := core.ParseGlob(scope, p.Glob)
		if err != nil {
			return histQuery{}, err
		}
		q.g = &gl
	}
	if p.SinceSeconds > 0 {
		q.since = q.now.Add(-time.Duration(p.SinceSeconds) * time.Second).UnixNano()
	}
	if p.Limit < 0 {
		return histQuery{}, wire.Errorf(wire.CodeInvalidParams, "limit must not be negative")
	}
	q.limit = p.Limit
	if p.After != "" {
		end, id, ok := strings.Cut(p.After, " ")
		ns, err := strconv.ParseInt(end, 10, 64)
		if !ok || err != nil || id == "" {
			return histQuery{}, wire.Errorf(wire.CodeInvalidParams, "after %q is not a history cursor: pass the next of the previous page", p.After)
		}
		q.after = &histRow{e: roleapi.AgentHistoryEntry{ID: id}, end: ns}
	}
	return q, nil
}

// cursor names row for a page's next: "ENDNANOS ID". Like agent.list's, it names an
// entry rather than a position, so entries added (newer, so before it) since the
// previous page do not shift the next one, and an entry pruned since is still a
// place in the order to go on from.
func cursor(r *histRow) string { return strconv.FormatInt(r.end, 10) + " " + r.e.ID }

// histRow is a finished agent's entry with the cells of its line that do not change
// with time, rendered once when the agent finishes: at 10,000 agents, rendering every
// row on every call (and the garbage it made) was most of `orcr history`.
type histRow struct {
	e     roleapi.AgentHistoryEntry
	end   int64
	cells []string // core.HistoryRow without its first (ENDED) column
	width []int    // rune counts of cells
}

func newHistRow(e roleapi.AgentHistoryEntry) *histRow {
	cells := roleapi.HistoryRow(e, e.EndedAt)[1:]
	r := &histRow{e: e, end: e.EndedAt.UnixNano(), cells: cells, width: make([]int, len(cells))}
	for i, c := range cells {
		r.width[i] = utf8.RuneCountInString(c)
	}
	return r
}

// newer orders rows newest first; the same end instant: higher id first.
func newer(x, y *histRow) int {
	if c := cmp.Compare(y.end, x.end); c != 0 {
		return c
	}
	return strings.Compare(y.e.ID, x.e.ID)
}

// histIndex keeps finished agents' rows in history order. Rows are never changed
// once built (a new entry replaces its row), so a caller may render the rows match
// returned after letting go of the lock that guards the index.
type histIndex struct {
	byID map[string]*histRow
	rows []*histRow // newest first
	// width is the widest cell of each column (but ENDED) of any row put since the
	// load: pages are laid out to it. It does not shrink when rows go, which only
	// leaves a column a little wider than it needs.
	width []int
}

func (x *histIndex) widen(r *histRow) {
	if x.width == nil {
		x.width = make([]int, len(r.width))
	}
	for i, n := range r.width {
		x.width[i] = max(x.width[i], n)
	}
}

// load fills an empty index from the kernel's records (one per id) in one sort.
func (x *histIndex) load(as []wire.Agent) {
	x.byID, x.rows, x.width = make(map[string]*histRow, len(as)), nil, nil
	for i := range as {
		if as[i].State.Terminal() && as[i].EndedAt != nil {
			r := newHistRow(Entry(as[i]))
			x.widen(r)
			x.byID[r.e.ID] = r
			x.rows = append(x.rows, r)
		}
	}
	slices.SortFunc(x.rows, newer)
}

// put adds or replaces one entry (an agent that finished just now sorts first, so
// the insertion is a short search and a move of pointers).
func (x *histIndex) put(e roleapi.AgentHistoryEntry) {
	if x.byID == nil {
		x.byID = map[string]*histRow{}
	}
	x.remove(e.ID)
	r := newHistRow(e)
	x.widen(r)
	i, _ := slices.BinarySearchFunc(x.rows, r, newer)
	x.rows = slices.Insert(x.rows, i, r)
	x.byID[e.ID] = r
}

func (x *histIndex) remove(id string) {
	old := x.byID[id]
	if old == nil {
		return
	}
	delete(x.byID, id)
	if i, ok := slices.BinarySearchFunc(x.rows, old, newer); ok {
		x.rows = slices.Delete(x.rows, i, i+1)
	}
}

// histPage is one answer's rows, the cursor of the next page, and what a page's text
// needs to line up with the pages before and after it.
type histPage struct {
	rows   []*histRow
	next   string
	width  []int // the widest cell of each column (but ENDED) in the whole index
	oldest int64 // the oldest row's end: the longest "ago" of any page
}

// match is the rows q selects, newest first: one page of them when q has a limit. A
// page starts by a binary search for its cursor and stops at limit rows, so its cost
// does not grow with the history's length (but with how many rows a glob skips).
func (x *histIndex) match(q histQuery) histPage {
	rows := x.rows
	if q.after != nil {
		i, found := slices.BinarySearchFunc(rows, q.after, newer)
		if found {
			i++
		}
		rows = rows[i:]
	}
	n := len(rows)
	if q.limit > 0 {
		n = min(n, q.limit+1)
	}
	pg := histPage{rows: make([]*histRow, 0, n), width: x.width}
	if len(x.rows) > 0 {
		pg.oldest = x.rows[len(x.rows)-1].end
	}
	for _, r := range rows {
		if r.end < q.since {
			break // older rows only from here
		}
		if q.g == nil || q.g.Match(r.e.Path) {
			pg.rows = append(pg.rows, r)
			if q.limit > 0 && len(pg.rows) > q.limit {
				pg.rows = pg.rows[:q.limit]
				pg.next = cursor(pg.rows[q.limit-1])
				break
			}
		}
	}
	return pg
}

// result is the answer for a page: its entries, or the aligned table. Without a limit
// the table is as wide as its rows need; a page's is as wide as the whole history's,
// and only the first has the header, so the pages make one table.
func (q histQuery) result(pg histPage) roleapi.AgentHistoryResult {
	if q.text {
		var t histTable
		if q.limit > 0 {
			t = histTable{header: q.after == nil, width: pg.width, ago: len(core.FormatAge(q.now.Sub(time.Unix(0, pg.oldest)))) + len(" ago")}
		} else {
			t = histTable{header: true}
		}
		return roleapi.AgentHistoryResult{Entries: []roleapi.AgentHistoryEntry{}, Text: t.render(pg.rows, q.now), Next: pg.next}
	}
	out := make([]roleapi.AgentHistoryEntry, len(pg.rows))
	for i, r := range pg.rows {
		out[i] = r.e
	}
	return roleapi.AgentHistoryResult{Entries: out, Next: pg.next}
}

// histTable is how a text answer is laid out: with the header or not, and at least
// as wide as width (the cells but ENDED) and ago (ENDED).
type histTable struct {
	header bool
	width  []int
	ago    int
}

// render lays the rows out as Align does, from their cached cells; only the
// ENDED column ("5m ago") is made per call.
func (t histTable) render(rows []*histRow, now time.Time) string {
	cols := roleapi.HistoryColumns
	w := make([]int, len(cols))
	for i, c := range cols {
		w[i] = utf8.RuneCountInString(c)
	}
	if t.ago > 0 {
		// A page: ENDED as wide as the oldest entry's (days), or as "59m ago" (any
		// seconds, minutes or hours), whichever is wider.
		w[0] = max(w[0], t.ago, len("59m ago"))
	}
	for i, n := range t.width {
		w[i+1] = max(w[i+1], n)
	}
	ago := make([]string, len(rows))
	size, last := 0, ""
	for j, r := range rows {
		// Neighbours mostly read the same ("3h ago"): one string for a run of them.
		if a := core.FormatAge(now.Sub(r.e.EndedAt)); j > 0 && a == last {
			ago[j] = ago[j-1]
		} else {
			ago[j], last = a+" ago", a
		}
		w[0] = max(w[0], utf8.RuneCountInString(ago[j]))
		for i, n := range r.width {
			w[i+1] = max(w[i+1], n)
		}
	}
	for _, n := range w {
		size += n + 2
	}
	var b strings.Builder
	b.Grow(size * (len(rows) + 1))
	cell := func(s string, n, i int) {
		b.WriteString(s)
		if i < len(w)-1 {
			for ; n < w[i]+2; n++ {
				b.WriteByte(' ')
			}
		}
	}
	if t.header {
		for i, c := range cols {
			cell(c, utf8.RuneCountInString(c), i)
		}
		b.WriteByte('\n')
	}
	for j, r := range rows {
		cell(ago[j], utf8.RuneCountInString(ago[j]), 0)
		for i, c := range r.cells {
			cell(c, r.width[i], i+1)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// Entry is a finished agent's history line.
func Entry(a wire.Agent) roleapi.AgentHistoryEntry {
	e := roleapi.AgentHistoryEntry{ID: a.ID, Path: a.Path, Role: a.Role, Provider: a.Provider, Model: a.Model, State: a.State,
		Result: result(a), Tokens: a.Usage.InputTokens + a.Usage.OutputTokens + a.Usage.CacheReadTokens + a.Usage.CacheWriteTokens,
		CostUSD: a.Usage.CostUSD, ResumedFrom: a.ResumedFrom, Resumable: a.Provider != "shell" && a.SessionID != ""}
	if a.EndedAt != nil {
		e.EndedAt = *a.EndedAt
		start := a.CreatedAt
		if a.StartedAt != nil {
			start = *a.StartedAt
		}
		e.DurationSeconds = int(a.EndedAt.Sub(start) / time.Second)
	}
	return e
}

// result is what the agent's end says: its exit code, or the state and why.
func result(a wire.Agent) string {
	switch {
	case a.State == wire.StateExited && a.ExitCode != nil:
		return "exit " + strconv.Itoa(*a.ExitCode)
	case a.State == wire.StateFailed && a.Error != "":
		return "failed: " + a.Error
	case a.StateReason != "":
		return string(a.State) + ": " + a.StateReason
	}
	return string(a.State)
}

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
)

// History lists finished agents (terminal records GC has not pruned), newest first.
func (s *Service) AgentHistory(ctx context.Context, p wire.AgentHistoryParams) (wire.AgentHistoryResult, error) {
	s.mu.Lock()
	if !s.started {
		s.mu.Unlock()
		return HistoryOf(ctx, s.k, p)
	}
	entries := make([]wire.AgentHistoryEntry, 0, len(s.hist))
	for _, e := range s.hist {
		entries = append(entries, e)
	}
	s.mu.Unlock()
	return historyFrom(ctx, s.k, entries, p)
}

// Lister is what history reads: the agents, and who asks (for relative globs).
type Lister interface {
	List(ctx context.Context, p wire.ListParams) ([]wire.Agent, error)
	CallerAgent(ctx context.Context) (*wire.Agent, error)
}

// HistoryOf is history.list over k's agents.
func HistoryOf(ctx context.Context, k Lister, p wire.AgentHistoryParams) (wire.AgentHistoryResult, error) {
	as, err := k.List(ctx, wire.ListParams{All: true})
	if err != nil {
		return wire.AgentHistoryResult{}, err
	}
	entries := make([]wire.AgentHistoryEntry, 0, len(as))
	for i := range as {
		if as[i].State.Terminal() && as[i].EndedAt != nil {
			entries = append(entries, Entry(as[i]))
		}
	}
	return historyFrom(ctx, k, entries, p)
}

// historyFrom filters, sorts and renders finished agents' entries.
func historyFrom(ctx context.Context, k Lister, all []wire.AgentHistoryEntry, p wire.AgentHistoryParams) (wire.AgentHistoryResult, error) {
	if p.SinceSeconds < 0 {
		return wire.AgentHistoryResult{}, wire.Errorf(wire.CodeInvalidParams, "--since must not be negative")
	}
	var g *core.Glob
	if p.Glob != "" {
		scope := ""
		if me, err := k.CallerAgent(ctx); err != nil {
			return wire.AgentHistoryResult{}, err
		} else if me != nil {
			scope = me.Path
		}
		gl, err := core.ParseGlob(scope, p.Glob)
		if err != nil {
			return wire.AgentHistoryResult{}, err
		}
		g = &gl
	}
	now := time.Now().UTC()
	var since time.Time
	if p.SinceSeconds > 0 {
		since = now.Add(-time.Duration(p.SinceSeconds) * time.Second)
	}
	// Sort small keys, not records: at 10,000 agents moving whole records was a
	// third of the call.
	type key struct {
		end int64
		id  string
		i   int
	}
	keys := make([]key, 0, len(all))
	for i := range all {
		e := &all[i]
		if e.EndedAt.Before(since) || g != nil && !g.Match(e.Path) {
			continue
		}
		keys = append(keys, key{e.EndedAt.UnixNano(), e.ID, i})
	}
	slices.SortFunc(keys, func(x, y key) int {
		if c := cmp.Compare(y.end, x.end); c != 0 {
			return c
		}
		return strings.Compare(y.id, x.id)
	})
	out := make([]wire.AgentHistoryEntry, len(keys))
	for j, k := range keys {
		out[j] = all[k.i]
	}
	if p.Text {
		rows := make([][]string, len(out))
		for i, e := range out {
			rows[i] = core.HistoryRow(e, now)
		}
		return wire.AgentHistoryResult{Entries: []wire.AgentHistoryEntry{}, Text: Align(core.HistoryColumns, rows)}, nil
	}
	return wire.AgentHistoryResult{Entries: out}, nil
}

// Align lays rows out in columns two spaces apart, as tabwriter would, in one pass
// over precomputed widths (rune counts, so paths with non-ASCII letters line up).
func Align(cols []string, rows [][]string) string {
	w := make([]int, len(cols))
	width := func(s string) int { return utf8.RuneCountInString(s) }
	for i, c := range cols {
		w[i] = width(c)
	}
	size := 0
	for _, r := range rows {
		for i, c := range r {
			if n := width(c); n > w[i] {
				w[i] = n
			}
			size += len(c) + 2
		}
	}
	var b strings.Builder
	b.Grow(size + len(rows)*len(cols)*8)
	line := func(r []string) {
		for i, c := range r {
			b.WriteString(c)
			if i < len(r)-1 {
				for n := width(c); n < w[i]+2; n++ {
					b.WriteByte(' ')
				}
			}
		}
		b.WriteByte('\n')
	}
	line(cols)
	for _, r := range rows {
		line(r)
	}
	return b.String()
}

// Entry is a finished agent's history line.
func Entry(a wire.Agent) wire.AgentHistoryEntry {
	e := wire.AgentHistoryEntry{ID: a.ID, Path: a.Path, Role: a.Role, Provider: a.Provider, Model: a.Model, State: a.State,
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

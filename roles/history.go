package roles

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"orcr/core"
	"orcr/core/wire"
)

// History columns of `orcr history`.
var HistoryColumns = []string{"ENDED", "PATH", "ROLE", "PROVIDER", "MODEL", "DURATION", "TOKENS", "COST", "RESULT"}

// History lists finished agents (terminal records GC has not pruned), newest first.
func (s *Service) History(ctx context.Context, p wire.HistoryParams) (wire.HistoryResult, error) {
	if p.SinceSeconds < 0 {
		return wire.HistoryResult{}, wire.Errorf(wire.CodeInvalidParams, "--since must not be negative")
	}
	var g *core.Glob
	if p.Glob != "" {
		scope := ""
		if me, err := s.k.CallerAgent(ctx); err != nil {
			return wire.HistoryResult{}, err
		} else if me != nil {
			scope = me.Path
		}
		gl, err := core.ParseGlob(scope, p.Glob)
		if err != nil {
			return wire.HistoryResult{}, err
		}
		g = &gl
	}
	as, err := s.k.List(ctx, wire.ListParams{All: true})
	if err != nil {
		return wire.HistoryResult{}, err
	}
	now := time.Now().UTC()
	var since time.Time
	if p.SinceSeconds > 0 {
		since = now.Add(-time.Duration(p.SinceSeconds) * time.Second)
	}
	out := make([]wire.HistoryEntry, 0, len(as))
	for i := range as {
		a := &as[i]
		if !a.State.Terminal() || a.EndedAt == nil || a.EndedAt.Before(since) {
			continue
		}
		if g != nil && !g.Match(a.Path) {
			continue
		}
		out = append(out, Entry(*a))
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].EndedAt.Equal(out[j].EndedAt) {
			return out[i].EndedAt.After(out[j].EndedAt)
		}
		return out[i].ID > out[j].ID
	})
	if p.Table {
		t := &wire.Table{Columns: HistoryColumns, Rows: make([][]string, len(out))}
		for i, e := range out {
			t.Rows[i] = Row(e, now)
		}
		return wire.HistoryResult{Entries: []wire.HistoryEntry{}, Table: t}, nil
	}
	return wire.HistoryResult{Entries: out}, nil
}

// Entry is a finished agent's history line.
func Entry(a wire.Agent) wire.HistoryEntry {
	e := wire.HistoryEntry{ID: a.ID, Path: a.Path, Role: a.Role, Provider: a.Provider, Model: a.Model, State: a.State,
		Result: result(a), Tokens: a.Usage.InputTokens + a.Usage.OutputTokens + a.Usage.CacheReadTokens + a.Usage.CacheWriteTokens,
		CostUSD: a.Usage.CostUSD, ResumedFrom: a.ResumedFrom}
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

// Row is an entry's display row.
func Row(e wire.HistoryEntry, now time.Time) []string {
	role := e.Role
	if role == "" {
		role = "-"
	}
	model := e.Model
	if model == "" {
		model = "-"
	}
	tokens := "-"
	if e.Tokens > 0 {
		tokens = core.HumanCount(e.Tokens)
	}
	cost := "-"
	if e.CostUSD != nil {
		cost = fmt.Sprintf("$%.2f", *e.CostUSD)
	}
	res := e.Result
	if len(res) > 60 {
		res = res[:57] + "..."
	}
	return []string{core.FormatAge(now.Sub(e.EndedAt)) + " ago", e.Path, role, e.Provider, model,
		(time.Duration(e.DurationSeconds) * time.Second).String(), tokens, cost, res}
}

package core

import (
	"sort"
	"time"

	"orcr/core/wire"
)

// Usage windows. An agent counts in a window when it was active inside it; its
// tokens are the agent's totals (transcripts give totals, not a timeline), so the
// windows are an upper bound for agents that straddle the window's start.
const (
	Window5h     = 5 * time.Hour
	WindowWeekly = 7 * 24 * time.Hour
)

// UsageReport aggregates agents and limit readings into the usage report: one row per
// provider, model and window ("total", "5h", "weekly"), and the newest reading per
// provider and window. It is pure; the engine calls it with its agents and stored
// readings.
func UsageReport(agents []wire.Agent, readings []wire.LimitReading, p wire.UsageParams) wire.UsageResult {
	return UsageReportAt(time.Now(), agents, readings, p)
}

// UsageReportAt is UsageReport at a given instant.
func UsageReportAt(now time.Time, agents []wire.Agent, readings []wire.LimitReading, p wire.UsageParams) wire.UsageResult {
	type key struct{ provider, account, model, window string }
	type acc struct {
		row      wire.UsageRow
		cost     float64
		unpriced bool
	}
	rows := map[key]*acc{}
	windows := []struct {
		name string
		span time.Duration
	}{{"total", 0}, {"5h", Window5h}, {"weekly", WindowWeekly}}
	for _, a := range agents {
		if p.Provider != "" && a.Provider != p.Provider {
			continue
		}
		model := a.Model
		if model == "" {
			model = "(unknown)"
		}
		active := lastActive(a)
		for _, w := range windows {
			if w.span > 0 && now.Sub(active) > w.span {
				continue
			}
			k := key{a.Provider, a.Account, model, w.name}
			r := rows[k]
			if r == nil {
				r = &acc{row: wire.UsageRow{Provider: a.Provider, Account: a.Account, Model: model, Window: w.name}}
				rows[k] = r
			}
			u := a.Usage
			r.row.Agents++
			r.row.Usage.InputTokens += u.InputTokens
			r.row.Usage.OutputTokens += u.OutputTokens
			r.row.Usage.CacheReadTokens += u.CacheReadTokens
			r.row.Usage.CacheWriteTokens += u.CacheWriteTokens
			switch {
			case u.CostUSD != nil:
				r.cost += *u.CostUSD
			case hasTokens(u):
				r.unpriced = true
			}
		}
	}
	res := wire.UsageResult{Rows: []wire.UsageRow{}, Readings: []wire.LimitReading{}}
	for _, r := range rows {
		if !r.unpriced {
			c := r.cost
			r.row.Usage.CostUSD, r.row.Usage.Priced = &c, true
		}
		res.Rows = append(res.Rows, r.row)
	}
	order := map[string]int{"total": 0, "5h": 1, "weekly": 2}
	sort.Slice(res.Rows, func(i, j int) bool {
		a, b := res.Rows[i], res.Rows[j]
		if a.Provider != b.Provider {
			return a.Provider < b.Provider
		}
		if a.Account != b.Account {
			return a.Account < b.Account
		}
		if a.Model != b.Model {
			return a.Model < b.Model
		}
		return order[a.Window] < order[b.Window]
	})
	res.Readings = latestReadings(readings, p.Provider)
	return res
}

func hasTokens(u wire.Usage) bool {
	return u.InputTokens+u.OutputTokens+u.CacheReadTokens+u.CacheWriteTokens > 0
}

// lastActive is when an agent last did something: its end, else its last update.
func lastActive(a wire.Agent) time.Time {
	t := a.UpdatedAt
	for _, c := range []time.Time{a.StateAt, a.CreatedAt} {
		if c.After(t) {
			t = c
		}
	}
	if a.StartedAt != nil && a.StartedAt.After(t) {
		t = *a.StartedAt
	}
	if a.EndedAt != nil && a.EndedAt.After(t) {
		t = *a.EndedAt
	}
	return t
}

// latestReadings keeps the newest reading per provider, account, window and model
// family, sorted.
func latestReadings(rs []wire.LimitReading, provider string) []wire.LimitReading {
	type key struct{ provider, account, window, family string }
	best := map[key]wire.LimitReading{}
	for _, r := range rs {
		if provider != "" && r.Provider != provider {
			continue
		}
		k := key{r.Provider, r.Account, r.Window, r.Family}
		if old, ok := best[k]; !ok || r.ObservedAt.After(old.ObservedAt) {
			best[k] = r
		}
	}
	out := make([]wire.LimitReading, 0, len(best))
	for _, r := range best {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Provider != b.Provider {
			return a.Provider < b.Provider
		}
		if a.Account != b.Account {
			return a.Account < b.Account
		}
		if a.Window != b.Window {
			return a.Window < b.Window
		}
		return a.Family < b.Family
	})
	return out
}

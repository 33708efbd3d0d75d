package core

import (
	"testing"
	"time"

	"orcr/core/wire"
)

func TestUsageReportWindowsAndPricing(t *testing.T) {
	now := time.Date(2026, 11, 30, 20, 0, 0, 0, time.UTC)
	cost := func(v float64) *float64 { return &v }
	agents := []wire.Agent{
		{Provider: "claude", Model: "claude-sonnet-4-5", UpdatedAt: now.Add(-time.Hour),
			Usage: wire.Usage{InputTokens: 100, OutputTokens: 10, CacheReadTokens: 1000, CacheWriteTokens: 5, CostUSD: cost(0.5), Priced: true}},
		{Provider: "claude", Model: "claude-sonnet-4-5", UpdatedAt: now.Add(-48 * time.Hour),
			Usage: wire.Usage{InputTokens: 1, OutputTokens: 1, CostUSD: cost(0.25), Priced: true}},
		{Provider: "claude", Model: "claude-sonnet-4-5", UpdatedAt: now.Add(-30 * 24 * time.Hour),
			Usage: wire.Usage{InputTokens: 7, CostUSD: cost(1), Priced: true}},
		{Provider: "codex", Model: "mystery", UpdatedAt: now.Add(-time.Minute),
			Usage: wire.Usage{InputTokens: 50, OutputTokens: 5}},
		{Provider: "codex", Model: "", UpdatedAt: now.Add(-time.Minute)},
	}
	res := UsageReportAt(now, agents, nil, wire.UsageParams{})
	got := map[string]wire.UsageRow{}
	for _, r := range res.Rows {
		got[r.Provider+"/"+r.Model+"/"+r.Window] = r
	}
	check := func(k string, agents int, in int64, cost *float64) {
		t.Helper()
		r, ok := got[k]
		if !ok {
			t.Fatalf("no row %s in %+v", k, res.Rows)
		}
		if r.Agents != agents || r.Usage.InputTokens != in {
			t.Errorf("%s: agents %d in %d", k, r.Agents, r.Usage.InputTokens)
		}
		switch {
		case cost == nil && (r.Usage.CostUSD != nil || r.Usage.Priced):
			t.Errorf("%s: want unpriced, got %v", k, *r.Usage.CostUSD)
		case cost != nil && (r.Usage.CostUSD == nil || *r.Usage.CostUSD != *cost):
			t.Errorf("%s: cost %v want %v", k, r.Usage.CostUSD, *cost)
		}
	}
	check("claude/claude-sonnet-4-5/total", 3, 108, cost(1.75))
	check("claude/claude-sonnet-4-5/5h", 1, 100, cost(0.5))
	check("claude/claude-sonnet-4-5/weekly", 2, 101, cost(0.75))
	check("codex/mystery/total", 1, 50, nil)
	check("codex/(unknown)/5h", 1, 0, cost(0))
	if res.Rows[0].Provider != "claude" || res.Rows[0].Window != "total" || res.Rows[1].Window != "5h" {
		t.Errorf("order: %+v", res.Rows[:2])
	}
	if only := UsageReportAt(now, agents, nil, wire.UsageParams{Provider: "codex"}); len(only.Rows) != 6 {
		t.Errorf("provider filter: %d rows", len(only.Rows))
	}
}

func TestUsageReportLatestReadings(t *testing.T) {
	now := time.Date(2026, 11, 30, 20, 0, 0, 0, time.UTC)
	rs := []wire.LimitReading{
		{Provider: "claude", Window: "5h", UsedPct: 10, ObservedAt: now.Add(-time.Hour)},
		{Provider: "claude", Window: "5h", UsedPct: 100, LimitHit: true, ObservedAt: now},
		{Provider: "claude", Window: "weekly", UsedPct: 40, ObservedAt: now},
		{Provider: "codex", Window: "5h", UsedPct: 3, ObservedAt: now},
	}
	res := UsageReportAt(now, nil, rs, wire.UsageParams{Provider: "claude"})
	if len(res.Readings) != 2 || res.Readings[0].UsedPct != 100 || res.Readings[1].Window != "weekly" {
		t.Fatalf("readings %+v", res.Readings)
	}
	if res.Rows == nil {
		t.Fatal("rows must be an empty list, not null")
	}
}

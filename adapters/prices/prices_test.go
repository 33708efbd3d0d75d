package prices

import (
	"math"
	"testing"
)

func TestEmbeddedRowsHaveDateAndSource(t *testing.T) {
	for _, r := range Default().Rows() {
		if r.Date == "" || r.Source == "" || r.Input <= 0 || r.Output <= 0 {
			t.Errorf("row %q lacks date, source or prices: %+v", r.Model, r)
		}
	}
}

func TestLookupLongestPrefixAtBoundary(t *testing.T) {
	tb := Default()
	cases := map[string]string{
		"claude-sonnet-4-5-20250929": "claude-sonnet-4-5",
		"claude-sonnet-4-20250514":   "claude-sonnet-4",
		"claude-opus-4-1-20250805":   "claude-opus-4-1",
		"claude-opus-4-6[1m]":        "claude-opus-4-6",
		"anthropic/claude-haiku-4-5": "claude-haiku-4-5",
		"claude-opus-5-5":            "claude-opus-5-5",
		"claude-opus-5":              "claude-opus-5",
		"gpt-5.3-codex":              "gpt-5.3-codex",
		"gpt-5-codex":                "gpt-5-codex",
		"gpt-5-2025-08-07":           "gpt-5",
		"openai/gpt-6-sol":           "gpt-6-sol",
	}
	for model, want := range cases {
		r, ok := tb.Lookup(model)
		if !ok || r.Model != want {
			t.Errorf("Lookup(%q) = %q,%v want %q", model, r.Model, ok, want)
		}
	}
	for _, model := range []string{"gpt-5.1", "claude-opus-45", "llama-3", "", "<synthetic>", "scripted-model"} {
		if r, ok := tb.Lookup(model); ok {
			t.Errorf("Lookup(%q) = %q, want unpriced", model, r.Model)
		}
	}
}

func TestCostAnthropicCacheRules(t *testing.T) {
	// sonnet-4-5: in 3, out 15, read 0.30, write 5m 3.75, write 1h 6.
	usd, ok := Default().Cost("claude-sonnet-4-5", Tokens{Input: 1e6, Output: 1e6, CacheRead: 1e6, CacheWrite5m: 1e6, CacheWrite1h: 1e6})
	if !ok || math.Abs(usd-(3+15+0.3+3.75+6)) > 1e-9 {
		t.Fatalf("cost = %v,%v", usd, ok)
	}
	// OpenAI rows do not bill cache writes.
	usd, _ = Default().Cost("gpt-5.3-codex", Tokens{Input: 1e6, CacheRead: 1e6, CacheWrite5m: 1e6})
	if math.Abs(usd-(1.75+0.175)) > 1e-9 {
		t.Fatalf("codex cost = %v", usd)
	}
}

func TestUsageUnpricedIsNilNeverZero(t *testing.T) {
	tb := Default()
	u := tb.Usage(map[string]Tokens{"mystery-model": {Input: 10, Output: 5}})
	if u.CostUSD != nil || u.Priced || u.InputTokens != 10 || u.OutputTokens != 5 {
		t.Fatalf("unknown model: %+v", u)
	}
	u = tb.Usage(map[string]Tokens{"mystery-model": {Input: 10}, "claude-haiku-4-5": {Input: 1e6}})
	if u.CostUSD != nil || u.Priced {
		t.Fatalf("one unpriced model must make the roll-up unpriced: %+v", u)
	}
	u = tb.Usage(map[string]Tokens{"claude-haiku-4-5": {Input: 1e6, CacheWrite1h: 1e6}})
	if !u.Priced || u.CostUSD == nil || math.Abs(*u.CostUSD-3) > 1e-9 || u.CacheWriteTokens != 1e6 {
		t.Fatalf("haiku usage: %+v", u)
	}
}

func TestOverrides(t *testing.T) {
	// The config's [prices] rows (daemon.priceTable) reach the table this way.
	rows := []Row{
		{Model: "scripted-model", Input: 1, Output: 2, Source: "config"},
		{Model: "claude-sonnet-4-5", Input: 30, Output: 150, Source: "config"},
	}
	tb, err := New(rows)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := tb.Lookup("scripted-model"); !ok || r.Source != "config" {
		t.Fatalf("added row: %+v %v", r, ok)
	}
	if usd, _ := tb.Cost("claude-sonnet-4-5", Tokens{Input: 1e6}); usd != 30 {
		t.Fatalf("override not applied: %v", usd)
	}
	if _, err := New([]Row{{Input: 1}}); err == nil {
		t.Fatal("row without model accepted")
	}
}

// Package prices owns orcr's model price table: an embedded data file whose every row
// carries the date it was read and its source, overridable from the user's config. It
// turns per-model token counts into USD. A model with no row is "unpriced": its cost is
// nil, never $0.
package prices

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"orcr/core/wire"
)

//go:embed prices.json
var builtin []byte

// Row is the price of one model family in USD per million tokens.
type Row struct {
	Model        string  `json:"model" toml:"model"` // id prefix
	Input        float64 `json:"input" toml:"input"`
	Output       float64 `json:"output" toml:"output"`
	CacheRead    float64 `json:"cache_read" toml:"cache_read"`
	CacheWrite5m float64 `json:"cache_write_5m" toml:"cache_write_5m"` // 0: 1.25x input
	CacheWrite1h float64 `json:"cache_write_1h" toml:"cache_write_1h"` // 0: 2x input
	// NoCacheWrite says the provider does not bill cache writes (OpenAI).
	NoCacheWrite bool   `json:"no_cache_write" toml:"no_cache_write"`
	Date         string `json:"date" toml:"date"`
	Source       string `json:"source" toml:"source"`
}

// Tokens are one model's token counts. Input excludes cached input.
type Tokens struct {
	Input        int64
	Output       int64
	CacheRead    int64
	CacheWrite5m int64 // cache writes with the 5-minute TTL (or unknown TTL)
	CacheWrite1h int64
}

// Add returns t + o.
func (t Tokens) Add(o Tokens) Tokens {
	return Tokens{t.Input + o.Input, t.Output + o.Output, t.CacheRead + o.CacheRead,
		t.CacheWrite5m + o.CacheWrite5m, t.CacheWrite1h + o.CacheWrite1h}
}

// Sub returns t - o.
func (t Tokens) Sub(o Tokens) Tokens {
	return Tokens{t.Input - o.Input, t.Output - o.Output, t.CacheRead - o.CacheRead,
		t.CacheWrite5m - o.CacheWrite5m, t.CacheWrite1h - o.CacheWrite1h}
}

// Zero reports whether every count is zero.
func (t Tokens) Zero() bool { return t == Tokens{} }

// Table is a price table. The zero value prices nothing; use Default or New.
type Table struct {
	rows []Row // sorted by descending prefix length
}

// Default returns the embedded table.
func Default() *Table {
	t, err := New(nil)
	if err != nil {
		panic(err) // the embedded file is tested
	}
	return t
}

// New returns the embedded table with overrides applied: an override row replaces the
// built-in row for the same model prefix or adds a new one.
func New(overrides []Row) (*Table, error) {
	var f struct {
		Rows []Row `json:"rows"`
	}
	if err := json.Unmarshal(builtin, &f); err != nil {
		return nil, fmt.Errorf("prices: embedded table: %w", err)
	}
	byModel := map[string]Row{}
	for _, r := range f.Rows {
		byModel[r.Model] = r
	}
	for _, r := range overrides {
		if r.Model == "" {
			return nil, fmt.Errorf("prices: override without model")
		}
		if r.Source == "" {
			r.Source = "config"
		}
		byModel[r.Model] = r
	}
	t := &Table{}
	for _, r := range byModel {
		t.rows = append(t.rows, r)
	}
	sort.Slice(t.rows, func(i, j int) bool {
		if len(t.rows[i].Model) != len(t.rows[j].Model) {
			return len(t.rows[i].Model) > len(t.rows[j].Model)
		}
		return t.rows[i].Model < t.rows[j].Model
	})
	return t, nil
}

// Rows returns the table's rows, longest prefix first.
func (t *Table) Rows() []Row { return append([]Row(nil), t.rows...) }

// normalize strips what CLIs put around a model id: a provider prefix
// ("anthropic/claude-…"), a context-size tag ("claude-opus-4-6[1m]") and case.
func normalize(model string) string {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	return m
}

func boundary(rest string) bool {
	return rest == "" || strings.ContainsRune("-@:[.", rune(rest[0])) && !(rest[0] == '.' && len(rest) > 1 && rest[1] >= '0' && rest[1] <= '9')
}

// Lookup finds the row for a model: the longest prefix that ends at a boundary, so
// "claude-sonnet-4-5-20250929" uses the claude-sonnet-4-5 row but "gpt-5.1" does not
// silently take gpt-5's price.
func (t *Table) Lookup(model string) (Row, bool) {
	if t == nil {
		return Row{}, false
	}
	m := normalize(model)
	if m == "" || m == "<synthetic>" {
		return Row{}, false
	}
	for _, r := range t.rows {
		p := strings.ToLower(r.Model)
		if strings.HasPrefix(m, p) && boundary(m[len(p):]) {
			return r, true
		}
	}
	return Row{}, false
}

// Cost prices one model's tokens. ok is false when the model has no row.
func (t *Table) Cost(model string, k Tokens) (usd float64, ok bool) {
	r, ok := t.Lookup(model)
	if !ok {
		return 0, false
	}
	w5, w1 := r.CacheWrite5m, r.CacheWrite1h
	if w5 == 0 {
		w5 = 1.25 * r.Input
	}
	if w1 == 0 {
		w1 = 2 * r.Input
	}
	if r.NoCacheWrite {
		w5, w1 = 0, 0
	}
	usd = (float64(k.Input)*r.Input + float64(k.Output)*r.Output + float64(k.CacheRead)*r.CacheRead +
		float64(k.CacheWrite5m)*w5 + float64(k.CacheWrite1h)*w1) / 1e6
	return usd, true
}

// Usage rolls per-model tokens into the wire totals. The cost is set only when every
// model that used tokens is priced; otherwise the usage is unpriced (CostUSD nil).
func (t *Table) Usage(byModel map[string]Tokens) wire.Usage {
	var u wire.Usage
	var cost float64
	priced := true
	for model, k := range byModel {
		u.InputTokens += k.Input
		u.OutputTokens += k.Output
		u.CacheReadTokens += k.CacheRead
		u.CacheWriteTokens += k.CacheWrite5m + k.CacheWrite1h
		if k.Zero() {
			continue
		}
		c, ok := t.Cost(model, k)
		if !ok {
			priced = false
			continue
		}
		cost += c
	}
	if priced {
		u.CostUSD, u.Priced = &cost, true
	}
	return u
}

package codex

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	"orcr/adapters/internal/agentkit"
	"orcr/adapters/prices"
	"orcr/core/wire"
)

// Rollout accumulates what orcr needs from a codex rollout file
// ($CODEX_HOME/sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl), one line at a time.
// Token usage follows the reference's rule: codex writes the cumulative
// total_token_usage with each token_count event and repeats samples, so orcr adds
// the difference to the previous total, skips equal samples, and treats a decreasing
// total as a restart. Input includes cached input; orcr splits it.
type Rollout struct {
	SessionID string
	Cwd       string
	Version   string
	Started   time.Time
	Model     string

	byModel map[string]prices.Tokens
	prev    *tokenUsage

	LastMessage string
	TurnOpen    bool
	TurnsEnded  int
	// LastEnd is when the newest turn ended (its line's timestamp).
	LastEnd time.Time
	// UpperBound is set when samples carried only total_tokens (billed as input).
	UpperBound bool
	// Limit is the newest usage-limit error, cleared by a later successful turn.
	Limit *LimitHit
	// Rates is the latest reading per window ("5h", "weekly"); RatesSeq counts changes.
	Rates    map[string]wire.LimitReading
	RatesSeq int

	Lines, Bad int
}

// LimitHit is a usage-limit error recorded in the rollout.
type LimitHit struct {
	Text     string
	ResetsAt *time.Time
	At       time.Time
}

type tokenUsage struct {
	Input     int64 `json:"input_tokens"`
	Cached    int64 `json:"cached_input_tokens"`
	Output    int64 `json:"output_tokens"`
	Reasoning int64 `json:"reasoning_output_tokens"`
	Total     int64 `json:"total_tokens"`
}

// NewRollout returns an empty accumulator.
func NewRollout() *Rollout {
	return &Rollout{byModel: map[string]prices.Tokens{}, Rates: map[string]wire.LimitReading{}}
}

// ByModel returns the token totals per model.
func (r *Rollout) ByModel() map[string]prices.Tokens {
	out := make(map[string]prices.Tokens, len(r.byModel))
	for k, v := range r.byModel {
		out[k] = v
	}
	return out
}

type envelope struct {
	Timestamp time.Time       `json:"timestamp"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
}

type eventMsg struct {
	Type             string  `json:"type"`
	Message          string  `json:"message"`
	LastAgentMessage *string `json:"last_agent_message"`
	Info             *struct {
		Total *tokenUsage `json:"total_token_usage"`
	} `json:"info"`
	RateLimits map[string]json.RawMessage `json:"rate_limits"`
	Error      *struct {
		Message string          `json:"message"`
		Info    json.RawMessage `json:"codex_error_info"`
	} `json:"error"`
	CodexErrorInfo json.RawMessage `json:"codex_error_info"`
}

type rateWindow struct {
	UsedPercent     float64 `json:"used_percent"`
	WindowMinutes   int     `json:"window_minutes"`
	ResetsAt        int64   `json:"resets_at"`
	ResetsInSeconds int64   `json:"resets_in_seconds"`
}

// skip reports lines orcr never needs: the protocol log (response_item) and the
// display log's item events hold nearly all of a rollout's bytes.
func skip(b []byte) bool {
	head := b[:min(len(b), 160)]
	return bytes.Contains(head, []byte(`"type":"response_item"`)) || bytes.Contains(head, []byte(`"type":"world_state"`))
}

// Add parses one rollout line.
func (r *Rollout) Add(b []byte) {
	r.Lines++
	if skip(b) {
		return
	}
	var e envelope
	if err := json.Unmarshal(b, &e); err != nil {
		r.Bad++
		return
	}
	switch e.Type {
	case "session_meta":
		var m struct {
			ID         string          `json:"id"`
			Cwd        string          `json:"cwd"`
			CLIVersion string          `json:"cli_version"`
			Timestamp  time.Time       `json:"timestamp"`
			Base       json.RawMessage `json:"base_instructions"`
		}
		if json.Unmarshal(e.Payload, &m) == nil {
			r.SessionID, r.Cwd, r.Version, r.Started = m.ID, m.Cwd, m.CLIVersion, m.Timestamp
			if r.Model == "" {
				var bi struct {
					Provenance struct {
						Model string `json:"model"`
					} `json:"provenance"`
				}
				if json.Unmarshal(m.Base, &bi) == nil && bi.Provenance.Model != "" {
					r.Model = bi.Provenance.Model
				}
			}
		}
	case "turn_context":
		var m struct {
			Model string `json:"model"`
		}
		if json.Unmarshal(e.Payload, &m) == nil && m.Model != "" {
			r.Model = m.Model
		}
	case "event_msg":
		var m eventMsg
		if err := json.Unmarshal(e.Payload, &m); err != nil {
			r.Bad++
			return
		}
		r.event(&m, e.Timestamp)
	}
}

func (r *Rollout) event(m *eventMsg, at time.Time) {
	switch m.Type {
	case "task_started", "turn_started", "user_message":
		r.TurnOpen = true
	case "agent_message":
		if m.Message != "" {
			r.LastMessage = m.Message
		}
	case "task_complete", "turn_complete":
		r.TurnOpen = false
		r.TurnsEnded++
		r.LastEnd = at
		if m.LastAgentMessage != nil && *m.LastAgentMessage != "" {
			r.LastMessage = *m.LastAgentMessage
			r.Limit = nil
		}
		if m.Error != nil && isLimit(m.Error.Message, m.Error.Info) {
			r.limit(m.Error.Message, at)
		}
	case "turn_aborted":
		r.TurnOpen = false
		r.TurnsEnded++
		r.LastEnd = at
	case "error":
		if isLimit(m.Message, m.CodexErrorInfo) {
			r.limit(m.Message, at)
		}
	case "token_count":
		if m.Info != nil && m.Info.Total != nil {
			r.tokens(*m.Info.Total)
		}
		r.rates(m.RateLimits, at)
	}
}

func (r *Rollout) tokens(t tokenUsage) {
	if r.prev != nil && *r.prev == t {
		return
	}
	d := t
	if p := r.prev; p != nil && t.Input >= p.Input && t.Cached >= p.Cached && t.Output >= p.Output && t.Total >= p.Total {
		d = tokenUsage{Input: t.Input - p.Input, Cached: t.Cached - p.Cached, Output: t.Output - p.Output, Total: t.Total - p.Total}
	}
	r.prev = &t
	k := prices.Tokens{Input: max(d.Input-d.Cached, 0), CacheRead: min(d.Cached, d.Input), Output: d.Output}
	if d.Input == 0 && d.Output == 0 && d.Total > 0 {
		k.Input, r.UpperBound = d.Total, true
	}
	if d.Cached > d.Input && d.Input > 0 {
		// Some servers report cached separately from input; never go negative.
		k.Input, k.CacheRead = d.Input, d.Cached
	}
	r.byModel[r.Model] = r.byModel[r.Model].Add(k)
}

func (r *Rollout) rates(raw map[string]json.RawMessage, at time.Time) {
	for _, key := range []string{"primary", "secondary"} {
		var w rateWindow
		if json.Unmarshal(raw[key], &w) != nil || (w.WindowMinutes == 0 && w.UsedPercent == 0) {
			continue
		}
		name := agentkit.WindowName(w.WindowMinutes)
		if name == "" {
			if key == "primary" {
				name = "5h"
			} else {
				name = "weekly"
			}
		}
		rd := wire.LimitReading{Provider: Name, Window: name, UsedPct: w.UsedPercent, LimitHit: w.UsedPercent >= 100, ObservedAt: at.UTC()}
		switch {
		case w.ResetsAt > 0:
			t := time.Unix(w.ResetsAt, 0).UTC()
			rd.ResetsAt = &t
		case w.ResetsInSeconds > 0:
			t := at.Add(time.Duration(w.ResetsInSeconds) * time.Second).UTC().Truncate(time.Second)
			rd.ResetsAt = &t
		}
		if old, ok := r.Rates[name]; ok && old.UsedPct == rd.UsedPct && eqTime(old.ResetsAt, rd.ResetsAt) {
			continue
		}
		r.Rates[name] = rd
		r.RatesSeq++
	}
}

func (r *Rollout) limit(text string, at time.Time) {
	h := &LimitHit{Text: text, At: at}
	// The exhausted window's reset is exact; the message's local-time wording is the fallback.
	for _, w := range []string{"5h", "weekly"} {
		if rd, ok := r.Rates[w]; ok && rd.UsedPct >= 100 && rd.ResetsAt != nil {
			h.ResetsAt = rd.ResetsAt
			break
		}
	}
	if h.ResetsAt == nil {
		h.ResetsAt = agentkit.ParseReset(text, at, nil)
	}
	r.Limit = h
}

func isLimit(msg string, info json.RawMessage) bool {
	if bytes.Contains(info, []byte("usage_limit")) {
		return true
	}
	l := strings.ToLower(msg)
	return strings.Contains(l, "usage limit")
}

func eqTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

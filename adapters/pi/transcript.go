package pi

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	"orcr/adapters/internal/agentkit"
	"orcr/adapters/prices"
	"orcr/core/wire"
)

// Session accumulates what orcr needs from a pi session file (format v3), one line
// at a time. Every assistant message carries its own usage (no repeats), so tokens
// are summed per entry id; pi's own USD figure (usage.cost.total) is used when it is
// non-zero, and orcr's price table otherwise.
type Session struct {
	ID      string
	Cwd     string
	Version int
	Model   string

	byModel  map[string]prices.Tokens // tokens of messages pi did not price
	piCost   float64                  // USD pi computed itself
	piTokens prices.Tokens            // tokens of messages pi priced
	seen     map[string]bool

	LastMessage string
	TurnOpen    bool
	TurnsEnded  int
	Limit       *LimitHit
	Lines, Bad  int
}

// LimitHit is a provider usage-limit error pi persisted.
type LimitHit struct {
	Text     string
	ResetsAt *time.Time
	At       time.Time
}

// NewSession returns an empty accumulator.
func NewSession() *Session {
	return &Session{byModel: map[string]prices.Tokens{}, seen: map[string]bool{}}
}

type entry struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Version   int             `json:"version"`
	Cwd       string          `json:"cwd"`
	Timestamp time.Time       `json:"timestamp"`
	ModelID   string          `json:"modelId"`
	Provider  string          `json:"provider"`
	Message   json.RawMessage `json:"message"`
}

type message struct {
	Role         string          `json:"role"`
	Model        string          `json:"model"`
	Provider     string          `json:"provider"`
	StopReason   string          `json:"stopReason"`
	ErrorMessage string          `json:"errorMessage"`
	Content      json.RawMessage `json:"content"`
	Usage        *struct {
		Input      int64 `json:"input"`
		Output     int64 `json:"output"`
		CacheRead  int64 `json:"cacheRead"`
		CacheWrite int64 `json:"cacheWrite"`
		Cost       *struct {
			Total float64 `json:"total"`
		} `json:"cost"`
	} `json:"usage"`
}

// Add parses one session line.
func (s *Session) Add(b []byte) {
	s.Lines++
	if bytes.Contains(b[:min(len(b), 200)], []byte(`"role":"toolResult"`)) && !bytes.Contains(b, []byte(`"usage"`)) {
		return
	}
	var e entry
	if err := json.Unmarshal(b, &e); err != nil {
		s.Bad++
		return
	}
	switch e.Type {
	case "session":
		s.ID, s.Cwd, s.Version = e.ID, e.Cwd, e.Version
	case "model_change":
		if e.ModelID != "" {
			s.Model = e.ModelID
		}
	case "message":
		var m message
		if json.Unmarshal(e.Message, &m) != nil {
			s.Bad++
			return
		}
		s.message(&e, &m)
	}
}

func (s *Session) message(e *entry, m *message) {
	switch m.Role {
	case "user":
		s.TurnOpen = true
		return
	case "assistant":
	default:
		// toolResult / branch summaries may carry usage: count it as spend.
		s.usage(e, m)
		return
	}
	s.usage(e, m)
	if m.Model != "" {
		s.Model = m.Model
	}
	if m.StopReason == "error" {
		if isLimit(m.ErrorMessage) {
			s.Limit = &LimitHit{Text: m.ErrorMessage, At: e.Timestamp,
				ResetsAt: agentkit.ParseReset(m.ErrorMessage, timeOr(e.Timestamp), nil)}
		}
		return
	}
	if m.StopReason != "" && m.StopReason != "toolUse" {
		s.TurnOpen = false
		s.TurnsEnded++
	}
	s.Limit = nil
	if t := textOf(m.Content); t != "" {
		s.LastMessage = t
	}
}

func (s *Session) usage(e *entry, m *message) {
	if m.Usage == nil || (e.ID != "" && s.seen[e.ID]) {
		return
	}
	if e.ID != "" {
		s.seen[e.ID] = true
	}
	k := prices.Tokens{Input: m.Usage.Input, Output: m.Usage.Output, CacheRead: m.Usage.CacheRead, CacheWrite5m: m.Usage.CacheWrite}
	if m.Usage.Cost != nil && m.Usage.Cost.Total > 0 {
		s.piCost += m.Usage.Cost.Total
		s.piTokens = s.piTokens.Add(k)
		return
	}
	model := m.Model
	if model == "" {
		model = s.Model
	}
	s.byModel[model] = s.byModel[model].Add(k)
}

func textOf(raw json.RawMessage) string {
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		var str string
		_ = json.Unmarshal(raw, &str)
		return str
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func isLimit(s string) bool {
	l := strings.ToLower(s)
	if strings.Contains(l, "overloaded") || strings.Contains(l, "not your usage limit") {
		return false
	}
	return strings.Contains(l, "429") || strings.Contains(l, "rate_limit") || strings.Contains(l, "usage_limit") ||
		strings.Contains(l, "usage limit") || strings.Contains(l, "hit your")
}

func timeOr(t time.Time) time.Time {
	if t.IsZero() {
		return time.Now()
	}
	return t
}

// Usage is the session's totals: pi's own cost where it priced a message, orcr's
// price table for the rest; unpriced when a message's model is in neither.
func (s *Session) Usage(t *prices.Table) wire.Usage {
	u := t.Usage(s.byModel)
	u.InputTokens += s.piTokens.Input
	u.OutputTokens += s.piTokens.Output
	u.CacheReadTokens += s.piTokens.CacheRead
	u.CacheWriteTokens += s.piTokens.CacheWrite5m + s.piTokens.CacheWrite1h
	if u.CostUSD != nil {
		c := *u.CostUSD + s.piCost
		u.CostUSD = &c
	}
	return u
}

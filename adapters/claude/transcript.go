package claude

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	"orcr/adapters/internal/agentkit"
	"orcr/adapters/prices"
)

// Transcript accumulates what orcr needs from a Claude Code session transcript
// (<config>/projects/<slug>/<session>.jsonl), fed one line at a time. It follows the
// reference's rules: usage is counted once per message id (one API response is
// written as one line per content block, each repeating usage, and streaming can
// leave an early line with a smaller output count, so the largest counts win);
// "<synthetic>" lines (CLI-made errors) carry no usage and are not the last message;
// unknown line types and malformed lines are skipped.
type Transcript struct {
	SessionID string
	Model     string // model of the newest real assistant message
	Version   string // CLI version that wrote the newest line

	byModel map[string]prices.Tokens
	msgs    map[string]msgSeen

	lastID   string
	lastText []string
	// LastMessage is the newest main-thread assistant text.
	LastMessage string

	// Limit is set while the newest assistant line is a usage-limit error.
	Limit *LimitHit
	// TurnOpen is true between a user prompt and the end of the turn (transcript view).
	TurnOpen bool
	// TurnEnded counts turn ends seen (system turn_duration lines); EndedAt is
	// when the last one was written.
	TurnEnded int
	EndedAt   time.Time
	// Lines counts lines parsed; Bad counts lines skipped as malformed.
	Lines, Bad int
}

// LimitHit is a usage-limit error the CLI wrote into the transcript.
type LimitHit struct {
	Text     string
	ResetsAt *time.Time
	At       time.Time
}

type msgSeen struct {
	model string
	tok   prices.Tokens
}

// NewTranscript returns an empty accumulator.
func NewTranscript() *Transcript {
	return &Transcript{byModel: map[string]prices.Tokens{}, msgs: map[string]msgSeen{}}
}

// ByModel returns the de-duplicated token totals per model.
func (t *Transcript) ByModel() map[string]prices.Tokens {
	out := make(map[string]prices.Tokens, len(t.byModel))
	for k, v := range t.byModel {
		out[k] = v
	}
	return out
}

type line struct {
	Type              string          `json:"type"`
	Subtype           string          `json:"subtype"`
	SessionID         string          `json:"sessionId"`
	Version           string          `json:"version"`
	IsSidechain       bool            `json:"isSidechain"`
	IsMeta            bool            `json:"isMeta"`
	IsAPIErrorMessage bool            `json:"isApiErrorMessage"`
	IsCompactSummary  bool            `json:"isCompactSummary"`
	Error             string          `json:"error"`
	RequestID         string          `json:"requestId"`
	Timestamp         time.Time       `json:"timestamp"`
	Message           json.RawMessage `json:"message"`
}

type message struct {
	ID         string          `json:"id"`
	Model      string          `json:"model"`
	Role       string          `json:"role"`
	StopReason string          `json:"stop_reason"`
	Content    json.RawMessage `json:"content"`
	Usage      *struct {
		Input         int64 `json:"input_tokens"`
		Output        int64 `json:"output_tokens"`
		CacheRead     int64 `json:"cache_read_input_tokens"`
		CacheCreation int64 `json:"cache_creation_input_tokens"`
		Split         *struct {
			M5 int64 `json:"ephemeral_5m_input_tokens"`
			H1 int64 `json:"ephemeral_1h_input_tokens"`
		} `json:"cache_creation"`
	} `json:"usage"`
}

type block struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// interesting is a cheap pre-filter: most bytes of a transcript are attachments,
// tool results and request snapshots that orcr does not need to decode.
func interesting(b []byte) (assistant, user, system bool) {
	// The type field sits near the start or the end of a line depending on the build;
	// look for the exact key/value pairs anywhere.
	assistant = bytes.Contains(b, []byte(`"type":"assistant"`))
	if assistant {
		return
	}
	// Tool results ride on user lines and are most of a transcript's bytes; they never
	// open a turn, so they are not decoded at all.
	user = bytes.Contains(b, []byte(`"type":"user"`)) && !bytes.Contains(b, []byte(`"tool_use_id"`))
	system = !user && bytes.Contains(b, []byte(`"subtype":"turn_duration"`))
	return
}

// Add parses one transcript line.
func (t *Transcript) Add(b []byte) {
	t.Lines++
	a, u, s := interesting(b)
	if !a && !u && !s {
		if bytes.Contains(b, []byte(`"sessionId"`)) && t.SessionID == "" {
			var l line
			if json.Unmarshal(b, &l) == nil {
				t.SessionID = l.SessionID
			}
		}
		return
	}
	var l line
	if err := json.Unmarshal(b, &l); err != nil {
		t.Bad++
		return
	}
	if l.SessionID != "" {
		t.SessionID = l.SessionID
	}
	if l.Version != "" {
		t.Version = l.Version
	}
	switch l.Type {
	case "assistant":
		t.assistant(&l)
	case "user":
		t.user(&l)
	case "system":
		if l.Subtype == "turn_duration" {
			t.TurnOpen = false
			t.TurnEnded++
			t.EndedAt = l.Timestamp
		}
	}
}

func (t *Transcript) assistant(l *line) {
	var m message
	if err := json.Unmarshal(l.Message, &m); err != nil {
		t.Bad++
		return
	}
	synthetic := m.Model == "<synthetic>"
	if l.IsAPIErrorMessage || synthetic {
		if !l.IsSidechain && (l.Error == "rate_limit" || isLimitText(textOf(m.Content))) {
			txt := textOf(m.Content)
			if isLimitText(txt) || l.Error == "rate_limit" {
				t.Limit = &LimitHit{Text: txt, At: l.Timestamp,
					ResetsAt: agentkit.ParseReset(txt, timeOr(l.Timestamp), nil)}
			}
		}
		return
	}
	if m.Usage != nil && m.ID != "" {
		key := m.ID
		if l.RequestID != "" {
			key += "/" + l.RequestID
		}
		tok := prices.Tokens{Input: m.Usage.Input, Output: m.Usage.Output, CacheRead: m.Usage.CacheRead}
		if s := m.Usage.Split; s != nil && s.M5+s.H1 > 0 {
			tok.CacheWrite5m, tok.CacheWrite1h = s.M5, s.H1
			if rest := m.Usage.CacheCreation - s.M5 - s.H1; rest > 0 {
				tok.CacheWrite5m += rest
			}
		} else {
			tok.CacheWrite5m = m.Usage.CacheCreation
		}
		prev, seen := t.msgs[key]
		if seen {
			// Keep the largest of each count: partial lines undercount.
			tok = maxTokens(prev.tok, tok)
			t.byModel[prev.model] = t.byModel[prev.model].Sub(prev.tok)
		}
		t.msgs[key] = msgSeen{model: m.Model, tok: tok}
		t.byModel[m.Model] = t.byModel[m.Model].Add(tok)
	}
	if l.IsSidechain {
		return
	}
	if m.Model != "" {
		t.Model = m.Model
	}
	t.Limit = nil
	if txt := textOf(m.Content); txt != "" {
		if m.ID != t.lastID {
			t.lastID, t.lastText = m.ID, nil
		}
		t.lastText = append(t.lastText, txt)
		t.LastMessage = strings.Join(t.lastText, "\n")
	}
}

func (t *Transcript) user(l *line) {
	if l.IsSidechain || l.IsMeta || l.IsCompactSummary {
		return
	}
	// A prompt the user typed opens a turn; tool results ride on user lines too.
	var m struct {
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(l.Message, &m) != nil {
		return
	}
	if len(m.Content) > 0 && m.Content[0] == '"' {
		t.TurnOpen = true
		return
	}
	var blocks []block
	if json.Unmarshal(m.Content, &blocks) == nil {
		for _, b := range blocks {
			if b.Type == "text" {
				t.TurnOpen = true
				return
			}
		}
	}
}

func textOf(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
	}
	var blocks []block
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// isLimitText tells a plan usage limit from transient throttling.
func isLimitText(s string) bool {
	l := strings.ToLower(s)
	if strings.Contains(l, "not your usage limit") || strings.Contains(l, "overloaded") {
		return false
	}
	return strings.Contains(l, "hit your") && strings.Contains(l, "limit") ||
		strings.Contains(l, "limit reached") || strings.Contains(l, "usage limit") ||
		strings.Contains(l, "rate limit") || strings.Contains(l, "(429)")
}

func maxTokens(a, b prices.Tokens) prices.Tokens {
	return prices.Tokens{Input: max(a.Input, b.Input), Output: max(a.Output, b.Output),
		CacheRead: max(a.CacheRead, b.CacheRead), CacheWrite5m: max(a.CacheWrite5m, b.CacheWrite5m),
		CacheWrite1h: max(a.CacheWrite1h, b.CacheWrite1h)}
}

func timeOr(t time.Time) time.Time {
	if t.IsZero() {
		return time.Now()
	}
	return t
}

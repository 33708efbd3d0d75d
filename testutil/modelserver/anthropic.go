package modelserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// anthropicLimitMessage is the wording of the Anthropic API's 429 for a subscription
// usage limit.
const anthropicLimitMessage = "This request would exceed your account's rate limit. Please try again later."

func (s *Server) anthropic(w http.ResponseWriter, req *Request, body map[string]any, t Turn) int {
	if t.Limit != nil {
		return anthropicLimit(w, t.Limit)
	}
	if f := t.Fail; f != nil {
		w.Header().Set("x-should-retry", "false")
		return writeJSON(w, f.Status, map[string]any{"type": "error",
			"error": map[string]any{"type": f.Type, "message": f.Message}})
	}
	model := modelOf(body, t)
	id := s.id("msg")
	usage := map[string]any{
		"input_tokens":                t.Usage.Input,
		"output_tokens":               t.Usage.Output,
		"cache_read_input_tokens":     t.Usage.CacheRead,
		"cache_creation_input_tokens": t.Usage.CacheWrite,
	}
	var blocks []map[string]any
	if t.Thinking != "" {
		blocks = append(blocks, map[string]any{"type": "thinking", "thinking": t.Thinking, "signature": "c2ln"})
	}
	if t.Text != "" || (len(t.ToolCalls) == 0 && t.Thinking == "") {
		blocks = append(blocks, map[string]any{"type": "text", "text": t.Text})
	}
	for _, tc := range t.ToolCalls {
		var in any
		_ = json.Unmarshal([]byte(inputJSON(tc.Input)), &in)
		blocks = append(blocks, map[string]any{"type": "tool_use", "id": s.id("toolu"), "name": tc.Name, "input": in})
	}
	stop := "end_turn"
	if len(t.ToolCalls) > 0 {
		stop = "tool_use"
	}
	if !req.Stream {
		return writeJSON(w, 200, map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": model,
			"content": blocks, "stop_reason": stop, "stop_sequence": nil, "usage": usage,
		})
	}
	e := newSSE(w)
	startUsage := map[string]any{
		"input_tokens":                t.Usage.Input,
		"output_tokens":               1,
		"cache_read_input_tokens":     t.Usage.CacheRead,
		"cache_creation_input_tokens": t.Usage.CacheWrite,
	}
	e.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": startUsage,
	}})
	e.event("ping", map[string]any{"type": "ping"})
	for i, b := range blocks {
		switch b["type"] {
		case "text":
			e.event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			for _, chunk := range chunks(b["text"].(string), 24) {
				e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
					"delta": map[string]any{"type": "text_delta", "text": chunk}})
			}
		case "thinking":
			e.event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "thinking", "thinking": ""}})
			e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "thinking_delta", "thinking": b["thinking"]}})
			e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "signature_delta", "signature": b["signature"]}})
		case "tool_use":
			e.event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			in, _ := json.Marshal(b["input"])
			e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": string(in)}})
		}
		e.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	e.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": usage})
	e.event("message_stop", map[string]any{"type": "message_stop"})
	return 200
}

// anthropicLimit answers like the Anthropic API does when a subscription's unified
// rate limit is exhausted: 429, a rate_limit_error body and the unified-limit headers
// Claude Code reads to say when the limit resets.
func anthropicLimit(w http.ResponseWriter, l *LimitError) int {
	msg, reset := l.orDefaults(anthropicLimitMessage)
	epoch := strconv.FormatInt(reset.Unix(), 10)
	h := w.Header()
	h.Set("anthropic-ratelimit-unified-status", "rejected")
	h.Set("anthropic-ratelimit-unified-reset", epoch)
	claim := l.Claim
	if claim == "" {
		claim = "five_hour"
	}
	h.Set("anthropic-ratelimit-unified-representative-claim", claim)
	if claim == "five_hour" {
		h.Set("anthropic-ratelimit-unified-5h-status", "rejected")
		h.Set("anthropic-ratelimit-unified-5h-reset", epoch)
		h.Set("anthropic-ratelimit-unified-5h-utilization", "1.0")
	} else {
		// A weekly (or model-scoped weekly) limit: the 5-hour window still has room.
		h.Set("anthropic-ratelimit-unified-5h-status", "allowed")
		h.Set("anthropic-ratelimit-unified-5h-utilization", "0.2")
		h.Set("anthropic-ratelimit-unified-7d-status", "rejected")
		h.Set("anthropic-ratelimit-unified-7d-reset", epoch)
	}
	h.Set("anthropic-ratelimit-unified-fallback", "not_available")
	h.Set("retry-after", strconv.FormatInt(int64(max(time.Until(reset).Seconds(), 1)), 10))
	h.Set("x-should-retry", "false")
	h.Set("request-id", fmt.Sprintf("req_limit_%d", time.Now().UnixNano()))
	return writeJSON(w, http.StatusTooManyRequests, map[string]any{
		"type":  "error",
		"error": map[string]any{"type": "rate_limit_error", "message": msg},
	})
}

func chunks(s string, n int) []string {
	if s == "" {
		return []string{""}
	}
	var out []string
	r := []rune(s)
	for len(r) > n {
		out = append(out, string(r[:n]))
		r = r[n:]
	}
	return append(out, string(r))
}

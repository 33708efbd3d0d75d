package modelserver

import (
	"net/http"
	"strconv"
	"time"
)

// codexLimitMessage is the wording of the ChatGPT backend's usage-limit error.
const codexLimitMessage = "The usage limit has been reached"

func (s *Server) responses(w http.ResponseWriter, req *Request, body map[string]any, t Turn) int {
	if t.Limit != nil {
		return openaiLimit(w, t.Limit)
	}
	model := modelOf(body, t)
	rid := s.id("resp")
	created := time.Now().Unix()
	resp := func(status string, output []any, usage any) map[string]any {
		return map[string]any{"id": rid, "object": "response", "created_at": created, "status": status,
			"model": model, "output": output, "usage": usage}
	}
	e := newSSE(w)
	e.event("response.created", map[string]any{"type": "response.created", "response": resp("in_progress", []any{}, nil)})
	e.event("response.in_progress", map[string]any{"type": "response.in_progress", "response": resp("in_progress", []any{}, nil)})
	var output []any
	idx := 0
	if t.Thinking != "" {
		item := map[string]any{"type": "reasoning", "id": s.id("rs"), "summary": []any{
			map[string]any{"type": "summary_text", "text": t.Thinking}}}
		e.event("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": idx, "item": item})
		e.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": idx, "item": item})
		output = append(output, item)
		idx++
	}
	if t.Text != "" || len(t.ToolCalls) == 0 {
		mid := s.id("msg")
		e.event("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": idx,
			"item": map[string]any{"type": "message", "id": mid, "role": "assistant", "status": "in_progress", "content": []any{}}})
		e.event("response.content_part.added", map[string]any{"type": "response.content_part.added", "item_id": mid,
			"output_index": idx, "content_index": 0, "part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
		for _, c := range chunks(t.Text, 24) {
			e.event("response.output_text.delta", map[string]any{"type": "response.output_text.delta", "item_id": mid,
				"output_index": idx, "content_index": 0, "delta": c})
		}
		e.event("response.output_text.done", map[string]any{"type": "response.output_text.done", "item_id": mid,
			"output_index": idx, "content_index": 0, "text": t.Text})
		part := map[string]any{"type": "output_text", "text": t.Text, "annotations": []any{}}
		e.event("response.content_part.done", map[string]any{"type": "response.content_part.done", "item_id": mid,
			"output_index": idx, "content_index": 0, "part": part})
		item := map[string]any{"type": "message", "id": mid, "role": "assistant", "status": "completed", "content": []any{part}}
		e.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": idx, "item": item})
		output = append(output, item)
		idx++
	}
	for _, tc := range t.ToolCalls {
		var item map[string]any
		if tc.Custom {
			item = map[string]any{"type": "custom_tool_call", "id": s.id("ctc"), "call_id": s.id("call"),
				"name": tc.Name, "input": inputJSON(tc.Input), "status": "completed"}
		} else {
			item = map[string]any{"type": "function_call", "id": s.id("fc"), "call_id": s.id("call"),
				"name": tc.Name, "arguments": inputJSON(tc.Input), "status": "completed"}
		}
		e.event("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": idx, "item": item})
		e.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": idx, "item": item})
		output = append(output, item)
		idx++
	}
	usage := map[string]any{
		"input_tokens":          t.Usage.Input,
		"input_tokens_details":  map[string]any{"cached_tokens": t.Usage.CacheRead},
		"output_tokens":         t.Usage.Output,
		"output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens":          t.Usage.Input + t.Usage.Output,
	}
	e.event("response.completed", map[string]any{"type": "response.completed", "response": resp("completed", output, usage)})
	return 200
}

// openaiLimit answers like the ChatGPT backend when a plan's usage limit is reached:
// 429 with a usage_limit_reached body carrying the reset instant, plus the
// x-codex-* rate-limit headers.
func openaiLimit(w http.ResponseWriter, l *LimitError) int {
	msg, reset := l.orDefaults(codexLimitMessage)
	secs := int64(max(time.Until(reset).Seconds(), 1))
	h := w.Header()
	h.Set("x-codex-primary-used-percent", "100")
	h.Set("x-codex-primary-window-minutes", "300")
	h.Set("x-codex-primary-reset-at", strconv.FormatInt(reset.Unix(), 10))
	h.Set("x-codex-primary-reset-after-seconds", strconv.FormatInt(secs, 10))
	h.Set("x-codex-secondary-used-percent", "40")
	h.Set("x-codex-secondary-window-minutes", "10080")
	return writeJSON(w, http.StatusTooManyRequests, map[string]any{"error": map[string]any{
		"type": "usage_limit_reached", "message": msg, "plan_type": "plus",
		"resets_at": reset.Unix(), "resets_in_seconds": secs,
	}})
}

// chat answers an OpenAI chat-completions request (streaming or not).
func (s *Server) chat(w http.ResponseWriter, req *Request, body map[string]any, t Turn) int {
	if t.Limit != nil {
		return openaiLimit(w, t.Limit)
	}
	model := modelOf(body, t)
	id := s.id("chatcmpl")
	var calls []any
	for i, tc := range t.ToolCalls {
		calls = append(calls, map[string]any{"index": i, "id": s.id("call"), "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": inputJSON(tc.Input)}})
	}
	finish := "stop"
	if len(calls) > 0 {
		finish = "tool_calls"
	}
	usage := map[string]any{"prompt_tokens": t.Usage.Input, "completion_tokens": t.Usage.Output,
		"total_tokens":          t.Usage.Input + t.Usage.Output,
		"prompt_tokens_details": map[string]any{"cached_tokens": t.Usage.CacheRead}}
	msg := map[string]any{"role": "assistant", "content": t.Text}
	if len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	if !req.Stream {
		return writeJSON(w, 200, map[string]any{"id": id, "object": "chat.completion", "created": time.Now().Unix(),
			"model": model, "choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage": usage})
	}
	e := newSSE(w)
	chunk := func(delta map[string]any, fin any, u any) map[string]any {
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": fin}}}
		if u != nil {
			c["usage"] = u
		}
		return c
	}
	e.event("", chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil))
	if t.Text != "" {
		for _, c := range chunks(t.Text, 24) {
			e.event("", chunk(map[string]any{"content": c}, nil, nil))
		}
	}
	if len(calls) > 0 {
		e.event("", chunk(map[string]any{"tool_calls": calls}, nil, nil))
	}
	e.event("", chunk(map[string]any{}, finish, usage))
	e.raw("data: [DONE]")
	return 200
}

package codex

import (
	"testing"
	"time"

	"orcr/core/wire"
)

// FuzzRolloutAndNotify feeds arbitrary rollout lines and notify payloads to the codex
// parsers: nothing may panic and token counts never go negative.
func FuzzRolloutAndNotify(f *testing.F) {
	f.Add([]byte(`{"type":"agent-turn-complete","thread-id":"0199a2b3-0000-7000-8000-000000000001","last-assistant-message":"ok"}`),
		[]byte(`{"timestamp":"2026-11-30T20:00:00Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":10,"output_tokens":3}}}}`))
	f.Add([]byte(`{"type":"approval-requested"}`),
		[]byte(`{"type":"event_msg","payload":{"type":"token_count","rate_limits":{"primary":{"used_percent":100,"window_minutes":300,"resets_at":1764000000}}}}`))
	f.Add([]byte(`{`), []byte(`{"type":"session_meta","payload":{"id":"x","cwd":"/tmp","model":"gpt-5-codex"}}`))
	f.Add([]byte(`null`), []byte(`{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hi"}]}}`))
	p := New(Options{Home: f.TempDir()})
	start := time.Now()
	f.Fuzz(func(t *testing.T, payload, line []byte) {
		o := p.Observe(wire.Agent{ID: "a1", Provider: Name, Cwd: "/nonexistent/orcr-fuzz", StartedAt: &start}).(*observer)
		defer o.Close()
		_, _ = o.Hook("notify", payload)
		r := NewRollout()
		r.Add(line)
		r.Add(payload)
		for model, tok := range r.ByModel() {
			if tok.Input < 0 || tok.Output < 0 || tok.CacheRead < 0 || tok.CacheWrite5m < 0 || tok.CacheWrite1h < 0 {
				t.Fatalf("negative tokens for %q: %+v", model, tok)
			}
		}
	})
}

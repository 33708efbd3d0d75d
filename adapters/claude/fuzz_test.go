package claude

import (
	"testing"

	"orcr/core/wire"
)

// FuzzTranscriptAndHooks feeds arbitrary transcript lines and hook payloads to the
// claude parsers: a truncated, garbled or hostile line must never panic, and token
// counts never go negative.
func FuzzTranscriptAndHooks(f *testing.F) {
	f.Add("Stop", []byte(`{"session_id":"s1","last_assistant_message":"done"}`),
		[]byte(`{"type":"assistant","message":{"model":"claude-opus-5","id":"m1","usage":{"input_tokens":10,"output_tokens":5}}}`))
	f.Add("Notification", []byte(`{"message":"Claude needs your permission to use Bash","notification_type":"permission_prompt"}`),
		[]byte(`{"type":"user","message":{"content":[{"type":"tool_result","content":"x"}]}}`))
	f.Add("StopFailure", []byte(`{"error":"rate_limit","last_assistant_message":"5-hour limit reached ∙ resets 3pm"}`),
		[]byte(`{"type":"system","subtype":"api_error","content":"Claude AI usage limit reached|1764000000"}`))
	f.Add("statusline", []byte(`{"model":{"id":"claude-opus-5"},"cost":{"total_cost_usd":-1}}`), []byte(`{"type":"assistant"`))
	f.Add("SessionStart", []byte(`{"source":"clear","model":"x","transcript_path":"/nonexistent/t.jsonl"}`), []byte{0xff, '\n', '{'})
	p := New(Options{ConfigDir: f.TempDir()})
	f.Fuzz(func(t *testing.T, event string, payload, line []byte) {
		o := p.Observe(wire.Agent{ID: "a1", Provider: Name, Prompt: "go", Cwd: "/nonexistent/orcr-fuzz"}).(*observer)
		defer o.Close()
		_, _ = o.Hook(event, payload)
		tr := NewTranscript()
		tr.Add(line)
		tr.Add(payload)
		for model, tok := range tr.ByModel() {
			if tok.Input < 0 || tok.Output < 0 || tok.CacheRead < 0 || tok.CacheWrite5m < 0 || tok.CacheWrite1h < 0 {
				t.Fatalf("negative tokens for %q: %+v", model, tok)
			}
		}
	})
}

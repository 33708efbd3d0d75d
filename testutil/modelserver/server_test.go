package modelserver

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"orcr/testutil/wait"
	"strings"
	"testing"
	"time"
)

func post(t *testing.T, url, body string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// sseData returns the data payloads of an SSE body, by event name.
func sseData(body string) (names []string, data []map[string]any) {
	sc := bufio.NewScanner(strings.NewReader(body))
	name := ""
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "event: "):
			name = strings.TrimPrefix(l, "event: ")
		case strings.HasPrefix(l, "data: "):
			var m map[string]any
			if json.Unmarshal([]byte(strings.TrimPrefix(l, "data: ")), &m) == nil {
				names, data = append(names, name), append(data, m)
			}
			name = ""
		}
	}
	return
}

const tools = `,"tools":[{"name":"Write"}]`

func TestAnthropicScriptStreamAndLog(t *testing.T) {
	s, err := Start(
		Turn{Text: "hello there, this is a long enough reply to be chunked", Usage: Usage{Input: 10, Output: 7, CacheRead: 100, CacheWrite: 5}},
		Turn{ToolCalls: []ToolCall{{Name: "Write", Input: map[string]any{"file_path": "/x"}}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// A side request (no tools) gets the default reply and does not consume the script.
	_, body := post(t, s.URL+"/v1/messages", `{"model":"m","messages":[]}`)
	if !strings.Contains(body, `"text":"ok"`) || s.Played() != 0 {
		t.Fatalf("side request: %s (played %d)", body, s.Played())
	}
	resp, body := post(t, s.URL+"/v1/messages?beta=true", `{"model":"claude-x","stream":true,"messages":[]`+tools+`}`)
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("content type %q", resp.Header.Get("Content-Type"))
	}
	names, data := sseData(body)
	if names[0] != "message_start" || names[len(names)-1] != "message_stop" {
		t.Fatalf("events %v", names)
	}
	var text string
	var final map[string]any
	for i, n := range names {
		if n == "content_block_delta" {
			text += data[i]["delta"].(map[string]any)["text"].(string)
		}
		if n == "message_delta" {
			final = data[i]["usage"].(map[string]any)
		}
	}
	if text != "hello there, this is a long enough reply to be chunked" || final["output_tokens"].(float64) != 7 || final["cache_read_input_tokens"].(float64) != 100 {
		t.Fatalf("text %q usage %v", text, final)
	}
	_, body = post(t, s.URL+"/v1/messages", `{"model":"claude-x","messages":[]`+tools+`}`)
	if !strings.Contains(body, `"type":"tool_use"`) || !strings.Contains(body, `"stop_reason":"tool_use"`) {
		t.Fatalf("tool call: %s", body)
	}
	reqs := s.Requests()
	if len(reqs) != 3 || reqs[0].Scripted || !reqs[1].Scripted || !reqs[1].Stream || reqs[1].Query != "beta=true" || s.Remaining() != 0 {
		t.Fatalf("log %+v", reqs)
	}
}

func TestLimitsAndDelay(t *testing.T) {
	reset := time.Now().Add(time.Hour).Truncate(time.Second)
	s, _ := Start(Turn{Limit: &LimitError{ResetsAt: reset}}, Turn{Limit: &LimitError{ResetsAt: reset}}, Turn{Text: "late", Delay: 200 * time.Millisecond})
	defer s.Close()
	resp, body := post(t, s.URL+"/v1/messages", `{"stream":true`+tools+`}`)
	if resp.StatusCode != 429 || resp.Header.Get("anthropic-ratelimit-unified-reset") == "" || !strings.Contains(body, "rate_limit_error") {
		t.Fatalf("anthropic 429: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	resp, body = post(t, s.URL+"/v1/responses", `{"stream":true`+tools+`}`)
	var e struct {
		Error struct {
			Type     string `json:"type"`
			ResetsAt int64  `json:"resets_at"`
		} `json:"error"`
	}
	json.Unmarshal([]byte(body), &e)
	if resp.StatusCode != 429 || e.Error.Type != "usage_limit_reached" || e.Error.ResetsAt != reset.Unix() || resp.Header.Get("x-codex-primary-used-percent") != "100" {
		t.Fatalf("openai 429: %d %s", resp.StatusCode, body)
	}
	start := time.Now()
	post(t, s.URL+"/v1/chat/completions", `{"stream":false`+tools+`}`)
	if time.Since(start) < 200*time.Millisecond {
		t.Fatal("delay not applied")
	}
}

func TestResponsesStream(t *testing.T) {
	s, _ := Start(Turn{Text: "done", ToolCalls: []ToolCall{{Name: "exec_command", Input: map[string]any{"cmd": "ls"}}}, Usage: Usage{Input: 50, CacheRead: 20, Output: 3}})
	defer s.Close()
	_, body := post(t, s.URL+"/v1/responses", `{"model":"gpt-x","stream":true`+tools+`}`)
	names, data := sseData(body)
	if names[0] != "response.created" || names[len(names)-1] != "response.completed" {
		t.Fatalf("events %v", names)
	}
	resp := data[len(data)-1]["response"].(map[string]any)
	u := resp["usage"].(map[string]any)
	out := resp["output"].([]any)
	if u["input_tokens"].(float64) != 50 || u["input_tokens_details"].(map[string]any)["cached_tokens"].(float64) != 20 || len(out) != 2 {
		t.Fatalf("completed %v", resp)
	}
	if fc := out[1].(map[string]any); fc["type"] != "function_call" || fc["arguments"] != `{"cmd":"ls"}` {
		t.Fatalf("function call %v", fc)
	}
	r, _ := post(t, s.URL+"/v1/unknown", `{}`)
	if r.StatusCode != 404 {
		t.Fatalf("unknown route %d", r.StatusCode)
	}
}

// TestRouteHoldsUntilPushed: requests of several agents sharing the server play their
// own scripts by key; one whose script ran out waits for PushTo, the others go on.
func TestRouteHoldsUntilPushed(t *testing.T) {
	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Route(ClaudeCwd)
	s.PushTo("/w/a", Turn{Text: "a1"})
	req := func(cwd, user string) string {
		return `{"model":"m","stream":false,"system":[{"type":"text","text":"Primary working directory: ` + cwd + `\nIs a git repo: yes"}],` +
			`"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":"` + user + `"}]}]` + tools + `}`
	}
	_, body := post(t, s.URL+"/v1/messages", req("/w/a", "first"))
	if !strings.Contains(body, `"text":"a1"`) {
		t.Fatalf("a's first request: %s", body)
	}
	// b has no turns yet: its request waits while a's next one is answered.
	got := make(chan string, 1)
	go func() { _, b := post(t, s.URL+"/v1/messages", req("/w/b", "hello b")); got <- b }()
	s.PushTo("/w/a", Turn{Text: "a2"})
	if _, body := post(t, s.URL+"/v1/messages", req("/w/a", "second")); !strings.Contains(body, `"text":"a2"`) {
		t.Fatalf("a's second request: %s", body)
	}
	select {
	case b := <-got:
		t.Fatalf("b was answered before it had a turn: %s", b)
	case <-time.After(100 * time.Millisecond):
	}
	s.PushTo("/w/b", Turn{Text: "b1"})
	if b := <-got; !strings.Contains(b, `"text":"b1"`) {
		t.Fatalf("b: %s", b)
	}
	if s.PlayedOf("/w/a") != 2 || s.PlayedOf("/w/b") != 1 || s.Played() != 0 {
		t.Fatalf("played a %d b %d main %d", s.PlayedOf("/w/a"), s.PlayedOf("/w/b"), s.Played())
	}
	for _, r := range s.Requests() {
		if r.Script == "/w/b" && (r.LastUser() != "hello b" || r.Turn != 0 || !r.Scripted) {
			t.Fatalf("b's request logged as %q turn %d scripted %v", r.LastUser(), r.Turn, r.Scripted)
		}
	}
	// A held request ends when the server closes.
	s.mu.Lock()
	seq := s.seq
	s.mu.Unlock()
	go func() { http.Post(s.URL+"/v1/messages", "application/json", strings.NewReader(req("/w/c", "never"))) }()
	wait.For(t, 5*time.Second, "the held request to arrive", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.seq > seq
	})
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hangs on a held request")
	}
}

// TestLastUser: the last user message's text, from a Messages API body (typed text
// and tool results, without claude's own reminders) and from a Responses API body.
func TestLastUser(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{`{"messages":[{"role":"user","content":"first"},{"role":"assistant","content":"ok"},{"role":"user","content":"second"}]}`, "second"},
		{`{"messages":[{"role":"user","content":[{"type":"text","text":"<system-reminder>be brief</system-reminder>"},{"type":"text","text":"typed"},{"type":"tool_result","content":"ran"}]}]}`, "typed\nran"},
		{`{"input":[{"role":"user","content":[{"type":"input_text","text":"to codex"}]},{"role":"assistant","content":"ok"}]}`, "to codex"},
		{`{"messages":[]}`, ""},
	} {
		if got := (Request{Body: []byte(c.body)}).LastUser(); got != c.want {
			t.Errorf("LastUser of %s = %q, want %q", c.body, got, c.want)
		}
	}
}

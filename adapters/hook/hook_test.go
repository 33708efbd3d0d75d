package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestRunReportsPayloadAsAgent(t *testing.T) {
	var got []wire.HookParams
	err := Run(context.Background(), "claude", "Stop", strings.NewReader(`{"session_id":"s1"}`+"\n"), io.Discard,
		envOf(map[string]string{"ORCR_ID": "0193"}), func(ctx context.Context, p wire.HookParams) error {
			got = append(got, p)
			return nil
		})
	if err != nil || len(got) != 1 {
		t.Fatalf("err %v, reports %d", err, len(got))
	}
	p := got[0]
	if p.Provider != "claude" || p.Event != "Stop" || p.AgentID != "0193" || string(p.Payload) != `{"session_id":"s1"}` {
		t.Fatalf("report %+v payload %s", p, p.Payload)
	}
}

func TestRunMalformedPayloadIsWrappedNotDropped(t *testing.T) {
	var got wire.HookParams
	Run(context.Background(), "codex", "notify", strings.NewReader(`{not json`), io.Discard,
		envOf(map[string]string{"ORCR_ID": "a"}), func(ctx context.Context, p wire.HookParams) error { got = p; return nil })
	var s string
	if err := json.Unmarshal(got.Payload, &s); err != nil || s != "{not json" {
		t.Fatalf("payload %s (%v)", got.Payload, err)
	}
	// The whole report must still marshal (it goes over the socket).
	if _, err := json.Marshal(got); err != nil {
		t.Fatal(err)
	}
}

func TestRunWithoutAgentOrServerNeverFails(t *testing.T) {
	called := false
	if err := Run(context.Background(), "claude", "Stop", strings.NewReader(`{}`), io.Discard, envOf(nil),
		func(ctx context.Context, p wire.HookParams) error { called = true; return nil }); err != nil || called {
		t.Fatalf("no ORCR_ID: err %v called %v", err, called)
	}
	err := Run(context.Background(), "claude", "Stop", strings.NewReader(`{}`), io.Discard,
		envOf(map[string]string{"ORCR_ID": "x"}), func(ctx context.Context, p wire.HookParams) error {
			return errors.New("dial unix orcr.sock: connect: no such file or directory")
		})
	if err != nil {
		t.Fatalf("server down must not fail the hook: %v", err)
	}
	if err := Run(context.Background(), "", "", nil, io.Discard, envOf(nil), nil); err == nil {
		t.Fatal("missing provider/event accepted")
	}
}

func TestRunBoundedByTimeouts(t *testing.T) {
	ReadTimeout, ReportTimeout = 100*time.Millisecond, 100*time.Millisecond
	defer func() { ReadTimeout, ReportTimeout = 2*time.Second, 2*time.Second }()
	pr, pw := io.Pipe() // stdin that never closes
	defer pw.Close()
	start := time.Now()
	var gotCtxErr error
	Run(context.Background(), "claude", "Stop", pr, io.Discard, envOf(map[string]string{"ORCR_ID": "x"}),
		func(ctx context.Context, p wire.HookParams) error {
			<-ctx.Done() // a server that never answers
			gotCtxErr = ctx.Err()
			return ctx.Err()
		})
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("hook took %v", d)
	}
	if gotCtxErr == nil {
		t.Fatal("report context had no deadline")
	}
}

func TestRunBoundsPayloadSize(t *testing.T) {
	var n int
	big := bytes.Repeat([]byte("a"), MaxPayload+1000)
	Run(context.Background(), "claude", "Stop", bytes.NewReader(big), io.Discard, envOf(map[string]string{"ORCR_ID": "x"}),
		func(ctx context.Context, p wire.HookParams) error { n = len(p.Payload); return nil })
	if n == 0 || n > MaxPayload+2 {
		t.Fatalf("payload size %d", n)
	}
}

func TestStatusLineChainsToUserCommand(t *testing.T) {
	var out bytes.Buffer
	var reported wire.HookParams
	payload := `{"model":{"display_name":"Opus 5.5"},"rate_limits":{"five_hour":{"used_percentage":23.5,"resets_at":1738425600}}}`
	Run(context.Background(), "claude", "statusline", strings.NewReader(payload), &out,
		envOf(map[string]string{"ORCR_ID": "x", EnvStatusLineChain: `printf 'mine:'; cat | wc -c`}),
		func(ctx context.Context, p wire.HookParams) error { reported = p; return nil })
	if !strings.HasPrefix(out.String(), "mine:") || !strings.Contains(out.String(), "1") {
		t.Fatalf("chained output %q", out.String())
	}
	if !strings.Contains(string(reported.Payload), "rate_limits") {
		t.Fatalf("rate limits not reported: %s", reported.Payload)
	}
	out.Reset()
	Run(context.Background(), "claude", "statusline", strings.NewReader(payload), &out,
		envOf(map[string]string{"ORCR_PATH": "review/auth"}), nil)
	if got := out.String(); got != "orcr review/auth · Opus 5.5\n" {
		t.Fatalf("default status line %q", got)
	}
}

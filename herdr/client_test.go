package herdr

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
)

func TestDecodeResponse(t *testing.T) {
	cases := []struct {
		line string
		code string // expected herdr error code, "" for none
		bad  bool   // expected ErrBadResponse
	}{
		{`{"id":"a","result":{"type":"pong","protocol":20}}`, "", false},
		{`{"id":"","error":{"code":"invalid_request","message":"invalid request: x"}}`, "invalid_request", false},
		{`{"id":"a","error":{"code":"pane_not_found","message":"pane w1:p9 not found"}}`, "pane_not_found", false},
		{`{"id":"b","result":{"type":"pong"}}`, "", true}, // someone else's reply
		{`{"id":"a","result":{"protocol":20}}`, "", true}, // result without type
		{`{"id":"a"}`, "", true},                               // neither
		{`{"id":"a","result":null}`, "", true},                 // neither
		{`{"id":"a","error":{"message":"no code"}}`, "", true}, // error without code
		{`not json`, "", true},
		{`{"id":7,"result":{"type":"ok"}}`, "", true},
	}
	for _, c := range cases {
		res, err := decodeResponse([]byte(c.line), "a")
		var he *Error
		switch {
		case c.code != "":
			if !errors.As(err, &he) || he.Code != c.code {
				t.Errorf("%s: err %v; want code %s", c.line, err, c.code)
			}
		case c.bad:
			if !errors.Is(err, ErrBadResponse) {
				t.Errorf("%s: err %v; want ErrBadResponse", c.line, err)
			}
		default:
			if err != nil || !json.Valid(res) {
				t.Errorf("%s: %v", c.line, err)
			}
		}
	}
	if !errors.Is(&Error{Code: "pane_not_found", Message: "m"}, ErrPaneNotFound) {
		t.Error("errors.Is by code does not work")
	}
}

func TestParseIntegrationStatus(t *testing.T) {
	out := "claude: current (v7) (/h/.claude/hooks/herdr-agent-state.sh)\ncodex: outdated (v5 < v7) (/h/.codex/x)\npi: not installed\n"
	for p, want := range map[string]bool{"claude": true, "codex": false, "pi": false, "opencode": false} {
		if got := parseIntegrationStatus(out, p); got != want {
			t.Errorf("%s: %v, want %v", p, got, want)
		}
	}
	if IntegrationFix("claude") != "herdr integration install claude" {
		t.Error(IntegrationFix("claude"))
	}
}

func TestExitFileNames(t *testing.T) {
	pane, pid, ok := parseExitName("w1:p12.4711.exit")
	if !ok || pane != "w1:p12" || pid != 4711 {
		t.Fatalf("%q %d %v", pane, pid, ok)
	}
	for _, bad := range []string{"w1:p1.exit", "w1:p1.x.exit", "w1:p1.12.tmp", ".12.exit"} {
		if _, _, ok := parseExitName(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

// FuzzDecodeResponse: any reply line either decodes to a typed JSON result, a herdr
// error with a code, or ErrBadResponse; it never panics.
func FuzzDecodeResponse(f *testing.F) {
	for _, s := range []string{
		`{"id":"a","result":{"type":"pong","version":"0.8.0","protocol":20}}`,
		`{"id":"","error":{"code":"invalid_request","message":"invalid request"}}`,
		`{"id":"a","result":{"type":"pane_read","read":{"text":"x\ny"}}}`,
		`{"id":"a","result":[]}`, `{"id":null}`, `[]`, `""`, `{"id":"a","result":{"type":1}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		res, err := decodeResponse(line, "a")
		if err == nil {
			var typed struct {
				Type string `json:"type"`
			}
			if json.Unmarshal(res, &typed) != nil || typed.Type == "" {
				t.Fatalf("accepted %q without a typed result", line)
			}
			return
		}
		var he *Error
		if errors.As(err, &he) {
			if he.Code == "" {
				t.Fatalf("herdr error without code from %q", line)
			}
			return
		}
		if !errors.Is(err, ErrBadResponse) {
			t.Fatalf("unexpected error kind %v for %q", err, line)
		}
	})
}

// FuzzDecodeEvent: pushed lines decode or fail with ErrBadResponse, and handle never
// panics on whatever data they carry.
func FuzzDecodeEvent(f *testing.F) {
	for _, s := range []string{
		`{"event":"pane_exited","data":{"type":"pane_exited","pane_id":"w1:p2","workspace_id":"w1"}}`,
		`{"event":"workspace_closed","data":{"workspace_id":"w1"}}`,
		`{"event":"pane.agent_status_changed","data":{"pane_id":"w1:p2","agent_status":"idle"}}`,
		`{"event":"pane_closed","data":[]}`, `{}`,
	} {
		f.Add([]byte(s))
	}
	// A host whose context is over: send drops events instead of blocking.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	h := &Host{panes: map[string]*tracked{}, ctx: ctx, opts: Options{StateDir: f.TempDir()},
		log: slog.New(slog.DiscardHandler)}
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, err := decodeEvent(line)
		if err != nil {
			if !errors.Is(err, ErrBadResponse) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if ev.Event == "" {
			t.Fatal("event without a name accepted")
		}
		h.mu.Lock()
		h.wsID = "w1"
		h.panes["w1:p2"] = &tracked{pid: 1}
		h.mu.Unlock()
		h.handle(ev)
	})
}

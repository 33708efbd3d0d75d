package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
	"orcr/testutil/clis"
	"orcr/testutil/modelserver"
	"orcr/testutil/wait"
)

// TestClaudeSendSubmits: `orcr agent send` of a long text, a short one and a
// multi-line one to a real claude in a pane starts a turn each time, and the model
// gets exactly the text as the user message (claude takes a long burst of text and
// an Enter right after it as one paste unless orcr waits for the text to show).
func TestClaudeSendSubmits(t *testing.T) {
	for _, host := range []string{"tmux", "pty"} {
		t.Run(host, func(t *testing.T) { testClaudeSend(t, host) })
	}
}

func testClaudeSend(t *testing.T, host string) {
	bin := clis.Find(t, "claude", "ORCR_CLAUDE_BIN")
	srv, err := modelserver.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	var e *orcrEnv
	if host == "tmux" {
		e = newTmuxOrcr(t)
	} else {
		e = newOrcr(t)
	}
	cfg := filepath.Join(e.dir, "claude-config")
	os.MkdirAll(cfg, 0o700)
	os.WriteFile(filepath.Join(cfg, ".claude.json"), []byte(`{"hasCompletedOnboarding":true,"theme":"dark"}`), 0o600)
	work := filepath.Join(e.dir, "work")
	os.MkdirAll(work, 0o755)
	work, _ = filepath.EvalSymlinks(work)
	e.vars = append(e.vars, "ORCR_CLAUDE_BIN="+bin, "CLAUDE_CONFIG_DIR="+cfg,
		"ANTHROPIC_BASE_URL="+srv.URL, "ANTHROPIC_AUTH_TOKEN=test-token", "DISABLE_AUTOUPDATER=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
	e.serve()
	if host == "pty" {
		// The panes end with the server; their CLIs must be gone before the dirs are.
		t.Cleanup(func() {
			e.stop()
			if !wait.Until(15*time.Second, func() bool { return len(procsOf(e.dir)) == 0 }) {
				t.Errorf("processes outlived the server by 15s: %v", procsOf(e.dir))
			}
		})
	}

	srv.Push(modelserver.Turn{Text: "ready", Usage: modelserver.Usage{Input: 1, Output: 1}})
	e.must("agent", "run", "send/a", "--provider", "claude", "--cwd", work, "--prompt", "hello")
	e.waitAgent("send/a", 120*time.Second, "first turn", func(a wire.Agent) bool {
		return a.State == wire.StateDone && a.LastMessage == "ready"
	})

	words := strings.Fields("the quick brown fox jumps over the lazy dog while orcr types a long message into claude")
	long := func(n int) string {
		var b strings.Builder
		fmt.Fprintf(&b, "message %d:", n)
		for i := 0; b.Len() < 600; i++ {
			b.WriteString(" " + words[i%len(words)])
		}
		return b.String()[:599] + "."
	}
	// The last one carries what a relayed check output might: colours, a Ctrl-C byte
	// and a tab. Claude drops the ESC and the Ctrl-C inside a paste but keeps the tab as
	// four spaces; the model gets the text orcr cleaned (one space for the tab).
	noisy := "\x1b[31mcolour\x1b[0m and \x03ctrl-c\tend"
	want := map[string]string{noisy: "colour and ctrl-c end"}
	msgs := []string{long(1), long(2), long(3), long(4), long(5), "short one", "first line\nsecond line\nthird line", noisy}
	for i, msg := range msgs {
		reply := fmt.Sprintf("reply %d", i)
		srv.Push(modelserver.Turn{Text: reply, Usage: modelserver.Usage{Input: 1, Output: 1}})
		start := time.Now()
		e.must("agent", "send", "send/a", msg)
		took := time.Since(start)
		e.waitAgent("send/a", 60*time.Second, "turn "+reply, func(a wire.Agent) bool {
			return a.State == wire.StateDone && a.LastMessage == reply
		})
		var got string
		for _, r := range modelserver.Conversation(srv.Requests()) {
			if r.Scripted && r.Turn == i+1 {
				got = lastUserMessage(t, r)
			}
		}
		w, ok := want[msg]
		if !ok {
			w = msg
		}
		if got != w {
			t.Fatalf("message %d: the model got %q, want %q", i, got, w)
		}
		t.Logf("%s: message %d (%d bytes) sent in %v", host, i, len(msg), took.Round(time.Millisecond))
	}
	// A message sent mid-turn is queued by claude and taken after the turn.
	srv.Push(modelserver.Turn{Text: "slow", Delay: 4 * time.Second, Usage: modelserver.Usage{Input: 1, Output: 1}},
		modelserver.Turn{Text: "steered", Usage: modelserver.Usage{Input: 1, Output: 1}})
	e.must("agent", "send", "send/a", "take your time")
	e.waitAgent("send/a", 30*time.Second, "the slow turn", func(a wire.Agent) bool { return a.State == wire.StateWorking })
	start := time.Now()
	e.must("agent", "send", "send/a", "steer while working")
	t.Logf("%s: a send mid-turn took %v", host, time.Since(start).Round(time.Millisecond))
	e.waitAgent("send/a", 60*time.Second, "the steer taken", func(a wire.Agent) bool {
		return a.State == wire.StateDone && a.LastMessage == "steered"
	})
	if got := lastUserMessage(t, modelserver.Conversation(srv.Requests())[len(msgs)+2]); !strings.Contains(got, "steer while working") {
		t.Fatalf("the steer reached the model as %q", got)
	}
	// Typed without Enter (no paste: `--no-enter` types the text as it is), a Ctrl-C
	// byte would clear claude's input box and an ESC act as Escape; orcr types only
	// the readable text, and Enter sends it.
	srv.Push(modelserver.Turn{Text: "typed", Usage: modelserver.Usage{Input: 1, Output: 1}})
	e.must("agent", "send", "--no-enter", "send/a", "typed \x1b[31mred\x1b[0m and \x03ctrl-c end")
	if !wait.Until(10*time.Second, func() bool {
		return strings.Contains(e.must("agent", "read", "send/a"), "ctrl-c end")
	}) {
		t.Fatalf("the typed text did not show in claude's input:\n%s", e.must("agent", "read", "send/a"))
	}
	e.must("agent", "send", "send/a", "--keys", "enter")
	e.waitAgent("send/a", 60*time.Second, "the typed text taken", func(a wire.Agent) bool {
		return a.State == wire.StateDone && a.LastMessage == "typed"
	})
	conv := modelserver.Conversation(srv.Requests())
	if got := lastUserMessage(t, conv[len(conv)-1]); got != "typed red and ctrl-c end" {
		t.Fatalf("the typed text reached the model as %q", got)
	}
	if b, err := os.ReadFile(filepath.Join(e.home, "orcr.log")); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "send:") {
				t.Log(l)
			}
		}
	}
	if !wait.Until(time.Second, func() bool { return srv.Remaining() == 0 }) {
		t.Fatalf("%d scripted turns left", srv.Remaining())
	}
}

// lastUserMessage is the text of the last user message of a Messages API request,
// without the reminders claude adds as blocks of their own.
func lastUserMessage(t *testing.T, r modelserver.Request) string {
	t.Helper()
	var body struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := r.JSON(&body); err != nil {
		t.Fatal(err)
	}
	for i := len(body.Messages) - 1; i >= 0; i-- {
		m := body.Messages[i]
		if m.Role != "user" {
			continue
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			return s
		}
		var blocks []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		json.Unmarshal(m.Content, &blocks)
		var texts []string
		for _, bl := range blocks {
			if bl.Type == "text" && !strings.HasPrefix(bl.Text, "<system-reminder>") {
				texts = append(texts, bl.Text)
			}
		}
		return strings.Join(texts, "\n")
	}
	return ""
}

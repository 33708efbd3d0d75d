package e2e_test

import (
	"fmt"
	"orcr/testutil/rig"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
	"orcr/testutil/modelserver"
	"orcr/testutil/wait"
)

// TestClaudeSendSubmits: `orcr agent send` of a long text, a short one and a
// multi-line one to a real claude in a pane starts a turn each time, and the model
// gets exactly the text as the user message (claude takes a long burst of text and
// an Enter right after it as one paste unless orcr waits for the text to show).
func TestClaudeSendSubmits(t *testing.T) {
	t.Parallel()
	for _, host := range []string{"tmux", "pty"} {
		t.Run(host, func(t *testing.T) { t.Parallel(); testClaudeSend(t, host) })
	}
}

func testClaudeSend(t *testing.T, host string) {
	var e *rig.Rig
	if host == "tmux" {
		e = newTmuxOrcr(t)
	} else {
		e = rig.New(t)
	}
	e.Claude()
	e.Serve()
	srv, work := e.Models, e.Work
	if host == "pty" {
		// The panes end with the server; their CLIs must be gone before the dirs are.
		t.Cleanup(func() {
			e.Stop()
			if !wait.Until(15*time.Second, func() bool { return len(procsOf(e.Dir)) == 0 }) {
				t.Errorf("processes outlived the server by 15s: %v", procsOf(e.Dir))
			}
		})
	}

	srv.Push(modelserver.Turn{Text: "ready", Usage: modelserver.Usage{Input: 1, Output: 1}})
	e.Must("agent", "run", "send/a", "--provider", "claude", "--cwd", work, "--prompt", "hello")
	e.WaitAgent("send/a", 120*time.Second, "first turn", func(a wire.Agent) bool {
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
		e.Must("agent", "send", "send/a", msg)
		took := time.Since(start)
		e.WaitAgent("send/a", 60*time.Second, "turn "+reply, func(a wire.Agent) bool {
			return a.State == wire.StateDone && a.LastMessage == reply
		})
		var got string
		for _, r := range modelserver.Conversation(srv.Requests()) {
			if r.Scripted && r.Turn == i+1 {
				got = r.LastUser()
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
	e.Must("agent", "send", "send/a", "take your time")
	e.WaitAgent("send/a", 30*time.Second, "the slow turn", func(a wire.Agent) bool { return a.State == wire.StateWorking })
	start := time.Now()
	e.Must("agent", "send", "send/a", "steer while working")
	t.Logf("%s: a send mid-turn took %v", host, time.Since(start).Round(time.Millisecond))
	e.WaitAgent("send/a", 60*time.Second, "the steer taken", func(a wire.Agent) bool {
		return a.State == wire.StateDone && a.LastMessage == "steered"
	})
	if got := modelserver.Conversation(srv.Requests())[len(msgs)+2].LastUser(); !strings.Contains(got, "steer while working") {
		t.Fatalf("the steer reached the model as %q", got)
	}
	// Typed without Enter (no paste: `--no-enter` types the text as it is), a Ctrl-C
	// byte would clear claude's input box and an ESC act as Escape; orcr types only
	// the readable text, and Enter sends it.
	srv.Push(modelserver.Turn{Text: "typed", Usage: modelserver.Usage{Input: 1, Output: 1}})
	e.Must("agent", "send", "--no-enter", "send/a", "typed \x1b[31mred\x1b[0m and \x03ctrl-c end")
	if !wait.Until(10*time.Second, func() bool {
		return strings.Contains(e.Must("agent", "read", "send/a"), "ctrl-c end")
	}) {
		t.Fatalf("the typed text did not show in claude's input:\n%s", e.Must("agent", "read", "send/a"))
	}
	e.Must("agent", "send", "send/a", "--keys", "enter")
	e.WaitAgent("send/a", 60*time.Second, "the typed text taken", func(a wire.Agent) bool {
		return a.State == wire.StateDone && a.LastMessage == "typed"
	})
	conv := modelserver.Conversation(srv.Requests())
	if got := conv[len(conv)-1].LastUser(); got != "typed red and ctrl-c end" {
		t.Fatalf("the typed text reached the model as %q", got)
	}
	// Every message showed in claude's input before Enter went: a send that waits out
	// the echo bound (2 s) and presses Enter blind is what a screen the host drew
	// wrongly costs (the pty host printed a title's " Claude Code" over the input, so
	// no short message ever read back).
	if b, err := os.ReadFile(filepath.Join(e.Home, "orcr.log")); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "send:") {
				t.Log(l)
			}
			if strings.Contains(l, "send: the text did not show on the screen") {
				t.Errorf("%s: a message did not show in claude's input: %s", host, l)
			}
		}
	}
	if !wait.Until(time.Second, func() bool { return srv.Remaining() == 0 }) {
		t.Fatalf("%d scripted turns left", srv.Remaining())
	}
}

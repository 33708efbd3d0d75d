package core_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/core"
	"orcr/core/wire"
)

// askRemove is a program that asks before it removes build/: any answer starting
// with y removes it, as `rm -i` and many scripts do. The question is redrawn every
// 100 ms when redraw is set, so the screen never settles and the agent's record
// stays working while the screen shows the prompt — the window between the state
// read and the keystrokes that the screen check exists for.
//
// The redraw is a loop of its own beside one blocking read, not a `read -t 0.1` loop:
// bash's timed read can consume the line and then time out before it returns it (the
// timer runs on the wall clock, and a process descheduled for 100 ms under load
// misses it), and the loop then drops the line — an Enter the program never saw.
func askRemove(redraw bool) string {
	body := `case "$a" in y*) rm -rf build;; esac; echo "got:$a"; exec cat`
	if redraw {
		return `(while :; do printf '\rRemove build? [y/N] '; sleep 0.1; done) & p=$!; read -r a; kill $p; wait $p 2>/dev/null; ` + body
	}
	return `printf 'Remove build? [y/N] '; read -r a; ` + body
}

func mkBuild(t *testing.T) (dir, keep string) {
	t.Helper()
	dir = t.TempDir()
	keep = filepath.Join(dir, "build", "keep.o")
	if err := os.MkdirAll(filepath.Dir(keep), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keep, []byte("obj"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, keep
}

// TestSendRefusesBlockedAgent: text (and Enter) sent to an agent recorded blocked on
// a question is refused with agent_blocked, naming what it waits for and the answer
// command; nothing is typed (build/ survives, the program got no line). The answer
// then goes through agent.answer.
func TestSendRefusesBlockedAgent(t *testing.T) {
	r := newRig(t, "", nil, core.Limits{}, core.GCRules{})
	ctx := context.Background()
	dir, keep := mkBuild(t)
	a, err := r.eng.Run(ctx, wire.RunParams{Path: "ask/rec", Cwd: dir, Argv: []string{"sh", "-c", askRemove(false)}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "blocked on the question", 20*time.Second, func() bool {
		g, _ := r.eng.Get(ctx, a.ID)
		return g.State == wire.StateBlocked
	})
	for _, p := range []wire.SendParams{
		{Target: "ask/rec", Text: "yes, but list the files first", Enter: true},
		{Target: "ask/rec", Text: "yes", Enter: false},
		{Target: "ask/rec", Enter: true},
	} {
		err := r.eng.Send(ctx, p)
		if wire.CodeOf(err) != wire.CodeAgentBlocked {
			t.Fatalf("send %+v to a blocked agent: %v, want %s", p, err, wire.CodeAgentBlocked)
		}
		for _, want := range []string{"ask/rec waits for an answer to a question prompt (Remove build? [y/N])",
			"orcr agent answer ask/rec", "1. y"} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("refusal does not say %q:\n%s", want, err)
			}
		}
	}
	scr, err := r.eng.Read(ctx, wire.ReadParams{Target: "ask/rec"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(scr.Text, "got:") || strings.Contains(scr.Text, "list the files") {
		t.Fatalf("text reached the program:\n%s", scr.Text)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("build/ is gone: %v", err)
	}
	if g, _ := r.eng.Get(ctx, a.ID); g.State != wire.StateBlocked {
		t.Fatalf("after the refusals: %s, want still blocked", g.State)
	}
	if _, err := r.eng.Answer(ctx, wire.AnswerParams{Target: "ask/rec", Deny: true}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the program got the answer", 10*time.Second, func() bool {
		scr, _ := r.eng.Read(ctx, wire.ReadParams{Target: "ask/rec"})
		return strings.Contains(scr.Text, "got:n")
	})
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("build/ is gone after deny: %v", err)
	}
}

// TestSendRefusesPromptOnScreen: the record says working (the screen never settles)
// but the screen shows the question: the check right before the keystrokes reads the
// prompt through the provider's rules and refuses. Explicit keys still go.
func TestSendRefusesPromptOnScreen(t *testing.T) {
	r := newRig(t, "", nil, core.Limits{}, core.GCRules{})
	ctx := context.Background()
	dir, keep := mkBuild(t)
	a, err := r.eng.Run(ctx, wire.RunParams{Path: "ask/screen", Cwd: dir, Argv: []string{"bash", "-c", askRemove(true)}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the question on screen", 20*time.Second, func() bool {
		scr, _ := r.eng.Read(ctx, wire.ReadParams{Target: a.ID})
		return strings.Contains(scr.Text, "Remove build? [y/N]")
	})
	if g, _ := r.eng.Get(ctx, a.ID); g.State == wire.StateBlocked {
		t.Fatalf("the record says blocked (%s): this test needs the screen to show a prompt the record does not", g.StateReason)
	}
	err = r.eng.Send(ctx, wire.SendParams{Target: a.ID, Text: "yes, but list the files first", Enter: true})
	if wire.CodeOf(err) != wire.CodeAgentBlocked || !strings.Contains(err.Error(), "Remove build? [y/N]") {
		t.Fatalf("send with the prompt on screen: %v, want %s naming the question", err, wire.CodeAgentBlocked)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("build/ is gone: %v", err)
	}
	// Keys the sender names are a deliberate answer: an empty line is "no".
	if err := r.eng.Send(ctx, wire.SendParams{Target: a.ID, Keys: []string{"enter"}}); err != nil {
		t.Fatalf("keys to a prompt: %v", err)
	}
	waitFor(t, "the program got the empty line", 10*time.Second, func() bool {
		scr, _ := r.eng.Read(ctx, wire.ReadParams{Target: a.ID})
		return strings.Contains(scr.Text, "got:")
	})
	if scr, _ := r.eng.Read(ctx, wire.ReadParams{Target: a.ID}); strings.Contains(scr.Text, "list the files") {
		t.Fatalf("the refused text reached the program:\n%s", scr.Text)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("build/ is gone: %v", err)
	}
}

package run_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/core"
	"orcr/core/wire"
	"orcr/orchestrate/run"
	runapi "orcr/orchestrate/run/api"
	"orcr/testutil/wait"
)

// noisyCheck fails until ok-M1 exists, and always prints what a broken test binary
// might: a Ctrl-C byte, colours, a window title, Ctrl-Z, Ctrl-D, DEL and invalid UTF-8.
const noisyCheck = `# Plan: noisy
request: one file
check: printf 'boom \003 \033[31mred\033[0m \033]0;title\007 \032\004\177 \377\376 end\n'; ls ok-* >/dev/null 2>&1

## M1 · First file
depends: -
tier: small

### Goal
Write M1.txt.

### Acceptance
- [ ] M1.txt exists
`

// TestCheckOutputWithControlBytesReachesTheCoderAsText: a failing check's output full
// of control bytes goes back to the coder (a shell in a real pty, whose line
// discipline turns a typed \003 into SIGINT and \032 into SIGTSTP) as readable text:
// the coder keeps running, reads the message as one line, fixes the milestone, and it
// merges. Neither the message nor the run log carries an ESC or another control.
func TestCheckOutputWithControlBytesReachesTheCoderAsText(t *testing.T) {
	g := newRig(t)
	ctx := context.Background()
	// Outside orcr's home: the coder is confined (DESIGN §16), and the home, with every
	// agent's state, is not its to write.
	got := filepath.Join(t.TempDir(), "coder-got")
	argv := coderScript(g.orcr)
	argv[2] = strings.Replace(argv[2], `*"check failed"*) `, `*"check failed"*) printf '%s\n' "$line" >> '`+got+`'; `, 1)
	g.approve("noisy", noisyCheck)
	if _, err := g.svc.RunStart(ctx, runapi.RunStartParams{Name: "noisy", Coders: 1, Coder: "shell", CoderArgv: argv, Lead: "none"}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.svc.RunDispatch(ctx, runapi.RunMilestonesParams{Name: "noisy", Milestones: []string{"M1"}}); err != nil {
		t.Fatal(err)
	}
	// On a coder killed by the message the run never merges: fail as soon as the
	// coder is gone rather than at the deadline.
	var merged bool
	wait.For(t, 90*time.Second, "M1 to merge, or its coder to end", func() bool {
		v := g.status("noisy")
		if merged = v.Milestones[0].State == "merged"; merged {
			return true
		}
		as, err := g.eng.List(ctx, wire.ListParams{})
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range as {
			if a.State.Terminal() && a.ExitCode != nil && *a.ExitCode != 0 {
				t.Fatalf("%s ended (%s, exit %d) after the check's output was relayed to it:\n%s", a.Path, a.State, *a.ExitCode, a.LastScreen)
			}
		}
		return false
	})
	b, err := os.ReadFile(got)
	if err != nil {
		t.Fatalf("the coder never read the check's message: %v", err)
	}
	msg := string(b)
	if !strings.Contains(msg, "boom") || !strings.Contains(msg, "red") || !strings.Contains(msg, "end") || strings.Contains(msg, "[31m") {
		t.Fatalf("the coder read %q, want the check's text without its escape sequences", msg)
	}
	if i := strings.IndexFunc(msg, func(r rune) bool { return (r < 0x20 && r != '\n') || r == 0x7f }); i >= 0 {
		t.Fatalf("the coder read a control byte %q in %q", msg[i], msg)
	}
	// The run's own log (the facts with the check's tail, the messages sent) and its
	// events view carry no control either.
	raw, err := run.NewRuns(core.FeatureBuckets(g.st, run.Name)).Events(ctx, "noisy", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	enc := json.NewEncoder(&log)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(raw); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{`\u001b`, `\u0003`, `\u001a`, `\u0004`, "\x7f"} {
		if strings.Contains(log.String(), c) {
			t.Fatalf("the run log carries %q:\n%s", c, log.String())
		}
	}
	if !strings.Contains(log.String(), "boom") {
		t.Fatalf("the run log lacks the check's output:\n%s", log.String())
	}
	es, err := g.svc.RunEvents(ctx, runapi.RunEventsParams{Name: "noisy"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if strings.ContainsAny(e.Text, "\x1b\x03\x1a\x04\x7f") {
			t.Fatalf("run event %s %s carries a control byte: %q", e.Type, e.Kind, e.Text)
		}
	}
}

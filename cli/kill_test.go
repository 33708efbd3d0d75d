package cli_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	cpty "github.com/creack/pty"

	"orcr/adapters/hook"
	"orcr/cli"
	"orcr/core/wire"
	"orcr/testutil/wait"
)

// syncBuffer is a bytes.Buffer safe for a writer and a poller.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// spawnKillTargets starts web/a, web/b, web/c and other/x, each sleeping.
func spawnKillTargets(t *testing.T, r *rig) {
	t.Helper()
	for _, p := range []string{"web/a", "web/b", "web/c", "other/x"} {
		if code, _, errOut := r.run(t, "", "agent", "run", p, "--", "sleep", "300"); code != 0 {
			t.Fatalf("agent run %s: exit %d: %s", p, code, errOut)
		}
	}
}

// states returns the state of each path.
func states(t *testing.T, r *rig, paths ...string) map[string]wire.State {
	t.Helper()
	out := map[string]wire.State{}
	for _, p := range paths {
		aRes, err := wire.Call(context.Background(), r.svc, wire.AgentGet, wire.TargetParams{Target: p})
		a := aRes.Agent
		if err != nil {
			t.Fatalf("get %s: %v", p, err)
		}
		out[p] = a.State
	}
	return out
}

func requireLive(t *testing.T, r *rig, what string, paths ...string) {
	t.Helper()
	for p, s := range states(t, r, paths...) {
		if s.Terminal() {
			t.Fatalf("%s: %s is %s, want it still running", what, p, s)
		}
	}
}

func requireKilled(t *testing.T, r *rig, what string, paths ...string) {
	t.Helper()
	for p, s := range states(t, r, paths...) {
		if s != wire.StateKilled {
			t.Fatalf("%s: %s is %s, want killed", what, p, s)
		}
	}
}

// runOnTerminal runs orcr with stdin and stderr on a real pty, as on a user's terminal,
// types answer once the question is on the screen, and returns the exit code, stdout
// and what the terminal showed.
func runOnTerminal(t *testing.T, r *rig, question, answer string, args ...string) (int, string, string) {
	t.Helper()
	ptmx, tty, err := cpty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	defer tty.Close()
	var screen syncBuffer
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(&screen, ptmx)
	}()
	var out bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- cli.Run(context.Background(), append([]string{"orcr"}, args...), cli.Options{
			Stdin: tty, Stdout: &out, Stderr: tty,
			Connect: func(context.Context) (wire.Transport, error) { return r.svc, nil },
			Daemon:  cli.Daemon{Hook: hook.Run},
		})
	}()
	wait.For(t, 20*time.Second, "the question "+question, func() bool { return strings.Contains(screen.String(), question) })
	if _, err := ptmx.Write([]byte(answer + "\r")); err != nil {
		t.Fatal(err)
	}
	var c int
	select {
	case c = <-code:
	case <-time.After(60 * time.Second):
		t.Fatalf("orcr %v did not end after the answer %q; the terminal shows:\n%s", args, answer, screen.String())
	}
	// Close the terminal's end and read ours to its end (EIO once drained) before
	// closing it: closed at once, what orcr wrote last ("nothing was killed") could be
	// dropped unread.
	tty.Close()
	select {
	case <-copied:
	case <-time.After(10 * time.Second):
		ptmx.Close()
		<-copied
	}
	return c, out.String(), screen.String()
}

// TestKillGlobAsksOnTerminal: a glob selecting several agents lists them and asks on a
// terminal; "n" kills nothing and exits 1, "y" kills exactly those.
func TestKillGlobAsksOnTerminal(t *testing.T) {
	r := newRig(t)
	spawnKillTargets(t, r)
	const question = "kill these 3 agents? [y/N]"

	code, out, screen := runOnTerminal(t, r, question, "n", "agent", "kill", "web/**")
	if code != 1 || !strings.Contains(screen, "nothing was killed") {
		t.Fatalf("answer n: exit %d, stdout %q, terminal:\n%s", code, out, screen)
	}
	for _, p := range []string{"web/a", "web/b", "web/c"} {
		if !strings.Contains(screen, p) {
			t.Fatalf("the question did not list %s:\n%s", p, screen)
		}
	}
	if strings.Contains(screen, "other/x") {
		t.Fatalf("the question listed other/x, which the glob does not select:\n%s", screen)
	}
	requireLive(t, r, "after answering n", "web/a", "web/b", "web/c", "other/x")

	code, out, screen = runOnTerminal(t, r, question, "y", "agent", "kill", "web/**")
	if code != 0 {
		t.Fatalf("answer y: exit %d, stdout %q, terminal:\n%s", code, out, screen)
	}
	for _, p := range []string{"web/a", "web/b", "web/c"} {
		if !strings.Contains(out, "killed "+p) {
			t.Fatalf("answer y: stdout does not report %s:\n%s", p, out)
		}
	}
	requireKilled(t, r, "after answering y", "web/a", "web/b", "web/c")
	requireLive(t, r, "after answering y", "other/x")
}

// TestKillGlobWithoutTerminalNeedsYes: with stdin a pipe nobody can answer, so a glob
// selecting several agents is refused (listing them, naming --yes) whatever the pipe
// holds; --dry-run and --yes work as before, and a single match kills at once.
func TestKillGlobWithoutTerminalNeedsYes(t *testing.T) {
	r := newRig(t)
	spawnKillTargets(t, r)
	pipeRun := func(input string, args ...string) (int, string, string) {
		t.Helper()
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer pr.Close()
		go func() {
			_, _ = pw.Write([]byte(input))
			pw.Close()
		}()
		var out, errb bytes.Buffer
		code := cli.Run(context.Background(), append([]string{"orcr"}, args...), cli.Options{
			Stdin: pr, Stdout: &out, Stderr: &errb,
			Connect: func(context.Context) (wire.Transport, error) { return r.svc, nil },
		})
		return code, out.String(), errb.String()
	}

	code, out, errOut := pipeRun("n\n", "agent", "kill", "web/**")
	if code != 1 || !strings.Contains(errOut, "--yes") || !strings.Contains(errOut, "nothing was killed") || !strings.Contains(errOut, "web/b") {
		t.Fatalf("without --yes: exit %d, stdout %q, stderr:\n%s", code, out, errOut)
	}
	requireLive(t, r, "refused kill", "web/a", "web/b", "web/c")
	// Even a "y" on the pipe is no answer: only a terminal is asked.
	if code, _, errOut := pipeRun("y\n", "agent", "kill", "web/**"); code != 1 {
		t.Fatalf("y on a pipe: exit %d, stderr:\n%s", code, errOut)
	}
	requireLive(t, r, "y on a pipe", "web/a", "web/b", "web/c")

	if code, out, errOut := pipeRun("", "agent", "kill", "web/**", "--dry-run"); code != 0 || strings.Count(out, "would kill web/") != 3 {
		t.Fatalf("--dry-run: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	requireLive(t, r, "dry run", "web/a", "web/b", "web/c")

	if code, out, errOut := pipeRun("", "agent", "kill", "other/*"); code != 0 || !strings.Contains(out, "killed other/x") {
		t.Fatalf("single match: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	requireKilled(t, r, "single match", "other/x")

	if code, out, errOut := pipeRun("", "agent", "kill", "web/**", "--yes"); code != 0 || strings.Count(out, "killed web/") != 3 {
		t.Fatalf("--yes: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	requireKilled(t, r, "--yes", "web/a", "web/b", "web/c")
}

package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/testutil/wait"
)

// tmuxTerm is a real terminal for the CLI: a private tmux server whose one pane runs
// a shell the test types into, as a user would.
type tmuxTerm struct {
	t    *testing.T
	sock string
}

func newTerm(t *testing.T, e *env) *tmuxTerm {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("tmux is required for terminal tests: %v (apt-get install tmux)", err)
	}
	tt := &tmuxTerm{t: t, sock: filepath.Join(t.TempDir(), "term.sock")}
	cmd := exec.Command("tmux", "-S", tt.sock, "-f", "/dev/null", "new-session", "-d", "-x", "120", "-y", "30", "sh")
	cmd.Env = append(append([]string{}, e.vars...), "PS1=$ ")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("start tmux: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("tmux", "-S", tt.sock, "kill-server").Run() })
	return tt
}

func (tt *tmuxTerm) keys(keys ...string) {
	tt.t.Helper()
	args := append([]string{"-S", tt.sock, "send-keys", "-t", "0"}, keys...)
	if out, err := exec.Command("tmux", args...).CombinedOutput(); err != nil {
		tt.t.Fatalf("send-keys: %v %s", err, out)
	}
}

func (tt *tmuxTerm) screen() string {
	out, _ := exec.Command("tmux", "-S", tt.sock, "capture-pane", "-p", "-t", "0").Output()
	return string(out)
}

func TestAttachAndDetachEmbedded(t *testing.T) {
	e := newEnv(t)
	e.serve()
	e.must("agent", "run", "demo/hello", "--", "sh", "-c", `echo "I am $ORCR_PATH"; exec cat`)
	wait.For(t, 10*time.Second, "agent output", func() bool {
		return strings.Contains(e.orcr("agent", "read", "demo/hello").Out, "I am demo/hello")
	})
	term := newTerm(t, e)
	term.keys("orcr agent attach demo/hello", "Enter")
	wait.For(t, 10*time.Second, "attached with the agent's screen redrawn", func() bool {
		s := term.screen()
		return strings.Contains(s, "I am demo/hello")
	})
	term.keys("typed-through-attach", "Enter")
	wait.For(t, 10*time.Second, "input reaches the program", func() bool {
		return strings.Count(e.orcr("agent", "read", "demo/hello").Out, "typed-through-attach") >= 2
	})
	term.keys("C-]")
	wait.For(t, 10*time.Second, "detached back to the shell", func() bool {
		return strings.Contains(term.screen(), "detached from demo/hello")
	})
	// The agent is untouched by the detach.
	if a := agentJSON(t, e, "demo/hello"); a.State.Terminal() {
		t.Fatalf("agent ended on detach: %s", a.State)
	}
	term.keys("echo still-here", "Enter")
	wait.For(t, 5*time.Second, "shell usable after detach", func() bool {
		return strings.Contains(term.screen(), "still-here\n") || strings.Count(term.screen(), "still-here") >= 2
	})
}

package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
	"orcr/testutil/wait"
)

// newTmuxEnv is an env whose server runs agents on its own tmux server (killed, with
// every pane, when the test ends); extra is added to its environment.
func newTmuxEnv(t *testing.T, extra ...string) *env {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("tmux is required: %v (apt-get install tmux)", err)
	}
	e := newEnv(t, append([]string{"ORCR_HOST=tmux", "TMUX_TMPDIR=" + t.TempDir()}, extra...)...)
	t.Cleanup(func() {
		exec.Command("tmux", "-S", filepath.Join(e.home, "tmux.sock"), "kill-server").Run()
	})
	return e
}

func TestTmuxAgentsSurviveServerKill9(t *testing.T) {
	e := newTmuxEnv(t)
	e.serve()
	e.must("agent", "run", "w/a", "--", "sh", "-c", `echo "I am $ORCR_PATH"; exec cat`)
	wait.For(t, 10*time.Second, "greeting", func() bool {
		return strings.Contains(e.orcr("agent", "read", "w/a").Out, "I am w/a")
	})
	e.must("agent", "wait", "w/a", "--until", "idle", "--timeout", "10s")
	before := agentJSON(t, e, "w/a")
	// The pane lives in orcr's own tmux server, named by the agent's path.
	out, err := exec.Command("tmux", "-S", filepath.Join(e.home, "tmux.sock"), "list-windows", "-a", "-F", "#{window_name}").Output()
	if err != nil || !strings.Contains(string(out), "w/a") {
		t.Fatalf("orcr's tmux server lacks the window: %v %q", err, out)
	}
	e.kill9()
	e.serve()
	after := agentJSON(t, e, "w/a")
	if after.State != before.State || after.PaneID != before.PaneID || after.ID != before.ID {
		t.Fatalf("after kill -9: %s %s, before %s %s", after.State, after.PaneID, before.State, before.PaneID)
	}
	// Still live and steerable after re-adoption.
	e.must("agent", "send", "w/a", "after-restart")
	wait.For(t, 10*time.Second, "input after restart", func() bool {
		return strings.Count(e.orcr("agent", "read", "w/a").Out, "after-restart") >= 2
	})
	e.must("agent", "wait", "w/a", "--until", "done", "--timeout", "10s")
	// Exit is still observed on the re-adopted pane.
	e.must("agent", "send", "w/a", "--no-enter", "--keys", "ctrl-d")
	out2 := e.must("agent", "wait", "w/a", "--until", "exited", "--timeout", "10s")
	if !strings.Contains(out2, "exited (exit 0)") {
		t.Fatalf("exit after re-adoption: %q", out2)
	}
}

func TestTmuxPaneKilledWhileServerDownIsLost(t *testing.T) {
	e := newTmuxEnv(t)
	e.serve()
	e.must("agent", "run", "w/gone", "--", "sleep", "300")
	var a wire.Agent
	wait.For(t, 10*time.Second, "pane recorded", func() bool {
		a = agentJSON(t, e, "w/gone")
		return a.PaneID != ""
	})
	e.kill9()
	if out, err := exec.Command("tmux", "-S", filepath.Join(e.home, "tmux.sock"), "kill-pane", "-t", a.PaneID).CombinedOutput(); err != nil {
		t.Fatalf("kill-pane: %v %s", err, out)
	}
	e.serve()
	got := agentJSON(t, e, "w/gone")
	if got.State != wire.StateLost || !strings.Contains(got.StateReason, "vanished") {
		t.Fatalf("pane killed while down: %s (%s)", got.State, got.StateReason)
	}
}

func TestTmuxAttachCommand(t *testing.T) {
	e := newTmuxEnv(t)
	e.serve()
	e.must("agent", "run", "w/att", "--", "sh", "-c", "echo ready; exec cat")
	term := newTerm(t, e)
	term.keys("orcr agent attach w/att", "Enter")
	wait.For(t, 10*time.Second, "tmux attach shows the agent", func() bool { return strings.Contains(term.screen(), "ready") })
	term.keys("C-b", "d")
	wait.For(t, 10*time.Second, "detached back to the shell", func() bool { return strings.Contains(term.screen(), "[detached") })
	if a := agentJSON(t, e, "w/att"); a.State.Terminal() {
		t.Fatalf("agent ended on detach: %s", a.State)
	}
}

// TestTmuxTwoAttachesEachTheirOwn: `orcr agent attach` in two terminals at once, on two
// agents: each terminal shows its own agent and typing reaches it; a detach of one
// leaves the other's view; when the other's terminal is killed no attach session is
// left in orcr's tmux and no agent is lost.
func TestTmuxTwoAttachesEachTheirOwn(t *testing.T) {
	e := newTmuxEnv(t)
	e.serve()
	e.must("agent", "run", "w/one", "--", "sh", "-c", "echo ready-one; exec cat")
	e.must("agent", "run", "w/two", "--", "sh", "-c", "echo ready-two; exec cat")
	one, two := newTerm(t, e), newTerm(t, e)
	one.keys("orcr agent attach w/one", "Enter")
	two.keys("orcr agent attach w/two", "Enter")
	for _, c := range []struct {
		term       *tmuxTerm
		own, other string
	}{{one, "one", "two"}, {two, "two", "one"}} {
		wait.For(t, 10*time.Second, "the attach of w/"+c.own+" shows it", func() bool {
			s := c.term.screen()
			return strings.Contains(s, "ready-"+c.own) && strings.Contains(s, "orcr · w/"+c.own+" · detach")
		})
		if s := c.term.screen(); strings.Contains(s, "ready-"+c.other) || strings.Contains(s, "w/"+c.other) {
			t.Fatalf("the attach of w/%s shows w/%s:\n%s", c.own, c.other, s)
		}
	}
	one.keys("typed-one", "Enter")
	two.keys("typed-two", "Enter")
	for _, p := range []string{"one", "two"} {
		wait.For(t, 10*time.Second, "typing reaches w/"+p, func() bool {
			return strings.Contains(e.orcr("agent", "read", "w/"+p).Out, "typed-"+p)
		})
	}
	one.keys("C-b", "d")
	wait.For(t, 10*time.Second, "the first detached", func() bool { return strings.Contains(one.screen(), "[detached") })
	two.keys("still-two", "Enter")
	wait.For(t, 10*time.Second, "the second keeps its view", func() bool {
		s := two.screen()
		return strings.Contains(s, "still-two") && strings.Contains(s, "orcr · w/two · detach")
	})
	if out, err := exec.Command("tmux", "-S", two.sock, "kill-server").CombinedOutput(); err != nil {
		t.Fatalf("kill the second terminal: %v %s", err, out)
	}
	sock := filepath.Join(e.home, "tmux.sock")
	wait.For(t, 10*time.Second, "no attach session left", func() bool {
		out, _ := exec.Command("tmux", "-S", sock, "list-sessions", "-F", "#{session_name}").Output()
		return strings.TrimSpace(string(out)) == "orcr"
	})
	for _, p := range []string{"w/one", "w/two"} {
		if a := agentJSON(t, e, p); !a.State.Live() {
			t.Fatalf("%s after the attaches ended: %s (%s)", p, a.State, a.StateReason)
		}
	}
	e.must("agent", "send", "w/one", "after-both")
	wait.For(t, 10*time.Second, "w/one still takes input", func() bool {
		return strings.Contains(e.orcr("agent", "read", "w/one").Out, "after-both")
	})
}

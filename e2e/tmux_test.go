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

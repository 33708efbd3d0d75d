package e2e

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"orcr/testutil/wait"
)

// TestRunTurnsEndWhileServerDown: the server is killed (-9) twice with real claude
// agents in tmux panes that outlive it. First while the coder's last step runs:
// its `orcr run done` finds no server and waits for one instead of failing. Then
// while the reviewer's verdict is on its way: the turn ends with no server to hear
// its Stop hook, and the restarted server reads the turn's end and the verdict from
// the transcript. The run completes: M1 merged.
func TestRunTurnsEndWhileServerDown(t *testing.T) {
	r := newRunRig(t, "solo")
	r.approvePlan(oneMilestone)
	m1 := r.worktree("M1")
	done := commitDone("M1", "greeting")
	done.Delay = 3 * time.Second // the server is killed while this reply is held back
	r.models.PushTo("M1", write(m1+"/greet.txt", "hello, world\nsigned-off\n"), done, say("Reported."))
	verdict := say("Looks right.\nVERDICT: approve")
	verdict.Delay = 3 * time.Second
	r.models.PushTo("review/M1", verdict)
	r.must("run", "start", "solo", "--coders", "1", "--coder", "claude", "--reviewer", "claude", "--lead", "none")
	r.must("run", "dispatch", "solo", "M1")

	// 1. The coder's commit-and-report reply is on its way: the server dies.
	wait.For(t, 120*time.Second, "the coder's last step", func() bool { return r.models.PlayedOf("M1") >= 2 })
	r.env.kill9()
	wait.For(t, 60*time.Second, "`orcr run done M1` waiting for the server", func() bool {
		// The orcr process itself (claude's own command line carries the brief).
		return exec.Command("pgrep", "-f", "^orcr run done M1").Run() == nil
	})
	r.serve()
	r.waitState("M1", "reviewing", 120*time.Second)

	// 2. The reviewer's verdict is on its way: the server dies, the turn ends.
	wait.For(t, 120*time.Second, "the reviewer's verdict request", func() bool { return r.models.PlayedOf("review/M1") >= 1 })
	transcript := agentJSON(t, r.env, "runs/solo/reviewer").Transcript
	r.env.kill9()
	if transcript == "" {
		t.Fatal("the reviewer has no transcript path")
	}
	wait.For(t, 60*time.Second, "the reviewer's turn to end while the server is down", func() bool {
		b, _ := os.ReadFile(transcript)
		return strings.Contains(string(b), `"turn_duration"`) && strings.Contains(string(b), "VERDICT: approve")
	})
	r.serve()
	r.waitState("M1", "merged", 120*time.Second)
	// The coder's report got through (not a turn end without it, nudged).
	if f := r.facts("M1"); !strings.HasPrefix(f, "dispatch done checked") {
		t.Fatalf("M1's facts %q: the coder's `run done` did not get through the restart", f)
	}
	approved := false
	for _, e := range r.events() {
		approved = approved || e.Kind == "reviewed" && strings.Contains(e.Text, `verdict "approve"`)
	}
	if !approved {
		t.Fatalf("M1 merged without the reviewer's verdict: %s", r.facts("M1"))
	}
}

// TestRunPermissionBlockedCoderInStatus: real claude as a coder runs a command
// outside its allow-list, which puts it on a permission prompt. `run status` says
// the coder waits for the user and on what, the run notifies, and once answered the
// status names the coder again.
func TestRunPermissionBlockedCoderInStatus(t *testing.T) {
	r := newRunRig(t, "solo")
	r.approvePlan(oneMilestone)
	r.models.PushTo("M1", bash("python3 -c 'print(42)'"), say("Could not run it."))
	notes := collectEvents(t, r.env, "run.notify")
	r.must("run", "start", "solo", "--coders", "1", "--coder", "claude", "--lead", "none")
	r.must("run", "dispatch", "solo", "M1")
	var waits string
	if !wait.Until(120*time.Second, func() bool {
		waits = r.milestone(r.status(), "M1").Waits
		return strings.Contains(waits, "coder-1 waits for you")
	}) {
		t.Fatalf("M1 waits on %q, not on the user at coder-1's prompt", waits)
	}
	if !strings.Contains(waits, "python3") || !strings.Contains(waits, "orcr agent answer runs/solo/coder-1") {
		t.Fatalf("M1 waits on %q: not what the prompt asks, or not how to answer it", waits)
	}
	if out := r.must("run", "status", "solo"); !strings.Contains(out, "coder-1 waits for you") {
		t.Fatalf("run status does not say so:\n%s", out)
	}
	wait.For(t, 30*time.Second, "a run.notify of the prompt", func() bool {
		for _, n := range notes.texts() {
			if strings.Contains(n, "coder-1 of run solo waits for you: permission") {
				return true
			}
		}
		return false
	})
	r.must("agent", "answer", "runs/solo/coder-1", "--deny")
	wait.For(t, 60*time.Second, "the status to name the coder again", func() bool {
		return !strings.Contains(r.milestone(r.status(), "M1").Waits, "waits for you")
	})
}

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"orcr/testutil/proc"
	"orcr/testutil/wait"
)

// TestKeepRunningOnTmux: a dashboard hosting the server with its agents in tmux, with
// a schedule, says on quit that the schedule stops with it and offers to keep it
// running; "k" hands the home to a background orcr serve, which then answers the CLI
// with the schedule still there.
func TestKeepRunningOnTmux(t *testing.T) {
	r := newRig(t)
	for i, kv := range r.env {
		if kv == "ORCR_HOST=pty" {
			r.env[i] = "ORCR_HOST=tmux"
		}
	}
	agentSock := filepath.Join(r.home, "tmux.sock")
	t.Cleanup(func() {
		_ = exec.Command("tmux", "-S", r.sock, "kill-server").Run()
		for _, pid := range r.pids {
			wait.For(t, 15*time.Second, "the dashboard to exit", func() bool { return proc.Gone(pid) })
		}
		// The background server this test made: stop it, then the agents' tmux.
		if b, err := os.ReadFile(filepath.Join(r.home, "orcr.lock")); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGTERM)
				if !wait.Until(15*time.Second, func() bool { return proc.Gone(pid) }) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		_ = exec.Command("tmux", "-S", agentSock, "kill-server").Run()
	})

	r.start()
	r.waitText(20*time.Second, "agents 0", "host tmux")
	r.mustOrcr("schedule", "add", "nightly", "--every", "24h", "--", "true")
	// The panel reads the schedules every few seconds: show its schedules tab and wait
	// for the schedule there, so q knows of it.
	r.keys("Tab", "Tab", "]", "]")
	r.waitText(20*time.Second, "nightly")
	r.keys("q")
	s := r.waitText(10*time.Second, "1 schedule")
	if !strings.Contains(s, "quitting stops") || !strings.Contains(s, "keep running in the background") {
		t.Fatalf("quit dialog:\n%s", s)
	}
	r.keys("k")
	r.waitScreen("the dashboard to exit", 30*time.Second, func(string) bool { return r.paneDead() })
	wait.For(t, 10*time.Second, "the word on the background server", func() bool {
		all := r.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "ui")
		return strings.Contains(all, "a background orcr serve (pid ")
	})
	if out := r.mustOrcr("schedule", "ls"); !strings.Contains(out, "nightly") {
		t.Fatalf("the background server lacks the schedule:\n%s", out)
	}
}

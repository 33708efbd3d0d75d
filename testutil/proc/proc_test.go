package proc

import (
	"os/exec"
	"testing"
	"time"

	"orcr/testutil/wait"
)

// TestGone: a running process is not gone; once it exits it is, before its parent
// (this test) reaps it — a zombie has ended.
func TestGone(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if Gone(pid) {
		t.Fatal("a running sleep is gone")
	}
	_ = cmd.Process.Kill()
	// Not reaped: Wait is called only after.
	wait.For(t, 10*time.Second, "the killed sleep gone while a zombie", func() bool { return Gone(pid) })
	_ = cmd.Wait()
	if !Gone(pid) {
		t.Fatal("a reaped process is not gone")
	}
}

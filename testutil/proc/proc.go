// Package proc stops the programs whole-program tests start (an `orcr serve`, a
// dashboard): gracefully first, the way a user would, then by force.
package proc

import (
	"os/exec"
	"syscall"
	"time"
)

// StopWaited sends cmd's process SIGTERM and waits up to grace for it to exit; past
// that it kills the process and its process group (when it leads one). Another
// goroutine owns cmd's Wait: exited is closed when that Wait returns.
func StopWaited(cmd *exec.Cmd, exited <-chan struct{}, grace time.Duration) {
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(grace):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Process.Kill()
		<-exited
	}
}

// Package proc stops the programs whole-program tests start (an `orcr serve`, a
// dashboard): gracefully first, the way a user would, then by force.
package proc

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
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

// CPUTicks is utime+stime of process pid in clock ticks (USER_HZ = 100), for benchmarks
// that measure a server's CPU over a window.
func CPUTicks(tb testing.TB, pid int) int64 {
	tb.Helper()
	f := statFields(tb, pid)
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return u + st
}

// SelfCPU is the CPU time (user and system) this process has used so far, its ended
// threads included: for benchmarks and tests that measure what the code under test
// costs in this process, which unlike wall time does not grow with what else runs.
func SelfCPU(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// MinorFaults is process pid's minor page faults so far (minflt).
func MinorFaults(tb testing.TB, pid int) int64 {
	tb.Helper()
	v, err := strconv.ParseInt(statFields(tb, pid)[7], 10, 64)
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

// statFields are the fields of /proc/PID/stat after the command's closing
// parenthesis (the state first).
func statFields(tb testing.TB, pid int) []string {
	tb.Helper()
	f, err := readStat(pid)
	if err != nil {
		tb.Fatal(err)
	}
	return f
}

// readStat is statFields without a test to fail: an error when the process is gone.
func readStat(pid int) ([]string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return nil, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	return strings.Fields(s[i+2:]), nil
}

// Gone reports whether process pid has ended: no such process, or a zombie — it exited
// and its parent has not reaped it yet. A signal 0 still reaches a zombie, and a
// server started in the background is reaped by PID 1, which on this machine
// (process_api) reaps about once a second: a test waiting for kill(pid, 0) to fail
// waited ~1 s after every exit (an orcr server stopped in 17 ms).
func Gone(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return true
	}
	f, err := readStat(pid)
	return err != nil || len(f) == 0 || f[0] == "Z" || f[0] == "X"
}

package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// TailLines is how many lines of a failing check's output go back to the coder.
const TailLines = 60

// DefaultCheckTimeout bounds one check run when the run sets none.
const DefaultCheckTimeout = 10 * time.Minute

// CheckResult is one run of the check command.
type CheckResult struct {
	OK       bool
	ExitCode int // -1 when it did not exit by itself (timeout, signal)
	TimedOut bool
	Tail     string // the last TailLines lines of stdout and stderr together
	Duration time.Duration
}

// RunCheck runs command with sh -c in dir, bounded by timeout. The command gets its
// own process group, so a timeout kills everything it started (a test binary, a
// server it spawned), not just the shell.
func RunCheck(ctx context.Context, dir, command string, timeout time.Duration, env []string) (CheckResult, error) {
	if timeout <= 0 {
		timeout = DefaultCheckTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	cmd := exec.Command("sh", "-c", command)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	tail := &tailWriter{max: TailLines}
	cmd.Stdout, cmd.Stderr = tail, tail
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return CheckResult{}, fmt.Errorf("start check %q: %w", command, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	timedOut := false
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = <-done
		timedOut = errors.Is(ctx.Err(), context.DeadlineExceeded)
		if !timedOut {
			return CheckResult{}, fmt.Errorf("check %q: %w", command, ctx.Err())
		}
	}
	res := CheckResult{Duration: time.Since(start), Tail: tail.String(), TimedOut: timedOut}
	var ee *exec.ExitError
	switch {
	case timedOut:
		res.ExitCode = -1
		res.Tail = strings.TrimRight(res.Tail, "\n") + fmt.Sprintf("\n[orcr: the check did not finish within %s and was stopped]\n", timeout)
	case err == nil:
		res.OK = true
	case errors.As(err, &ee):
		res.ExitCode = ee.ExitCode()
	default:
		return res, fmt.Errorf("check %q: %w", command, err)
	}
	return res, nil
}

// tailWriter keeps the last max lines written to it (and at most 64 KiB of them, so
// one endless line cannot grow it without bound).
type tailWriter struct {
	mu    sync.Mutex
	max   int
	lines []string
	cur   bytes.Buffer
}

const tailMaxBytes = 64 << 10

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			t.cur.Write(p)
			if t.cur.Len() > tailMaxBytes {
				b := t.cur.Bytes()
				keep := append([]byte(nil), b[len(b)-tailMaxBytes:]...)
				t.cur.Reset()
				t.cur.Write(keep)
			}
			break
		}
		t.cur.Write(p[:i])
		t.push(t.cur.String())
		t.cur.Reset()
		p = p[i+1:]
	}
	return n, nil
}

func (t *tailWriter) push(l string) {
	if len(l) > 4096 {
		l = l[:4096] + "…"
	}
	t.lines = append(t.lines, l)
	if len(t.lines) > t.max {
		t.lines = append(t.lines[:0], t.lines[len(t.lines)-t.max:]...)
	}
}

func (t *tailWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := t.lines
	if t.cur.Len() > 0 {
		lines = append(append([]string(nil), lines...), t.cur.String())
		if len(lines) > t.max {
			lines = lines[len(lines)-t.max:]
		}
	}
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

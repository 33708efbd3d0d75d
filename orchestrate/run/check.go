package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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

// outputGrace is how long RunCheck keeps reading after a timeout killed the check's
// process group: enough for the last buffered bytes, not for a process that escaped.
const outputGrace = 2 * time.Second

// RunCheck runs command with sh -c in dir, bounded by timeout. The command gets its
// own process group, so a timeout kills everything it started (a test binary, a
// server it spawned), not just the shell.
//
// The check's output goes through a pipe RunCheck owns, not one exec copies from,
// because a process the check started may leave the group (setsid, a daemon) and
// keep the pipe open after the shell exited: exec's Wait would then wait for it for
// ever, the milestone would stay "checking" and the server could not shut down. Here
// the shell's exit and the end of its output are awaited separately, both bounded by
// the timeout and by ctx; past them, what still holds the pipe is killed with its
// process group (killHolders) and the pipe is closed.
func RunCheck(ctx context.Context, dir, command string, timeout time.Duration, env []string) (CheckResult, error) {
	if timeout <= 0 {
		timeout = DefaultCheckTimeout
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	r, w, err := os.Pipe()
	if err != nil {
		return CheckResult{}, fmt.Errorf("check %q: output pipe: %w", command, err)
	}
	defer r.Close()
	cmd := exec.Command("sh", "-c", command)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	w.Close() // the check's processes hold the only write ends now
	if err != nil {
		return CheckResult{}, fmt.Errorf("start check %q: %w", command, err)
	}
	tail := &tailWriter{max: TailLines}
	read := make(chan struct{})
	go func() {
		defer close(read)
		_, _ = io.Copy(tail, r) // ends at EOF, or when r is closed below
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	killGroup := func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }

	var werr error
	timedOut, heldOpen, stopped := false, false, false
	select {
	case werr = <-exited:
		// The shell is done; its output ends when the last process holding the
		// pipe does, normally at once.
		select {
		case <-read:
		case <-tctx.Done():
			killGroup()
			timedOut, heldOpen = true, true
		}
	case <-tctx.Done():
		killGroup()
		werr = <-exited // sh itself was in the group: it is dead, Wait returns
		timedOut = true
		if ctx.Err() == nil { // shutting down: no grace
			select {
			case <-read:
			case <-time.After(outputGrace):
				heldOpen = true
			}
		}
	}
	select {
	case <-read:
	default:
		// What still holds the output left the check's process group: find it by
		// the pipe it holds and stop it too, so a check that timed out leaves
		// nothing behind (each round would add a daemon).
		if stopped = killHolders(r) > 0; stopped {
			select {
			case <-read:
			case <-time.After(outputGrace):
			}
		}
	}
	r.Close()
	<-read
	if timedOut && ctx.Err() != nil {
		return CheckResult{}, fmt.Errorf("check %q: %w", command, ctx.Err())
	}
	res := CheckResult{Duration: time.Since(start), Tail: tail.String(), TimedOut: timedOut}
	var ee *exec.ExitError
	switch {
	case timedOut:
		res.ExitCode = -1
		res.Tail = strings.TrimRight(res.Tail, "\n") + "\n" + notePrefix + timeoutText(timeout, heldOpen, stopped) + "]\n"
	case werr == nil:
		res.OK = true
	case errors.As(werr, &ee):
		res.ExitCode = ee.ExitCode()
	default:
		return res, fmt.Errorf("check %q: %w", command, werr)
	}
	return res, nil
}

// killHolders kills the other processes that hold pipe r's inode open — processes a
// check started that left its process group (setsid) — each with its process group
// (a daemon's children), unless that group is this server's. It finds them in /proc
// (without /proc it finds none) and returns how many it killed. Only the check's
// processes can hold the pipe: both ends are close-on-exec, and the write end went
// to the check's shell alone.
func killHolders(r *os.File) int {
	fi, err := r.Stat() // not r.Fd(), which would make a concurrent Read block for ever
	if err != nil {
		return 0
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	want := fmt.Sprintf("pipe:[%d]", st.Ino)
	self, ownGroup := os.Getpid(), syscall.Getpgrp()
	procs, _ := os.ReadDir("/proc")
	n := 0
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == self {
			continue
		}
		fds, _ := os.ReadDir(filepath.Join("/proc", p.Name(), "fd"))
		for _, fd := range fds {
			if l, _ := os.Readlink(filepath.Join("/proc", p.Name(), "fd", fd.Name())); l != want {
				continue
			}
			if pgid, err := syscall.Getpgid(pid); err == nil && pgid > 1 && pgid != ownGroup {
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
			}
			_ = syscall.Kill(pid, syscall.SIGKILL)
			n++
			break
		}
	}
	return n
}

// notePrefix starts the line RunCheck adds to a check's output to say why it ended.
const notePrefix = "[orcr: "

// checkNote is the note RunCheck added to a check's output tail ("" when none), so the
// run log can say why a check failed without the whole tail.
func checkNote(tail string) string {
	tail = strings.TrimRight(tail, "\n")
	last := tail[strings.LastIndexByte(tail, '\n')+1:]
	if note, ok := strings.CutPrefix(last, notePrefix); ok {
		return strings.TrimSuffix(note, "]")
	}
	return ""
}

// timeoutText says why a check ended at its timeout. heldOpen: its output was still
// open, by a process that left the check's process group; stopped: killHolders found
// and killed that process.
func timeoutText(timeout time.Duration, heldOpen, stopped bool) string {
	if !heldOpen {
		return fmt.Sprintf("check timed out after %s and was stopped", timeout)
	}
	what := "kept its output open"
	if stopped {
		what += " and was stopped"
	}
	return fmt.Sprintf("check timed out after %s; a process it started %s "+
		"(make the check wait for what it starts, or send that process's output elsewhere)", timeout, what)
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

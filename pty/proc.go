package pty

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// pollable returns the pty master as a non-blocking file on Go's poller and closes f.
// creack/pty leaves the master in blocking mode (its ioctls call Fd), where deadlines
// do nothing and Close cannot interrupt a read; a write to a program that stopped
// reading would then hang forever.
func pollable(f *os.File) (*os.File, error) {
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("pty master: %w", err)
	}
	var fd int
	var dupErr error
	if err := rc.Control(func(old uintptr) { fd, dupErr = unix.Dup(int(old)) }); err != nil {
		return nil, fmt.Errorf("pty master: %w", err)
	}
	if dupErr != nil {
		return nil, fmt.Errorf("pty master: dup: %w", dupErr)
	}
	unix.CloseOnExec(fd)
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("pty master: nonblock: %w", err)
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}

// setSize sets the window size of the pty without Fd (which would make it blocking).
func setSize(f *os.File, cols, rows int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ioErr error
	err = rc.Control(func(fd uintptr) {
		ioErr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: uint16(rows), Col: uint16(cols)})
	})
	if err != nil {
		return err
	}
	return ioErr
}

// lookPath resolves argv0 with the PATH of env (then the server's PATH). Names with a
// slash are used as given; a relative one is relative to cwd.
func lookPath(argv0 string, env []string, cwd string) (string, error) {
	if strings.Contains(argv0, "/") {
		return argv0, nil
	}
	envPath, found := "", false
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			envPath, found = v, true
		}
	}
	dirs := []string{}
	if found {
		dirs = append(dirs, filepath.SplitList(envPath)...)
	}
	dirs = append(dirs, filepath.SplitList(os.Getenv("PATH"))...)
	for _, dir := range dirs {
		if dir == "" {
			dir = "."
		}
		if !filepath.IsAbs(dir) && cwd != "" {
			dir = filepath.Join(cwd, dir)
		}
		cand := filepath.Join(dir, argv0)
		if st, err := os.Stat(cand); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return cand, nil
		}
	}
	return "", fmt.Errorf("%q not found in PATH", argv0)
}

// signal sends sig to the pane's processes: its process group (the session leader's),
// plus every process of its session found among the leader's descendants, which
// catches jobs a shell moved to other process groups. Descendants are collected before
// anything is signalled (a dying leader orphans them) and remembered for the next
// signal, when the leader may be gone. Walking descendants costs a few reads per
// process instead of a scan of all of /proc.
func (p *pane) signal(sig syscall.Signal) {
	p.known = append(p.known, descendants(p.pid)...)
	_ = syscall.Kill(-p.pid, sig)
	for _, pid := range p.known {
		if sessionOf(pid) == p.pid { // still ours, not a reused pid
			_ = syscall.Kill(pid, sig)
		}
	}
}

// descendants lists the live descendants of pid.
func descendants(pid int) []int {
	var out []int
	seen := map[int]bool{pid: true}
	queue := []int{pid}
	for len(queue) > 0 {
		next := queue[0]
		queue = queue[1:]
		for _, child := range children(next) {
			if !seen[child] {
				seen[child] = true
				out = append(out, child)
				queue = append(queue, child)
			}
		}
	}
	return out
}

// sessionOf returns the session id of pid, or -1.
func sessionOf(pid int) int {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	// Fields after the command name: state ppid pgrp session …
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 4 {
		return -1
	}
	sid, err := strconv.Atoi(f[3])
	if err != nil {
		return -1
	}
	return sid
}

// children lists the child pids of every thread of pid (Linux /proc).
func children(pid int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []int
	for _, task := range tasks {
		b, err := os.ReadFile(dir + "/" + task.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// masterReader reads the pty master as os.File.Read does (waiting on Go's poller
// while nothing is there, honouring read deadlines and Close), but issues the read
// itself as a raw system call. The master is non-blocking (pollable), so the read
// never waits in the kernel for output. os.File.Read enters the system call through
// the scheduler (entersyscall), which wakes the runtime's monitor thread (sysmon)
// whenever it sleeps with every processor idle, and a woken monitor polls every 20 µs
// while anything runs: each output of a pane (two reads: the data, then EAGAIN) cost
// several thread wake-ups, a quarter of the server's CPU with 20 agents redrawing a
// status line 10 times a second (bench/pty BenchmarkStatusLine20VsRawTmux). Only the
// pane's reader uses it, one read at a time.
type masterReader struct {
	rc  syscall.RawConn
	fn  func(fd uintptr) bool // try, made once: a closure per read would allocate
	buf []byte
	n   int
	err error
}

func newMasterReader(f *os.File) (*masterReader, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("pty master: %w", err)
	}
	r := &masterReader{rc: rc}
	r.fn = r.try
	return r, nil
}

// read reads into b; a read that finds the pty closed on the other side returns the
// error the kernel gives (EIO), one of 0 bytes io.EOF.
func (r *masterReader) read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	r.buf, r.n, r.err = b, 0, nil
	err := r.rc.Read(r.fn)
	n, rerr := r.n, r.err
	r.buf, r.err = nil, nil
	if err != nil {
		return n, err
	}
	if rerr != nil {
		return n, fmt.Errorf("read pty master: %w", rerr)
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// try is one read; false asks the poller to wait until the master is readable.
func (r *masterReader) try(fd uintptr) bool {
	for {
		n, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&r.buf[0])), uintptr(len(r.buf)))
		switch e {
		case 0:
			r.n = int(n)
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		default:
			r.err = e
		}
		return true
	}
}

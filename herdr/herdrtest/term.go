package herdrtest

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/vt"
	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"orcr/internal/panesig"
)

// term is one real PTY with a process on it, rendered by a VT emulator. Input (text,
// keys, and the emulator's own replies such as cursor reports) goes through the
// emulator's input pipe into one FIFO drained by a writer goroutine, so bytes keep
// their order and a program that stops reading never blocks the server.
type term struct {
	cmd  *exec.Cmd
	ptmx *os.File

	mu      sync.Mutex // guards emu and outSeq
	emu     *vt.Emulator
	outSeq  uint64
	outDone chan struct{} // output reader ended (EOF/EIO)

	qmu    sync.Mutex
	qcond  *sync.Cond
	queue  []byte
	closed bool

	done     chan struct{} // process reaped; exitCode valid
	exitCode int
}

// startTerm runs argv on a fresh PTY of cols x rows.
func startTerm(argv []string, dir string, env []string, cols, rows int) (*term, error) {
	path, err := lookPath(argv[0], env)
	if err != nil {
		return nil, err
	}
	// As herdr (a terminal multiplexer) does: a pane's program gets ctrl-c and hangups
	// even where this process was started with them ignored (the test binary run in a
	// script's background job).
	panesig.RestoreIgnored()
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args = argv
	cmd.Dir = dir
	cmd.Env = env
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)})
	if err != nil {
		return nil, err
	}
	t := &term{
		cmd:     cmd,
		ptmx:    ptmx,
		emu:     vt.NewEmulator(cols, rows),
		outDone: make(chan struct{}),
		done:    make(chan struct{}),
	}
	t.qcond = sync.NewCond(&t.qmu)
	go t.readOutput()
	go t.readReplies()
	go t.writeInput()
	go t.wait()
	return t, nil
}

// lookPath finds argv0 in the PATH of env (falling back to the server's own PATH).
func lookPath(argv0 string, env []string) (string, error) {
	if strings.Contains(argv0, "/") {
		return argv0, nil
	}
	pathVar := os.Getenv("PATH")
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathVar = v
		}
	}
	for _, d := range strings.Split(pathVar, ":") {
		if d == "" {
			d = "."
		}
		p := d + "/" + argv0
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New(argv0 + ": not found in PATH")
}

func (t *term) readOutput() {
	defer close(t.outDone)
	buf := make([]byte, 32*1024)
	for {
		n, err := t.ptmx.Read(buf)
		if n > 0 {
			t.mu.Lock()
			_, _ = t.emu.Write(buf[:n])
			t.outSeq++
			t.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// readReplies moves whatever the emulator writes to its input pipe into the queue.
func (t *term) readReplies() {
	buf := make([]byte, 32*1024)
	for {
		n, err := t.emu.Read(buf)
		if n > 0 {
			t.enqueue(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

func (t *term) enqueue(b []byte) {
	t.qmu.Lock()
	t.queue = append(t.queue, b...)
	t.qmu.Unlock()
	t.qcond.Signal()
}

func (t *term) writeInput() {
	for {
		t.qmu.Lock()
		for len(t.queue) == 0 && !t.closed {
			t.qcond.Wait()
		}
		if t.closed {
			t.qmu.Unlock()
			return
		}
		b := t.queue
		t.queue = nil
		t.qmu.Unlock()
		if _, err := t.ptmx.Write(b); err != nil {
			t.qmu.Lock()
			t.closed = true
			t.qmu.Unlock()
			return
		}
	}
}

// wait reaps the process, lets the last output reach the emulator, then releases
// the PTY and the helper goroutines.
func (t *term) wait() {
	err := t.cmd.Wait()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = 128 + int(ws.Signal())
			} else {
				code = ee.ExitCode()
			}
		} else {
			code = -1
		}
	}
	select {
	case <-t.outDone:
	case <-time.After(500 * time.Millisecond): // a background child still holds the pty
	}
	t.qmu.Lock()
	t.closed = true
	t.qmu.Unlock()
	t.qcond.Broadcast()
	_ = t.ptmx.Close()
	// Ending the input pipe stops readReplies; Emulator.Close would race with Read.
	if pw, ok := t.emu.InputPipe().(*io.PipeWriter); ok {
		_ = pw.CloseWithError(io.EOF)
	}
	t.exitCode = code
	close(t.done)
}

// kill hangs up the pane's process group and escalates to SIGKILL if it lingers.
func (t *term) kill() {
	pid := t.cmd.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGHUP)
	_ = syscall.Kill(pid, syscall.SIGHUP)
	select {
	case <-t.done:
	case <-time.After(2 * time.Second):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = syscall.Kill(pid, syscall.SIGKILL)
		<-t.done
	}
}

func (t *term) exited() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

// paste sends text, wrapped in bracketed-paste markers if the program enabled them.
func (t *term) paste(text string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.emu.Paste(text)
}

// sendRaw sends text as raw bytes.
func (t *term) sendRaw(text string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.emu.SendText(text)
}

// sendKeys encodes keys for the program's current keyboard mode.
func (t *term) sendKeys(keys []uv.KeyPressEvent) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range keys {
		if k.Text != "" && k.Mod == 0 {
			t.emu.SendText(k.Text)
			continue
		}
		t.emu.SendKey(k)
	}
}

// snapshot returns the screen rows and the scrollback rows above them, plain or
// with ANSI styling, and a soft-wrap flag per row (a row filled to its last column).
type row struct {
	text    string
	wrapped bool // continues on the next row
}

func (t *term) rows(ansi, withScroll bool) (scroll, screen []row) {
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.emu.Width()
	conv := func(l uv.Line) row {
		r := row{}
		if ansi {
			r.text = l.Render()
		} else {
			r.text = l.String()
		}
		if len(l) >= w && w > 0 {
			c := l.At(w - 1)
			r.wrapped = c != nil && !c.IsZero() && !c.Equal(&uv.EmptyCell)
		}
		return r
	}
	if withScroll && !t.emu.IsAltScreen() {
		if sb := t.emu.Scrollback(); sb != nil {
			for _, l := range sb.Lines() {
				scroll = append(scroll, conv(l))
			}
		}
	}
	h := t.emu.Height()
	for y := 0; y < h; y++ {
		line := make(uv.Line, w)
		for x := 0; x < w; x++ {
			if c := t.emu.CellAt(x, y); c != nil {
				line[x] = *c
			} else {
				line[x] = uv.EmptyCell
			}
		}
		screen = append(screen, conv(line))
	}
	return scroll, screen
}

// foregroundPgrp is the PTY's foreground process group, 0 when unknown.
func (t *term) foregroundPgrp() int {
	select {
	case <-t.done:
		return 0
	default:
	}
	// SyscallConn keeps the fd non-blocking and is safe against a concurrent Close.
	rc, err := t.ptmx.SyscallConn()
	if err != nil {
		return 0
	}
	pg := 0
	cerr := rc.Control(func(fd uintptr) {
		pg, err = unix.IoctlGetInt(int(fd), unix.TIOCGPGRP)
	})
	if cerr != nil || err != nil {
		return 0
	}
	return pg
}

// procInfo describes one process for pane.process_info.
type procInfo struct {
	PID     int      `json:"pid"`
	Name    string   `json:"name"`
	Argv0   string   `json:"argv0,omitempty"`
	Argv    []string `json:"argv,omitempty"`
	Cmdline string   `json:"cmdline,omitempty"`
	Cwd     string   `json:"cwd,omitempty"`
}

// processGroups maps every process group to its pids (Linux /proc; empty elsewhere).
func processGroups() map[int][]int {
	out := map[int][]int{}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if g, err := unix.Getpgid(pid); err == nil {
			out[g] = append(out[g], pid)
		}
	}
	return out
}

// processesInGroup lists the processes of pgrp (Linux /proc; elsewhere just the leader).
func processesInGroup(pgrp int) []procInfo {
	if pgrp <= 0 {
		return []procInfo{}
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return []procInfo{{PID: pgrp}}
	}
	var out []procInfo
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if g, err := unix.Getpgid(pid); err != nil || g != pgrp {
			continue
		}
		out = append(out, describeProc(pid))
	}
	if out == nil {
		out = []procInfo{}
	}
	return out
}

func describeProc(pid int) procInfo {
	p := procInfo{PID: pid}
	base := "/proc/" + strconv.Itoa(pid)
	if b, err := os.ReadFile(base + "/comm"); err == nil {
		p.Name = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile(base + "/cmdline"); err == nil && len(b) > 0 {
		p.Argv = strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		p.Argv0 = p.Argv[0]
		p.Cmdline = strings.Join(p.Argv, " ")
	}
	if c, err := os.Readlink(base + "/cwd"); err == nil {
		p.Cwd = c
	}
	return p
}

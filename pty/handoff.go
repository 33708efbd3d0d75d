package pty

// Hand-off: a dashboard that hosts the server in-process owns its panes' programs as
// children. When the user keeps them running past the dashboard, Export releases
// every live pane (the process keeps running, the pty master is duplicated for the
// next owner) and a new server process adopts them through Options.Adopt. An adopted
// process is not the adopting process's child, so its exit is watched through a
// pidfd (or /proc when pidfds are unavailable) and its exit status stays unknown.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Handoff describes one exported pane: enough for another Host (in another process)
// to adopt it.
type Handoff struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	PID  int    `json:"pid"` // the session leader of the pane's terminal
	Cols int    `json:"cols"`
	Rows int    `json:"rows"`
	// Screen is an ANSI redraw of the pane's last screen (modes, styled rows, cursor)
	// that seeds the adopting host's emulator.
	Screen string `json:"screen"`
	// History is the scrollback above the screen as text lines, oldest first.
	History []string `json:"history,omitempty"`
	// Master is the pty master; the receiver owns it. It travels separately (an
	// inherited file descriptor), never in JSON.
	Master *os.File `json:"-"`
}

// Export releases every live pane for adoption by another host: it stops the pane's
// reader and reply goroutines, renders its screen, duplicates its pty master and
// removes it from this host, without closing the terminal or signalling the process,
// so a later Close or Shutdown kills nothing. Dead panes stay (their exit is already
// reported). Export is all or nothing: when a master cannot be duplicated, nothing
// is exported. The caller owns the returned files.
func (h *Host) Export() ([]Handoff, error) {
	h.life.RLock() // no Shutdown while exporting
	defer h.life.RUnlock()
	h.mu.Lock()
	if h.shutdown {
		h.mu.Unlock()
		return nil, ErrShutdown
	}
	var live []*pane
	for _, p := range h.panes {
		if !p.dead() {
			live = append(live, p)
		}
	}
	slices.SortFunc(live, func(a, b *pane) int { return compareIDs(a.id, b.id) })
	files := make([]*os.File, 0, len(live))
	for _, p := range live {
		f, err := dupFile(p.ptmx, "pty-master-"+p.id)
		if err != nil {
			h.mu.Unlock()
			for _, f := range files {
				_ = f.Close()
			}
			return nil, fmt.Errorf("export pane %s: %w", p.id, err)
		}
		files = append(files, f)
	}
	for _, p := range live {
		delete(h.panes, p.id)
	}
	h.mu.Unlock()

	out := make([]Handoff, 0, len(live))
	for i, p := range live {
		hf := p.export()
		hf.Master = files[i]
		out = append(out, hf)
		h.log.Debug("exported", "pane", p.id, "pid", p.pid)
	}
	return out, nil
}

// export stops the pane's goroutines that touch the pty and renders its screen.
func (p *pane) export() Handoff {
	p.closing.Store(true) // no PaneExited from this host any more
	if p.watch != nil {
		p.watch.halt()
	} else {
		// cmd.Wait cannot be interrupted; the waiter lives on with the process (it
		// reaps it if this process is still its parent) but no longer holds Shutdown.
		p.waitRelease.Do(p.h.wg.Done)
	}
	_ = p.ptmx.SetReadDeadline(time.Now())
	<-p.readDone
	if p.replyW != nil {
		_ = p.replyW.CloseWithError(io.EOF)
	}
	<-p.replyDone
	p.mu.Lock()
	p.unpackScreens()
	hf := Handoff{ID: p.id, Name: p.name, PID: p.pid, Cols: p.emu.Width(), Rows: p.emu.Height(),
		Screen: p.redraw(), History: p.hist.tail(len(p.hist.lines))}
	p.mu.Unlock()
	p.closeOnce.Do(func() {
		_ = p.ptmx.Close() // the duplicate keeps the terminal open
		close(p.gone)
	})
	return hf
}

// dupFile duplicates f's descriptor (close-on-exec; exec.Cmd.ExtraFiles clears it).
func dupFile(f *os.File, name string) (*os.File, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var fd int
	var dupErr error
	if err := rc.Control(func(old uintptr) { fd, dupErr = unix.FcntlInt(old, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, err
	}
	if dupErr != nil {
		return nil, fmt.Errorf("dup: %w", dupErr)
	}
	return os.NewFile(uintptr(fd), name), nil
}

// adopt registers the handed-off panes and returns the highest numeric id among them.
// A pane that cannot be adopted has its process group hung up: nobody could reach it.
func (h *Host) adopt(list []Handoff) int64 {
	var top int64
	for _, hf := range list {
		if n, err := strconv.ParseInt(strings.TrimPrefix(hf.ID, "p"), 10, 64); err == nil && strings.HasPrefix(hf.ID, "p") {
			top = max(top, n)
		}
		p, err := adoptPane(h, hf)
		if err != nil {
			h.log.Warn("adopt pane failed; stopping its process", "pane", hf.ID, "pid", hf.PID, "err", err)
			if hf.PID > 0 && sessionOf(hf.PID) == hf.PID {
				_ = syscall.Kill(-hf.PID, syscall.SIGHUP)
			}
			continue
		}
		// Locked: an adopted pane's watcher may already be looking (Host.idle).
		h.mu.Lock()
		h.panes[p.id] = p
		h.mu.Unlock()
		h.log.Debug("adopted", "pane", p.id, "pid", p.pid)
	}
	return top
}

// adoptPane builds a pane around a handed-off master and starts its goroutines.
func adoptPane(h *Host, hf Handoff) (*pane, error) {
	if hf.Master == nil {
		return nil, errors.New("no pty master")
	}
	if hf.ID == "" || hf.PID <= 0 {
		_ = hf.Master.Close()
		return nil, fmt.Errorf("invalid hand-off id %q pid %d", hf.ID, hf.PID)
	}
	cols, rows := hf.Cols, hf.Rows
	if cols <= 0 || rows <= 0 {
		cols, rows = h.opts.Cols, h.opts.Rows
	}
	ptmx, err := pollable(hf.Master)
	if err != nil {
		return nil, err
	}
	p := newPane(h, hf.ID, hf.Name, hf.PID, ptmx, cols, rows)
	p.watch = watchExit(hf.PID)
	h.wg.Add(2)
	go p.replyPump()
	go p.replyWriter()
	p.mu.Lock()
	for _, line := range hf.History {
		p.hist.push(line)
	}
	p.feed([]byte(hf.Screen))
	p.mu.Unlock()
	h.wg.Add(2)
	go p.readLoop()
	go p.watchLoop()
	return p, nil
}

// watchLoop waits for an adopted process to end, lets its last output reach the
// emulator, and reports the exit with an unknown code.
func (p *pane) watchLoop() {
	defer p.h.wg.Done()
	if !p.watch.wait() {
		return // halted: exported again, or closed with the process still alive
	}
	select {
	case <-p.readDone:
	case <-time.After(drainTimeout):
	}
	close(p.waitDone)
	p.h.log.Debug("adopted process exited", "pane", p.id, "pid", p.pid)
	p.h.exited(p, nil)
}

// compareIDs orders pane ids as List does: shorter first, then by text.
func compareIDs(a, b string) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	return strings.Compare(a, b)
}

// pidfdDisabled forces the /proc fallback (tests).
var pidfdDisabled bool

// procPollInterval is how often the /proc fallback looks at an adopted process.
const procPollInterval = 200 * time.Millisecond

// exitWatch waits for the exit of a process that is not our child.
type exitWatch struct {
	pid   int
	pidfd *os.File // nil: poll /proc
	stop  chan struct{}
	once  sync.Once
}

// watchExit starts watching pid. A pid that is gone, or no longer leads its own
// session (reused by another process), counts as exited at once.
func watchExit(pid int) *exitWatch {
	w := &exitWatch{pid: pid, stop: make(chan struct{})}
	if !pidfdDisabled {
		if fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK); err == nil {
			w.pidfd = os.NewFile(uintptr(fd), "pidfd-"+strconv.Itoa(pid))
		}
	}
	return w
}

// halt makes a pending or later wait return false.
func (w *exitWatch) halt() {
	w.once.Do(func() {
		close(w.stop)
		if w.pidfd != nil {
			_ = w.pidfd.Close() // wakes a wait blocked on the pidfd
		}
	})
}

func (w *exitWatch) halted() bool {
	select {
	case <-w.stop:
		return true
	default:
		return false
	}
}

// wait blocks until the process has exited (true) or halt was called (false).
func (w *exitWatch) wait() bool {
	if w.pidfd != nil {
		if procGone(w.pid) { // ended (or the pid was reused) before the pidfd was opened
			return !w.halted()
		}
		rc, err := w.pidfd.SyscallConn()
		if err == nil {
			err = rc.Read(func(fd uintptr) bool {
				fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
				n, perr := unix.Poll(fds, 0)
				return perr == nil && n > 0 && fds[0].Revents&(unix.POLLIN|unix.POLLHUP|unix.POLLERR) != 0
			})
		}
		if w.halted() {
			return false
		}
		if err == nil {
			return true
		}
		// The pidfd failed in an unexpected way; fall back to polling /proc.
	}
	t := time.NewTicker(procPollInterval)
	defer t.Stop()
	for {
		if w.halted() {
			return false
		}
		if procGone(w.pid) {
			return true
		}
		select {
		case <-w.stop:
			return false
		case <-t.C:
		}
	}
}

// procGone reports whether pid has ended: no such process, a zombie, or a pid that
// no longer leads its own session (reused by an unrelated process).
func procGone(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return true
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 4 {
		return true
	}
	if f[0] == "Z" || f[0] == "X" || f[0] == "x" {
		return true
	}
	return f[3] != strconv.Itoa(pid)
}

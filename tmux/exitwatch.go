package tmux

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Prompt exit detection. tmux refreshes the #{pane_dead} subscription only once a
// second, so on its own an exit is seen ~0.5–1 s late. Each pane this host knows the pid
// of is therefore also watched through a pidfd, which the kernel makes readable the
// moment the process ends. The watcher's goroutine parks on the netpoller (the pidfd is
// non-blocking and wrapped in an *os.File), so idle watchers cost no thread and no
// CPU. When the pidfd fires, the watcher asks tmux for the pane's exit status through
// the control client (tmux, not orcr, is the process's parent and owns its status) and
// reports it through the same path as the subscription, which stays the fallback.

// deadFormat is what the subscription and the watchers ask tmux about a pane.
const deadFormat = "#{pane_dead} #{pane_dead_status} #{pane_dead_signal}"

// confirmWithin bounds how long a watcher keeps asking tmux after the process ended;
// past it the subscription reports the exit whenever tmux knows it.
const confirmWithin = time.Second

// firstRetry is the first pause between two questions to tmux; it doubles after each.
// Measured on tmux 3.3a: about half the exits are not reaped at the first question
// (the pane is dead, its status unknown), and after a nudge every one is by the second.
const firstRetry = 2 * time.Millisecond

// exitWatch watches one pane's process. Its goroutine is owned by the Host (h.wg) and
// stops when the watch is halted: the pane is closed or forgotten, or the host shuts
// down.
type exitWatch struct {
	pane   string
	pid    int
	file   *os.File // the pidfd; nil when the process had already ended
	ctx    context.Context
	cancel context.CancelFunc
	once   sync.Once
}

// halt stops the watch: it cancels its questions to tmux and closes the pidfd, which
// wakes the goroutine parked on it. Safe to call more than once, from any goroutine.
func (w *exitWatch) halt() {
	w.once.Do(func() {
		w.cancel()
		if w.file != nil {
			_ = w.file.Close()
		}
	})
}

// pidfdSupported reports whether this kernel has pollable, non-blocking pidfds
// (Linux 5.10 or newer). Without them exits are detected by the subscription alone.
func pidfdSupported() bool {
	fd, err := unix.PidfdOpen(os.Getpid(), unix.PIDFD_NONBLOCK)
	if err != nil {
		return false
	}
	_ = unix.Close(fd)
	return true
}

// watchExitLocked starts watching p's process unless it has been watched before, is
// dead or unknown, or pidfds are unavailable. Any failure leaves the subscription to
// report the exit.
func (h *Host) watchExitLocked(pane string, p *paneState) {
	if !h.pidfd || h.closed || p.watch != nil || p.dead || p.pid <= 0 {
		return
	}
	w := &exitWatch{pane: pane, pid: p.pid}
	fd, err := unix.PidfdOpen(p.pid, unix.PIDFD_NONBLOCK)
	switch {
	case err == nil:
		w.file = os.NewFile(uintptr(fd), "pidfd-"+strconv.Itoa(p.pid))
	case errors.Is(err, unix.ESRCH):
		// Ended (and reaped by tmux) already: ask tmux at once. (Were the pid reused
		// by another process in between, that one would be watched instead, and the
		// subscription would report this exit.)
	default:
		h.log.Debug("tmux: no pidfd for pane", "pane", pane, "pid", p.pid, "err", err)
		return
	}
	w.ctx, w.cancel = context.WithCancel(h.ctx)
	p.watch = w
	h.wg.Add(1)
	go h.runExitWatch(w)
}

// runExitWatch owns one watcher goroutine.
func (h *Host) runExitWatch(w *exitWatch) {
	defer h.wg.Done()
	defer w.halt()
	// A pidfd opened on a process that already ended is readable at once.
	if w.file != nil && !w.wait() {
		return
	}
	h.confirmExit(w)
}

// wait blocks until the process has ended (true), or the watch was halted or the
// pidfd failed (false).
func (w *exitWatch) wait() bool {
	rc, err := w.file.SyscallConn()
	if err != nil {
		return false
	}
	err = rc.Read(func(fd uintptr) bool {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, perr := unix.Poll(fds, 0)
		return perr == nil && n > 0 && fds[0].Revents&(unix.POLLIN|unix.POLLHUP|unix.POLLERR) != 0
	})
	return err == nil && w.ctx.Err() == nil
}

// confirmExit asks tmux for the pane's exit status until tmux knows it, nudging tmux
// to reap when the pane is dead but its status missing (tmux 3.3a sometimes misses the
// SIGCHLD of a program that exits at once), with a doubling pause, for up to
// confirmWithin.
func (h *Host) confirmExit(w *exitWatch) {
	start := time.Now()
	deadline := start.Add(confirmWithin)
	pause := firstRetry
	asks := 0
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		h.mu.Lock()
		p := h.panes[w.pane]
		current := p != nil && p.watch == w && !p.dead
		c := h.c
		h.mu.Unlock()
		if !current || c == nil || !c.alive() {
			return
		}
		lines, err := c.run(w.ctx, "display-message -p -t "+w.pane+" "+quote(deadFormat))
		if err != nil {
			return // the pane is gone, or the host is closing
		}
		asks++
		if len(lines) == 1 {
			dead, status, signal := parseDead(lines[0])
			h.mu.Lock()
			if p := h.panes[w.pane]; p != nil && p.watch == w {
				h.deadLocked(w.pane, p, dead, status, signal)
			}
			h.mu.Unlock()
			code := exitCode(status, signal)
			if dead == "1" && code != nil {
				h.log.Debug("tmux: pane exit confirmed", "pane", w.pane, "asks", asks, "took", time.Since(start))
				return
			}
			if dead == "1" {
				_, _ = c.send("run-shell -b true") // its reply is matched and dropped
			}
		}
		if time.Now().Add(pause).After(deadline) {
			h.log.Debug("tmux: pane exit not confirmed; left to the subscription", "pane", w.pane, "asks", asks)
			return
		}
		if timer == nil {
			timer = time.NewTimer(pause)
		} else {
			timer.Reset(pause)
		}
		select {
		case <-w.ctx.Done():
			return
		case <-timer.C:
		}
		pause *= 2
	}
}

// parseDead splits a deadFormat value "DEAD STATUS SIGNAL".
func parseDead(value string) (dead, status, signal string) {
	dead, rest, _ := strings.Cut(value, " ")
	status, signal, _ = strings.Cut(rest, " ")
	return strings.TrimSpace(dead), strings.TrimSpace(status), strings.TrimSpace(signal)
}

// stopWatch halts the pane's exit watch, if any: the pane is closed or forgotten.
func (p *paneState) stopWatch() {
	if p.watch != nil {
		p.watch.halt()
	}
}

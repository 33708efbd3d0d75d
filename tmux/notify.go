package tmux

import (
	"bytes"
	"context"
	"strings"
	"time"

	"orcr/core"
)

// notify handles one control-mode notification line. It runs on the reader goroutine:
// it only updates state and queues events, and never calls tmux.
func (h *Host) notify(line []byte) {
	switch {
	case bytes.HasPrefix(line, []byte("%output ")):
		// Only the pane id is needed; the body is never decoded.
		rest := line[len("%output "):]
		if i := bytes.IndexByte(rest, ' '); i > 0 {
			rest = rest[:i]
		}
		// Every pane of the session is reported: a fast program's output can arrive
		// before Launch has recorded its pane, and the placeholder never writes.
		pane := string(rest)
		h.events.output(pane)
		h.pacer.output(pane, len(line))
	case bytes.HasPrefix(line, []byte("%subscription-changed "+deadSub+" ")):
		h.onDeadChanged(string(line))
	case bytes.HasPrefix(line, []byte("%window-close ")), bytes.HasPrefix(line, []byte("%unlinked-window-close ")):
		f := bytes.Fields(line)
		if len(f) >= 2 {
			h.onWindowClosed(string(f[1]))
		}
	}
}

// onDeadChanged parses `%subscription-changed orcr-dead $S @W IDX %P … : DEAD STATUS SIGNAL`.
func (h *Host) onDeadChanged(line string) {
	head, value, ok := strings.Cut(line, " : ")
	if !ok {
		return
	}
	var pane string
	for _, f := range strings.Fields(head) {
		if strings.HasPrefix(f, "%") && f != "%subscription-changed" {
			pane = f
			break
		}
	}
	if pane == "" {
		return
	}
	dead, status, signal := parseDead(value)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.deadLocked(pane, h.paneLocked(pane), dead, status, signal)
}

// deadLocked takes one report of a pane's deadFormat, from the subscription or an exit
// watch, and emits PaneExited once the pane is dead with a known status; repeated
// reports are ignored.
func (h *Host) deadLocked(pane string, p *paneState, dead, status, signal string) {
	code := exitCode(status, signal)
	if dead == "1" && code == nil {
		// The pty closed but tmux has not reaped the process yet; the subscription
		// reports again once the status is known. tmux 3.3a sometimes misses the
		// SIGCHLD of a program that exits at once, so the reaper nudges it.
		h.unreaped[pane] = true
		h.signalReaper()
		return
	}
	delete(h.unreaped, pane)
	if dead != "1" {
		// Seen alive: from now on its exit is reported even if it was not launched here.
		p.mine = true
		return
	}
	if p.dead {
		return
	}
	p.dead, p.exitCode = true, code
	h.maybeExitedLocked(pane, p)
}

// signalReaper wakes the reaper without blocking.
func (h *Host) signalReaper() {
	select {
	case h.reap <- struct{}{}:
	default:
	}
}

// reaper owns the goroutine that makes tmux reap panes whose pty closed but whose exit
// status never arrived: any child of the server that exits makes tmux collect every
// zombie, so a `run-shell -b true` is enough. It only runs while such panes exist, at
// most once a second, so an idle host forks nothing.
func (h *Host) reaper() {
	defer h.wg.Done()
	for {
		select {
		case <-h.stop:
			return
		case <-h.reap:
		}
		for {
			select {
			case <-h.stop:
				return
			case <-time.After(300 * time.Millisecond):
			}
			h.mu.Lock()
			for pane := range h.unreaped {
				if p := h.panes[pane]; p == nil || p.dead {
					delete(h.unreaped, pane)
				}
			}
			n := len(h.unreaped)
			c := h.c
			h.mu.Unlock()
			if n == 0 || c == nil {
				break
			}
			if reqs, err := c.send("run-shell -b true"); err == nil {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, _ = reqs[0].wait(ctx)
				cancel()
			}
			select {
			case <-h.stop:
				return
			case <-time.After(time.Second):
			}
		}
	}
}

// onWindowClosed reports the pane of a window closed from outside as gone.
func (h *Host) onWindowClosed(window string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	pane, ok := h.windows[window]
	if !ok {
		return
	}
	delete(h.windows, window)
	p := h.panes[pane]
	delete(h.panes, pane)
	if p != nil {
		p.stopWatch()
	}
	if p != nil && p.mine {
		h.events.push(core.HostEvent{Pane: pane, Kind: core.PaneGone, At: time.Now()})
	}
}

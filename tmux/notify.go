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
	case bytes.Equal(line, []byte("%sessions-changed")):
		h.onSessionsChanged()
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

// onWindowClosed notes that a window left a session. That is not proof its pane is
// gone: tmux says %window-close also when a session grouped with orcr's ends (an
// attach's session, on detach or when its client dies) and the window merely left that
// session. The confirmer asks tmux which panes orcr's session still has (notify runs on
// the reader and may not call tmux) and reports gone only those that are.
func (h *Host) onWindowClosed(window string) {
	h.mu.Lock()
	_, ok := h.windows[window]
	if ok {
		if h.closing == nil {
			h.closing = map[string]bool{}
		}
		h.closing[window] = true
	}
	h.mu.Unlock()
	if ok {
		select {
		case h.confirm <- struct{}{}:
		default:
		}
	}
}

// onSessionsChanged has the confirmer look for attach sessions left without a client.
func (h *Host) onSessionsChanged() {
	h.mu.Lock()
	h.sweep = true
	h.mu.Unlock()
	select {
	case h.confirm <- struct{}{}:
	default:
	}
}

// sweepAttachSessions ends the attach sessions (AttachCommand) no client is attached
// to: their client-detached hook ends them when their client goes, but an attach whose
// client never got a terminal ("open terminal failed") never had one. An attach's
// commands run in one go on the server, so none is seen between its new-session and
// its attach-session.
func (h *Host) sweepAttachSessions(ctx context.Context) {
	out, err := h.call(ctx, `list-sessions -F "#{session_attached} #{session_name}"`)
	if err != nil {
		h.log.Debug("tmux: list sessions", "err", err)
		return
	}
	for _, l := range out {
		n, name, ok := strings.Cut(l, " ")
		if !ok || n != "0" || !strings.HasPrefix(name, attachPrefix) {
			continue
		}
		if _, err := h.call(ctx, "kill-session -t "+quote("="+name)); err != nil {
			h.log.Debug("tmux: end an attach session without a client", "session", name, "err", err)
		}
	}
}

// confirmer owns the goroutine that checks reported window closes against tmux: one
// list of orcr's panes answers every close reported meanwhile (34 windows leaving at
// once cost one command).
func (h *Host) confirmer() {
	defer h.wg.Done()
	for {
		select {
		case <-h.stop:
			return
		case <-h.confirm:
		}
		h.mu.Lock()
		windows, sweep := h.closing, h.sweep
		h.closing, h.sweep = nil, false
		h.mu.Unlock()
		if sweep {
			ctx, cancel := context.WithTimeout(h.ctx, 10*time.Second)
			h.sweepAttachSessions(ctx)
			cancel()
		}
		if len(windows) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(h.ctx, 10*time.Second)
		live, err := h.livePanes(ctx)
		cancel()
		if err != nil {
			// The server is gone (watch then reports every pane gone) or did not answer:
			// asked again in a second.
			h.log.Debug("tmux: confirm window closes", "err", err)
			h.mu.Lock()
			for w := range windows {
				if h.closing == nil {
					h.closing = map[string]bool{}
				}
				h.closing[w] = true
			}
			h.mu.Unlock()
			select {
			case <-h.stop:
				return
			case <-time.After(time.Second):
			}
			select {
			case h.confirm <- struct{}{}:
			default:
			}
			continue
		}
		h.mu.Lock()
		for window := range windows {
			pane, ok := h.windows[window]
			if !ok || live[pane] {
				continue
			}
			h.goneLocked(window, pane)
		}
		h.mu.Unlock()
	}
}

// livePanes lists the panes orcr's session holds now.
func (h *Host) livePanes(ctx context.Context) (map[string]bool, error) {
	out, err := h.call(ctx, "list-panes -s -t ="+session+` -F "#{pane_id}"`)
	if err != nil {
		return nil, err
	}
	live := make(map[string]bool, len(out))
	for _, l := range out {
		live[strings.TrimSpace(l)] = true
	}
	return live, nil
}

// goneLocked forgets pane (of window) and reports it gone.
func (h *Host) goneLocked(window, pane string) {
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

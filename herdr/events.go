package herdr

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"time"

	"orcr/core"
)

// subscriptions are the herdr events the host follows.
var subscriptions = []map[string]any{
	{"type": "pane.exited"},
	{"type": "pane.closed"},
	{"type": "workspace.closed"},
}

// watchEvents keeps one events.subscribe connection open, reconnecting with backoff
// when herdr goes away, and resyncs with pane.list after every (re)connect, since
// events that fell between connections are lost. herdr replays its recent ring to
// each new subscriber, so events are de-duplicated against what the host knows.
func (h *Host) watchEvents() {
	defer h.wg.Done()
	backoff := 100 * time.Millisecond
	reconnect := false
	for h.ctx.Err() == nil {
		sub, err := h.c.subscribe(h.ctx, subscriptions)
		if err != nil {
			h.log.Debug("herdr subscribe failed", "err", err)
			select {
			case <-h.ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 2*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		stop := context.AfterFunc(h.ctx, sub.close)
		h.resync(reconnect)
		if !reconnect {
			close(h.subscribed)
		}
		reconnect = true
		for {
			ev, err := sub.next()
			if err != nil {
				if !errors.Is(err, ErrBadResponse) {
					break
				}
				h.log.Warn("herdr event skipped", "err", err)
				continue
			}
			h.handle(ev)
		}
		stop()
		sub.close()
	}
}

// handle turns one pushed herdr event into host events.
func (h *Host) handle(ev pushed) {
	var d struct {
		PaneID      string `json:"pane_id"`
		WorkspaceID string `json:"workspace_id"`
	}
	if err := json.Unmarshal(ev.Data, &d); err != nil {
		return
	}
	switch ev.Event {
	case "pane_exited":
		// The wrapper itself ended (it normally holds the pane until Close):
		// killed from outside. The program's exit, if recorded, was reported already.
		h.vanished(d.PaneID, true)
	case "pane_closed":
		h.vanished(d.PaneID, false)
	case "workspace_closed":
		h.mu.Lock()
		mine := d.WorkspaceID == h.wsID
		var ids []string
		if mine {
			h.wsID = ""
			for id := range h.panes {
				ids = append(ids, id)
			}
		}
		h.mu.Unlock()
		for _, id := range ids {
			h.vanished(id, false)
		}
	}
}

// vanished reports a tracked pane that herdr no longer has: PaneExited when its
// process ended (with the code if the wrapper recorded one and it was not yet
// reported), else PaneGone. Unknown or already-gone panes (replays) are ignored.
func (h *Host) vanished(pane string, exited bool) {
	h.reportMu.Lock()
	defer h.reportMu.Unlock()
	h.mu.Lock()
	t := h.panes[pane]
	if t == nil || t.gone {
		h.mu.Unlock()
		return
	}
	t.gone = true
	wasDead := t.dead
	t.dead = true
	pid := t.pid
	delete(h.panes, pane)
	h.mu.Unlock()
	if pid > 0 {
		defer os.Remove(h.exitFile(pane, pid))
	}
	if wasDead {
		h.send(core.HostEvent{Pane: pane, Kind: core.PaneGone})
		return
	}
	if code, ok := h.exitCode(pane, pid); ok {
		h.send(core.HostEvent{Pane: pane, Kind: core.PaneExited, ExitCode: &code})
		return
	}
	if exited {
		h.send(core.HostEvent{Pane: pane, Kind: core.PaneExited})
		return
	}
	h.send(core.HostEvent{Pane: pane, Kind: core.PaneGone})
}

// resync compares the tracked panes with herdr's list after a (re)connect. After a
// reconnect herdr may have restarted and handed a tracked pane's id to a new pane,
// so live ids are also checked against the pid the host knows.
func (h *Host) resync(reconnect bool) {
	ctx, cancel := context.WithTimeout(h.ctx, callTimeout)
	defer cancel()
	h.mu.Lock()
	ws := h.wsID
	h.mu.Unlock()
	if ws == "" {
		return
	}
	var res struct {
		Panes []struct {
			PaneID string `json:"pane_id"`
		} `json:"panes"`
	}
	err := h.c.call(ctx, "pane.list", map[string]any{"workspace_id": ws}, &res)
	if err != nil && !errors.Is(err, &Error{Code: "workspace_not_found"}) {
		return
	}
	live := map[string]bool{}
	for _, p := range res.Panes {
		live[p.PaneID] = true
	}
	h.mu.Lock()
	var missing []string
	pids := map[string]int{}
	for id, t := range h.panes {
		if !live[id] {
			missing = append(missing, id)
		} else if reconnect {
			pids[id] = t.pid
		}
	}
	if err != nil {
		h.wsID = ""
	}
	h.mu.Unlock()
	for id, pid := range pids {
		if now, err := h.pid(ctx, id); (err == nil && now != pid) || errors.Is(err, ErrPaneNotFound) {
			missing = append(missing, id)
		}
	}
	for _, id := range missing {
		h.vanished(id, true)
	}
}

// watchExits polls the wrapper's exit files: a program's exit shows there (with
// its code) while its pane stays open for the last screen.
func (h *Host) watchExits() {
	defer h.wg.Done()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-tick.C:
		}
		ents, err := os.ReadDir(h.opts.StateDir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			pane, pid, ok := parseExitName(e.Name())
			if !ok {
				continue
			}
			h.reportExit(pane, pid)
		}
	}
}

// reportExit reports the recorded exit of pane's program once, unless the pane was
// reported gone (or exited) first. The code is read before the pane is marked dead,
// under reportMu, so a pane closed meanwhile (vanished removes the file) is not
// reported as an exit without its code.
func (h *Host) reportExit(pane string, pid int) {
	h.reportMu.Lock()
	defer h.reportMu.Unlock()
	h.mu.Lock()
	t := h.panes[pane]
	fresh := t != nil && !t.dead && !t.gone && t.pid == pid
	h.mu.Unlock()
	if !fresh {
		return
	}
	code, ok := h.exitCode(pane, pid)
	if !ok {
		if _, err := os.Stat(h.exitFile(pane, pid)); err != nil {
			return // removed meanwhile: the pane is gone, vanished reports it
		}
	}
	h.mu.Lock()
	t.dead = true
	h.mu.Unlock()
	if !ok { // a file that says no number (the wrapper writes it whole, with mv)
		h.send(core.HostEvent{Pane: pane, Kind: core.PaneExited})
		return
	}
	h.send(core.HostEvent{Pane: pane, Kind: core.PaneExited, ExitCode: &code})
}

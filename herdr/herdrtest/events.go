package herdrtest

import (
	"context"
	"encoding/json"
	"net"
	"slices"
	"time"
)

// genericEvents are the subscribable plain event types (reference §2.8).
var genericEvents = []string{
	"workspace.created", "workspace.updated", "workspace.metadata_updated", "workspace.renamed",
	"workspace.moved", "workspace.reordered", "workspace.closed", "workspace.focused",
	"worktree.created", "worktree.opened", "worktree.removed",
	"tab.created", "tab.closed", "tab.focused", "tab.renamed", "tab.moved",
	"pane.created", "pane.updated", "pane.closed", "pane.focused", "pane.moved", "pane.exited",
	"pane.agent_detected", "layout.updated",
}

// subEntry is one element of events.subscribe's subscriptions list.
type subEntry struct {
	Type        string     `json:"type"`
	PaneID      string     `json:"pane_id"`
	AgentStatus string     `json:"agent_status"`
	Source      string     `json:"source"`
	Lines       *int       `json:"lines"`
	Match       *matchSpec `json:"match"`
	StripANSI   *bool      `json:"strip_ansi"`

	cursor   uint64
	last     string // agent status last seen
	primed   bool
	matched  bool
	matchFn  func(string) bool
	finished bool
}

// subscribe validates the entries, acks, then pushes events until either side closes.
// Every generic entry starts at the beginning of the ring, so buffered events are
// replayed right after the ack, at most one per entry per poll (reference §2.8).
func (s *Server) subscribe(c net.Conn, req request) {
	var p struct {
		Subscriptions []*subEntry `json:"subscriptions"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil {
		s.reply(c, "", nil, errf("invalid_request", "invalid request: %v", err))
		return
	}
	s.mu.Lock()
	for _, e := range p.Subscriptions {
		switch {
		case slices.Contains(genericEvents, e.Type):
		case e.Type == "pane.agent_status_changed" || e.Type == "pane.scroll_changed" || e.Type == "pane.output_matched":
			if e.PaneID == "" {
				s.mu.Unlock()
				s.reply(c, "", nil, errf("invalid_request", "invalid request: missing field `pane_id`"))
				return
			}
			if _, err := s.findPane(e.PaneID); err != nil {
				s.mu.Unlock()
				s.reply(c, req.ID, nil, err)
				return
			}
			if e.Type == "pane.output_matched" {
				if e.Match == nil || e.Source == "" {
					s.mu.Unlock()
					s.reply(c, "", nil, errf("invalid_request", "invalid request: missing field `match`"))
					return
				}
				f, err := e.Match.compile()
				if err != nil {
					s.mu.Unlock()
					s.reply(c, req.ID, nil, err)
					return
				}
				e.matchFn = f
			}
		default:
			s.mu.Unlock()
			s.reply(c, "", nil, errf("invalid_request", "invalid request: unknown variant `%s`", e.Type))
			return
		}
	}
	s.mu.Unlock()
	s.reply(c, req.ID, map[string]any{"type": "subscription_started"}, nil)

	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	go watchPeerClose(c, cancel)
	tick := time.NewTicker(s.opts.Poll)
	defer tick.Stop()
	for {
		for _, line := range s.pollSubscriptions(p.Subscriptions) {
			_ = c.SetWriteDeadline(time.Now().Add(writeTimeout))
			if _, err := c.Write(line); err != nil {
				return // a subscriber that stops reading is disconnected
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// pollSubscriptions returns the lines due this poll: at most one per entry.
func (s *Server) pollSubscriptions(entries []*subEntry) [][]byte {
	var out [][]byte
	push := func(name string, data any) {
		b, err := json.Marshal(map[string]any{"event": name, "data": data})
		if err == nil {
			out = append(out, append(b, '\n'))
		}
	}
	s.mu.Lock()
	var reads []*subEntry
	for _, e := range entries {
		switch e.Type {
		case "pane.agent_status_changed":
			p, ok := s.panes[e.PaneID]
			if !ok {
				continue
			}
			st := "unknown"
			if p.agent != nil && p.agent.kind != "" {
				st = p.agent.publicStatus()
			}
			fire := false
			if !e.primed {
				e.primed = true
				fire = e.AgentStatus != "" && st == e.AgentStatus
			} else if st != e.last {
				fire = e.AgentStatus == "" || st == e.AgentStatus
			}
			e.last = st
			if fire {
				d := map[string]any{"pane_id": p.id, "workspace_id": p.ws.id, "agent_status": st}
				if p.agent != nil && p.agent.kind != "" {
					d["agent"] = p.agent.kind
				}
				push("pane.agent_status_changed", d)
			}
		case "pane.output_matched":
			reads = append(reads, e)
		case "pane.scroll_changed":
			// Headless panes are never scrolled by a user; nothing to report.
		default:
			// Walk forward from the cursor, stepping over other kinds, and send the
			// first event of this entry's kind.
			for _, ev := range s.events {
				if ev.seq <= e.cursor {
					continue
				}
				e.cursor = ev.seq
				if ev.kind == e.Type {
					push(ev.name, ev.data)
					break
				}
			}
		}
	}
	s.mu.Unlock()
	for _, e := range reads {
		s.mu.Lock()
		p, ok := s.panes[e.PaneID]
		s.mu.Unlock()
		if !ok {
			continue
		}
		format := "text"
		if e.StripANSI != nil && !*e.StripANSI {
			format = "ansi"
		}
		src := e.Source
		if src == "recent" {
			src = "recent_unwrapped"
		}
		read, err := s.readPane(p, src, e.Lines, format)
		if err != nil {
			continue
		}
		line, hit := matchLine(read.Text, e.matchFn)
		if hit && !e.matched {
			read.Source = e.Source
			push("pane.output_matched", map[string]any{"pane_id": p.id, "matched_line": line, "read": read})
		}
		e.matched = hit // edge-triggered: re-arms once the match disappears
	}
	return out
}

type eventsWaitParams struct {
	MatchEvent struct {
		Event       string `json:"event"`
		PaneID      string `json:"pane_id"`
		AgentStatus string `json:"agent_status"`
	} `json:"match_event"`
	TimeoutMS *int64 `json:"timeout_ms"`
}

func (s *Server) eventsWait(ctx context.Context, raw json.RawMessage) (any, error) {
	p := decode[eventsWaitParams](raw)
	m := p.MatchEvent
	if m.Event != "pane_agent_status_changed" {
		return nil, errf("unsupported_event_wait_match", "only pane_agent_status_changed can be waited for")
	}
	return s.poll(ctx, p.TimeoutMS, func() (any, *apiError, bool) {
		s.mu.Lock()
		defer s.mu.Unlock()
		pn, err := s.findPane(m.PaneID)
		if err != nil {
			return nil, err, true
		}
		st := "unknown"
		if pn.agent != nil && pn.agent.kind != "" {
			st = pn.agent.publicStatus()
		}
		if st != m.AgentStatus {
			return nil, nil, false
		}
		data := map[string]any{"type": "pane_agent_status_changed", "pane_id": pn.id,
			"workspace_id": pn.ws.id, "agent_status": st}
		return map[string]any{"type": "wait_matched", "event": map[string]any{
			"event": "pane_agent_status_changed", "data": data}}, nil, true
	})
}

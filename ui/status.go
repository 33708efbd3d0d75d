package ui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// statusModel is the bottom bar: mode and host, agent counts, connection, the latest
// notice or error, and the key hints.
type statusModel struct {
	c      *common
	w      int
	notice string
	isErr  bool
	at     time.Time
}

// minNotice is the least room the bar keeps for counts and notices beside the hints.
const minNotice = 24

// noticeFor is how long a notice stays.
const noticeFor = 6 * time.Second

func newStatus(c *common) *statusModel { return &statusModel{c: c} }

// SetSize sets the bar's width (its height is always one line).
func (s *statusModel) SetSize(w, _ int) { s.w = w }

func (s *statusModel) notify(now time.Time, text string, isErr bool) {
	s.notice, s.isErr, s.at = oneLine(text), isErr, now
	if isErr {
		s.c.log.Warn("dashboard", "error", text)
	}
}

// expire clears a notice that has been shown long enough.
func (s *statusModel) expire(now time.Time) {
	if s.notice != "" && now.Sub(s.at) > noticeFor {
		s.notice = ""
	}
}

// statusInfo is what the root tells the bar each frame.
type statusInfo struct {
	mode, host string
	agents     int
	blocked    int
	working    int
	connected  bool
	conn       connState
	loaded     bool
	// killing is the progress of background kills (Model.killProgress), "" when none.
	killing string
	// web is the web gateway's address ("" when off) and its paired browsers.
	web     string
	devices int
}

func (m *Model) statusInfo() statusInfo {
	r := m.idx.root.roll
	return statusInfo{mode: m.opts.Mode, host: m.info.Host, agents: m.idx.len(),
		blocked: r.groups[gBlocked], working: r.groups[gWorking], connected: m.subOK, conn: m.conn, loaded: m.loaded,
		killing: m.killProgress(), web: m.web.Listen, devices: len(m.web.Devices)}
}

// View draws the bar in exactly s.w cells.
func (s statusModel) View(in statusInfo) string {
	st := &s.c.styles
	bar := st.StatusBar
	left := st.StatusMode.Render(" " + in.mode + " ")
	if in.conn == connLost {
		// The badge says what holds now, not the mode the dashboard started in.
		left = bar.Inherit(st.Error).Bold(true).Render(" offline ")
	}
	var parts []string
	if in.host != "" {
		parts = append(parts, "host "+in.host)
	}
	parts = append(parts, plural(in.agents, "agent", "agents"))
	if in.web != "" {
		parts = append(parts, fmt.Sprintf("web %s (%s)", in.web, plural(in.devices, "browser", "browsers")))
	}
	if in.working > 0 {
		parts = append(parts, fmt.Sprintf("%d working", in.working))
	}
	mid := bar.Render(" " + strings.Join(parts, " · ") + " ")
	if in.blocked > 0 {
		mid += bar.Inherit(st.Blocked).Render(fmt.Sprintf("▲ %d blocked ", in.blocked))
	}
	switch {
	case in.conn == connLost:
		mid += bar.Inherit(st.Error).Render("● reconnecting… ")
	case !in.connected:
		mid += bar.Inherit(st.Error).Render("● connecting ")
	}
	if in.killing != "" {
		mid += bar.Inherit(st.Danger).Render(" " + in.killing + "… ")
	}
	if s.notice != "" {
		ns := bar
		if s.isErr {
			ns = bar.Inherit(st.Error)
		}
		mid += ns.Render(" " + s.notice + " ")
	}
	hints := st.StatusKey.Render(s.c.keys.Global.Help.Label()) + bar.Render(" help ") +
		st.StatusKey.Render(s.c.keys.Global.Quit.Keys[0]) + bar.Render(" quit ")
	lw := ansi.StringWidth(left) + ansi.StringWidth(mid)
	hw := ansi.StringWidth(hints)
	// The hints stay while the bar has room for them and a few cells of its own: a
	// long notice is cut to fit beside them rather than pushing them off.
	if ansi.StringWidth(left)+hw+minNotice > s.w {
		hints, hw = "", 0
	}
	line := left + mid
	if lw > s.w-hw {
		room := s.w - hw
		if hw > 0 {
			room-- // a space between the cut notice and the hints
		}
		line = ansi.Truncate(line, room, "…")
		lw = ansi.StringWidth(line)
	}
	return line + bar.Render(strings.Repeat(" ", max(0, s.w-lw-hw))) + hints
}

package ui

import (
	"strconv"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"orcr/core/wire"
)

// The server connection as the operator sees it. A dashboard connected to `orcr serve`
// outlives the server: when the server dies the event stream ends, the bar's badge
// turns to "offline", the tree dims (it shows the last thing the server said), one
// short notice says it is reconnecting, and the dashboard keeps asking the socket
// until a server answers again — then it reads the server's info (a restarted server
// has a new pid), the agents and the panels afresh. The raw dial error goes to the log;
// the bar has room for one sentence and the key hints.

// connState is where the dashboard stands with its server.
type connState int

const (
	connConnecting connState = iota // never connected yet
	connOnline                      // the event stream is up
	connLost                        // was up, and the server went away
)

// reconnectEvery is how often a lost dashboard asks the socket again.
const reconnectEvery = 2 * time.Second

func reconnectTick() tea.Cmd {
	return tea.Tick(reconnectEvery, func(time.Time) tea.Msg { return resubscribeMsg{} })
}

// connFailed records a failed or ended connection: the first loss of a connected
// dashboard says so once; while it stays lost, retries are quiet (the badge says it).
// Before the first connection a failure is shown in short.
func (m *Model) connFailed(what string, err error) tea.Cmd {
	m.subOK = false
	if err != nil {
		m.c.log.Warn("dashboard: server connection", "step", what, "error", err)
	}
	switch m.conn {
	case connOnline:
		m.conn, m.lostAt = connLost, m.c.now
		m.status.notify(m.c.now, "the orcr server stopped answering", true)
	case connConnecting:
		m.status.notify(m.c.now, what+": "+shortErr(err), true)
	}
	return reconnectTick()
}

// connUp marks the event stream up; after a loss it says so and reads everything
// the dashboard may have missed.
func (m *Model) connUp() tea.Cmd {
	was := m.conn
	m.subOK, m.conn = true, connOnline
	if was != connLost {
		return nil
	}
	m.status.notify(m.c.now, "reconnected to the orcr server (pid "+strconv.Itoa(m.info.PID)+")", false)
	return tea.Batch(listCmd(m.ctx, m.svc), queueCmd(m.ctx, m.svc), usageCmd(m.ctx, m.svc),
		schedulesCmd(m.ctx, m.svc), listenersCmd(m.ctx, m.svc))
}

// shortErr is an error's message without the socket path and the dial detail, which
// say nothing to the operator and push the key hints off the bar.
func shortErr(err error) string {
	if err == nil {
		return "ended"
	}
	if wire.CodeOf(err) == wire.CodeUnavailable {
		return "no orcr server answers; retrying"
	}
	return err.Error()
}

// dim draws a pane's frame in the muted colour, its own colours dropped, so a stale
// pane reads as stale at a glance.
func (m Model) dim(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = m.c.styles.Muted.Render(ansi.Strip(l))
	}
	return strings.Join(lines, "\n")
}

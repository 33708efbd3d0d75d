package ui

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/golden"

	"orcr/core/wire"
)

// lastLine is the status bar's text.
func lastLine(t *testing.T, m *Model) string {
	t.Helper()
	lines := strings.Split(plain(screen(t, m)), "\n")
	return lines[len(lines)-1]
}

// TestServerLostAndBack: a connected dashboard whose server dies says "offline" in its
// badge (not "connected"), keeps its key hints on an 80-column bar, dims the tree, and
// once a server answers again reads its info, the agents and the panels afresh.
func TestServerLostAndBack(t *testing.T) {
	m := newTestModel(t, 80, 24, Options{Mode: "connected"})
	m.info.PID, m.lastSeq = 100, 50
	bar := lastLine(t, m)
	if !strings.HasPrefix(bar, " connected ") || strings.Contains(bar, "offline") {
		t.Fatalf("connected bar: %q", bar)
	}
	treeBefore := strings.Split(screen(t, m), "\n")[2]

	// The stream ends: the server died.
	_, cmd := m.Update(subEndedMsg{})
	if cmd == nil || m.conn != connLost {
		t.Fatalf("after the stream ended: conn %v, cmd %v", m.conn, cmd)
	}
	bar = lastLine(t, m)
	if !strings.HasPrefix(bar, " offline ") || strings.Contains(bar, "connected") || !strings.Contains(bar, "? help") {
		t.Fatalf("offline bar at 80 columns: %q", bar)
	}
	if treeDim := strings.Split(screen(t, m), "\n")[2]; treeDim == treeBefore || plain(treeDim) != plain(treeBefore) {
		t.Fatalf("tree row not dimmed:\n%q\n%q", treeBefore, treeDim)
	}
	// Retries fail with the raw dial error: the bar keeps its hints and no socket path.
	dial := &wire.Error{Code: wire.CodeUnavailable, Message: "orcr server not running (/tmp/some/very/long/home/orcr.sock: dial unix /tmp/some/very/long/home/orcr.sock: connect: no such file or directory) — start it with `orcr serve`"}
	_, cmd = m.Update(resubscribeMsg{})
	if cmd == nil {
		t.Fatal("no retry after the loss")
	}
	m.Update(infoMsg{err: dial})
	m.Update(listMsg{err: dial})
	bar = lastLine(t, m)
	if strings.Contains(bar, "orcr.sock") || !strings.Contains(bar, "? help") || !strings.Contains(bar, "q quit") {
		t.Fatalf("bar after failed retries: %q", bar)
	}
	if m.conn != connLost {
		t.Fatalf("conn after failed retries = %v", m.conn)
	}

	// A new server answers.
	m.Update(infoMsg{info: wire.InfoResult{Version: 1, Host: "tmux", PID: 200, LastSeq: 3}})
	if m.lastSeq != 3 {
		t.Fatalf("lastSeq after a fresh server = %d, want its 3", m.lastSeq)
	}
	_, cmd = m.Update(subscribedMsg{ch: make(chan wire.Event)})
	if m.conn != connOnline || !m.subOK || cmd == nil {
		t.Fatalf("after resubscribing: conn %v subOK %v cmd %v", m.conn, m.subOK, cmd)
	}
	bar = lastLine(t, m)
	if !strings.HasPrefix(bar, " connected ") || !strings.Contains(bar, "reconn") || strings.Contains(bar, "offline") {
		t.Fatalf("bar after reconnecting: %q", bar)
	}
	if got := strings.Split(screen(t, m), "\n")[2]; got != treeBefore {
		t.Fatalf("tree still dimmed after reconnecting")
	}
}

// TestConnectErrorShort: before the first connection a failed call is named in short.
func TestConnectErrorShort(t *testing.T) {
	m, err := New(t.Context(), nil, Options{Mode: "connected"})
	if err != nil {
		t.Fatal(err)
	}
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	m.Update(subscribedMsg{err: &wire.Error{Code: wire.CodeUnavailable, Message: strings.Repeat("x", 300)}})
	bar := lastLine(t, m)
	if strings.Contains(bar, "xxx") || !strings.Contains(bar, "? help") || !strings.Contains(bar, "connecting") {
		t.Fatalf("bar: %q", bar)
	}
	m.Update(subscribedMsg{err: errors.New("boom")})
	if m.conn != connConnecting {
		t.Fatalf("conn = %v", m.conn)
	}
}

func TestGoldenOffline(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {200, 50}} {
		t.Run(fmt.Sprintf("%dx%d", sz[0], sz[1]), func(t *testing.T) {
			m := newTestModel(t, sz[0], sz[1], Options{Mode: "connected"})
			m.Update(subEndedMsg{})
			golden.RequireEqual(t, screen(t, m))
		})
	}
}

package ui

import (
	"fmt"
	"path/filepath"
)

// farewellText is what the dashboard prints on the terminal after a plain quit while
// agents still run, so nobody wonders whether quitting stopped them or how to get
// back to them. Empty when nothing runs.
func (m *Model) farewellText() string {
	live := 0
	for _, n := range m.idx.byID {
		if a := n.agent; a != nil && a.State.Live() {
			live++
		}
	}
	if live == 0 {
		return ""
	}
	what, them, panes := plural(live, "agent keeps", "agents keep"), "them", "their panes"
	if live == 1 {
		them, panes = "it", "its pane"
	}
	if m.opts.Mode == "connected" {
		return fmt.Sprintf("orcr: %s running under the orcr server (pid %d); `orcr` reconnects, `orcr agent ls` lists %s",
			what, m.info.PID, them)
	}
	// In-process: the server ends with the dashboard; the panes live on in the host.
	back := "`orcr` (or `orcr serve`) watches " + them + " again"
	switch m.info.Host {
	case "tmux":
		// The tmux host's server socket is $ORCR_HOME/tmux.sock (see the host wiring).
		sock := filepath.Join(m.info.Home, "tmux.sock")
		return fmt.Sprintf("orcr: %s running in tmux; %s, `tmux -S %s attach` shows %s", what, back, sock, panes)
	case "herdr":
		return fmt.Sprintf("orcr: %s running in the herdr session orcr; %s", what, back)
	}
	return fmt.Sprintf("orcr: %s running on the %s host; %s", what, m.info.Host, back)
}

package e2e

import (
	"strings"
	"testing"
	"time"

	"orcr/testutil/serve"
)

// TestDashboardReconnects kills the server behind a connected dashboard (SIGKILL, as a
// crash would) and starts another: the badge turns to "offline" with the key hints
// still on the bar, and once the new server answers the dashboard is connected again
// on its own and follows the new server's events.
func TestDashboardReconnects(t *testing.T) {
	r := newRig(t)
	srv := serve.Start(t, serve.Options{Bin: r.bin, Env: r.env, Grace: 15 * time.Second})
	r.mustOrcr("agent", "run", "remote/before", "--", r.fake, "--name", "before")

	r.start()
	r.waitText(20*time.Second, "connected", "agents 1")

	srv.Kill9()
	s := r.waitScreen("the offline badge", 20*time.Second, func(s string) bool {
		return strings.Contains(lastRow(s), "offline")
	})
	if bar := lastRow(s); strings.Contains(bar, "connected") || !strings.Contains(bar, "help") || strings.Contains(bar, "orcr.sock") {
		t.Fatalf("bar with the server gone: %q", bar)
	}
	if r.paneDead() {
		t.Fatal("the dashboard exited with its server")
	}

	serve.Start(t, serve.Options{Bin: r.bin, Env: r.env, Grace: 15 * time.Second})
	r.waitScreen("the dashboard to reconnect", 30*time.Second, func(s string) bool {
		bar := lastRow(s)
		return strings.HasPrefix(strings.TrimSpace(bar), "connected") && !strings.Contains(bar, "offline")
	})
	// Events flow from the new server: a spawn by the CLI shows up without a key.
	r.mustOrcr("agent", "run", "remote/after", "--", r.fake, "--name", "after")
	r.waitScreen("the new server's agent", 20*time.Second, func(s string) bool { return treeLine(s, "after") != "" })
}

// lastRow is the screen's last non-empty row: the status bar.
func lastRow(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.TrimSpace(lines[i]) != "" {
			return lines[i]
		}
	}
	return ""
}

package e2e

import (
	"strings"
	"testing"
	"time"

	"orcr/testutil/serve"
)

// TestDashboardConnected opens the dashboard while `orcr serve` runs: it connects
// instead of hosting, says so, shows the server's agents, and quits without asking
// (the agents belong to the server, which keeps them).
func TestDashboardConnected(t *testing.T) {
	r := newRig(t)
	serve.Start(t, serve.Options{Bin: r.bin, Env: r.env, Grace: 15 * time.Second})
	r.mustOrcr("agent", "run", "remote/worker", "--", r.fake, "--name", "worker")

	r.start()
	s := r.waitText(20*time.Second, "connected", "agents 1")
	if strings.Contains(s, "in-process") || treeLine(s, "worker") == "" {
		t.Fatalf("connected dashboard:\n%s", s)
	}
	// A spawn by the CLI while connected shows up through the event stream.
	r.mustOrcr("agent", "run", "remote/second", "--", r.fake, "--name", "second")
	r.waitScreen("the new agent", 15*time.Second, func(s string) bool {
		return strings.Contains(s, "agents 2") && treeLine(s, "second") != ""
	})
	r.keys("q")
	r.waitScreen("the dashboard to exit without asking", 15*time.Second, func(string) bool { return r.paneDead() })
	if out := r.mustOrcr("agent", "ls"); !strings.Contains(out, "remote/worker") || strings.Contains(out, "killed") {
		t.Fatalf("agents after the dashboard quit:\n%s", out)
	}
}

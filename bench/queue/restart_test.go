package queue

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"orcr/core/wire"
	"orcr/testutil/wait"
)

// TestQueueOrderSurvivesKill9: agents queued behind the memory guard keep their
// records, states and admission order through a kill -9 and a restart.
func TestQueueOrderSurvivesKill9(t *testing.T) {
	s := newServer(t, "[limits]\nglobal = 2\nmin_free_mb = 100000000\n")
	s.start()
	ctx := context.Background()
	cl := s.dial(ctx)
	for i := range 30 {
		if _, err := cl.Run(ctx, wire.RunParams{Path: fmt.Sprintf("keep/j%02d", i), Priority: (i * 7) % 4, Argv: []string{"true"}}); err != nil {
			t.Fatal(err)
		}
	}
	before, err := cl.Queue(ctx)
	cl.Close()
	if err != nil || len(before.Entries) != 30 {
		t.Fatalf("queue before: %d entries, %v", len(before.Entries), err)
	}
	s.kill9()
	s.start()
	cl = s.dial(ctx)
	defer cl.Close()
	after, err := cl.Queue(ctx)
	if err != nil || len(after.Entries) != 30 {
		t.Fatalf("queue after restart: %d entries, %v", len(after.Entries), err)
	}
	for i := range before.Entries {
		b, a := before.Entries[i], after.Entries[i]
		if a.AgentID != b.AgentID || a.Pos != b.Pos {
			t.Fatalf("position %d: %s before, %s after the restart", i+1, b.Path, a.Path)
		}
	}
	a, err := cl.Get(ctx, before.Entries[4].AgentID)
	if err != nil || a.State != wire.StateQueued || a.QueuePos != 5 {
		t.Fatalf("agent 5 after restart: %s pos %d, %v", a.State, a.QueuePos, err)
	}
}

// TestConfigReloadAndBadConfig: SIGHUP applies new caps; a config that does not parse
// keeps the running one (and the log says why); a server refuses to start on it,
// naming the line.
func TestConfigReloadAndBadConfig(t *testing.T) {
	s := newServer(t, "[limits]\nglobal = 3\n")
	s.start()
	ctx := context.Background()
	cl := s.dial(ctx)
	defer cl.Close()
	global := func() int {
		q, err := cl.Queue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return q.Global
	}
	if g := global(); g != 3 {
		t.Fatalf("global %d at start", g)
	}
	hup := func(cfg string) {
		t.Helper()
		if err := os.WriteFile(s.config, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := s.srv.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	hup("[limits]\nglobal = 9\nshell = 4\n")
	wait.For(t, 10*time.Second, "SIGHUP to apply global = 9", func() bool { return global() == 9 })
	logPath := filepath.Join(s.home, "orcr.log")
	for i, bad := range []string{"[limits]\nglobal = \n", "[limits]\nclaud = 2\n", "[limits]\nglobal = -4\n"} {
		hup(bad)
		wait.For(t, 10*time.Second, fmt.Sprintf("a log line for the bad reload of %q", bad), func() bool {
			b, _ := os.ReadFile(logPath)
			return strings.Count(string(b), "keeping the running config") > i
		})
		if g := global(); g != 9 {
			t.Fatalf("bad config %q changed global to %d", bad, g)
		}
	}
	s.stop()
	// A server does not start on a config that does not parse, and says where.
	if err := os.WriteFile(s.config, []byte("[limits]\nglobal = 2\n[gc]\nretain = \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := s.run("serve")
	if err == nil || !strings.Contains(out, "config.toml:4:") {
		t.Fatalf("serve with a bad config: err %v, output %q", err, out)
	}
}

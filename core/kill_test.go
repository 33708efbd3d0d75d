package core_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"orcr/core"
	"orcr/core/wire"
	"orcr/pty"
)

// TestKillStopsManyAgentsConcurrently kills a glob of shell agents whose programs ignore
// SIGHUP and SIGTERM, so closing each pane waits out the host's whole kill grace before
// SIGKILL. One after another that is n × grace (nine such agents once took 36 s and the
// dashboard's kill gave up on its deadline); the kill runs them side by side, so it ends
// after about one grace, and in far less than n × grace.
func TestKillStopsManyAgentsConcurrently(t *testing.T) {
	const n, grace = 8, 1500 * time.Millisecond
	r := newRigOn(t, "", nil, core.Limits{}, core.GCRules{}, pty.New(pty.Options{KillGrace: grace}))
	ctx := context.Background()
	for i := range n {
		// The ignored signals are inherited by sleep, so only SIGKILL ends the pane.
		if _, err := r.eng.Run(ctx, wire.RunParams{Path: fmt.Sprintf("slow/a%d", i),
			Argv: []string{"sh", "-c", `trap "" HUP TERM; echo ignoring-hup; exec sleep 300`}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		path := fmt.Sprintf("slow/a%d", i)
		waitFor(t, path+" to ignore SIGHUP", 30*time.Second, func() bool {
			rd, err := r.eng.Read(ctx, wire.ReadParams{Target: path})
			return err == nil && strings.Contains(rd.Text, "ignoring-hup")
		})
	}

	start := time.Now()
	res, err := r.eng.Kill(ctx, wire.KillParams{Glob: "slow/**"})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Agents) != n {
		t.Fatalf("kill reported %d agents, want %d", len(res.Agents), n)
	}
	for i, a := range res.Agents {
		if want := fmt.Sprintf("slow/a%d", i); a.Path != want || a.State != wire.StateKilled {
			t.Fatalf("result %d: %s %s, want %s killed (in path order)", i, a.Path, a.State, want)
		}
		got, err := r.eng.Get(ctx, a.Path)
		if err != nil || !strings.Contains(got.LastScreen, "ignoring-hup") {
			t.Fatalf("%s lost its last screen (err %v): %q", a.Path, err, got.LastScreen)
		}
	}
	// At least one grace: the programs really ignored SIGHUP (else the test proves
	// nothing); well under n × grace: the kills overlapped.
	if took < grace {
		t.Fatalf("kill took %s, less than the %s grace: the programs did not ignore SIGHUP", took, grace)
	}
	if limit := n * grace / 2; took > limit {
		t.Fatalf("killing %d agents took %s (grace %s each): they were killed one after another, want < %s", n, took, grace, limit)
	}
	t.Logf("killed %d agents ignoring SIGHUP (grace %s) in %s", n, grace, took)
}

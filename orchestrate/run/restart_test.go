package run_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	runapi "orcr/orchestrate/run/api"
	"orcr/testutil/wait"
)

func parallelPlan(n int) string {
	var b strings.Builder
	b.WriteString("# Plan: par\nrequest: r\ncheck: true\n\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "## M%d · Part %d\ndepends: -\ntier: small\n\n### Goal\nPart %d.\n\n### Acceptance\n- [ ] done\n\n", i, i, i)
	}
	return b.String()
}

// TestRunSurvivesRestarts stops the server (kernel, socket, autopilot) at random
// moments of a run and starts it again on the same store and repository: the run
// completes with every milestone merged exactly once — one commit each on
// feature/par, no merge applied twice, nothing dispatched to two coders at once.
// (The embedded pty host's panes die with the server, so every restart also loses
// the coders: they count as vanished and their work is handed on.)
func TestRunSurvivesRestarts(t *testing.T) {
	const n = 4
	g := newRig(t)
	ctx := context.Background()
	g.approve("par", parallelPlan(n))
	stamps := t.TempDir()
	if _, err := g.svc.RunStart(ctx, runapi.RunStartParams{Name: "par", Coders: 2, Coder: "shell", CoderArgv: instantCoder(g.orcr, stamps), Lead: "none"}); err != nil {
		t.Fatal(err)
	}
	var ms []string
	for i := 1; i <= n; i++ {
		ms = append(ms, fmt.Sprintf("M%d", i))
	}
	if _, err := g.svc.RunDispatch(ctx, runapi.RunMilestonesParams{Name: "par", Milestones: ms}); err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for restart := 0; restart < 5; restart++ {
		seq := g.status("par").Seq
		target := seq + uint64(1+rnd.IntN(12))
		wait.Until(20*time.Second, func() bool { v := g.status("par"); return v.Seq >= target || v.State == "done" })
		t.Logf("restart %d at seq %d", restart+1, g.status("par").Seq)
		g.stop()
		g.start()
	}
	ok := wait.Until(90*time.Second, func() bool { return g.status("par").State == "done" })
	v := g.status("par")
	if !ok {
		es, _ := g.svc.RunEvents(ctx, runapi.RunEventsParams{Name: "par"})
		var b strings.Builder
		for _, e := range es {
			fmt.Fprintf(&b, "%d %s %s %s %s\n", e.Seq, e.Type, e.Kind, e.M, firstLine(e.Text))
		}
		t.Fatalf("run did not complete: %s %+v\n%s", v.State, v.Milestones, b.String())
	}
	if c := sh(t, g.repo, "git rev-list --count main..feature/par"); c != fmt.Sprint(n) {
		t.Fatalf("feature/par has %s commits, want %d (one per milestone, none twice)", c, n)
	}
	subjects := sh(t, g.repo, "git log --format=%s main..feature/par | sort | tr '\n' ','")
	if subjects != "M1: Part 1,M2: Part 2,M3: Part 3,M4: Part 4," {
		t.Fatalf("commits %q", subjects)
	}
	files := sh(t, g.repo, "git ls-tree --name-only feature/par | tr '\n' ' '")
	if files != "M1.txt M2.txt M3.txt M4.txt README.md" {
		t.Fatalf("tree %q\n%s", files, sh(t, g.repo, "git log --graph --stat --format='%h %s %p' --all"))
	}
}

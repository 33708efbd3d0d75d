package run_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
	runapi "orcr/orchestrate/run/api"
	"orcr/testutil/apiclient"
)

// TestLongMilestoneListsAnsweredPromptly: run.dispatch with 1,000 names took 87 s and
// 100,000 names on a finished run kept the server busy for minutes, each name a
// stepped, logged and rendered request. Now a list past the bound is refused at
// once, naming the bound, on the socket and in-process alike; a name given many
// times is acted on once; and a refusal asked again is not logged again.
func TestLongMilestoneListsAnsweredPromptly(t *testing.T) {
	g := newRig(t)
	ctx := context.Background()
	g.approve("par", parallelPlan(3))
	idle := []string{"sh", "-c", "cat >/dev/null"} // a coder that never reports
	if _, err := g.svc.RunStart(ctx, runapi.RunStartParams{Name: "par", Coders: 1, Coder: "shell", CoderArgv: idle, Lead: "none"}); err != nil {
		t.Fatal(err)
	}
	c, err := apiclient.Dial(ctx, filepath.Join(g.home, "orcr.sock"), "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	entries := func() []runapi.RunEntry {
		es, err := g.svc.RunEvents(ctx, runapi.RunEventsParams{Name: "par"})
		if err != nil {
			t.Fatal(err)
		}
		return es
	}
	count := func(typ, kind, m string) int {
		n := 0
		for _, e := range entries() {
			if e.Type == typ && e.Kind == kind && e.M == m {
				n++
			}
		}
		return n
	}
	// timed calls dispatch(names) and fails past a generous bound; before, these
	// calls took minutes.
	timed := func(what string, dispatch func(context.Context) error) error {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		start := time.Now()
		err := dispatch(cctx)
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("%s answered after %s", what, d)
		}
		return err
	}
	refusedBound := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, wire.ErrInvalidParams) || !strings.Contains(err.Error(), "more than the 256 one request may carry") {
			t.Fatalf("%s: %v", what, err)
		}
	}

	err = timed("100,000 names over the socket", func(ctx context.Context) error {
		_, err := c.RunDispatch(ctx, runapi.RunMilestonesParams{Name: "par", Milestones: slices.Repeat([]string{"M1"}, 100_000)})
		return err
	})
	refusedBound("100,000 names over the socket", err)
	err = timed("1,000 names in-process", func(ctx context.Context) error {
		_, err := g.svc.RunDispatch(ctx, runapi.RunMilestonesParams{Name: "par", Milestones: slices.Repeat([]string{"M3"}, 1_000)})
		return err
	})
	refusedBound("1,000 names in-process", err)
	for _, e := range entries() {
		if e.Kind == "dispatch" {
			t.Fatalf("a refused list reached the run log: %+v", e)
		}
	}

	// A held milestone's dispatch is refused; asked again and again, the refusal is
	// logged once.
	if _, err := g.svc.RunHold(ctx, runapi.RunMilestonesParams{Name: "par", Milestones: []string{"M2"}}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		err = timed("256 × M2 of held M2", func(ctx context.Context) error {
			_, err := c.RunDispatch(ctx, runapi.RunMilestonesParams{Name: "par", Milestones: slices.Repeat([]string{"M2"}, 256)})
			return err
		})
		if !errors.Is(err, wire.ErrInvalidParams) || strings.Count(err.Error(), "cannot dispatch M2") != 1 {
			t.Fatalf("256 × M2 of held M2: %v", err)
		}
	}
	if n := count("refused", "dispatch", "M2"); n != 1 {
		var b strings.Builder
		for _, e := range entries() {
			fmt.Fprintf(&b, "%d %s %s %s %s\n", e.Seq, e.Type, e.Kind, e.M, firstLine(e.Text))
		}
		t.Fatalf("the same refusal asked 768 times is logged %d times, want once; log:\n%s", n, b.String())
	}

	// 256 times the same name: one dispatch.
	err = timed("256 × M1", func(ctx context.Context) error {
		_, err := c.RunDispatch(ctx, runapi.RunMilestonesParams{Name: "par", Milestones: slices.Repeat([]string{"M1"}, 256)})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := count("fact", "dispatch", "M1"); n != 1 {
		t.Fatalf("256 × M1 logged %d dispatches, want 1", n)
	}
}

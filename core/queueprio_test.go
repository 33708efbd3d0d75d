package core_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"orcr/core"
	"orcr/core/socket"
	"orcr/core/wire"
)

// TestQueuePriorityReordersTheQueue: two agents wait behind a cap of one; raising the
// second's priority through queue.priority moves it to the front at once, and it is
// admitted first when the slot frees. A running agent is refused with not_queued.
func TestQueuePriorityReordersTheQueue(t *testing.T) {
	r := newRig(t, "", nil, core.Limits{Global: 1}, core.GCRules{})
	tr, err := socket.NewInProcess(core.KernelMethods(r.eng))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := r.eng.Run(ctx, wire.RunParams{Path: "q/blocker", Argv: []string{"sh", "-c", "exec cat"}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "q/blocker admitted", 30*time.Second, func() bool {
		a, _ := r.eng.Get(ctx, "q/blocker")
		return a.State != wire.StateQueued
	})
	for _, p := range []string{"q/first", "q/second"} {
		if _, err := r.eng.Run(ctx, wire.RunParams{Path: p, Argv: []string{"sh", "-c", "exec cat"}}); err != nil {
			t.Fatal(err)
		}
	}
	order := func() []string {
		q, _ := r.eng.Queue(ctx)
		var out []string
		for _, e := range q.Entries {
			out = append(out, e.Path)
		}
		return out
	}
	if got := order(); len(got) != 2 || got[0] != "q/first" {
		t.Fatalf("queue before: %v, want q/first then q/second", got)
	}

	res, err := wire.Call(ctx, tr, wire.QueuePriority, wire.PriorityParams{Target: "q/second", By: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Agent.Priority != 1 || res.Agent.QueuePos != 1 {
		t.Fatalf("q/second after +1: priority %d pos %d, want 1 at 1", res.Agent.Priority, res.Agent.QueuePos)
	}
	if got := order(); len(got) != 2 || got[0] != "q/second" {
		t.Fatalf("queue after: %v, want q/second first", got)
	}
	if a, _ := r.eng.Get(ctx, "q/first"); a.QueuePos != 2 {
		t.Fatalf("q/first at %d, want 2", a.QueuePos)
	}
	// Only a queued agent has a place to move.
	_, err = wire.Call(ctx, tr, wire.QueuePriority, wire.PriorityParams{Target: "q/blocker", By: 1})
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeNotQueued {
		t.Fatalf("reprioritising a running agent: %v, want %s", err, wire.CodeNotQueued)
	}

	// The slot frees: q/second is admitted, q/first still waits.
	if _, err := r.eng.Kill(ctx, wire.KillParams{Glob: "q/blocker"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "q/second admitted", 30*time.Second, func() bool {
		a, _ := r.eng.Get(ctx, "q/second")
		return a.State != wire.StateQueued
	})
	if a, _ := r.eng.Get(ctx, "q/first"); a.State != wire.StateQueued {
		t.Fatalf("q/first is %s, want still queued behind q/second", a.State)
	}
}

package core_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"orcr/core"
	"orcr/core/wire"
	"orcr/testutil/wait"
)

// A kill and a late signal from the agent's own loop race for the same record. A
// transition is one check-and-set under the engine lock, so once an agent is killed no
// signal brings it back: not in the record, and not in the event log.
func TestKillBeatsLateSignal(t *testing.T) {
	r := newRig(t, "", nil, core.Limits{}, core.GCRules{})
	ctx := context.Background()
	const n = 24
	var ids []string
	for i := range n {
		a, err := r.eng.Run(ctx, wire.RunParams{Path: fmt.Sprintf("race/a%d", i), Argv: []string{"sleep", "60"}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, a.ID)
	}
	wait.For(t, 20*time.Second, "every agent launched", func() bool {
		for _, id := range ids {
			if a, _ := r.eng.Get(ctx, id); a.State != wire.StateWorking && a.State != wire.StateIdle && a.State != wire.StateDone {
				return false
			}
		}
		return true
	})
	var wg sync.WaitGroup
	for _, id := range ids {
		stop := make(chan struct{})
		wg.Add(2)
		go func() {
			// Late signals, alternating so each one is a real change.
			defer wg.Done()
			states := []wire.State{wire.StateDone, wire.StateWorking}
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				r.eng.ApplySignal(ctx, id, &core.Signal{State: states[i%2], Source: "screen", Reason: fmt.Sprint("late ", i)})
			}
		}()
		go func() {
			defer wg.Done()
			defer close(stop)
			time.Sleep(2 * time.Millisecond)
			if _, err := r.eng.Kill(ctx, wire.KillParams{Glob: id}); err != nil {
				t.Error(err)
			}
			// A few signals after the kill too.
			for i := range 20 {
				r.eng.ApplySignal(ctx, id, &core.Signal{State: wire.StateDone, Source: "screen", Reason: fmt.Sprint("after ", i)})
			}
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if a, _ := r.eng.Get(ctx, id); a.State != wire.StateKilled {
			t.Errorf("%s: %s after its kill (%s: %s)", a.Path, a.State, a.StateSource, a.StateReason)
		}
	}
	evs, err := r.store.Events(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Event == wire.EventAgentState && ev.From.Terminal() {
			t.Errorf("event %d: %s %s → %s", ev.Seq, ev.Agent.Path, ev.From, ev.To)
		}
	}
}

package core_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"orcr/core"
	"orcr/core/wire"
	"orcr/testutil/wait"
)

// TestCadencedOutputStaysWorking: a program that prints a line every 2 s for 20 s, in
// a real pane, is working for those 20 s and settles once the lines stop; it does not
// flip working⇄idle on every line (on main it made about 20 state events).
func TestCadencedOutputStaysWorking(t *testing.T) {
	r := newRig(t, "", nil, core.Limits{}, core.GCRules{})
	ctx := context.Background()
	sub, err := r.eng.Subscribe(ctx, wire.SubscribeParams{Paths: []string{"cad/**"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.eng.Run(ctx, wire.RunParams{Path: "cad/lines",
		Argv: []string{"sh", "-c", "for i in $(seq 10); do echo line $i; sleep 2; done; echo finished; exec cat"}}); err != nil {
		t.Fatal(err)
	}
	var moves []string
	flips := 0 // moves between working and idle/done
	settledAfterEnd := false
	deadline := time.After(wait.Scale(90 * time.Second))
	for !settledAfterEnd {
		select {
		case ev := <-sub:
			if ev.Event != wire.EventAgentState || ev.Agent == nil {
				continue
			}
			moves = append(moves, fmt.Sprintf("%s→%s (%s)", ev.From, ev.To, ev.Agent.StateReason))
			if ev.To.Terminal() {
				t.Fatalf("agent ended: %v", moves)
			}
			settle := ev.To == wire.StateIdle || ev.To == wire.StateDone
			if settle || ev.To == wire.StateWorking && (ev.From == wire.StateIdle || ev.From == wire.StateDone) {
				flips++
			}
			if settle && strings.Contains(screenOf(r, ev.Agent.ID), "finished") {
				settledAfterEnd = true
			}
		case <-deadline:
			t.Fatalf("never settled after the last line; moves: %v", moves)
		}
	}
	t.Logf("moves: %v", moves)
	// The first line comes after a quiet start, so one idle before the rhythm is
	// known is allowed; then working until the lines stop, then idle.
	if flips > 4 {
		t.Fatalf("%d working⇄idle flips for 10 lines 2 s apart, want at most 4: %v", flips, moves)
	}
}

// screenOf reads agent id's screen now.
func screenOf(r *rig, id string) string {
	s, err := r.eng.Read(context.Background(), wire.ReadParams{Target: id})
	if err != nil {
		return ""
	}
	return s.Text
}

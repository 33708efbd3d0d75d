package core_test

import (
	"context"
	"testing"
	"time"

	"orcr/core"
	"orcr/core/wire"
)

// A shell agent's state comes from its screen alone. A send ending in Enter starts a
// turn at once (core.TurnOnSend): the agent is working when the send returns, and the
// turn's end is a new done — also for a program that answers without a sign on the
// screen, and for every send after the first. Before, the state stayed at the
// previous done, so `agent send X … && agent wait X --until done` returned at once.
func TestShellSendStartsATurnEveryTime(t *testing.T) {
	r := newRig(t, "", nil, core.Limits{}, core.GCRules{})
	ctx := context.Background()
	for _, tc := range []struct{ name, script string }{
		// Echo off: the typed line never shows; the program says nothing.
		{"silent", `stty -echo; echo ready; while read -r l; do :; done`},
		// Answers at once, faster than the screen is read.
		{"quick", `echo ready; while read -r l; do echo "got $l"; done`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := r.eng.Run(ctx, wire.RunParams{Path: "turns/" + tc.name, Argv: []string{"sh", "-c", tc.script}})
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the agent settles", 10*time.Second, func() bool {
				g, _ := r.eng.Get(ctx, a.ID)
				return g.State == wire.StateIdle
			})
			var last time.Time
			for i := range 3 {
				if err := r.eng.Send(ctx, wire.SendParams{Target: a.ID, Text: "line", Enter: true}); err != nil {
					t.Fatal(err)
				}
				g, _ := r.eng.Get(ctx, a.ID)
				if g.State != wire.StateWorking {
					t.Fatalf("send %d: state %s (%s) when the send returned, want working", i+1, g.State, g.StateReason)
				}
				sentAt := g.StateAt
				waitFor(t, "the turn's end", 10*time.Second, func() bool {
					g, _ = r.eng.Get(ctx, a.ID)
					return g.State == wire.StateDone
				})
				if !g.StateAt.After(sentAt) || !g.StateAt.After(last) {
					t.Fatalf("send %d: done at %s, not after the send's turn (%s) and the last done (%s)", i+1, g.StateAt, sentAt, last)
				}
				last = g.StateAt
			}
		})
	}
}

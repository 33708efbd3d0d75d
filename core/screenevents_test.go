package core_test

import (
	"context"
	"testing"
	"time"

	"orcr/core"
	"orcr/core/wire"
)

// TestScreenChangesAnnouncedToLateListener: an agent's loop announces screen changes
// (agent.screen) only while someone listens for transient events, so a redraw with
// nobody listening arms no timer. A listener that comes later hears the next change
// at once, whatever the agent printed before it came.
func TestScreenChangesAnnouncedToLateListener(t *testing.T) {
	r := newRig(t, "", nil, core.Limits{}, core.GCRules{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := r.eng.Run(ctx, wire.RunParams{Path: "screen/sh", Cwd: t.TempDir(),
		Argv: []string{"sh", "-c", `while read -r l; do echo "got $l"; done`}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the shell to run", 20*time.Second, func() bool {
		g, _ := r.eng.Get(ctx, a.ID)
		return g.State.Live() && g.PID > 0
	})
	// Output while nobody listens.
	if err := r.eng.Send(ctx, wire.SendParams{Target: a.ID, Text: "one", Enter: true}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the agent to settle after its first line", 20*time.Second, func() bool {
		g, _ := r.eng.Get(ctx, a.ID)
		return g.State == wire.StateDone || g.State == wire.StateIdle
	})
	sub, err := r.eng.Subscribe(ctx, wire.SubscribeParams{Paths: []string{"screen/**"}, Transient: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.eng.Send(ctx, wire.SendParams{Target: a.ID, Text: "two", Enter: true}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-sub:
			if !ok {
				t.Fatal("the subscription ended")
			}
			if ev.Event == wire.EventAgentScreen && ev.Agent != nil && ev.Agent.ID == a.ID {
				return
			}
		case <-deadline:
			t.Fatal("a listener that came after the agent's first output heard no agent.screen for its next")
		}
	}
}

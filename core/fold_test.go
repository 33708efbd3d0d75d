package core_test

import (
	"testing"
	"time"

	"orcr/core"
	"orcr/core/wire"
)

func TestFoldRules(t *testing.T) {
	now := time.Now().UTC()
	working := wire.Agent{ID: "a", State: wire.StateWorking, StateSource: "server", StateReason: "launched"}
	idle := &core.Signal{State: wire.StateIdle, Source: "screen", Reason: "prompt shown"}

	// A settled screen before any turn is idle; after one it is done.
	if cs := core.Fold(working, 0, idle, now); len(cs) != 1 || cs[0].Agent.State != wire.StateIdle || cs[0].Event.To != wire.StateIdle {
		t.Fatalf("no turns: %+v", cs)
	}
	if cs := core.Fold(working, 1, idle, now); len(cs) != 1 || cs[0].Agent.State != wire.StateDone || cs[0].Event.From != wire.StateWorking {
		t.Fatalf("after a turn: %+v", cs)
	}
	// The rule is the screen's: a hook saying idle means idle.
	if cs := core.Fold(working, 1, &core.Signal{State: wire.StateIdle, Source: "hook"}, now); cs[0].Agent.State != wire.StateIdle {
		t.Fatalf("hook idle: %+v", cs)
	}
	// Nothing brings a terminal agent back, and the same state again is no change.
	killed := working
	killed.State = wire.StateKilled
	if cs := core.Fold(killed, 1, idle, now); len(cs) != 0 {
		t.Fatalf("killed agent changed: %+v", cs)
	}
	done := core.Fold(working, 1, idle, now)[0].Agent
	if cs := core.Fold(done, 1, idle, now); len(cs) != 0 {
		t.Fatalf("same state again: %+v", cs)
	}
	// Usage is compared by value: the same cost behind another pointer is no news.
	c1, c2 := 0.25, 0.25
	withUsage := done
	withUsage.Usage = wire.Usage{OutputTokens: 5, CostUSD: &c1, Priced: true}
	if cs := core.Fold(withUsage, 1, &core.Signal{Usage: &wire.Usage{OutputTokens: 5, CostUSD: &c2, Priced: true}}, now); len(cs) != 0 {
		t.Fatalf("same usage made a change: %+v", cs)
	}
	c3 := 0.5
	cs := core.Fold(withUsage, 1, &core.Signal{Usage: &wire.Usage{OutputTokens: 9, CostUSD: &c3, Priced: true},
		State: wire.StateWorking, Source: "hook", Reason: "prompt"}, now)
	if len(cs) != 2 || cs[0].Event.Event != wire.EventAgentUpdated || cs[0].Agent.State != wire.StateDone ||
		cs[1].Event.Event != wire.EventAgentState || cs[1].Agent.Usage.OutputTokens != 9 {
		t.Fatalf("facts then state: %+v", cs)
	}
	// A prompt's options completed later (same state, source and reason) are recorded
	// as an update; the same prompt again is no change.
	hooked := core.Fold(working, 1, &core.Signal{State: wire.StateBlocked, Source: "hook", Reason: "permission: Bash(x)",
		Blocked: &wire.Blocked{Kind: wire.BlockedPermission, Detail: "Bash(x)"}}, now)[0].Agent
	menu := &core.Signal{State: wire.StateBlocked, Source: "hook", Reason: "permission: Bash(x)",
		Blocked: &wire.Blocked{Kind: wire.BlockedPermission, Detail: "Bash(x)", Options: []wire.Option{{Label: "Yes", Key: "1"}}}}
	cs = core.Fold(hooked, 1, menu, now)
	if len(cs) != 1 || cs[0].Event.Event != wire.EventAgentUpdated || len(cs[0].Agent.Blocked.Options) != 1 ||
		!cs[0].Agent.StateAt.Equal(hooked.StateAt) {
		t.Fatalf("options completed: %+v", cs)
	}
	again := *menu
	again.Blocked = &wire.Blocked{Kind: wire.BlockedPermission, Detail: "Bash(x)", Options: []wire.Option{{Label: "Yes", Key: "1"}}}
	if cs := core.Fold(cs[0].Agent, 1, &again, now); len(cs) != 0 {
		t.Fatalf("the same prompt again changed: %+v", cs)
	}
	// A new reason for the same state is an update, not a transition.
	cs = core.Fold(done, 1, &core.Signal{State: wire.StateDone, Source: "hook", Reason: "Stop"}, now)
	if len(cs) != 1 || cs[0].Event.Event != wire.EventAgentUpdated || cs[0].Agent.StateReason != "Stop" {
		t.Fatalf("re-explained: %+v", cs)
	}
}

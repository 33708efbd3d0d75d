package core_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"orcr/core"
	"orcr/core/wire"
	"orcr/pty"
	"orcr/testutil/wait"
)

func gcActions(res wire.GCResult) map[string]string {
	out := map[string]string{}
	for _, a := range res.Actions {
		out[a.Path+" "+a.Action] = a.Rule
	}
	return out
}

func TestGCRulesCloseStopAndPrune(t *testing.T) {
	clk := &clock{}
	r := newRig(t, "", clk, core.Limits{}, core.GCRules{})
	ctx := context.Background()
	run := func(path string, keep bool, argv ...string) {
		t.Helper()
		if _, err := r.eng.Run(ctx, wire.RunParams{Path: path, Keep: keep, Argv: argv}); err != nil {
			t.Fatal(err)
		}
	}
	run("gc/ended", false, "sh", "-c", "echo last words")
	run("gc/idler", false, "sleep", "600")
	run("gc/kept", true, "sleep", "600")
	state := func(p string) wire.State { a, _ := r.eng.Get(ctx, p); return a.State }
	waitFor(t, "ended exits and the others idle", 15*time.Second, func() bool {
		return state("gc/ended") == wire.StateExited && state("gc/idler") == wire.StateIdle && state("gc/kept") == wire.StateIdle
	})
	if res, _ := r.eng.GC(ctx, wire.GCParams{DryRun: true}); len(res.Actions) != 0 {
		t.Fatalf("nothing is due yet, got %+v", res.Actions)
	}
	// Eleven minutes on, the ended agent's pane is past its grace.
	clk.jump(11 * time.Minute)
	res, err := r.eng.GC(ctx, wire.GCParams{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := gcActions(res); len(got) != 1 || got["gc/ended close_pane"] != core.RuleExitedGrace {
		t.Fatalf("dry run after 11m: %v", got)
	}
	if res, _ := r.eng.GC(ctx, wire.GCParams{}); len(res.Actions) != 1 {
		t.Fatalf("gc after 11m: %+v", res.Actions)
	}
	if res, _ := r.eng.GC(ctx, wire.GCParams{DryRun: true}); len(res.Actions) != 0 {
		t.Fatalf("pane closed twice: %+v", res.Actions)
	}
	rd, err := r.eng.Read(ctx, wire.ReadParams{Target: "gc/ended"})
	if err != nil || rd.Live || !strings.Contains(rd.Text, "last words") {
		t.Fatalf("last screen after the pane closed: %+v %v", rd, err)
	}
	// Nine hours on, the idle agent is stopped; the --keep one is not.
	clk.jump(9 * time.Hour)
	res, _ = r.eng.GC(ctx, wire.GCParams{})
	if got := gcActions(res); len(got) != 1 || got["gc/idler stop"] != core.RuleIdleAfter {
		t.Fatalf("gc after 9h: %v", got)
	}
	if a, _ := r.eng.Get(ctx, "gc/idler"); a.State != wire.StateKilled || !strings.Contains(a.StateReason, core.RuleIdleAfter) {
		t.Fatalf("idler: %s (%s)", a.State, a.StateReason)
	}
	if state("gc/kept") != wire.StateIdle {
		t.Fatalf("kept agent was stopped: %s", state("gc/kept"))
	}
	// Eight days on, ended records and old events are pruned.
	clk.jump(8 * 24 * time.Hour)
	res, _ = r.eng.GC(ctx, wire.GCParams{})
	got := gcActions(res)
	if got["gc/ended remove"] != core.RuleRetain || got["gc/idler remove"] != core.RuleRetain || got[" prune_events"] != core.RuleRetain {
		t.Fatalf("gc after 8d: %v", got)
	}
	if _, err := r.eng.Get(ctx, "gc/ended"); !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("pruned record still there: %v", err)
	}
	if _, err := r.store.GetAgent(ctx, mustID(t, res, "gc/ended")); !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("pruned record still stored: %v", err)
	}
	// Every collection left an event naming its rule (the pruning left the newest).
	evs := mustEvents(t, r)
	rules := map[string]bool{}
	for _, ev := range evs {
		if ev.Rule != "" {
			rules[ev.Event+" "+ev.Rule] = true
		}
		if ev.Event == wire.EventAgentSpawned {
			t.Fatalf("an event from before the retain window survived: %+v", ev)
		}
	}
	for _, want := range []string{"agent.removed gc.retain", "gc.events_pruned gc.retain"} {
		if !rules[want] {
			t.Errorf("no %q event in %v", want, rules)
		}
	}
}

func mustID(t *testing.T, res wire.GCResult, path string) string {
	t.Helper()
	for _, a := range res.Actions {
		if a.Path == path {
			return a.AgentID
		}
	}
	t.Fatalf("no action for %s", path)
	return ""
}

// The gc.collected events of the first two rules are checked on a live stream.
func TestGCEventsNameTheirRule(t *testing.T) {
	clk := &clock{}
	r := newRig(t, "", clk, core.Limits{}, core.GCRules{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sub, err := r.eng.Subscribe(ctx, wire.SubscribeParams{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"ev/ended", "ev/idle"} {
		argv := []string{"true"}
		if p == "ev/idle" {
			argv = []string{"sleep", "600"}
		}
		if _, err := r.eng.Run(ctx, wire.RunParams{Path: p, Argv: argv}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "settled", 15*time.Second, func() bool {
		a, _ := r.eng.Get(ctx, "ev/ended")
		b, _ := r.eng.Get(ctx, "ev/idle")
		return a.State == wire.StateExited && b.State == wire.StateIdle
	})
	clk.jump(9 * time.Hour)
	if _, err := r.eng.GC(ctx, wire.GCParams{}); err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	deadline := time.After(wait.Scale(10 * time.Second))
	for len(seen) < 2 {
		select {
		case ev := <-sub:
			if ev.Event == wire.EventGCCollected {
				seen[ev.Agent.Path] = ev.Rule + " " + ev.Data["action"].(string)
			}
		case <-deadline:
			t.Fatalf("gc events seen: %v", seen)
		}
	}
	if seen["ev/ended"] != "gc.exited_grace close_pane" || seen["ev/idle"] != "gc.idle_after stop" {
		t.Fatalf("gc events: %v", seen)
	}
}

// blindHost is a host whose reads come back empty while blind is set: the end of an
// agent that exits at once, read before the host had drawn its output.
type blindHost struct {
	core.Host
	blind atomic.Bool
}

func (h *blindHost) Read(ctx context.Context, pane string, o core.ReadOpts) (core.Screen, error) {
	if h.blind.Load() {
		return core.Screen{}, nil
	}
	return h.Host.Read(ctx, pane, o)
}

// An agent whose end was recorded with no last screen still shows it while its pane
// is there: `agent read` and the dashboard's preview read the ended pane. Before, the
// read of an ended agent answered its (empty) last screen only, and a kept agent that
// exited at once on tmux showed nothing.
func TestEndedWithoutLastScreenReadsItsPane(t *testing.T) {
	h := &blindHost{Host: pty.New(pty.Options{})}
	r := newRigOn(t, "", nil, core.Limits{}, core.GCRules{}, h)
	ctx := context.Background()
	h.blind.Store(true)
	if _, err := r.eng.Run(ctx, wire.RunParams{Path: "gone/once", Keep: true, Argv: []string{"sh", "-c", "echo last words"}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the agent to exit", 15*time.Second, func() bool {
		a, _ := r.eng.Get(ctx, "gone/once")
		return a.State == wire.StateExited
	})
	h.blind.Store(false)
	rd, err := r.eng.Read(ctx, wire.ReadParams{Target: "gone/once"})
	if err != nil || rd.Live || !strings.Contains(rd.Text, "last words") {
		t.Fatalf("an ended agent's kept pane: %+v %v", rd, err)
	}
}

// A send is activity: an agent idle past gc.idle_after that is sent work is not
// stopped by a collection that comes before its program shows it took the work, and
// is stopped once it has been quiet for idle_after since the send. Here the program
// shows nothing at all (its terminal does not echo, it reads nothing) and the text
// goes without Enter, so no turn starts (a shell's Enter would start one at once, as
// a claude's is seen only when its screen or hooks say so): the agent stays idle.
func TestSendIsActivityForIdleAfter(t *testing.T) {
	clk := &clock{}
	r := newRig(t, "", clk, core.Limits{}, core.GCRules{})
	ctx := context.Background()
	if _, err := r.eng.Run(ctx, wire.RunParams{Path: "gc/quiet", Argv: []string{"sh", "-c", "stty -echo; exec sleep 600"}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "gc/quiet idle", 15*time.Second, func() bool {
		a, _ := r.eng.Get(ctx, "gc/quiet")
		return a.State == wire.StateIdle
	})
	clk.jump(9 * time.Hour)
	if err := r.eng.Send(ctx, wire.SendParams{Target: "gc/quiet", Text: "the next task"}); err != nil {
		t.Fatal(err)
	}
	res, err := r.eng.GC(ctx, wire.GCParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Actions) != 0 {
		t.Fatalf("an agent sent work a moment ago was collected: %+v", res.Actions)
	}
	if a, _ := r.eng.Get(ctx, "gc/quiet"); a.State.Terminal() {
		t.Fatalf("gc/quiet ended: %s (%s)", a.State, a.StateReason)
	}
	clk.jump(9 * time.Hour)
	res, _ = r.eng.GC(ctx, wire.GCParams{})
	if got := gcActions(res); got["gc/quiet stop"] != core.RuleIdleAfter {
		a, _ := r.eng.Get(ctx, "gc/quiet")
		t.Fatalf("quiet for 9h after the send, not stopped: %v (%s since %s)", got, a.State, a.StateAt)
	}
}

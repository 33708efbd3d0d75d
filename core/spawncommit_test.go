package core_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"orcr/adapters/shell"
	"orcr/core"
	"orcr/core/wire"
	"orcr/pty"
	"orcr/store"
	"orcr/testutil/wait"
)

// writeLog is the real store with a note of every record write: which agent, in
// which state, and how many events came in the same commit.
type writeLog struct {
	*store.Store
	mu     sync.Mutex
	writes []storeWrite
}

type storeWrite struct {
	id     string
	state  wire.State
	events int
}

func (w *writeLog) note(a wire.Agent, events int) {
	w.mu.Lock()
	w.writes = append(w.writes, storeWrite{a.ID, a.State, events})
	w.mu.Unlock()
}

func (w *writeLog) PutAgent(ctx context.Context, a wire.Agent) error {
	w.note(a, 0)
	return w.Store.PutAgent(ctx, a)
}

func (w *writeLog) PutAgentEvent(ctx context.Context, a wire.Agent, e wire.Event) (wire.Event, error) {
	w.note(a, 1)
	return w.Store.PutAgentEvent(ctx, a, e)
}

func (w *writeLog) PutAgentEvents(ctx context.Context, a wire.Agent, evs []wire.Event) ([]wire.Event, error) {
	w.note(a, len(evs))
	return w.Store.PutAgentEvents(ctx, a, evs)
}

// of is the writes of agent id so far.
func (w *writeLog) of(id string) []storeWrite {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []storeWrite
	for _, x := range w.writes {
		if x.id == id {
			out = append(out, x)
		}
	}
	return out
}

// spawnEngine is an engine on the pty host with the shell provider and a store in
// home, through wrap (a spy, or the store itself), closed when the test ends.
func spawnEngine(t *testing.T, home string, wrap func(*store.Store) core.Store) *core.Engine {
	t.Helper()
	st, err := store.Open(home+"/store", nil)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := core.NewEngine(core.Options{Store: wrap(st), Host: pty.New(pty.Options{}), Providers: []core.Provider{shell.New()},
		Home: home, Socket: home + "/orcr.sock"})
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		eng.Close(cctx)
		st.Close()
	})
	return eng
}

// A spawn that nothing holds is two store commits from agent.run to a working pane:
// the record as starting with agent.spawned and its admission's agent.state in one
// transaction, then the pane and the working state. It was three (queued, then
// starting in admission's own commit, then working), and each commit is an encode of
// the whole record and its event, a badger transaction and a hop to badger's writer.
// agent.run still answers queued, and the event log still tells spawned (queued),
// starting, working in that order. An agent a gate holds is stored queued and
// admitted later as before.
func TestSpawnAdmittedAtOnceIsOneCommit(t *testing.T) {
	home := t.TempDir()
	ctx := context.Background()
	var log *writeLog
	eng := spawnEngine(t, home, func(st *store.Store) core.Store { log = &writeLog{Store: st}; return log })
	gate := &switchGate{}
	if err := eng.Start(ctx, &feature{name: "gate", start: func(_ context.Context, k core.Kernel) error { k.AddGate(gate); return nil }}); err != nil {
		t.Fatal(err)
	}
	working := func(id string) wire.Agent {
		t.Helper()
		var got wire.Agent
		wait.For(t, 10*time.Second, "the agent working", func() bool {
			var err error
			got, err = eng.Get(ctx, id)
			return err == nil && got.State == wire.StateWorking
		})
		return got
	}
	upTo := func(id string, last wire.State) []wire.State {
		var states []wire.State
		for _, w := range log.of(id) {
			states = append(states, w.state)
			if w.state == last {
				break
			}
		}
		return states
	}
	since := eng.LastSeq()
	a, err := eng.Run(ctx, wire.RunParams{Path: "spawn/once", Argv: []string{"sleep", "30"}, Cwd: home})
	if err != nil {
		t.Fatal(err)
	}
	if a.State != wire.StateQueued || a.StateReason != "waiting for admission" {
		t.Fatalf("agent.run answered %s (%q), want queued (waiting for admission)", a.State, a.StateReason)
	}
	working(a.ID)
	if got, want := upTo(a.ID, wire.StateWorking), []wire.State{wire.StateStarting, wire.StateWorking}; !slices.Equal(got, want) {
		t.Fatalf("records stored from agent.run to the pane: %v, want %v (one commit for the spawn and its admission)", got, want)
	}
	if first := log.of(a.ID)[0]; first.events != 2 {
		t.Fatalf("the spawn's commit held %d events, want 2 (agent.spawned and agent.state)", first.events)
	}
	evs, err := log.Events(ctx, since, 0)
	if err != nil {
		t.Fatal(err)
	}
	var told []string
	for _, ev := range evs {
		if ev.Agent != nil && ev.Agent.ID == a.ID {
			told = append(told, ev.Event+":"+string(ev.Agent.State))
		}
	}
	want := []string{wire.EventAgentSpawned + ":queued", wire.EventAgentState + ":starting", wire.EventAgentState + ":working"}
	if len(told) < 3 || !slices.Equal(told[:3], want) {
		t.Fatalf("events of the spawn %v, want %v first", told, want)
	}

	// Held by a gate: stored queued, and admitted once the gate opens.
	gate.set(false)
	b, err := eng.Run(ctx, wire.RunParams{Path: "spawn/held", Argv: []string{"sleep", "30"}, Cwd: home})
	if err != nil {
		t.Fatal(err)
	}
	if got := upTo(b.ID, wire.StateQueued); !slices.Equal(got, []wire.State{wire.StateQueued}) {
		t.Fatalf("a held spawn stored %v first, want [queued]", got)
	}
	gate.set(true)
	if err := eng.ApplyLimits(core.Limits{}); err != nil { // kicks admission, which asks the gate again
		t.Fatal(err)
	}
	working(b.ID)
	if got, want := upTo(b.ID, wire.StateWorking), []wire.State{wire.StateQueued, wire.StateStarting, wire.StateWorking}; !slices.Equal(got, want) {
		t.Fatalf("a held spawn stored %v, want %v", got, want)
	}
}

// switchGate admits while open (its zero value holds nothing).
type switchGate struct {
	mu     sync.Mutex
	closed bool
}

func (g *switchGate) set(open bool) {
	g.mu.Lock()
	g.closed = !open
	g.mu.Unlock()
}

func (g *switchGate) Admit(context.Context, wire.Agent) (bool, string, time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false, "closed by the test", time.Time{}
	}
	return true, "", time.Time{}
}

// Admission's counts of running agents follow every record that leaves the running
// set at the write that makes it leave (killed, exited), without a pass over the live
// agents: queue.show's running and total drop by one at each end. With a global cap of
// 2, the third spawn waits until one of the first two ends, then starts.
func TestRunningCountsFollowEachEnd(t *testing.T) {
	home := t.TempDir()
	ctx := context.Background()
	eng, stop := startEngine(t, home)
	defer stop()
	if err := eng.ApplyLimits(core.Limits{Global: 2}); err != nil {
		t.Fatal(err)
	}
	total := func() (int, int) {
		t.Helper()
		q, err := eng.Queue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return q.Total, q.Running["shell"]
	}
	_, err := eng.Run(ctx, wire.RunParams{Path: "cap/a", Argv: []string{"sleep", "30"}, Cwd: home})
	if err != nil {
		t.Fatal(err)
	}
	if _, err = eng.Run(ctx, wire.RunParams{Path: "cap/b", Argv: []string{"sleep", "30"}, Cwd: home}); err != nil {
		t.Fatal(err)
	}
	if n, shell := total(); n != 2 || shell != 2 {
		t.Fatalf("two spawned: total %d, shell %d, want 2 and 2", n, shell)
	}
	c, err := eng.Run(ctx, wire.RunParams{Path: "cap/c", Argv: []string{"sleep", "30"}, Cwd: home})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := eng.Get(ctx, c.ID); got.State != wire.StateQueued {
		t.Fatalf("the third spawn under a cap of 2 is %s, want queued", got.State)
	}
	if _, err := eng.Kill(ctx, wire.KillParams{Glob: "cap/a"}); err != nil {
		t.Fatal(err)
	}
	wait.For(t, 10*time.Second, "the third spawn admitted once the first was killed", func() bool {
		got, err := eng.Get(ctx, c.ID)
		return err == nil && got.State != wire.StateQueued
	})
	if n, shell := total(); n != 2 || shell != 2 {
		t.Fatalf("after a kill and an admission: total %d, shell %d, want 2 and 2", n, shell)
	}
	if _, err := eng.Kill(ctx, wire.KillParams{Glob: "cap/c"}); err != nil {
		t.Fatal(err)
	}
	if n, shell := total(); n != 1 || shell != 1 {
		t.Fatalf("after a second kill: total %d, shell %d, want 1 and 1 (b)", n, shell)
	}
	if _, err := eng.Kill(ctx, wire.KillParams{Glob: "cap/b"}); err != nil {
		t.Fatal(err)
	}
	if n, shell := total(); n != 0 || shell != 0 {
		t.Fatalf("all ended: total %d, shell %d, want 0", n, shell)
	}
}

// launchSpy is a launch hook that notes each call and whether its feature's Start had
// returned by then.
type launchSpy struct {
	started atomic.Bool // the feature's Start returned
	calls   atomic.Int32
	early   atomic.Int32 // calls before Start returned
}

func (s *launchSpy) BeforeLaunch(context.Context, wire.Agent, bool) error {
	s.calls.Add(1)
	if !s.started.Load() {
		s.early.Add(1)
	}
	return nil
}

// A spawn made while features are still starting (a feature's Start resumes its work
// and calls agent.run, as the run service does after a restart) is not launched at once:
// the launch would run the features' launch hooks (the sandbox's WrapLaunch) while
// their Start still sets them up, a data race -race found in TestRunSurvivesRestarts.
// It waits in the queue and admission's first pass, after every Start, launches it.
// Fails when agent.run admits at once before Start is done: the record read back in
// Start is starting, and the hook runs before Start returns.
func TestSpawnDuringStartWaitsForFeatures(t *testing.T) {
	home := t.TempDir()
	ctx := context.Background()
	eng := spawnEngine(t, home, func(st *store.Store) core.Store { return st })
	spy := &launchSpy{}
	var id string
	var inStart wire.State
	f := &feature{name: "resumer", start: func(ctx context.Context, k core.Kernel) error {
		k.AddLaunchHook(spy)
		a, err := k.Run(ctx, wire.RunParams{Path: "resume/early", Argv: []string{"sleep", "30"}, Cwd: home})
		if err != nil {
			return err
		}
		id = a.ID
		got, err := k.Get(ctx, a.ID)
		if err != nil {
			return err
		}
		inStart = got.State
		spy.started.Store(true)
		return nil
	}}
	if err := eng.Start(ctx, f); err != nil {
		t.Fatal(err)
	}
	if inStart != wire.StateQueued {
		t.Fatalf("a spawn made in a feature's Start was %s before Start returned, want queued (admitted after every Start)", inStart)
	}
	wait.For(t, 10*time.Second, "the early spawn working", func() bool {
		got, err := eng.Get(ctx, id)
		return err == nil && got.State == wire.StateWorking
	})
	if n, early := spy.calls.Load(), spy.early.Load(); n != 1 || early != 0 {
		t.Fatalf("launch hook called %d times, %d before the feature's Start returned; want once, after", n, early)
	}
}

package core_test

import (
	"context"
	"errors"
	"strings"
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

// clock is real time plus a jump the test controls.
type clock struct{ off atomic.Int64 }

func (c *clock) now() time.Time       { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *clock) jump(d time.Duration) { c.off.Add(int64(d)) }

type rig struct {
	eng   *core.Engine
	store *store.Store
	clk   *clock
	home  string
}

// newRig starts an engine on a real badger store and the embedded pty host.
func newRig(t *testing.T, home string, clk *clock, lim core.Limits, gc core.GCRules) *rig {
	t.Helper()
	return newRigOn(t, home, clk, lim, gc, pty.New(pty.Options{}))
}

// newRigOn is newRig on a host the test configures (a kill grace, say).
func newRigOn(t *testing.T, home string, clk *clock, lim core.Limits, gc core.GCRules, host core.Host) *rig {
	t.Helper()
	if home == "" {
		home = t.TempDir()
	}
	if clk == nil {
		clk = &clock{}
	}
	st, err := store.Open(home+"/store", nil)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := core.NewEngine(core.Options{Store: st, Host: host, Providers: []core.Provider{shell.New()},
		Home: home, Socket: home + "/orcr.sock", Limits: lim, GC: gc, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := &rig{eng: eng, store: st, clk: clk, home: home}
	t.Cleanup(r.stop)
	return r
}

func (r *rig) stop() {
	if r.eng == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r.eng.Close(ctx)
	r.store.Close()
	r.eng = nil
}

func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	wait.For(t, d, what, cond)
}

func TestQueueHoldsOnMemoryThenAdmitsInOrderWithinCap(t *testing.T) {
	r := newRig(t, "", nil, core.Limits{Global: 2, MinFreeMB: 100}, core.GCRules{})
	var free atomic.Int64 // 0 MB free: the guard holds everything
	r.eng.SetFreeMemoryFunc(func() int { return int(free.Load()) })
	ctx := context.Background()
	sub, err := r.eng.Subscribe(ctx, wire.SubscribeParams{})
	if err != nil {
		t.Fatal(err)
	}
	prios := []int{0, 2, 1, 0, 2, 1}
	var ids []string
	for i, p := range prios {
		a, err := r.eng.Run(ctx, wire.RunParams{Path: "q/j" + string(rune('a'+i)), Priority: p, Argv: []string{"sh", "-c", "sleep 0.3"}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, a.ID)
	}
	q, _ := r.eng.Queue(ctx)
	if len(q.Entries) != 6 || !strings.Contains(q.Entries[0].Waiting, "memory guard") {
		t.Fatalf("want 6 held entries, got %+v", q.Entries)
	}
	gotOrder := []string{}
	for _, e := range q.Entries {
		gotOrder = append(gotOrder, e.Path)
	}
	if want := "q/jb q/je q/jc q/jf q/ja q/jd"; strings.Join(gotOrder, " ") != want {
		t.Fatalf("queue order %v, want %s", gotOrder, want)
	}
	if a, _ := r.eng.Get(ctx, "q/jc"); a.State != wire.StateQueued || a.QueuePos != 3 {
		t.Fatalf("q/jc: state %s pos %d, want queued at 3", a.State, a.QueuePos)
	}
	// Killing a queued agent takes it out of the queue.
	if _, err := r.eng.Kill(ctx, wire.KillParams{Glob: "q/jf"}); err != nil {
		t.Fatal(err)
	}
	free.Store(1 << 20) // memory comes back: the guard's re-check admits
	var started []string
	live, maxLive := 0, 0
	ended := 0
	deadline := time.After(wait.Scale(30 * time.Second))
	for ended < 5 {
		select {
		case ev := <-sub:
			if ev.Event != wire.EventAgentState || ev.Agent == nil || ev.Agent.Path == "q/jf" {
				continue
			}
			switch {
			case ev.To == wire.StateStarting:
				started = append(started, ev.Agent.Path)
				live++
				maxLive = max(maxLive, live)
			case ev.To.Terminal():
				live--
				ended++
			}
		case <-deadline:
			t.Fatalf("not all ended; started %v", started)
		}
	}
	if want := "q/jb q/je q/jc q/ja q/jd"; strings.Join(started, " ") != want {
		t.Fatalf("admission order %v, want %s", started, want)
	}
	if maxLive > 2 {
		t.Fatalf("cap 2 exceeded: %d live at once", maxLive)
	}
}

func TestSetCapsValidatesAndApplies(t *testing.T) {
	r := newRig(t, "", nil, core.Limits{Global: 1}, core.GCRules{})
	ctx := context.Background()
	neg := -1
	if _, err := r.eng.SetCaps(ctx, wire.CapsParams{Global: &neg}); !errors.Is(err, wire.ErrInvalidParams) {
		t.Fatalf("negative global: %v", err)
	}
	if _, err := r.eng.SetCaps(ctx, wire.CapsParams{Provider: map[string]int{"claud": 3}}); !errors.Is(err, wire.ErrUnknownProvider) {
		t.Fatalf("unknown provider: %v", err)
	}
	if _, err := r.eng.SetCaps(ctx, wire.CapsParams{Provider: map[string]int{"shell": -2}}); !errors.Is(err, wire.ErrInvalidParams) {
		t.Fatalf("negative provider cap: %v", err)
	}
	for _, p := range []string{"a", "b", "c"} {
		if _, err := r.eng.Run(ctx, wire.RunParams{Path: "caps/" + p, Argv: []string{"sleep", "30"}}); err != nil {
			t.Fatal(err)
		}
	}
	running := func() int { q, _ := r.eng.Queue(ctx); return q.Total }
	waitFor(t, "one running under global cap 1", 10*time.Second, func() bool { return running() == 1 })
	three := 3
	q, err := r.eng.SetCaps(ctx, wire.CapsParams{Global: &three, Provider: map[string]int{"claude": 2}})
	if err != nil || q.Global != 3 || q.Caps["claude"] != 2 {
		t.Fatalf("set caps: %+v %v", q, err)
	}
	waitFor(t, "three running after raising the cap", 10*time.Second, func() bool { return running() == 3 })
	if l := r.eng.Limits(); l.Global != 3 || l.Provider["claude"] != 2 {
		t.Fatalf("limits %+v", l)
	}
}

func mustEvents(t *testing.T, r *rig) []wire.Event {
	t.Helper()
	evs, err := r.store.Events(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

package core

import (
	"fmt"
	"testing"
	"time"

	"orcr/core/wire"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func qrt(id, prov string, prio int, at time.Time) *agentRT {
	return &agentRT{a: wire.Agent{ID: id, Provider: prov, Priority: prio, CreatedAt: at, State: wire.StateQueued}}
}

func ids(rts []*agentRT) string {
	s := ""
	for _, rt := range rts {
		s += rt.a.ID + " "
	}
	return s
}

func TestQueueOrderPriorityThenArrival(t *testing.T) {
	var q admitQueue
	// Inserted out of order on purpose.
	for _, rt := range []*agentRT{
		qrt("c", "shell", 0, t0.Add(3*time.Second)),
		qrt("a", "shell", 0, t0.Add(1*time.Second)),
		qrt("hi", "shell", 2, t0.Add(9*time.Second)),
		qrt("b", "shell", 0, t0.Add(2*time.Second)),
		qrt("mid", "shell", 1, t0.Add(8*time.Second)),
	} {
		q.insert(entryOf(rt))
	}
	out, _, _, _ := q.pick(Limits{}, map[string]int{}, 0, -1, open)
	if got, want := ids(out), "hi mid a b c "; got != want {
		t.Fatalf("order %q, want %q", got, want)
	}
}

func TestQueueAgingLetsOldLowPriorityThrough(t *testing.T) {
	q := admitQueue{aging: 10 * time.Minute}
	old := qrt("old", "shell", 0, t0)
	fresh := qrt("fresh", "shell", 1, t0.Add(11*time.Minute)) // waited less than one step less
	recent := qrt("recent", "shell", 1, t0.Add(9*time.Minute))
	for _, rt := range []*agentRT{fresh, old, recent} {
		q.insert(entryOf(rt))
	}
	out, _, _, _ := q.pick(Limits{}, map[string]int{}, 0, -1, open)
	// recent (prio 1, 9 min after old) still beats old; fresh (11 min after) does not.
	if got, want := ids(out), "recent old fresh "; got != want {
		t.Fatalf("order %q, want %q", got, want)
	}
	// Turning aging off restores strict priority.
	q2 := admitQueue{aging: 10 * time.Minute}
	for _, rt := range []*agentRT{fresh, old, recent} {
		rt.a.State = wire.StateQueued
		q2.insert(entryOf(rt))
	}
	q2.setAging(0)
	out, _, _, _ = q2.pick(Limits{}, map[string]int{}, 0, -1, open)
	if got, want := ids(out), "recent fresh old "; got != want {
		t.Fatalf("no aging: order %q, want %q", got, want)
	}
}

func TestQueuePickCapsAndPositions(t *testing.T) {
	var q admitQueue
	var all []*agentRT
	for i := range 6 {
		prov := "claude"
		if i%2 == 1 {
			prov = "shell"
		}
		rt := qrt(fmt.Sprintf("q%d", i), prov, 0, t0.Add(time.Duration(i)*time.Second))
		all = append(all, rt)
		q.insert(entryOf(rt))
	}
	all[2].a.State = wire.StateKilled // killed while queued: dropped, never admitted
	lim := Limits{Global: 4, Provider: map[string]int{"claude": 1}}
	running := map[string]int{"shell": 1}
	out, dropped, _, _ := q.pick(lim, running, 1, -1, open)
	if got, want := ids(out), "q0 q1 q3 "; got != want {
		t.Fatalf("admitted %q, want %q", got, want)
	}
	if ids(dropped) != "q2 " {
		t.Fatalf("dropped %q", ids(dropped))
	}
	if all[4].a.QueuePos != 1 || all[5].a.QueuePos != 2 || len(q.items) != 2 {
		t.Fatalf("positions: q4=%d q5=%d len=%d", all[4].a.QueuePos, all[5].a.QueuePos, len(q.items))
	}
	// Global cap reached: nothing more, even for uncapped shell.
	out, _, _, _ = q.pick(lim, map[string]int{"claude": 1, "shell": 3}, 4, -1, open)
	if len(out) != 0 {
		t.Fatalf("admitted past the global cap: %q", ids(out))
	}
	// Held by the memory guard: nothing, positions kept.
	retry := time.Now().Add(time.Minute)
	shut := func(wire.Agent) (bool, string, time.Time) { return false, "held", retry }
	out, _, held, at := q.pick(Limits{}, map[string]int{}, 0, -1, shut)
	if len(out) != 0 || len(q.items) != 2 || held != "held" || !at.Equal(retry) {
		t.Fatalf("admitted while held: %q (held %q, retry %v)", ids(out), held, at)
	}
}

// A gate holds only the agents it refuses: the others go on, in order.
func TestQueueGateHoldsOnlyWhatItRefuses(t *testing.T) {
	q := &admitQueue{}
	for i, p := range []string{"claude", "shell", "claude", "codex"} {
		q.insert(entryOf(qrt(fmt.Sprint("a", i), p, 0, t0.Add(time.Duration(i)*time.Second))))
	}
	noClaude := func(a wire.Agent) (bool, string, time.Time) {
		if a.Provider == "claude" {
			return false, "claude window exhausted", time.Time{}
		}
		return true, "", time.Time{}
	}
	out, _, held, at := q.pick(Limits{}, map[string]int{}, 0, -1, noClaude)
	if ids(out) != "a1 a3 " || held != "claude window exhausted" || !at.IsZero() {
		t.Fatalf("picked %q held %q retry %v", ids(out), held, at)
	}
	if len(q.items) != 2 || q.items[0].rt.a.QueuePos != 1 || q.items[1].rt.a.QueuePos != 2 {
		t.Fatalf("held entries and positions: %+v", q.items)
	}
}

func open(wire.Agent) (bool, string, time.Time) { return true, "", time.Time{} }

// BenchmarkAdmitDecision measures one admission decision with 10,000 queued entries:
// one slot free, so one agent is picked and every position is rewritten. The picked
// entry is inserted again, off the clock, so the queue stays at 10,000.
func BenchmarkAdmitDecision(b *testing.B) {
	for _, tc := range []struct {
		name string
		lim  Limits
	}{
		{"global-cap", Limits{Global: 21}},
		// Every shell entry is blocked by its provider cap; the one claude entry is last:
		// the worst case walks the whole queue.
		{"provider-cap-walk", Limits{Global: 100, Provider: map[string]int{"shell": 20}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			q := admitQueue{aging: DefaultAging}
			for i := range 10_000 {
				prov := "shell"
				if i == 9_999 {
					prov = "claude"
				}
				q.insert(entryOf(qrt(fmt.Sprintf("%05d", i), prov, i%3, t0.Add(time.Duration(i)*time.Millisecond))))
			}
			b.ResetTimer()
			for b.Loop() {
				out, _, _, _ := q.pick(tc.lim, map[string]int{"shell": 20}, 20, -1, open)
				if len(out) != 1 {
					b.Fatalf("picked %d", len(out))
				}
				b.StopTimer()
				q.insert(entryOf(out[0]))
				b.StartTimer()
			}
		})
	}
}

// A pass admits no more than the free launch slots; the rest keep their places.
func TestQueuePickStopsAtTheLaunchSlots(t *testing.T) {
	var q admitQueue
	for i := range 5 {
		q.insert(entryOf(qrt(fmt.Sprint(i), "shell", 0, t0.Add(time.Duration(i)*time.Second))))
	}
	out, _, _, _ := q.pick(Limits{}, map[string]int{}, 0, 2, open)
	if got := ids(out); got != "0 1 " {
		t.Fatalf("admitted %q with 2 slots, want the first two", got)
	}
	if len(q.items) != 3 || q.items[0].rt.a.QueuePos != 1 {
		t.Fatalf("left %d queued, first at position %d; want 3 from position 1", len(q.items), q.items[0].rt.a.QueuePos)
	}
	if out, _, _, _ := q.pick(Limits{}, map[string]int{}, 0, 0, open); len(out) != 0 {
		t.Fatalf("admitted %q with no slot free", ids(out))
	}
}

// Default caps are memory ÷ footprint within their floor and ceiling, and say so; what the
// config sets wins and is marked config, 0 included (unlimited as written).
func TestDefaultLimitsFromMemory(t *testing.T) {
	l := DefaultLimits(8 << 10)
	if l.Global != 27 || l.Provider["claude"] != 16 || l.Provider["pi"] != 40 || l.MinFreeMB != 409 {
		t.Errorf("8 GiB: global %d claude %d pi %d min_free %d; want 27 16 40 409", l.Global, l.Provider["claude"], l.Provider["pi"], l.MinFreeMB)
	}
	if o := l.Origin["claude"]; o != "default: 8.0 GiB ÷ 500 MB, within [2, 64]" {
		t.Errorf("claude origin %q", o)
	}
	if _, ok := l.Provider["shell"]; ok {
		t.Error("shell got a provider cap; the global cap bounds it")
	}
	small, big := DefaultLimits(1<<10), DefaultLimits(1<<20)
	if small.Global != 4 || small.Provider["claude"] != 2 || small.MinFreeMB != 256 {
		t.Errorf("1 GiB: global %d claude %d min_free %d; want the floors 4 2 256", small.Global, small.Provider["claude"], small.MinFreeMB)
	}
	if big.Global != 64 || big.Provider["claude"] != 64 || big.MinFreeMB != 2048 {
		t.Errorf("1 TiB: global %d claude %d min_free %d; want the ceilings 64 64 2048", big.Global, big.Provider["claude"], big.MinFreeMB)
	}
	if u := DefaultLimits(-1); u.Global != 27 || u.Origin["global"] == "" {
		t.Errorf("unknown memory: global %d origin %q; want 8 GiB assumed", u.Global, u.Origin["global"])
	}
	o := l.Override(map[string]int{"global": 0, "claude": 3, "codex": 0}, OriginConfig)
	if o.Global != 0 || o.Provider["claude"] != 3 || o.Origin["global"] != "config" || o.Origin["claude"] != "config" {
		t.Errorf("override: global %d (%s) claude %d (%s)", o.Global, o.Origin["global"], o.Provider["claude"], o.Origin["claude"])
	}
	if _, ok := o.Provider["codex"]; ok {
		t.Error("codex = 0 in the config kept a cap")
	}
	if l.Global != 27 || l.Provider["claude"] != 16 {
		t.Error("Override changed the limits it was called on")
	}
}

package queue

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"orcr/core/wire"
	"orcr/testutil/wait"
)

// loadResult is what one load run measured.
type loadResult struct {
	wall, ideal time.Duration
	maxLive     int
}

// runLoad queues n fake agents (priority i%3) while admission is held, releases it,
// waits for all to exit, and checks the event log: every agent started once and exited
// 0, never more than capN live at once, admission in priority-then-arrival order.
func runLoad(t testing.TB, n, capN int, jobTime time.Duration) loadResult {
	// The memory guard holds admission until every agent is queued, so the order the
	// rule gives is known exactly and the clock starts at the release.
	s := newServer(t, fmt.Sprintf("[limits]\nglobal = %d\nmin_free_mb = 100000000\n[gc]\nidle_after = \"0\"\n", capN))
	s.start()
	defer s.stop()
	ctx := context.Background()
	cl := s.dial(ctx)
	defer cl.Close()
	starts := filepath.Join(s.home, "starts.log")
	ids := map[string]wire.Agent{}
	for i := range n {
		a, err := cl.Run(ctx, wire.RunParams{Path: fmt.Sprintf("load/j%04d", i), Priority: i % 3, Argv: job(starts, jobTime)})
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		ids[a.ID] = a
	}
	q, err := cl.Queue(ctx)
	if err != nil || len(q.Entries) != n || q.Total != 0 {
		t.Fatalf("before release: %d queued, %d running, err %v", len(q.Entries), q.Total, err)
	}
	zero := 0
	t0 := time.Now()
	if _, err := cl.SetCaps(ctx, wire.CapsParams{MinFreeMB: &zero}); err != nil {
		t.Fatal(err)
	}
	// Poll rather than agent.wait: a wait re-evaluates on every event, and this run
	// makes thousands. The wall time comes from the records' end instants.
	timeout := 30*time.Second + time.Duration(float64(n)/float64(capN)*10)*jobTime
	var ended []wire.Agent
	if !wait.Every(timeout, 250*time.Millisecond, func() bool {
		as, err := cl.List(ctx, wire.ListParams{Glob: "load/**"})
		if err != nil {
			t.Fatal(err)
		}
		ended = ended[:0]
		for _, a := range as {
			if a.State.Terminal() {
				ended = append(ended, a)
			}
		}
		return len(ended) == n
	}) {
		t.Fatalf("%d of %d agents ended within %s", len(ended), n, wait.Scale(timeout))
	}
	var last time.Time
	for _, a := range ended {
		if a.EndedAt != nil && a.EndedAt.After(last) {
			last = *a.EndedAt
		}
	}
	wall := last.Sub(t0)
	res := loadResult{wall: wall, ideal: time.Duration(math.Ceil(float64(n)/float64(capN))) * jobTime}

	evs := s.allEvents(ctx)
	phaseStats(t, evs)
	live := map[string]bool{}
	started := map[string]int{}
	var order []string
	for _, ev := range evs {
		if ev.Event != wire.EventAgentState || ev.Agent == nil {
			continue
		}
		id := ev.Agent.ID
		switch {
		case ev.To == wire.StateStarting:
			started[id]++
			order = append(order, id)
			live[id] = true
			res.maxLive = max(res.maxLive, len(live))
		case ev.To.Terminal():
			delete(live, id)
		}
	}
	if res.maxLive > capN {
		t.Errorf("cap %d exceeded: %d agents live at once (from the event log)", capN, res.maxLive)
	}
	for id, a := range ids {
		if started[id] != 1 {
			t.Errorf("%s started %d times", a.Path, started[id])
		}
	}
	for _, a := range ended {
		if a.State != wire.StateExited || a.ExitCode == nil || *a.ExitCode != 0 {
			t.Errorf("%s ended %s (exit %v, %s)", a.Path, a.State, a.ExitCode, a.StateReason)
		}
	}
	// The rule: higher priority first, then earlier arrival (aging is 10 min per level
	// and the whole batch arrives within seconds, so it does not reorder here).
	want := make([]wire.Agent, 0, n)
	for _, a := range ids {
		want = append(want, a)
	}
	sort.Slice(want, func(i, j int) bool {
		if want[i].Priority != want[j].Priority {
			return want[i].Priority > want[j].Priority
		}
		return want[i].CreatedAt.Before(want[j].CreatedAt)
	})
	for i := range min(len(order), len(want)) {
		if order[i] != want[i].ID {
			t.Errorf("admission #%d was %s, the rule says %s", i+1, ids[order[i]].Path, want[i].Path)
			break
		}
	}
	for id, c := range startsLog(t, starts) {
		if c != 1 {
			t.Errorf("agent %s ran %d times", id, c)
		}
	}
	return res
}

// TestQueueLoad is the CI-sized load run (ORCR_LONG=1: 500 agents, cap 20).
func TestQueueLoad(t *testing.T) {
	n, capN, job := 60, 10, 300*time.Millisecond
	if long() {
		n, capN, job = 500, 20, 200*time.Millisecond
	}
	r := runLoad(t, n, capN, job)
	t.Logf("%s host: %d agents, cap %d, job %s: wall %s, ideal %s (%.2fx), max live %d",
		hostName(), n, capN, job, r.wall.Round(time.Millisecond), r.ideal, r.wall.Seconds()/r.ideal.Seconds(), r.maxLive)
}

// BenchmarkQueue500 is the full-size run as a benchmark: 500 agents of 0.2 s, cap 20.
// Run with -benchtime=1x. x-ideal is wall time over ceil(500/20) × 0.2 s.
func BenchmarkQueue500(b *testing.B) {
	for b.Loop() {
		r := runLoad(b, 500, 20, 200*time.Millisecond)
		b.ReportMetric(r.wall.Seconds()/r.ideal.Seconds(), "x-ideal")
		b.ReportMetric(r.wall.Seconds(), "wall-s")
		b.ReportMetric(float64(r.maxLive), "max-live")
	}
}

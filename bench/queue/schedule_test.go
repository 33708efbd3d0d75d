package queue

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
	schedapi "orcr/schedule/api"
	"orcr/testutil/wait"
)

// TestScheduleKill9 kills the server at random moments while a 1-second schedule
// fires. Every start of the command must belong to a recorded run, no cadence instant
// may be served twice, and runs never overlap.
func TestScheduleKill9(t *testing.T) {
	kills := 3
	if long() {
		kills = 20
	}
	s := newServer(t, "")
	s.start()
	ctx := context.Background()
	marks := filepath.Join(s.home, "marks.log")
	cl := s.dial(ctx)
	_, err := cl.ScheduleAdd(ctx, schedapi.ScheduleAddParams{Name: "tick", EverySeconds: 1, Cwd: s.home,
		Env:     map[string]string{"PATH": os.Getenv("PATH")},
		Command: []string{"sh", "-c", "echo start >> " + marks + "; sleep 0.3"}})
	cl.Close()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 11))
	for range kills {
		time.Sleep(time.Duration(rng.Int64N(int64(1500*time.Millisecond))) + 200*time.Millisecond)
		s.kill9()
		s.start()
	}
	time.Sleep(1500 * time.Millisecond) // a clean run or two after the last restart
	cl = s.dial(ctx)
	defer cl.Close()
	// Every start in the marks file was claimed before it ran, so by the time the
	// history is read it is either recorded or the run in progress.
	b, _ := os.ReadFile(marks)
	startsN := strings.Count(string(b), "start")
	runs, err := cl.ScheduleRuns(ctx, "tick")
	if err != nil {
		t.Fatal(err)
	}
	ss, err := cl.Schedules(ctx)
	if err != nil || len(ss) != 1 {
		t.Fatalf("schedules: %v %v", ss, err)
	}
	inFlight := 0
	if lr := ss[0].LastRun; lr != nil && lr.EndedAt == nil {
		inFlight = 1
	}
	due := map[time.Time]int{}
	interrupted := 0
	for i, r := range runs {
		if r.DueAt != nil {
			due[*r.DueAt]++
			if due[*r.DueAt] > 1 {
				t.Errorf("cadence instant %s served twice", r.DueAt)
			}
		}
		if r.EndedAt == nil {
			t.Errorf("run %d has no end: %+v", i, r)
		}
		if strings.Contains(r.Error, "server stopped") {
			interrupted++
		} else if r.Error != "" || r.ExitCode == nil || *r.ExitCode != 0 {
			t.Errorf("run %d failed: %+v", i, r)
		}
		if i > 0 && runs[i-1].EndedAt != nil && r.StartedAt.Before(*runs[i-1].EndedAt) {
			t.Errorf("runs %d and %d overlap", i-1, i)
		}
	}
	// Each start of the command is a claimed run; a claim may also die before its
	// command started (a kill between the two), never the other way round.
	if startsN > len(runs)+inFlight {
		t.Errorf("the command started %d times but only %d runs were recorded", startsN, len(runs))
	}
	if len(runs)-startsN > kills {
		t.Errorf("%d runs recorded for %d starts with only %d kills", len(runs), startsN, kills)
	}
	t.Logf("%d kill -9 restarts: %d runs recorded (%d interrupted by a kill), %d command starts, 0 doubled", kills, len(runs), interrupted, startsN)
}

// TestScheduleFromInsideAnAgentMakesRootAgents: a schedule added by a program inside
// an agent's pane is owned by that agent, and the `orcr agent run` it fires makes a
// root agent at the path written in the command, not a child of the creator.
func TestScheduleFromInsideAnAgentMakesRootAgents(t *testing.T) {
	s := newServer(t, "")
	s.start()
	ctx := context.Background()
	cl := s.dial(ctx)
	defer cl.Close()
	add := s.bin + " schedule add nightly --cron '0 3 * * *' -- " + s.bin + " agent run made/by-schedule -- true"
	// Retried: a pane's program that calls orcr before the server has recorded the
	// pane's pid is refused (caller_refused) for that moment.
	retry := "for i in $(seq 100); do " + add + " > added.out 2>&1 && break; sleep 0.1; done; sleep 60"
	p, err := cl.Run(ctx, wire.RunParams{Path: "team/lead", Cwd: s.home, Argv: []string{"sh", "-c", retry}})
	if err != nil {
		t.Fatal(err)
	}
	var sc schedapi.Schedule
	if !wait.Until(20*time.Second, func() bool {
		ss, err := cl.Schedules(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(ss) == 1 {
			sc = ss[0]
		}
		return len(ss) == 1
	}) {
		b, _ := os.ReadFile(filepath.Join(s.home, "added.out"))
		t.Fatalf("the agent's schedule add did not land: %s", b)
	}
	if sc.Owner != "team/lead" || sc.Cwd != s.home || sc.Env["ORCR_ID"] != "" || sc.NextAt == nil {
		t.Fatalf("schedule %+v: want owner team/lead, cwd %s, no ORCR_ID", sc, s.home)
	}
	out, err := s.run("schedule", "run", "nightly")
	if err != nil {
		t.Fatalf("schedule run: %v: %s", err, out)
	}
	a, err := cl.Get(ctx, "made/by-schedule")
	if err != nil {
		t.Fatalf("the scheduled agent run: %v (%s)", err, out)
	}
	if a.ParentID != "" || a.Path != "made/by-schedule" || a.Cwd != s.home {
		t.Fatalf("scheduled agent: path %s parent %q cwd %s; want a root at made/by-schedule in %s", a.Path, a.ParentID, a.Cwd, s.home)
	}
	if _, err := cl.Kill(ctx, wire.KillParams{Glob: p.ID}); err != nil {
		t.Fatal(err)
	}
}

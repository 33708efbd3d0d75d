package schedule_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/core"
	"orcr/core/wire"
	"orcr/schedule"
	schedapi "orcr/schedule/api"
)

func addParams(name string, cmd ...string) schedapi.ScheduleAddParams {
	return schedapi.ScheduleAddParams{Name: name, EverySeconds: 3600, Command: cmd, Cwd: "/",
		Env: map[string]string{"PATH": os.Getenv("PATH")}}
}

func TestScheduleAddRejectsBadInput(t *testing.T) {
	r := newRig(t, "", nil)
	ctx := context.Background()
	if _, err := r.sched.ScheduleAdd(ctx, addParams("nightly", "true")); err != nil {
		t.Fatal(err)
	}
	_, err := r.sched.ScheduleAdd(ctx, addParams("nightly", "true"))
	if wire.CodeOf(err) != wire.CodeNameTaken {
		t.Fatalf("duplicate name: %v", err)
	}
	cases := map[string]func(p *schedapi.ScheduleAddParams){
		"hour field":       func(p *schedapi.ScheduleAddParams) { p.EverySeconds, p.Cron = 0, "0 25 * * *" },
		"day-of-week":      func(p *schedapi.ScheduleAddParams) { p.EverySeconds, p.Cron = 0, "0 3 * * mon-funday" },
		"want 5 fields":    func(p *schedapi.ScheduleAddParams) { p.EverySeconds, p.Cron = 0, "0 3 *" },
		"not both":         func(p *schedapi.ScheduleAddParams) { p.Cron = "0 3 * * *" },
		"give a cadence":   func(p *schedapi.ScheduleAddParams) { p.EverySeconds = 0 },
		"must be positive": func(p *schedapi.ScheduleAddParams) { p.EverySeconds = -5 },
		"schedule name":    func(p *schedapi.ScheduleAddParams) { p.Name = "Bad Name" },
		"needs a command":  func(p *schedapi.ScheduleAddParams) { p.Command = nil },
		"policy":           func(p *schedapi.ScheduleAddParams) { p.MissedPolicy = "catch-up" },
		"shorter than the 1s minimum: use @every 1s": func(p *schedapi.ScheduleAddParams) { p.EverySeconds, p.Cron = 0, "@every 0s" },
		`"@every 500ms" is shorter`:                  func(p *schedapi.ScheduleAddParams) { p.EverySeconds, p.Cron = 0, "@every 500ms" },
		"absolute":                                   func(p *schedapi.ScheduleAddParams) { p.Cwd = "rel/dir" },
	}
	for want, mod := range cases {
		p := addParams("x", "true")
		mod(&p)
		_, err := r.sched.ScheduleAdd(ctx, p)
		if !errors.Is(err, wire.ErrInvalidParams) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v", want, err)
		}
	}
	if ss, _ := r.sched.Schedules(ctx); len(ss) != 1 {
		t.Fatalf("bad input stored schedules: %+v", ss)
	}
}

func runsOf(t *testing.T, r *rig, name string) []schedapi.ScheduleRun {
	t.Helper()
	rs, err := r.sched.ScheduleRuns(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestScheduleRunsCommandWithCapturedEnvAndSurvivesMissingCommand(t *testing.T) {
	r := newRig(t, "", nil)
	ctx := context.Background()
	dir := t.TempDir()
	p := addParams("env", "sh", "-c", `echo "cwd=$PWD id=[$ORCR_ID] sock=$ORCR_SOCKET mine=$MINE"; exit 3`)
	p.Cwd, p.EverySeconds = dir, 1
	p.Env["MINE"], p.Env["ORCR_ID"], p.Env["ORCR_PARENT_ID"] = "yes", "0193-caller", "0193-parent"
	if _, err := r.sched.ScheduleAdd(ctx, p); err != nil {
		t.Fatal(err)
	}
	q := addParams("ghost", "no-such-command-orcr")
	q.EverySeconds = 1
	if _, err := r.sched.ScheduleAdd(ctx, q); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "two runs of each", 15*time.Second, func() bool {
		return len(runsOf(t, r, "env")) >= 2 && len(runsOf(t, r, "ghost")) >= 2
	})
	run := runsOf(t, r, "env")[0]
	want := "cwd=" + dir + " id=[] sock=" + r.home + "/orcr.sock mine=yes"
	if !strings.Contains(run.OutputTail, want) || run.ExitCode == nil || *run.ExitCode != 3 || run.Trigger != "schedule" || run.DueAt == nil {
		t.Fatalf("run %+v, want output %q and exit 3", run, want)
	}
	for _, g := range runsOf(t, r, "ghost") {
		if g.ExitCode != nil || !strings.Contains(g.Error, `"no-such-command-orcr" not found`) {
			t.Fatalf("missing command run: %+v", g)
		}
	}
	// A manual run waits and reports; removing the schedule drops it and its history.
	mr, err := r.sched.ScheduleRun(ctx, schedapi.ScheduleRunParams{Name: "env", Wait: true})
	if err != nil || mr.Trigger != "manual" || mr.EndedAt == nil || mr.ExitCode == nil {
		t.Fatalf("manual run: %+v %v", mr, err)
	}
	if err := r.sched.ScheduleRemove(ctx, "ghost"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.sched.ScheduleRuns(ctx, "ghost"); !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("removed schedule still answers: %v", err)
	}
}

func TestScheduleMissedPoliciesAfterRestart(t *testing.T) {
	home := t.TempDir()
	clk := &clock{}
	r := newRig(t, home, clk)
	ctx := context.Background()
	marks := filepath.Join(home, "marks")
	for name, policy := range map[string]string{"skipper": "skip", "catcher": "run-once"} {
		p := addParams(name, "sh", "-c", "echo "+name+" >> "+marks)
		p.MissedPolicy = policy
		if _, err := r.sched.ScheduleAdd(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	r.stop()
	// Down for three cadences.
	clk.jump(3*time.Hour + time.Minute)
	r2 := newRig(t, home, clk)
	waitFor(t, "the missed run of catcher", 10*time.Second, func() bool { return len(runsOf(t, r2, "catcher")) == 1 })
	if rs := runsOf(t, r2, "catcher"); rs[0].Trigger != "missed" || rs[0].DueAt == nil {
		t.Fatalf("catcher run %+v", rs[0])
	}
	ss, _ := r2.sched.Schedules(ctx)
	for _, s := range ss {
		if !s.NextAt.After(clk.now()) {
			t.Errorf("%s next at %s, not after now", s.Name, s.NextAt)
		}
	}
	b, _ := os.ReadFile(marks)
	if string(b) != "catcher\n" {
		t.Fatalf("marks %q: want exactly one catcher run and no skipper run", b)
	}
	if len(runsOf(t, r2, "skipper")) != 0 {
		t.Fatal("skipper ran")
	}
	found := false
	for _, ev := range mustEvents(t, r2) {
		if ev.Event == schedapi.EventScheduleMissed && ev.Data["name"] == "skipper" {
			found = true
		}
	}
	if !found {
		t.Fatal("no schedule.missed event for skipper")
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

// A run claimed before a crash is recorded as interrupted on restart, never run again.
func TestScheduleClaimLeftByCrashIsNotRerun(t *testing.T) {
	home := t.TempDir()
	r := newRig(t, home, nil)
	ctx := context.Background()
	marks := filepath.Join(home, "marks")
	if _, err := r.sched.ScheduleAdd(ctx, addParams("job", "sh", "-c", "echo ran >> "+marks)); err != nil {
		t.Fatal(err)
	}
	r.stop()
	// Write what the server stores just before it starts a run, as a crash leaves it.
	st := openStore(t, home)
	b := core.FeatureBuckets(st, schedule.Name)
	raw, err := b.Get(ctx, "schedules", "job")
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatal(err)
	}
	started := time.Now().UTC().Add(-time.Second)
	rec["claim"] = map[string]any{"startedAt": started, "trigger": "schedule"}
	raw, _ = json.Marshal(rec)
	if err := b.Put(ctx, "schedules", "job", raw); err != nil {
		t.Fatal(err)
	}
	st.Close()
	r2 := newRig(t, home, nil)
	rs := runsOf(t, r2, "job")
	if len(rs) != 1 || !strings.Contains(rs[0].Error, "server stopped during this run") || rs[0].EndedAt == nil {
		t.Fatalf("runs after restart: %+v", rs)
	}
	if _, err := os.Stat(marks); !os.IsNotExist(err) {
		t.Fatal("the claimed run was run again")
	}
}

// A schedule stored before the cadence checks existed (a cron with no date, an overflowing
// --every) is kept listed and removable at load but never fires; it used to fire in a loop.
func TestStoredScheduleThatCannotBeDueIsNotRun(t *testing.T) {
	home := t.TempDir()
	r := newRig(t, home, nil)
	ctx := context.Background()
	marks := filepath.Join(home, "marks")
	if _, err := r.sched.ScheduleAdd(ctx, addParams("template", "sh", "-c", "echo bad >> "+marks)); err != nil {
		t.Fatal(err)
	}
	tick := addParams("tick", "true")
	tick.EverySeconds = 1
	if _, err := r.sched.ScheduleAdd(ctx, tick); err != nil {
		t.Fatal(err)
	}
	r.stop()
	st := openStore(t, home)
	bk := core.FeatureBuckets(st, schedule.Name)
	raw, err := bk.Get(ctx, "schedules", "template")
	if err != nil {
		t.Fatal(err)
	}
	for name, set := range map[string]func(m map[string]any){
		"never":    func(m map[string]any) { m["cron"], m["everySeconds"] = "0 0 31 4 *", 0 },
		"overflow": func(m map[string]any) { m["everySeconds"] = 18446744075 },
	} {
		var rec map[string]any
		if err := json.Unmarshal(raw, &rec); err != nil {
			t.Fatal(err)
		}
		s := rec["schedule"].(map[string]any)
		s["name"], s["nextAt"] = name, "0001-01-01T00:00:00Z"
		set(s)
		b, _ := json.Marshal(rec)
		if err := bk.Put(ctx, "schedules", name, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := bk.Delete(ctx, "schedules", "template"); err != nil {
		t.Fatal(err)
	}
	st.Close()
	r2 := newRig(t, home, nil)
	waitFor(t, "tick to run twice", 10*time.Second, func() bool { return len(runsOf(t, r2, "tick")) >= 2 })
	for _, name := range []string{"never", "overflow"} {
		if rs := runsOf(t, r2, name); len(rs) != 0 {
			t.Errorf("%s ran %d times", name, len(rs))
		}
	}
	if _, err := os.Stat(marks); !os.IsNotExist(err) {
		t.Fatal("a schedule that can never be due ran")
	}
	ss, _ := r2.sched.Schedules(ctx)
	if len(ss) != 3 {
		t.Fatalf("schedules after load: %+v", ss)
	}
	for _, s := range ss {
		if s.Name != "tick" && s.NextAt != nil {
			t.Errorf("%s: next %v, want none", s.Name, s.NextAt)
		}
	}
	if err := r2.sched.ScheduleRemove(ctx, "never"); err != nil {
		t.Fatalf("remove: %v", err)
	}
}

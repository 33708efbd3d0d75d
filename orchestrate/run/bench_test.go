package run_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
	"orcr/orchestrate/run"
	runapi "orcr/orchestrate/run/api"
	"orcr/testutil/proc"
	"orcr/testutil/wait"
)

// instantCoder commits its milestone's file and reports done at once, stamping when
// it starts (stamps/<M>.start), the instant it calls `orcr run done` (<M>.done, a
// line appended per call) and when the call returned (<M>.called). Asked why its turn ended
// without done, or told its work is not committed (it took over a branch from a coder
// that was cut off), it commits what there is and reports done, as its brief says.
func instantCoder(orcr, stamps string) []string {
	return []string{"sh", "-c", `m=${PWD##*/}
date +%s%N > ` + stamps + `/"$m".start
echo "$m" > "$m.txt" && git add -A && git commit -qm "$m: work" && date +%s%N >> ` + stamps + `/"$m".done && ` + orcr + ` run done "$m" && date +%s%N >> ` + stamps + `/"$m".called
while read -r line; do
  case "$line" in
    *"turn ended without"*|*"uncommitted"*|*"no commits"*)
      echo "$m" > "$m.txt"; git add -A; git commit -qm "$m: work"; date +%s%N >> ` + stamps + `/"$m".done; ` + orcr + ` run done "$m" ;;
  esac
done`}
}

func chainPlan(n int, check string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Plan: chain\nrequest: r\ncheck: %s\n\n", check)
	for i := 1; i <= n; i++ {
		dep := "-"
		if i > 1 {
			dep = fmt.Sprintf("M%d", i-1)
		}
		fmt.Fprintf(&b, "## M%d · Step %d\ndepends: %s\ntier: small\n\n### Goal\nStep %d.\n\n### Acceptance\n- [ ] done\n\n", i, i, dep, i)
	}
	return b.String()
}

func readStamp(t testing.TB, path string) time.Time {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("stamp %s: %v", path, err)
	}
	// The first line: a coder told its turn ended without `run done` (a loaded
	// machine sees its turn end before the call arrives) reports again, appending.
	first, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	ns, err := strconv.ParseInt(first, 10, 64)
	if err != nil {
		t.Fatalf("stamp %s: %v", path, err)
	}
	return time.Unix(0, ns)
}

// TestRunOverheadTwentyMilestones runs a chain of 20 milestones with coders that
// finish instantly, acting as the lead: each milestone is dispatched the moment the
// run says it is ready. It reports the autopilot's reaction times and overhead:
//
//   - run done (the coder's call) → its check started
//   - merged (the advance of feature/NAME) → the next milestone's coder briefed
//   - wall time minus check time for the whole run, and store growth per milestone.
func TestRunOverheadTwentyMilestones(t *testing.T) {
	const n = 20
	g := newRig(t)
	ctx := context.Background()
	stamps := t.TempDir()
	// The check records when it starts and how long it ran.
	check := `date +%s%N > ` + stamps + `/${PWD##*/}.check-$$`
	g.approve("chain", chainPlan(n, check))
	evs, err := g.eng.Subscribe(ctx, wire.SubscribeParams{})
	if err != nil {
		t.Fatal(err)
	}
	storeBefore := dirSize(filepath.Join(g.home, "store"))
	procsBefore := run.GitProcs()
	cpuBefore := proc.SelfCPU(t)
	start := time.Now()
	if _, err := g.svc.RunStart(ctx, runapi.RunStartParams{Name: "chain", Coders: 2, Coder: "shell", CoderArgv: instantCoder(g.orcr, stamps), Lead: "none"}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.svc.RunDispatch(ctx, runapi.RunMilestonesParams{Name: "chain", Milestones: []string{"M1"}}); err != nil {
		t.Fatal(err)
	}
	// The lead's part: dispatch each milestone as soon as the run says it is ready.
	deadline := time.After(wait.Scale(3 * time.Minute))
	next := 2
	for next <= n {
		select {
		case ev := <-evs:
			if ev.Event == runapi.EventRun && ev.Data["kind"] == "advanced" {
				if _, err := g.svc.RunDispatch(ctx, runapi.RunMilestonesParams{Name: "chain", Milestones: []string{fmt.Sprintf("M%d", next)}}); err != nil {
					t.Fatal(err)
				}
				next++
			}
		case <-deadline:
			t.Fatalf("stuck at M%d: %+v", next, g.status("chain").Milestones)
		}
	}
	wait.For(t, time.Minute, "the run to finish", func() bool { return g.status("chain").State == "done" })
	wall := time.Since(start)
	procs := run.GitProcs() - procsBefore
	cpu := proc.SelfCPU(t) - cpuBefore

	es, err := g.svc.RunEvents(ctx, runapi.RunEventsParams{Name: "chain"})
	if err != nil {
		t.Fatal(err)
	}
	var doneToCheck, mergedToBrief []time.Duration
	var advancedAt time.Time
	for _, e := range es {
		switch {
		case e.Type == "fact" && e.Kind == "advanced":
			advancedAt = e.At
		case e.Type == "did" && e.Kind == "brief" && !advancedAt.IsZero():
			mergedToBrief = append(mergedToBrief, e.At.Sub(advancedAt))
			advancedAt = time.Time{}
		}
	}
	var starts []time.Time
	all, _ := filepath.Glob(filepath.Join(stamps, "*.check-*"))
	for _, f := range all {
		starts = append(starts, readStamp(t, f))
	}
	// Check time: from each check's start stamp to the entry recording its result.
	var checkTime time.Duration
	for _, e := range es {
		if e.Type != "fact" || (e.Kind != "checked" && e.Kind != "final-check") {
			continue
		}
		var last time.Time
		for _, st := range starts {
			if !st.After(e.At) && st.After(last) {
				last = st
			}
		}
		if !last.IsZero() {
			checkTime += e.At.Sub(last)
		}
	}
	for i := 1; i <= n; i++ {
		m := fmt.Sprintf("M%d", i)
		done := readStamp(t, filepath.Join(stamps, m+".done"))
		files, _ := filepath.Glob(filepath.Join(stamps, m+".check-*"))
		if len(files) == 0 {
			t.Fatalf("%s: no check ran", m)
		}
		first := readStamp(t, files[0])
		for _, f := range files {
			if s := readStamp(t, f); s.Before(first) {
				first = s
			}
		}
		doneToCheck = append(doneToCheck, first.Sub(done))
	}
	if os.Getenv("ORCR_RUN_TRACE") != "" {
		traceRun(t, es, stamps, start)
	}
	storeAfter := dirSize(filepath.Join(g.home, "store"))
	t.Logf("run done → check started: median %v, max %v (n=%d)", median(doneToCheck), maxOf(doneToCheck), len(doneToCheck))
	t.Logf("merged → next milestone's coder briefed: median %v, max %v (n=%d)", median(mergedToBrief), maxOf(mergedToBrief), len(mergedToBrief))
	t.Logf("git processes: %d for %d milestones (%.1f per milestone); server CPU %v", procs, n, float64(procs)/n, cpu.Round(time.Millisecond))
	t.Logf("20-milestone run: wall %v, check time %v, overhead %v; store growth %d KB (%d KB per milestone), %d log entries",
		wall.Round(time.Millisecond), checkTime.Round(time.Millisecond), (wall - checkTime).Round(time.Millisecond),
		(storeAfter-storeBefore)>>10, (storeAfter-storeBefore)>>10/n, len(es))
	// The times above are reported, not asserted (targets: done → check ≤ 100 ms,
	// merged → next ≤ 200 ms, overhead ≤ 5 s, store growth ≤ 64 KB per milestone): under
	// the race detector on a shared 2-core machine they move with the load, and the
	// store's size on disk moves with badger's flushes. What is asserted does not move
	// with the load: the git processes the autopilot starts per milestone (6.5–7.0 with the
	// run's start and final check; 19.4 before their git work was batched), and the CPU
	// time the server spent (about 5 s under -race).
	if perM := float64(procs) / n; perM > maxGitProcsPerMilestone {
		t.Errorf("%.1f git processes per milestone, want at most %.0f: a step reads refs or config it read already", perM, float64(maxGitProcsPerMilestone))
	}
	if cpu > 40*time.Second {
		t.Errorf("the server used %v of CPU for %d milestones: the autopilot is spinning somewhere", cpu, n)
	}
}

// maxGitProcsPerMilestone is the autopilot's git figure per milestone: brief (worktree
// add -b), done (status, counting against the feature as its upstream), merge-in
// (cat-file, merge), advance (commit-tree, update-ref), plus the run's start and final
// check spread over them: 6.5–7.0 measured (8.6 when the worktree was moved in place
// and the done counted commits with a rev-list of its own). The bound leaves one for
// the turns a loaded machine sees end while a coder builds (each looks at the work).
const maxGitProcsPerMilestone = 8

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}

func maxOf(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}

func dirSize(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

// traceRun logs the run's timeline (its log entries and the coders' and checks'
// stamps) in milliseconds from the run's start, to find where a milestone's time goes.
func traceRun(t *testing.T, es []runapi.RunEntry, stamps string, start time.Time) {
	type ev struct {
		at   time.Time
		what string
	}
	var evs []ev
	for _, e := range es {
		text, _, _ := strings.Cut(e.Text, "\n")
		evs = append(evs, ev{e.At, e.Type + " " + e.Kind + " " + e.M + " " + text})
	}
	files, _ := filepath.Glob(filepath.Join(stamps, "*"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, l := range strings.Fields(string(b)) {
			if ns, err := strconv.ParseInt(l, 10, 64); err == nil {
				evs = append(evs, ev{time.Unix(0, ns), "stamp " + filepath.Base(f)})
			}
		}
	}
	for i := range evs {
		for j := i + 1; j < len(evs); j++ {
			if evs[j].at.Before(evs[i].at) {
				evs[i], evs[j] = evs[j], evs[i]
			}
		}
	}
	var prev time.Time
	for _, e := range evs {
		d := time.Duration(0)
		if !prev.IsZero() {
			d = e.at.Sub(prev)
		}
		prev = e.at
		t.Logf("%8.1f ms  +%6.1f  %s", float64(e.at.Sub(start).Microseconds())/1000, float64(d.Microseconds())/1000, e.what)
	}
}

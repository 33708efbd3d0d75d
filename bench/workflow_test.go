package bench

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
	"orcr/testutil/serve"
	wfapi "orcr/workflow/api"
)

// writeUserWorkflow writes workflow name into the bench server's
// $XDG_CONFIG_HOME/orcr/workflows.
func writeUserWorkflow(b *testing.B, bn *serve.Bench, name, body string) {
	b.Helper()
	cfg := ""
	for _, kv := range bn.Env {
		if v, ok := strings.CutPrefix(kv, "XDG_CONFIG_HOME="); ok {
			cfg = v
		}
	}
	dir := filepath.Join(cfg, "orcr", "workflows")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".toml"), []byte(body), 0o600); err != nil {
		b.Fatal(err)
	}
}

// runWorkflow starts workflow name and waits for its run to end done.
func runWorkflow(b *testing.B, bn *serve.Bench, name string, poll time.Duration) wfapi.RunView {
	b.Helper()
	ctx := context.Background()
	c := bn.Client()
	r, err := wire.Call(ctx, c, wfapi.WorkflowRun, wfapi.RunParams{Workflow: name, Repo: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	v := r.Run
	for deadline := time.Now().Add(10 * time.Minute); v.State == "running"; {
		if time.Now().After(deadline) {
			b.Fatalf("workflow run %s still running", v.ID)
		}
		time.Sleep(poll)
		s, err := wire.Call(ctx, c, wfapi.WorkflowStatus, wfapi.StatusParams{Name: v.ID})
		if err != nil {
			b.Fatal(err)
		}
		v = s.Runs[0]
	}
	if v.State != "done" {
		b.Fatalf("workflow run %s %s: %s", v.ID, v.State, v.Why)
	}
	return v
}

// BenchmarkWorkflowStepOverhead measures what a workflow adds per step (DESIGN §18;
// goal ≤ 50 ms): a chain of 20 instant shell steps, each writing its typed output,
// each waiting for the one before, against the floor of the same 20 programs run
// one after another as plain agents (`agent.run`, then agent.get until it exited) on
// the same server. Reported: ms/step (workflow), ms/agent (the floor),
// overhead-ms/step (their difference) and gap-ms/step (from the log: a step's end
// seen to the next step's agent started, the workflow's own part).
func BenchmarkWorkflowStepOverhead(b *testing.B) {
	bn := serve.StartBench(b, "pty")
	const n = 20
	var w strings.Builder
	for i := range n {
		fmt.Fprintf(&w, "[[steps]]\nname = \"s%d\"\nprovider = \"shell\"\nargv = [\"sh\", \"-c\", \"echo '{\\\"n\\\": %d}' > \\\"$ORCR_OUTPUT\\\"\"]\noutputs = { n = \"int\" }\n", i, i)
		if i > 0 {
			fmt.Fprintf(&w, "after = [\"s%d\"]\n", i-1)
		}
	}
	writeUserWorkflow(b, bn, "chain", w.String())
	ctx := context.Background()
	c := bn.Client()
	var wf, floor, gap time.Duration
	for i := 0; i < b.N; i++ {
		began := time.Now()
		v := runWorkflow(b, bn, "chain", 2*time.Millisecond)
		wf += time.Since(began)
		gap += gaps(b, bn, v.ID)

		began = time.Now()
		for j := range n {
			a, err := c.Run(ctx, wire.RunParams{Path: fmt.Sprintf("floor/r%d/a%d", i, j), Argv: []string{"sh", "-c", "echo '{\"n\": 1}' > /dev/null"}})
			if err != nil {
				b.Fatal(err)
			}
			// Polled as the benchmark polls the workflow (agent.wait's own
			// cadence is coarser than a step).
			for !a.State.Terminal() {
				time.Sleep(2 * time.Millisecond)
				if a, err = c.Get(ctx, a.ID); err != nil {
					b.Fatal(err)
				}
			}
		}
		floor += time.Since(began)
	}
	per := float64(wf.Milliseconds()) / float64(b.N*n)
	fl := float64(floor.Milliseconds()) / float64(b.N*n)
	b.ReportMetric(per, "ms/step")
	b.ReportMetric(fl, "ms/agent")
	b.ReportMetric(per-fl, "overhead-ms/step")
	b.ReportMetric(float64(gap.Microseconds())/1000/float64(b.N*(n-1)), "gap-ms/step")
}

// gaps is the workflow's own time between steps, from its log: from the fact that
// one step's program ended (logged as soon as the server saw it) to the fact that the
// next step's agent was started.
func gaps(b *testing.B, bn *serve.Bench, id string) time.Duration {
	b.Helper()
	r, err := wire.Call(context.Background(), bn.Client(), wfapi.WorkflowEvents, wfapi.EventsParams{Name: id, Limit: 100000})
	if err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	var ended time.Time
	for _, e := range r.Entries {
		switch {
		case e.Type == "fact" && e.Kind == "ended":
			ended = e.At
		case e.Type == "fact" && e.Kind == "started" && !ended.IsZero():
			total += e.At.Sub(ended)
			ended = time.Time{}
		}
	}
	return total
}

// BenchmarkWorkflowForEach1000 runs a 1,000-item for_each with max_parallel 10 of
// instant shell steps and reports the server's RSS growth (goal ≤ +30 MB): resident
// memory after the run against before it, and the peak (VmHWM) against before. On
// the pty host the panes' terminals live in the server, so most of its growth is the
// 1,000 agents themselves (BenchmarkAgents1000Floor measures that floor); on tmux
// they live in tmux's process, and what remains is orcr's.
func BenchmarkWorkflowForEach1000(b *testing.B) {
	for _, host := range []string{"tmux", "pty"} {
		b.Run(host, func(b *testing.B) { forEach1000(b, host) })
	}
}

func forEach1000(b *testing.B, host string) {
	bn := serve.StartBench(b, host)
	body := `[[steps]]
name = "list"
provider = "shell"
argv = ["sh", "-c", "seq 0 999 | paste -sd, | sed 's/.*/{\"items\": [&]}/' > \"$ORCR_OUTPUT\""]
outputs = { items = "list" }
[[steps]]
name = "each"
provider = "shell"
for_each = "steps.list.items"
max_parallel = 10
argv = ["sh", "-c", "echo '{\"n\": {{item}}}' > \"$ORCR_OUTPUT\""]
outputs = { n = "int" }
`
	writeUserWorkflow(b, bn, "fan", body)
	pid := bn.PID()
	for i := 0; i < b.N; i++ {
		before, anon0, file0 := procKB(b, pid, "VmRSS"), procKB(b, pid, "RssAnon"), procKB(b, pid, "RssFile")
		bn.MemDump(b, 2*i+1) // with $ORCR_BENCH_MEMPROFILE: what the server holds before
		began := time.Now()
		v := runWorkflow(b, bn, "fan", 100*time.Millisecond)
		took := time.Since(began)
		after, peak := procKB(b, pid, "VmRSS"), procKB(b, pid, "VmHWM")
		// The growth's two parts, read beside after: the heap and the runtime's own
		// (anonymous), and the mapped files (badger's tables and logs).
		anon, file := procKB(b, pid, "RssAnon"), procKB(b, pid, "RssFile")
		if f := bn.MemDump(b, 2*i+2); f != "" {
			b.Logf("%s: memory before and after in %s", host, filepath.Dir(f))
		}
		if v.Steps[1].Done != 1000 {
			b.Fatalf("each: %d done", v.Steps[1].Done)
		}
		b.ReportMetric(took.Seconds(), "s/run")
		b.ReportMetric(float64(after-before)/1024, "rss-growth-MB")
		b.ReportMetric(float64(peak-before)/1024, "peak-growth-MB")
		b.ReportMetric(float64(anon-anon0)/1024, "anon-growth-MB")
		b.ReportMetric(float64(file-file0)/1024, "file-growth-MB")
		b.ReportMetric(float64(settledKB(b, pid)-before)/1024, "settled-growth-MB")
	}
}

// procKB reads a "Vm…:  N kB" line of /proc/PID/status.
func procKB(b *testing.B, pid int, field string) int {
	b.Helper()
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(string(st), "\n") {
		if rest, ok := strings.CutPrefix(l, field+":"); ok {
			n, _ := strconv.Atoi(strings.Fields(rest)[0])
			return n
		}
	}
	b.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// BenchmarkAgents1000Floor is the floor of BenchmarkWorkflowForEach1000: the same
// 1,000 instant shell programs run as plain agents, 10 at a time, on a fresh server,
// and the server's RSS growth. What a workflow adds is the difference.
func BenchmarkAgents1000Floor(b *testing.B) {
	for _, host := range []string{"tmux", "pty"} {
		b.Run(host, func(b *testing.B) { agents1000(b, host) })
	}
}

func agents1000(b *testing.B, host string) {
	bn := serve.StartBench(b, host)
	pid := bn.PID()
	ctx := context.Background()
	c := bn.Client()
	for i := 0; i < b.N; i++ {
		before := procKB(b, pid, "VmRSS")
		bn.MemDump(b, 2*i+1)
		began := time.Now()
		var live []wire.Agent
		for j := 0; j < 1000 || len(live) > 0; {
			for len(live) < 10 && j < 1000 {
				a, err := c.Run(ctx, wire.RunParams{Path: fmt.Sprintf("floor/r%d/a%d", i, j), Keep: true,
					Env:  map[string]string{"ORCR_OUTPUT": filepath.Join(b.TempDir(), "out.json")},
					Argv: []string{"sh", "-c", fmt.Sprintf(`echo '{"n": %d}' > "$ORCR_OUTPUT"`, j)}})
				if err != nil {
					b.Fatal(err)
				}
				live = append(live, a)
				j++
			}
			time.Sleep(5 * time.Millisecond)
			kept := live[:0]
			for _, a := range live {
				a, err := c.Get(ctx, a.ID)
				if err != nil {
					b.Fatal(err)
				}
				if !a.State.Terminal() {
					kept = append(kept, a)
				}
			}
			live = kept
		}
		took := time.Since(began)
		after, peak := procKB(b, pid, "VmRSS"), procKB(b, pid, "VmHWM")
		if f := bn.MemDump(b, 2*i+2); f != "" {
			b.Logf("%s: memory before and after in %s", host, filepath.Dir(f))
		}
		b.ReportMetric(took.Seconds(), "s/run")
		b.ReportMetric(float64(after-before)/1024, "rss-growth-MB")
		b.ReportMetric(float64(peak-before)/1024, "peak-growth-MB")
		b.ReportMetric(float64(settledKB(b, pid)-before)/1024, "settled-growth-MB")
	}
}

// settleFor is how long after a run settledKB reads the RSS: past the pty host's
// memory return (at most 5 s after the garbage it counts; 30 s when this was chosen) and badger's release of
// its pooled table builders (one every 2 s once writes stop).
const settleFor = 35 * time.Second

// settledKB is the server's RSS settleFor after a run: what it holds, without the
// garbage of the run's last seconds that the runtime has not handed back yet. (A
// reading at a fixed moment, not a wait for a condition: what it measures is the
// moment.)
func settledKB(b *testing.B, pid int) int {
	b.Helper()
	time.Sleep(settleFor)
	return procKB(b, pid, "VmRSS")
}

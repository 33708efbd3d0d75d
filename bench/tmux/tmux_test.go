// Package tmux holds the whole-program benchmark of orcr on its tmux host: `orcr agent
// run` × 100 as real processes against a real `orcr serve` on tmux, compared with a
// raw loop of 100 `tmux new-window` processes on a fresh tmux server in the same run.
// Run with: go test ./bench/tmux/ -run '^$' -bench . -benchtime 1x
package tmux

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"orcr/core/socket"
	"orcr/core/wire"
	"orcr/testutil/apiclient"
	"orcr/testutil/proc"
	"orcr/testutil/serve"
	"orcr/testutil/wait"
)

// server is a real `orcr serve` on the tmux host with its own ORCR_HOME.
type server struct{ *serve.Bench }

func startServer(b *testing.B) *server { return &server{serve.StartBench(b, "tmux")} }

// BenchmarkSpawn100VsRawTmux spawns 100 shell agents with `orcr agent run` (one
// process each, as a user's script would) and 100 windows with a raw loop of
// `tmux new-window` on a fresh server, and reports both and their ratio (target ≤ 1.5).
func BenchmarkSpawn100VsRawTmux(b *testing.B) {
	const n = 100
	var orcrTotal, rawTotal time.Duration
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		s := startServer(b)
		b.StartTimer()
		t0 := time.Now()
		for j := range n {
			cmd := exec.Command(s.Bin, "agent", "run", fmt.Sprintf("bench/r%d/a%d", i, j), "--", "sleep", "60")
			cmd.Env = s.Env
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("agent run: %v\n%s", err, out)
			}
		}
		// `agent run` returns once the agent is queued; the raw loop's windows exist
		// when it ends, so the clock stops when all of orcr's panes exist too.
		waitLaunched(b, s, fmt.Sprintf("bench/r%d/**", i), n)
		orcrTotal += time.Since(t0)
		b.StopTimer()

		// The timer runs again from the raw loop's start on: b.Loop requires it running.
		rawTotal += serve.RawTmuxSpawn(b, n, b.StartTimer)
	}
	reportSpawn(b, orcrTotal, rawTotal)
}

// fullScreen is 50 rows of 200 characters with no final newline: a full 200x50 screen.
func fullScreen() string {
	var b strings.Builder
	for i := range 50 {
		for j := range 200 {
			b.WriteByte(byte('A' + (i+j)%26))
		}
		if i < 49 {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// run runs one orcr command against s and returns its stdout.
func (s *server) run(b *testing.B, args ...string) string {
	b.Helper()
	cmd := exec.Command(s.Bin, args...)
	cmd.Env = s.Env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		b.Fatalf("orcr %v: %v\n%s", args, err, errb.String())
	}
	return out.String()
}

// BenchmarkAgentRead200x50 runs `orcr agent read` as a whole process on an agent whose
// 200x50 tmux screen is full of text and reports the median (target ≤ 5 ms).
func BenchmarkAgentRead200x50(b *testing.B) {
	s := startServer(b)
	s.run(b, "agent", "run", "bench/read", "--", "sh", "-c", `stty -echo; printf '%s' "$1"; exec cat`, "sh", fullScreen())
	wait.For(b, 15*time.Second, "the screen to fill", func() bool {
		return strings.Count(s.run(b, "agent", "read", "bench/read"), "\n") >= 49
	})
	// 100 reads per iteration, so even -benchtime 1x gives a median worth the name.
	var ds []time.Duration
	for b.Loop() {
		for range 100 {
			t0 := time.Now()
			out := s.run(b, "agent", "read", "bench/read")
			ds = append(ds, time.Since(t0))
			if len(out) < 200*50 {
				b.Fatalf("read printed %d bytes", len(out))
			}
		}
	}
	b.StopTimer()
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "median-ms")
}

// BenchmarkServerIdleCPU100 (ORCR_LONG=1) starts 100 idle shell agents through orcr on
// tmux and reports the CPU `orcr serve` used over 60 s (target ≤ 2 % of one core).
func BenchmarkServerIdleCPU100(b *testing.B) {
	if os.Getenv("ORCR_LONG") != "1" {
		b.Skip("set ORCR_LONG=1 to measure the server's idle CPU over 60 s")
	}
	for b.Loop() {
		s := startServer(b)
		for j := range 100 {
			s.run(b, "agent", "run", fmt.Sprintf("idle/a%d", j), "--", "sh", "-c", "echo idle; exec sleep 600")
		}
		// Let the starts settle before measuring.
		wait.For(b, 30*time.Second, "the last agent to start", func() bool {
			return strings.Contains(s.run(b, "agent", "read", "idle/a99"), "idle")
		})
		t0, c0 := time.Now(), proc.CPUTicks(b, s.PID())
		time.Sleep(60 * time.Second) // the measurement window itself, not a wait for a condition
		wall, c1 := time.Since(t0).Seconds(), proc.CPUTicks(b, s.PID())
		b.ReportMetric(100*float64(c1-c0)/100/wall, "cpu-%")
	}
}

// BenchmarkSpawn100APIVsRawTmux spawns 100 shell agents through the socket API (one
// client, as an orchestrator or the dashboard does) and waits until every pane exists,
// against a raw loop of `tmux new-window` on a fresh tmux server. Unlike
// BenchmarkSpawn100VsRawTmux it leaves out 100 CLI process start-ups and includes the
// whole launch (admission, tmux window, record), so it measures orcr's own overhead.
// server-cpu-ms is `orcr serve`'s CPU per spawn, which moves less with the machine's
// load than the wall times.
func BenchmarkSpawn100APIVsRawTmux(b *testing.B) {
	const n = 100
	var orcrTotal, rawTotal time.Duration
	var serverTicks int64
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		s := startServer(b)
		ctx := context.Background()
		c, err := apiclient.Dial(ctx, socket.SocketPath(s.Home), "")
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		c0 := proc.CPUTicks(b, s.PID())
		t0 := time.Now()
		for j := range n {
			if _, err := c.Run(ctx, wire.RunParams{Path: fmt.Sprintf("api/r%d/a%d", i, j), Argv: []string{"sleep", "60"}, Cwd: "/tmp"}); err != nil {
				b.Fatal(err)
			}
		}
		waitLaunched(b, s, fmt.Sprintf("api/r%d/**", i), n)
		orcrTotal += time.Since(t0)
		serverTicks += proc.CPUTicks(b, s.PID()) - c0
		b.StopTimer()
		c.Close()

		// The timer runs again from the raw loop's start on: b.Loop requires it running.
		rawTotal += serve.RawTmuxSpawn(b, n, b.StartTimer)
	}
	reportSpawn(b, orcrTotal, rawTotal)
	b.ReportMetric(float64(serverTicks)*10/float64(b.N*n), "server-cpu-ms")
}

// waitLaunched polls the server until n agents matching glob have a pane.
func waitLaunched(b *testing.B, s *server, glob string, n int) {
	b.Helper()
	ctx := context.Background()
	c, err := apiclient.Dial(ctx, socket.SocketPath(s.Home), "")
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	// A steady 10 ms poll: the spawn benchmarks time up to the last launch, and a
	// finer one (a list of 100 whole records each time) was most of the server's CPU
	// while the last launches ran; 10 ms is at most 0.5 % of a 2 s loop.
	launched := 0
	if !wait.Every(time.Minute, 10*time.Millisecond, func() bool {
		as, err := c.List(ctx, wire.ListParams{Glob: glob})
		if err != nil {
			b.Fatal(err)
		}
		launched = 0
		for _, a := range as {
			if a.PaneID != "" {
				launched++
			}
		}
		return launched == n
	}) {
		b.Fatalf("%d of %d agents launched within %s", launched, n, wait.Scale(time.Minute))
	}
}

func reportSpawn(b *testing.B, orcrTotal, rawTotal time.Duration) {
	runs := float64(b.N)
	b.ReportMetric(float64(orcrTotal.Milliseconds())/runs, "orcr-ms")
	b.ReportMetric(float64(rawTotal.Milliseconds())/runs, "raw-ms")
	b.ReportMetric(float64(orcrTotal)/float64(rawTotal), "ratio")
}

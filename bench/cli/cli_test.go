// Package cli holds the whole-program benchmarks of the command line's start-up: `orcr
// agent get` against minclient (the smallest Go program that makes the same request),
// and a spawn loop of `orcr agent run` ×100 against a raw loop of `tmux new-window`
// ×100, each pair interleaved in the same run so load on the machine hits both alike.
// Run with: go test ./bench/cli/ -run '^$' -bench . -benchtime 1x
package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"orcr/testutil/proc"
	"orcr/testutil/serve"
	"orcr/testutil/testbin"
	"orcr/testutil/wait"
)

// server is a real `orcr serve` on the tmux host with its own ORCR_HOME.
type server struct{ *serve.Bench }

func startServer(b *testing.B) *server { return &server{serve.StartBench(b, "tmux", "GODEBUG=")} }

// call makes one request on the server's socket with a hand-written client (the
// benchmark measures the CLI, so it does not lean on the socket package's client) and
// decodes the result into out.
func (s *server) call(b *testing.B, method string, params, out any) {
	b.Helper()
	conn, err := net.Dial("unix", s.Socket)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	req, err := json.Marshal(map[string]any{"id": "1", "method": method, "params": params})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Write(append(req, '\n')); err != nil {
		b.Fatal(err)
	}
	line, err := bufio.NewReader(conn).ReadBytes('\n')
	if err != nil {
		b.Fatal(err)
	}
	var resp struct {
		Result json.RawMessage  `json:"result"`
		Error  *json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(line, &resp); err != nil {
		b.Fatal(err)
	}
	if resp.Error != nil {
		b.Fatalf("%s: %s", method, *resp.Error)
	}
	if err := json.Unmarshal(resp.Result, out); err != nil {
		b.Fatal(err)
	}
}

// sample is what one process run cost.
type sample struct {
	wall   time.Duration
	cpu    time.Duration // user + system
	minflt int64         // minor page faults
}

// runProc runs bin with args and env and measures it; stdout must contain want.
func runProc(b *testing.B, env []string, want string, bin string, args ...string) sample {
	b.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	t0 := time.Now()
	err := cmd.Run()
	wall := time.Since(t0)
	if err != nil {
		b.Fatalf("%s %v: %v\n%s", bin, args, err, errb.String())
	}
	if !strings.Contains(out.String(), want) {
		b.Fatalf("%s %v printed %q, want %q in it", bin, args, out.String(), want)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return sample{wall: wall, cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), minflt: ru.Minflt}
}

// medians are the medians of each field of ss.
func medians(ss []sample) sample {
	pick := func(f func(sample) int64) int64 {
		vs := make([]int64, len(ss))
		for i, s := range ss {
			vs[i] = f(s)
		}
		slices.Sort(vs)
		return vs[len(vs)/2]
	}
	return sample{
		wall:   time.Duration(pick(func(s sample) int64 { return int64(s.wall) })),
		cpu:    time.Duration(pick(func(s sample) int64 { return int64(s.cpu) })),
		minflt: pick(func(s sample) int64 { return s.minflt }),
	}
}

// initTrace runs bin with GODEBUG=inittrace=1 and sums what its package
// initialisation cost: packages with init work, allocations, and clock time.
func initTrace(b *testing.B, env []string, bin string, args ...string) (pkgs, allocs int, ms float64) {
	b.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(slices.Clone(env), "GODEBUG=inittrace=1")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	_ = cmd.Run() // the trace is on stderr whatever the command's outcome
	// init orcr/core/socket @4.8 ms, 0.28 ms clock, 54008 bytes, 291 allocs
	for _, line := range strings.Split(errb.String(), "\n") {
		f := strings.Fields(line)
		if len(f) < 11 || f[0] != "init" {
			continue
		}
		pkgs++
		if v, err := strconv.ParseFloat(f[4], 64); err == nil {
			ms += v
		}
		if v, err := strconv.Atoi(f[9]); err == nil {
			allocs += v
		}
	}
	return pkgs, allocs, ms
}

// BenchmarkAgentGetVsMinimalClient runs `orcr agent get` and minclient on one agent,
// alternately, 100 times each per iteration, and reports the medians of wall time, CPU
// and page faults, their ratios (target: wall ≤ 2×), and what `orcr agent get`'s
// package initialisation costs (GODEBUG=inittrace=1).
func BenchmarkAgentGetVsMinimalClient(b *testing.B) {
	s := startServer(b)
	min := testbin.Build(b, "orcr/bench/cli/minclient")
	var run struct {
		ID string `json:"id"`
	}
	s.call(b, "agent.run", map[string]any{"path": "bench/get", "argv": []string{"sleep", "600"}, "cwd": "/tmp"}, &run)
	wait.For(b, 15*time.Second, "the agent to be recorded", func() bool {
		var got struct {
			Agents []json.RawMessage `json:"agents"`
		}
		s.call(b, "agent.list", map[string]any{"glob": "bench/get"}, &got)
		return len(got.Agents) == 1
	})
	var orcr, floor []sample
	for b.Loop() {
		for range 100 {
			orcr = append(orcr, runProc(b, s.Env, "bench/get", s.Bin, "agent", "get", "bench/get"))
			floor = append(floor, runProc(b, s.Env, "bench/get", min, "bench/get"))
		}
	}
	b.StopTimer()
	o, f := medians(orcr), medians(floor)
	b.ReportMetric(float64(o.wall.Microseconds())/1000, "orcr-ms")
	b.ReportMetric(float64(f.wall.Microseconds())/1000, "min-ms")
	b.ReportMetric(float64(o.wall)/float64(f.wall), "wall-ratio")
	b.ReportMetric(float64(o.cpu)/float64(max(f.cpu, time.Millisecond)), "cpu-ratio")
	b.ReportMetric(float64(o.minflt), "orcr-faults")
	b.ReportMetric(float64(f.minflt), "min-faults")
	pkgs, allocs, ms := initTrace(b, s.Env, s.Bin, "agent", "get", "bench/get")
	b.ReportMetric(float64(pkgs), "init-pkgs")
	b.ReportMetric(float64(allocs), "init-allocs")
	b.ReportMetric(ms, "init-ms")
}

// BenchmarkSpawn100VsRawTmuxInterleaved spawns 100 shell agents with `orcr agent run`
// (one process each, as a user's script would) and then 100 windows with a raw shell
// loop of `tmux new-window` on a fresh tmux server, three rounds per iteration, and
// reports the totals and their ratio (target ≤ 1.2). It reports the CPU the two loops
// took too, which moves less with the machine's load than their wall time: orcr's is
// its 100 processes, `orcr serve` and its tmux server over the loop; the raw loop's is
// the shell with its tmux clients and the tmux server. server-cpu-ms is the server's
// own per spawn. A third loop spawns the same 100 through minclient (`minclient run`,
// the smallest Go client of agent.run) on the same server: min-ratio is what any
// client that is one Go process per spawn can reach here, orcr's start-up aside.
func BenchmarkSpawn100VsRawTmuxInterleaved(b *testing.B) {
	const n, rounds = 100, 3
	s := startServer(b)
	min := testbin.Build(b, "orcr/bench/cli/minclient")
	tmuxPID := serve.TmuxServerPID(b, filepath.Join(s.Home, "tmux.sock"))
	var orcrTotal, rawTotal, minTotal time.Duration
	var orcrCPU, serverCPU, orcrTmuxCPU time.Duration
	var rawCPU, rawTmuxCPU int64
	var r int
	for b.Loop() {
		for range rounds {
			r++
			s0, t0c := proc.CPUTicks(b, s.PID()), proc.CPUTicks(b, tmuxPID)
			t0 := time.Now()
			for j := range n {
				orcrCPU += runProc(b, s.Env, "queued", s.Bin, "agent", "run", fmt.Sprintf("bench/r%d/a%d", r, j), "--", "sleep", "600").cpu
			}
			// `agent run` returns once the agent is queued; the raw loop's windows exist
			// when it ends, so the clock stops when all of orcr's panes exist too.
			s.waitLaunched(b, fmt.Sprintf("bench/r%d/**", r), n)
			orcrTotal += time.Since(t0)
			serverCPU += ticks(proc.CPUTicks(b, s.PID()) - s0)
			tc := ticks(proc.CPUTicks(b, tmuxPID) - t0c)
			orcrCPU += tc
			orcrTmuxCPU += tc
			// Stopped outside the clocks, as the raw loop's tmux server is a new one each
			// round: tmux 3.3a looks at every pane on each turn of its loop, so a window
			// made on a server holding 300 costs it 2.5–3× one made on an empty server
			// (spawn11, session 11), and the rounds compare like with like.
			var gone struct{}
			s.call(b, "agent.kill", map[string]any{"glob": fmt.Sprintf("bench/r%d/**", r)}, &gone)
			s.waitGone(b, fmt.Sprintf("bench/r%d/**", r))
			t0 = time.Now()
			for j := range n {
				runProc(b, s.Env, "queued", min, "run", fmt.Sprintf("bench/m%d/a%d", r, j), "sleep", "600")
			}
			s.waitLaunched(b, fmt.Sprintf("bench/m%d/**", r), n)
			minTotal += time.Since(t0)
			// Stopped again at once, outside the clocks.
			var killed struct{}
			s.call(b, "agent.kill", map[string]any{"glob": fmt.Sprintf("bench/m%d/**", r)}, &killed)
			s.waitGone(b, fmt.Sprintf("bench/m%d/**", r))
			raw := serve.RawTmuxSpawnCPU(b, n, nil)
			rawTotal += raw.Wall
			rawCPU += raw.CPU
			rawTmuxCPU += raw.TmuxCPU
		}
	}
	b.StopTimer()
	orcrCPU += serverCPU
	b.ReportMetric(float64(orcrTotal.Milliseconds())/float64(r), "orcr-ms")
	b.ReportMetric(float64(rawTotal.Milliseconds())/float64(r), "raw-ms")
	b.ReportMetric(float64(orcrTotal)/float64(rawTotal), "ratio")
	b.ReportMetric(float64(minTotal.Milliseconds())/float64(r), "min-ms")
	b.ReportMetric(float64(minTotal)/float64(rawTotal), "min-ratio")
	b.ReportMetric(float64(orcrCPU)/float64(ticks(rawCPU)), "cpu-ratio")
	b.ReportMetric(float64(serverCPU.Microseconds())/1000/float64(r*n), "server-cpu-ms")
	// The tmux servers' own CPU per window: orcr's (over orcr's loop, its launches
	// and notifications) and the raw loop's fresh server.
	b.ReportMetric(float64(orcrTmuxCPU.Microseconds())/1000/float64(r*n), "tmux-cpu-ms")
	b.ReportMetric(float64(ticks(rawTmuxCPU).Microseconds())/1000/float64(r*n), "raw-tmux-cpu-ms")
}

// ticks is a count of clock ticks (USER_HZ 100) as a duration.
func ticks(n int64) time.Duration { return time.Duration(n) * 10 * time.Millisecond }

// listAgent is what the waits below read of an agent.list row.
type listAgent struct {
	PaneID string `json:"paneId"`
	State  string `json:"state"`
}

// waitGone polls the server until no agent matching glob is live (a killed agent's
// window is closed by then).
func (s *server) waitGone(b *testing.B, glob string) {
	b.Helper()
	s.waitCount(b, glob, "still live a minute after their kill", func(a listAgent) bool {
		switch a.State {
		case "exited", "killed", "failed", "lost":
			return false
		}
		return true
	}, 0)
}

// waitLaunched polls the server until n agents matching glob have a pane.
func (s *server) waitLaunched(b *testing.B, glob string, n int) {
	b.Helper()
	s.waitCount(b, glob, fmt.Sprintf("of %d launched after a minute", n), func(a listAgent) bool { return a.PaneID != "" }, n)
}

// waitCount polls the server until exactly n agents matching glob satisfy counts, for
// up to a minute (then fails saying how many did, and what).
func (s *server) waitCount(b *testing.B, glob, what string, counts func(listAgent) bool, n int) {
	b.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var got struct {
			Agents []listAgent `json:"agents"`
		}
		s.call(b, "agent.list", map[string]any{"glob": glob}, &got)
		c := 0
		for _, a := range got.Agents {
			if counts(a) {
				c++
			}
		}
		if c == n {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d agents of %s %s", c, glob, what)
		}
		// A poll interval, bounded by the deadline above: 10 ms adds at most 0.1 % to a
		// loop of 10 s, where a 1 ms poll (a list of 100 whole records each time) was
		// most of the server's CPU while the last launches ran.
		time.Sleep(10 * time.Millisecond)
	}
}

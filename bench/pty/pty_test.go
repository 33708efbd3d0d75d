// Package pty holds the whole-program benchmark of orcr on its embedded pty host: 100
// idle agents on a real `orcr serve`, and what they cost the server in memory and CPU.
// Run with: ORCR_LONG=1 go test ./bench/pty/ -run '^$' -bench . -benchtime 1x
package pty

import (
	"context"
	"fmt"
	"os"
	"strconv"
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

// BenchmarkServerIdlePty100 (ORCR_LONG=1) starts 100 idle shell agents on the pty host
// and reports the server's resident memory and CPU over 60 s, in total and per agent
// against the server before the agents (targets: ≤ 0.2 MB and ≤ 0.01 % of a core per
// agent). The CPU is also given in clock ticks (10 ms of CPU each) over each window, which
// hold better than a percentage on a loaded machine: ticks0 with no agents, ticks over the
// minute after the agents print (their panes settle and pack then, once), and ticks2 over
// the minute after that, what 100 agents cost once settled.
func BenchmarkServerIdlePty100(b *testing.B) {
	if os.Getenv("ORCR_LONG") != "1" {
		b.Skip("set ORCR_LONG=1 to measure the server's idle CPU over 60 s")
	}
	const n = 100
	const window = 60 * time.Second // the measurement windows themselves, not waits for a condition
	for b.Loop() {
		srv := startServer(b)
		pid := srv.PID()
		rss0, cpu0, ticks0 := idle(b, pid, window)
		c, err := apiclient.Dial(context.Background(), socket.SocketPath(srv.Home), "")
		if err != nil {
			b.Fatal(err)
		}
		runAll(b, c, "idle", n, "echo idle; exec sleep 600", "idle")
		c.Close()
		rss1, cpu1, ticks1 := idle(b, pid, window)
		_, _, ticks2 := idle(b, pid, window)
		b.ReportMetric(rss0/1024, "rss0-MB")
		b.ReportMetric(rss1/1024, "rss-MB")
		b.ReportMetric((rss1-rss0)/1024/n, "MB/agent")
		b.ReportMetric(cpu0, "cpu0-%")
		b.ReportMetric(cpu1, "cpu-%")
		b.ReportMetric((cpu1-cpu0)/n, "cpu-%/agent")
		b.ReportMetric(ticks0, "ticks0")
		b.ReportMetric(ticks1, "ticks")
		b.ReportMetric(ticks2, "ticks2")
	}
}

// runAll starts n agents PREFIX/aJ running the shell script and waits until each
// screen shows marker.
func runAll(b *testing.B, c *apiclient.Client, prefix string, n int, script, marker string) {
	for j := range n {
		if _, err := c.Run(context.Background(), wire.RunParams{Path: fmt.Sprintf("%s/a%d", prefix, j),
			Argv: []string{"sh", "-c", script}, Cwd: "/tmp"}); err != nil {
			b.Fatal(err)
		}
	}
	wait.For(b, time.Minute, "every agent to print "+marker, func() bool {
		for j := range n {
			r, err := c.Read(context.Background(), wire.ReadParams{Target: fmt.Sprintf("%s/a%d", prefix, j)})
			if err != nil || !strings.Contains(r.Text, marker) {
				return false
			}
		}
		return true
	})
}

// idle measures pid over window: its resident size at the end (KiB), the CPU it used
// (% of one core) and the clock ticks that is.
func idle(b *testing.B, pid int, window time.Duration) (rssKB, cpu, ticks float64) {
	t0, c0 := time.Now(), proc.CPUTicks(b, pid)
	time.Sleep(window)
	wall, c1 := time.Since(t0).Seconds(), proc.CPUTicks(b, pid)
	return float64(procStatus(b, pid, "VmRSS:")), 100 * float64(c1-c0) / 100 / wall, float64(c1 - c0)
}

// startServer starts `orcr serve` on the pty host with its own home.
func startServer(b *testing.B) *serve.Server { return serve.StartBench(b, "pty", "GO").Server }

// procStatus is a kB field of /proc/pid/status.
func procStatus(b *testing.B, pid int, field string) int {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, field) {
			n, _ := strconv.Atoi(strings.Fields(line)[1])
			return n
		}
	}
	b.Fatal("no " + field)
	return 0
}

// BenchmarkServerSpawnFaults is what starting a printing agent costs `orcr serve` on
// the pty host: its minor page faults and CPU per spawn, over 40 agents that each print
// one styled line, then 40 more beside them. On a machine where a page fault is dear
// (~11 µs on the session-13 VM) the faults are most of the server's CPU per spawn.
// Run with: go test ./bench/pty/ -run '^$' -bench SpawnFaults -benchtime 1x -count 3
func BenchmarkServerSpawnFaults(b *testing.B) {
	const n = 40
	for b.Loop() {
		srv := startServer(b)
		pid := srv.PID()
		c, err := apiclient.Dial(context.Background(), socket.SocketPath(srv.Home), "")
		if err != nil {
			b.Fatal(err)
		}
		for round, name := range []string{"first", "more"} {
			f0, t0 := proc.MinorFaults(b, pid), proc.CPUTicks(b, pid)
			runAll(b, c, name, n, `printf '\033[1mhello\033[0m agent\n'; exec sleep 600`, "hello agent")
			f1, t1 := proc.MinorFaults(b, pid), proc.CPUTicks(b, pid)
			suffix := []string{"", "2"}[round]
			b.ReportMetric(float64(f1-f0)/n, "faults/spawn"+suffix)
			b.ReportMetric(float64(t1-t0)*10/n, "cpu-ms/spawn"+suffix)
		}
		c.Close()
		srv.Stop()
	}
}

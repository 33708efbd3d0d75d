package e2e

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"orcr/testutil/serve"
)

// cpuTicks is a process's user+system CPU time in clock ticks (/proc/PID/stat).
func cpuTicks(pid string) (int64, error) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, err
	}
	// fields after the ")" closing the command name: state is field 3; utime 14, stime 15
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return u + st, nil
}

// BenchmarkDashboardCPU measures the dashboard process's CPU (as % of one core) while
// 100 agents each print a line every 2 s (50 screen changes a second; the screen
// hysteresis keeps them working rather than flipping to idle between lines, which once
// made 50 state events a second). The server runs as its own `orcr serve`, so the
// figure is the dashboard's alone: event handling, preview reads, rendering.
// Run it with: go test ./ui/e2e -run XXX -bench DashboardCPU -benchtime 1x
func BenchmarkDashboardCPU(b *testing.B) {
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		pct := measureCPU(b, 100, 10*time.Second)
		b.ReportMetric(pct, "cpu%")
	}
}

func measureCPU(b *testing.B, agents int, window time.Duration) float64 {
	r := newRigTB(b)
	srv := serve.Start(b, serve.Options{Bin: r.bin, Env: r.env, Grace: 15 * time.Second})
	defer srv.Stop()
	for i := 0; i < agents; i++ {
		r.mustOrcr("agent", "run", fmt.Sprintf("load/g%d/a%03d", i%10, i), "--", "sh", "-c", "while :; do echo tick; sleep 2; done")
	}
	r.start()
	r.waitText(30*time.Second, "connected", fmt.Sprintf("agents %d", agents))
	// Select a busy agent so the preview refreshes too, as an operator's would.
	r.keys("Down", "Down", "Down")
	pid := strconv.Itoa(r.dashboardPID())
	t0, err := cpuTicks(pid)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	time.Sleep(window) // a measurement window, not a wait for a condition
	t1, err := cpuTicks(pid)
	if err != nil {
		b.Fatal(err)
	}
	wall := time.Since(start).Seconds()
	const clkTck = 100 // USER_HZ on Linux
	pct := float64(t1-t0) / clkTck / wall * 100
	b.Logf("dashboard CPU %.1f%% of one core over %.1fs with %d agents ticking", pct, wall, agents)
	r.keys("q")
	return pct
}

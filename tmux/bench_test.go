package tmux

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"orcr/core"
	"orcr/testutil/wait"
)

// fullScreen is 50 rows of 200 characters: the last row has no newline, so nothing
// scrolls and the whole 200x50 screen is text.
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

// BenchmarkRead200x50 measures Read of a 200x50 screen full of text; it reports the
// median besides the mean.
func BenchmarkRead200x50(b *testing.B) {
	h := newTestHost(b, testSocket(b))
	defer h.Shutdown(context.Background())
	info := launch(b, h, "sh", "-c", `stty -echo; printf '%s' "$1"; exec cat`, "sh", fullScreen())
	var s core.Screen
	waitFor(b, "a full screen", func() bool {
		s, _ = h.Read(ctxT(b), info.ID, core.ReadOpts{})
		return len(strings.Split(s.Text, "\n")) == 50
	})
	ctx := context.Background()
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		s, err := h.Read(ctx, info.ID, core.ReadOpts{})
		durs = append(durs, time.Since(t0))
		if err != nil || len(s.Text) < 200*50 {
			b.Fatalf("read: %v (%d bytes)", err, len(s.Text))
		}
	}
	b.StopTimer()
	reportMedian(b, durs)
}

func reportMedian(b *testing.B, durs []time.Duration) {
	if len(durs) == 0 {
		return
	}
	slices.Sort(durs)
	b.ReportMetric(float64(durs[len(durs)/2].Microseconds())/1000, "median-ms")
}

// BenchmarkLaunch measures Launch and Close of `sleep 60`.
func BenchmarkLaunch(b *testing.B) {
	h := newTestHost(b, testSocket(b))
	defer h.Shutdown(context.Background())
	ctx := context.Background()
	spec := core.LaunchSpec{Name: "bench/launch", Argv: []string{"sleep", "60"}, Env: baseEnv(), Cwd: os.TempDir()}
	for b.Loop() {
		info, err := h.Launch(ctx, spec)
		if err != nil {
			b.Fatal(err)
		}
		if err := h.Close(ctx, info.ID); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSpawn100 compares spawning 100 windows through Host.Launch with a raw shell
// loop of 100 `tmux -S sock new-window -d sleep 60`, each on a fresh server, in the same
// run. It reports both times and their ratio (host/raw).
func BenchmarkSpawn100(b *testing.B) {
	const n = 100
	var hostTotal, rawTotal time.Duration
	for b.Loop() {
		b.StopTimer()
		// Host: a fresh server, then 100 launches.
		h := newTestHost(b, testSocket(b))
		ctx := context.Background()
		spec := core.LaunchSpec{Argv: []string{"sleep", "60"}, Env: baseEnv(), Cwd: os.TempDir()}
		b.StartTimer()
		t0 := time.Now()
		for i := range n {
			spec.Name = "bench/a" + strconv.Itoa(i)
			if _, err := h.Launch(ctx, spec); err != nil {
				b.Fatal(err)
			}
		}
		hostTotal += time.Since(t0)
		b.StopTimer()
		_ = h.Shutdown(ctx)

		// Raw: a fresh server started the same way, then the shell loop.
		sock := testSocket(b)
		start := exec.Command("tmux", "-S", sock, "-f", "/dev/null", "new-session", "-d", "-s", "orcr", "tail", "-f", "/dev/null")
		start.Env = clientEnv()
		if out, err := start.CombinedOutput(); err != nil {
			b.Fatalf("start raw server: %v %s", err, out)
		}
		loop := exec.Command("sh", "-c", fmt.Sprintf(`i=0; while [ $i -lt %d ]; do tmux -S "$1" new-window -d sleep 60 || exit 1; i=$((i+1)); done`, n), "sh", sock)
		loop.Env = append(clientEnv(), "PATH="+os.Getenv("PATH"))
		b.StartTimer()
		t0 = time.Now()
		if out, err := loop.CombinedOutput(); err != nil {
			b.Fatalf("raw loop: %v %s", err, out)
		}
		rawTotal += time.Since(t0)
	}
	runs := float64(b.N)
	b.ReportMetric(float64(hostTotal.Milliseconds())/runs, "host-ms")
	b.ReportMetric(float64(rawTotal.Milliseconds())/runs, "raw-ms")
	b.ReportMetric(float64(hostTotal)/float64(rawTotal), "ratio")
}

// TestIdleCPU100 (ORCR_LONG=1) keeps 100 idle panes for 60 s and reports the CPU this
// process (the host) and the tmux server used, as a percentage of one core.
func TestIdleCPU100(t *testing.T) {
	if os.Getenv("ORCR_LONG") != "1" {
		t.Skip("set ORCR_LONG=1 to measure idle CPU over 60 s")
	}
	sock := testSocket(t)
	h := newTestHost(t, sock)
	defer h.Shutdown(context.Background())
	for i := range 100 {
		info, err := h.Launch(ctxT(t), core.LaunchSpec{Name: fmt.Sprintf("idle/a%d", i),
			Argv: []string{"sh", "-c", "echo idle; exec sleep 600"}, Env: baseEnv(), Cwd: os.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		waitText(t, h, info.ID, "idle")
	}
	server := serverPID(t, sock)
	self0, srv0 := cpuTicks(t, "self"), cpuTicks(t, strconv.Itoa(server))
	t0 := time.Now()
	deadline := time.After(wait.Scale(60 * time.Second))
	events := 0
loop:
	for {
		select {
		case <-h.Events():
			events++
		case <-deadline:
			break loop
		}
	}
	wall := time.Since(t0).Seconds()
	self1, srv1 := cpuTicks(t, "self"), cpuTicks(t, strconv.Itoa(server))
	const hz = 100.0 // USER_HZ on Linux
	t.Logf("host CPU: %.3f%% of one core; tmux server CPU: %.3f%%; %d events in %.0f s",
		100*float64(self1-self0)/hz/wall, 100*float64(srv1-srv0)/hz/wall, events, wall)
	if pct := 100 * float64(self1-self0) / hz / wall; pct > 2 {
		t.Errorf("host used %.2f%% of one core with 100 idle panes, want ≤ 2%%", pct)
	}
}

// cpuTicks is utime+stime of /proc/<pid>/stat in clock ticks.
func cpuTicks(t testing.TB, pid string) int64 {
	t.Helper()
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return utime + stime
}

// serverPID asks the server for its pid.
func serverPID(t testing.TB, sock string) int {
	t.Helper()
	cmd := exec.Command("tmux", "-S", sock, "display-message", "-p", "#{pid}")
	cmd.Env = clientEnv()
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// TestBusyCPU50 (ORCR_LONG=1) runs 50 panes that each redraw a line every 20 ms for
// 20 s, like busy TUIs, and reports the CPU the host and the tmux server used.
func TestBusyCPU50(t *testing.T) {
	if os.Getenv("ORCR_LONG") != "1" {
		t.Skip("set ORCR_LONG=1 to measure CPU with busy panes")
	}
	sock := testSocket(t)
	h := newTestHost(t, sock)
	defer h.Shutdown(context.Background())
	script := `i=0; while :; do printf '\r\033[2Kworking %d %s' $i "$1"; i=$((i+1)); sleep 0.02; done`
	for i := range 50 {
		if _, err := h.Launch(ctxT(t), core.LaunchSpec{Name: fmt.Sprintf("busy/a%d", i),
			Argv: []string{"sh", "-c", script, "sh", strings.Repeat("=", 100)}, Env: baseEnv(), Cwd: os.TempDir()}); err != nil {
			t.Fatal(err)
		}
	}
	server := serverPID(t, sock)
	self0, srv0 := cpuTicks(t, "self"), cpuTicks(t, strconv.Itoa(server))
	t0 := time.Now()
	deadline := time.After(wait.Scale(20 * time.Second))
	events := 0
loop:
	for {
		select {
		case <-h.Events():
			events++
		case <-deadline:
			break loop
		}
	}
	wall := time.Since(t0).Seconds()
	self1, srv1 := cpuTicks(t, "self"), cpuTicks(t, strconv.Itoa(server))
	t.Logf("host CPU: %.2f%% of one core; tmux server CPU: %.2f%%; %d output events in %.0f s (%.1f/s per pane)",
		100*float64(self1-self0)/100/wall, 100*float64(srv1-srv0)/100/wall, events, wall, float64(events)/wall/50)
}

// floodFile writes size bytes of plain text lines, 10 to 290 columns, so some wrap.
func floodFile(b *testing.B, size int) string {
	b.Helper()
	var sb strings.Builder
	sb.Grow(size + 512)
	for i := 0; sb.Len() < size; i++ {
		for n := 10 + (i*37)%280; n > 0; n-- {
			sb.WriteByte(byte('a' + (i+n)%26))
		}
		sb.WriteByte('\n')
	}
	path := filepath.Join(b.TempDir(), "flood.txt")
	if err := os.WriteFile(path, []byte(sb.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	return path
}

// childTicks is the CPU of this process's waited-for children, in clock ticks.
func childTicks() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	return (ru.Utime.Nano() + ru.Stime.Nano()) / 1e7
}

// floodScript prints the file and then wakes `tmux wait-for orcr-flood` on the pane's
// own server (tmux sets TMUX in the pane), so both runs end the same way.
const floodScript = `cat "$1"; tmux wait-for -S orcr-flood; exec sleep 600`

// waitFlood blocks until the pane on sock has printed everything.
func waitFlood(b *testing.B, sock string) {
	b.Helper()
	cmd := exec.Command("tmux", "-S", sock, "wait-for", "orcr-flood")
	cmd.Env = clientEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("wait for the flood: %v %s", err, out)
	}
}

// readEvery reads the screen every 10 ms with read until stop is closed.
func readEvery(stop <-chan struct{}, read func()) chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				read()
			}
		}
	}()
	return done
}

// BenchmarkFlood50MBVsRawTmux prints 50 MB into one pane through the host and into one
// window of a raw tmux server with no client attached, and reports both wall times and
// the CPU used and the ratios host/raw. CPU is the tmux server's plus the finished
// child processes' (the raw run's capture-pane readers, both runs' wait-for), and for
// the host also this process's and the control client's. The reads-10ms variant reads
// the screen every 10 ms during the flood: Host.Read, or a `tmux capture-pane` process. Run alone:
// go test ./tmux -run '^$' -bench Flood50MB -benchtime 1x
func BenchmarkFlood50MBVsRawTmux(b *testing.B) {
	for _, reads := range []bool{false, true} {
		name := "no-reads"
		if reads {
			name = "reads-10ms"
		}
		b.Run(name, func(b *testing.B) { benchFlood(b, reads) })
	}
}

func benchFlood(b *testing.B, reads bool) {
	path := floodFile(b, 50<<20)
	var hostWall, rawWall time.Duration
	var hostCPU, rawCPU int64
	for b.Loop() {
		// Host: a fresh server and the control client.
		sock := testSocket(b)
		h := newTestHost(b, sock)
		ctx := context.Background()
		h.mu.Lock()
		client := strconv.Itoa(h.c.cmd.Process.Pid)
		h.mu.Unlock()
		server := strconv.Itoa(serverPID(b, sock))
		drained := make(chan struct{})
		go func() {
			defer close(drained)
			for range h.Events() {
			}
		}()
		c0 := cpuTicks(b, "self") + cpuTicks(b, client) + cpuTicks(b, server) + childTicks()
		t0 := time.Now()
		info, err := h.Launch(ctx, core.LaunchSpec{Name: "bench/flood", Argv: []string{"sh", "-c", floodScript, "sh", path}, Env: baseEnv(), Cwd: os.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		stop := make(chan struct{})
		var done chan struct{}
		if reads {
			done = readEvery(stop, func() { _, _ = h.Read(ctx, info.ID, core.ReadOpts{}) })
		}
		waitFlood(b, sock)
		close(stop)
		if done != nil {
			<-done
		}
		hostWall += time.Since(t0)
		hostCPU += cpuTicks(b, "self") + cpuTicks(b, client) + cpuTicks(b, server) + childTicks() - c0
		_ = h.Shutdown(ctx)
		<-drained

		// Raw: a fresh server started the same way; reads are capture-pane processes.
		sock = testSocket(b)
		start := exec.Command("tmux", "-S", sock, "-f", "/dev/null", "new-session", "-d", "-s", "orcr", "-x", "200", "-y", "50", "tail", "-f", "/dev/null")
		start.Env = clientEnv()
		if out, err := start.CombinedOutput(); err != nil {
			b.Fatalf("start raw server: %v %s", err, out)
		}
		server = strconv.Itoa(serverPID(b, sock))
		c0 = cpuTicks(b, server) + childTicks()
		t0 = time.Now()
		nw := exec.Command("tmux", "-S", sock, "new-window", "-d", "-P", "-F", "#{pane_id}", "sh", "-c", floodScript, "sh", path)
		nw.Env = append(clientEnv(), "PATH="+os.Getenv("PATH"))
		out, err := nw.Output()
		if err != nil {
			b.Fatalf("raw new-window: %v", err)
		}
		pane := strings.TrimSpace(string(out))
		stop = make(chan struct{})
		done = nil
		if reads {
			done = readEvery(stop, func() {
				cmd := exec.Command("tmux", "-S", sock, "capture-pane", "-p", "-t", pane)
				cmd.Env = clientEnv()
				_ = cmd.Run()
			})
		}
		waitFlood(b, sock)
		close(stop)
		if done != nil {
			<-done
		}
		rawWall += time.Since(t0)
		rawCPU += cpuTicks(b, server) + childTicks() - c0
	}
	n := float64(b.N)
	b.ReportMetric(hostWall.Seconds()/n, "host-s")
	b.ReportMetric(rawWall.Seconds()/n, "raw-s")
	b.ReportMetric(float64(hostWall)/float64(rawWall), "wall-ratio")
	b.ReportMetric(float64(hostCPU)/100/n, "host-cpu-s")
	b.ReportMetric(float64(rawCPU)/100/n, "raw-cpu-s")
	b.ReportMetric(float64(hostCPU)/float64(max(rawCPU, 1)), "cpu-ratio")
}

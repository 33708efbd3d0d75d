package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"orcr/testutil/testbin"
	"orcr/testutil/wait"
)

// BenchmarkDashboardFirstFrame1000 launches the real `orcr` dashboard (hosting the
// server in-process) in a tmux pane on a home holding 1,000 agents, and reports the
// time from launch until the tree shows all of them (target ≤ 150 ms). tmux's own
// capture is polled every few milliseconds, so the figure includes that resolution.
func BenchmarkDashboardFirstFrame1000(b *testing.B) {
	if _, err := exec.LookPath("tmux"); err != nil {
		b.Fatalf("tmux is required: %v", err)
	}
	bin := testbin.Build(b, "orcr")
	var ds []time.Duration
	for i := 0; i < b.N; i++ {
		for j := 0; j < 5; j++ {
			ds = append(ds, firstFrame(b, bin))
		}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "median-ms")
	b.ReportMetric(float64(ds[len(ds)-1].Microseconds())/1000, "max-ms")
}

func firstFrame(b *testing.B, bin string) time.Duration {
	home := b.TempDir()
	preload(b, home, 1000)
	sock := filepath.Join(b.TempDir(), "t.sock")
	tm := func(args ...string) string {
		out, _ := exec.Command("tmux", append([]string{"-S", sock}, args...)...).Output()
		return string(out)
	}
	if out, err := exec.Command("tmux", "-S", sock, "-f", "/dev/null", "new-session", "-d", "-x", "160", "-y", "48", "cat").CombinedOutput(); err != nil {
		b.Fatalf("tmux: %v %s", err, out)
	}
	defer tm("kill-server")
	cmd := "env ORCR_HOME=" + home + " ORCR_HOST=pty XDG_CONFIG_HOME=" + filepath.Join(home, "cfg") + " TERM=xterm-256color " + bin
	t0 := time.Now()
	tm("respawn-pane", "-k", "-t", "0", cmd)
	// A steady 2 ms poll, not a growing one: the time to the frame is what is measured.
	var s string
	var d time.Duration
	if !wait.Every(10*time.Second, 2*time.Millisecond, func() bool {
		s, d = tm("capture-pane", "-p", "-t", "0"), time.Since(t0)
		return strings.Contains(s, "agents 1000") && strings.Contains(s, "in-process")
	}) {
		b.Fatalf("no full frame within %s:\n%s", wait.Scale(10*time.Second), s)
	}
	tm("send-keys", "-t", "0", "q")
	waitGone(home)
	return d
}

// waitGone waits (bounded) until the dashboard released its home's lock.
func waitGone(home string) {
	wait.Until(5*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(home, "orcr.sock"))
		return os.IsNotExist(err)
	})
}

// BenchmarkDashboardKeystroke300 measures whole-terminal keystroke → repaint: the real
// `orcr` dashboard (server in-process) in a tmux pane with 300 agents shown, a key
// sent with send-keys (j or k, moving the selection, which redraws the tree and the
// preview), and capture-pane polled every millisecond until the frame changes. It
// reports the median (target ≤ 30 ms on an idle machine) and the 90th percentile. The
// figure includes tmux's own send-keys and capture-pane round trips.
func BenchmarkDashboardKeystroke300(b *testing.B) {
	if _, err := exec.LookPath("tmux"); err != nil {
		b.Fatalf("tmux is required: %v", err)
	}
	bin := testbin.Build(b, "orcr")
	home := b.TempDir()
	preload(b, home, 300)
	sock := filepath.Join(b.TempDir(), "t.sock")
	tm := func(args ...string) string {
		out, _ := exec.Command("tmux", append([]string{"-S", sock}, args...)...).Output()
		return string(out)
	}
	if out, err := exec.Command("tmux", "-S", sock, "-f", "/dev/null", "new-session", "-d", "-x", "160", "-y", "48", "cat").CombinedOutput(); err != nil {
		b.Fatalf("tmux: %v %s", err, out)
	}
	defer tm("kill-server")
	defer waitGone(home)
	defer tm("send-keys", "-t", "0", "q")
	tm("respawn-pane", "-k", "-t", "0", "env ORCR_HOME="+home+" ORCR_HOST=pty XDG_CONFIG_HOME="+filepath.Join(home, "cfg")+" TERM=xterm-256color "+bin)
	var s string
	if !wait.Until(20*time.Second, func() bool {
		s = tm("capture-pane", "-p", "-t", "0")
		return strings.Contains(s, "agents 300") && strings.Contains(s, "in-process")
	}) {
		b.Fatalf("no full frame:\n%s", s)
	}
	// The agents preloaded have ended; show them so the tree holds all 300.
	tm("send-keys", "-t", "0", ".")
	if !wait.Until(10*time.Second, func() bool {
		s = tm("capture-pane", "-p", "-t", "0")
		return strings.Contains(s, "a0001") && !strings.Contains(s, "ended hidden")
	}) {
		b.Fatalf("ended agents not shown:\n%s", s)
	}
	var ds []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := 0; j < 40; j++ {
			key := "j"
			if j%2 == 1 {
				key = "k"
			}
			before := tm("capture-pane", "-p", "-t", "0")
			t0 := time.Now()
			tm("send-keys", "-t", "0", key)
			var d time.Duration
			if !wait.Every(5*time.Second, time.Millisecond, func() bool {
				s, d = tm("capture-pane", "-p", "-t", "0"), time.Since(t0)
				return s != before
			}) {
				b.Fatalf("no repaint after %q:\n%s", key, s)
			}
			ds = append(ds, d)
			// Let the frame settle (the preview may repaint once more) before the next key.
			settled := s
			wait.Every(time.Second, 5*time.Millisecond, func() bool {
				s = tm("capture-pane", "-p", "-t", "0")
				same := s == settled
				settled = s
				return same
			})
		}
	}
	b.StopTimer()
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "median-ms")
	b.ReportMetric(float64(ds[len(ds)*9/10].Microseconds())/1000, "p90-ms")
}

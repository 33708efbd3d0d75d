package pty

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/core/socket"
	"orcr/testutil/apiclient"
	"orcr/testutil/proc"
	"orcr/testutil/serve"
	"orcr/testutil/wait"
)

// statusLoop redraws one status line 10 times a second, as an agent's TUI does while
// it works (a spinner, elapsed seconds, a token count), with the shell's own
// arithmetic and printf: one `sleep` per frame is the only process it starts.
const statusLoop = `i=0; while :; do i=$((i+1)); printf '\r\033[2K\033[1m%s\033[0m Working (%ds · esc to interrupt) · %d tokens' "$(( i % 10 ))" "$(( i / 10 ))" "$(( i * 37 ))"; sleep 0.1; done`

// BenchmarkStatusLine20VsRawTmux runs 20 agents that each redraw a status line 10
// times a second on orcr's embedded pty host, and the same 20 programs in windows of
// a raw tmux server, one after the other in each round, and reports the CPU of the
// process that hosts the panes over the same window: `orcr serve` (reading every
// pane and keeping its screen) against the tmux server (doing the same for its
// windows). Target (issue 27): orcr ≤ 1.5× raw tmux. The programs' own CPU is theirs
// on both sides and not counted.
func BenchmarkStatusLine20VsRawTmux(b *testing.B) {
	const n = 20
	const window = 20 * time.Second // the measurement window itself, not a wait for a condition
	var orcrTicks, rawTicks int64
	var orcrWall, rawWall float64
	for i := 0; b.Loop(); i++ {
		// orcr: the pty host's server and its 20 agents.
		srv := startServer(b)
		c, err := apiclient.Dial(context.Background(), socket.SocketPath(srv.Home), "")
		if err != nil {
			b.Fatal(err)
		}
		runAll(b, c, "status", n, statusLoop, "tokens")
		c.Close()
		t0, c0 := time.Now(), proc.CPUTicks(b, srv.PID())
		time.Sleep(window)
		orcrWall += time.Since(t0).Seconds()
		orcrTicks += proc.CPUTicks(b, srv.PID()) - c0
		srv.Stop()

		// Raw tmux: a server of its own, the same 20 programs in windows.
		sock := filepath.Join(serve.ShortDir(b, "orcr-raw-"), "raw.sock")
		serve.KillTmux(b, sock)
		tmux := func(args ...string) string {
			cmd := exec.Command("tmux", append([]string{"-S", sock, "-f", "/dev/null"}, args...)...)
			cmd.Env = []string{"LANG=C.UTF-8", "PATH=" + os.Getenv("PATH")}
			out, err := cmd.CombinedOutput()
			if err != nil {
				b.Fatalf("tmux %v: %v %s", args, err, out)
			}
			return string(out)
		}
		tmux("new-session", "-d", "-s", "raw", "-x", "80", "-y", "24", "sh", "-c", statusLoop)
		for range n - 1 {
			tmux("new-window", "-d", "-t", "raw", "sh", "-c", statusLoop)
		}
		wait.For(b, time.Minute, "every raw window to draw its status line", func() bool {
			for j := range n {
				if !strings.Contains(tmux("capture-pane", "-p", "-t", fmt.Sprintf("raw:%d", j)), "tokens") {
					return false
				}
			}
			return true
		})
		pid := serve.TmuxServerPID(b, sock)
		t0, c0 = time.Now(), proc.CPUTicks(b, pid)
		time.Sleep(window)
		rawWall += time.Since(t0).Seconds()
		rawTicks += proc.CPUTicks(b, pid) - c0
		tmux("kill-server")
	}
	orcrPct := float64(orcrTicks) / orcrWall // ticks are 10 ms: ticks/s is % of a core
	rawPct := float64(rawTicks) / rawWall
	b.ReportMetric(orcrPct, "orcr-cpu-%")
	b.ReportMetric(rawPct, "raw-cpu-%")
	if rawPct > 0 {
		b.ReportMetric(orcrPct/rawPct, "cpu-ratio")
	}
}

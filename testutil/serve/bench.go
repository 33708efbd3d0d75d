package serve

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"orcr/testutil/proc"
	"orcr/testutil/testbin"
)

// Bench is the `orcr serve` of a whole-program benchmark, with what a benchmark drives
// it by: the binary, and the environment its own orcr commands run with.
type Bench struct {
	*Server
	Bin string
	Env []string
}

// StartBench starts `orcr serve` on host ("tmux" or "pty") for a benchmark: a short
// ORCR_HOME (unix socket paths are bounded), the caller's environment without orcr's
// own variables (ORCR_*, XDG_CONFIG_HOME, TMUX*) nor those starting with a prefix in
// drop, and a config whose limits let a benchmark spawn hundreds of agents. On tmux the
// host's tmux server is killed when the benchmark ends, and a machine whose tmux is
// missing or unusable skips the benchmark; the pty host is built in, so a server on any
// other host fails it.
func StartBench(tb testing.TB, host string, drop ...string) *Bench {
	tb.Helper()
	if host == "tmux" {
		if _, err := exec.LookPath("tmux"); err != nil {
			tb.Skip("tmux is not installed")
		}
	}
	home := ShortDir(tb, "orcr-b"+host[:1]+"-")
	bn := &Bench{Bin: testbin.Build(tb, "orcr")}
	drop = append([]string{"ORCR_", "XDG_CONFIG_HOME=", "TMUX"}, drop...)
	for _, kv := range os.Environ() {
		if !hasAnyPrefix(kv, drop) {
			bn.Env = append(bn.Env, kv)
		}
	}
	cfgDir := filepath.Join(home, "cfg", "orcr")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfgDir, "config.toml"), []byte("[limits]\nglobal = 500\nmin_free_mb = 0\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
	bn.Env = append(bn.Env, "ORCR_HOME="+home, "ORCR_HOST="+host, "XDG_CONFIG_HOME="+filepath.Join(home, "cfg"))
	if dir := os.Getenv("ORCR_BENCH_MEMPROFILE"); dir != "" {
		// The server writes heap profiles there on SIGUSR1 (Bench.MemDump).
		bn.Env = append(bn.Env, "ORCR_MEMPROFILE="+dir)
	}
	if path := os.Getenv("ORCR_BENCH_CPUPROFILE"); path != "" {
		// The server profiles its CPU from start to stop and writes it there.
		bn.Env = append(bn.Env, "ORCR_CPUPROFILE="+path)
	}
	if host == "tmux" {
		KillTmux(tb, filepath.Join(home, "tmux.sock"))
	}
	bn.Server = Start(tb, Options{Bin: bn.Bin, Env: bn.Env})
	info, err := bn.Client().Info(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	if info.Host != host {
		if host == "tmux" {
			tb.Skipf("orcr serve runs on host %q (%s), not tmux", info.Host, info.HostWhy)
		}
		tb.Fatalf("orcr serve runs on host %q (%s), not %s", info.Host, info.HostWhy, host)
	}
	return bn
}

// RawTmuxSpawn is the floor the spawn benchmarks compare orcr with: a shell loop of n
// `tmux new-window` on a fresh tmux server, timed from the loop's start to its end.
// started (if set) is called just before the loop, for a benchmark to start its timer
// on the loop alone.
func RawTmuxSpawn(tb testing.TB, n int, started func()) time.Duration {
	return RawTmuxSpawnCPU(tb, n, started).Wall
}

// Spent is what a spawn loop cost: its wall time and the CPU time of every process
// that did its work (the loop and the programs it ran, the server(s) that made the
// panes), in clock ticks of 10 ms.
type Spent struct {
	Wall time.Duration
	CPU  int64
	// TmuxCPU is the tmux server's share of CPU, in the same ticks.
	TmuxCPU int64
}

// RawTmuxSpawnCPU is RawTmuxSpawn, with the CPU the loop took: the shell and its tmux
// clients, and the tmux server's share (the windows it made).
func RawTmuxSpawnCPU(tb testing.TB, n int, started func()) Spent {
	tb.Helper()
	sock := filepath.Join(ShortDir(tb, "orcr-raw-"), "raw.sock")
	KillTmux(tb, sock)
	start := exec.Command("tmux", "-S", sock, "-f", "/dev/null", "new-session", "-d", "-s", "raw", "tail", "-f", "/dev/null")
	start.Env = []string{"LANG=C.UTF-8"}
	if out, err := start.CombinedOutput(); err != nil {
		tb.Fatalf("start raw tmux: %v %s", err, out)
	}
	tmuxPID := TmuxServerPID(tb, sock)
	loop := exec.Command("sh", "-c", fmt.Sprintf(`i=0; while [ $i -lt %d ]; do tmux -S "$1" new-window -d sleep 600 || exit 1; i=$((i+1)); done`, n), "sh", sock)
	loop.Env = []string{"LANG=C.UTF-8", "PATH=" + os.Getenv("PATH")}
	if started != nil {
		started()
	}
	c0 := proc.CPUTicks(tb, tmuxPID)
	t0 := time.Now()
	if out, err := loop.CombinedOutput(); err != nil {
		tb.Fatalf("raw loop: %v %s", err, out)
	}
	wall := time.Since(t0)
	// The shell's rusage includes the tmux clients it waited for.
	loopCPU := (loop.ProcessState.UserTime() + loop.ProcessState.SystemTime()) / (10 * time.Millisecond)
	server := proc.CPUTicks(tb, tmuxPID) - c0
	return Spent{Wall: wall, CPU: int64(loopCPU) + server, TmuxCPU: server}
}

// TmuxServerPID is the pid of the tmux server on sock.
func TmuxServerPID(tb testing.TB, sock string) int {
	tb.Helper()
	cmd := exec.Command("tmux", "-S", sock, "display-message", "-p", "#{pid}")
	cmd.Env = []string{"LANG=C.UTF-8"}
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("tmux server pid on %s: %v", sock, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		tb.Fatalf("tmux server pid on %s: %q", sock, out)
	}
	return pid
}

// ShortDir is a temp dir short enough for unix sockets inside it (t.TempDir's are
// not), removed when the test ends.
func ShortDir(tb testing.TB, prefix string) string {
	tb.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// KillTmux stops the tmux server on sock when the test ends.
func KillTmux(tb testing.TB, sock string) {
	tb.Cleanup(func() {
		cmd := exec.Command("tmux", "-S", sock, "kill-server")
		cmd.Env = []string{"LANG=C.UTF-8"}
		_ = cmd.Run()
	})
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// MemDump has a server started with $ORCR_BENCH_MEMPROFILE set write its heap profile
// and memory figures there (DIR/heap.N.pprof, DIR/mem.N.txt, n counting SIGUSR1s from
// 1) and waits for them; it returns the figures' path, or "" when the variable is unset.
func (bn *Bench) MemDump(tb testing.TB, n int) string {
	tb.Helper()
	dir := os.Getenv("ORCR_BENCH_MEMPROFILE")
	if dir == "" {
		return ""
	}
	out := filepath.Join(dir, fmt.Sprintf("mem.%d.txt", n))
	_ = os.Remove(out)
	if err := bn.Cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		tb.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(out); err == nil {
			return out
		}
		if time.Now().After(deadline) {
			tb.Fatalf("no %s a minute after SIGUSR1", out)
		}
	}
}

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
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"orcr/core/socket"
	"orcr/testutil/testbin"
)

// server is a real `orcr serve` on the tmux host with its own ORCR_HOME.
type server struct {
	bin, home string
	env       []string
}

// shortDir is a temp dir short enough for unix sockets inside it.
func shortDir(b *testing.B) string {
	b.Helper()
	dir, err := os.MkdirTemp("", "orcr-bt-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// killTmux stops the tmux server on sock at cleanup.
func killTmux(b *testing.B, sock string) {
	b.Cleanup(func() {
		cmd := exec.Command("tmux", "-S", sock, "kill-server")
		cmd.Env = []string{"LANG=C.UTF-8"}
		_ = cmd.Run()
	})
}

func startServer(b *testing.B) *server {
	b.Helper()
	home := shortDir(b)
	s := &server{bin: testbin.Build(b, "orcr"), home: home}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ORCR_") && !strings.HasPrefix(kv, "XDG_CONFIG_HOME=") && !strings.HasPrefix(kv, "TMUX") {
			s.env = append(s.env, kv)
		}
	}
	cfgDir := filepath.Join(home, "cfg", "orcr")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfgDir, "config.toml"), []byte("[limits]\nglobal = 500\nmin_free_mb = 0\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	s.env = append(s.env, "ORCR_HOME="+home, "ORCR_HOST=tmux", "XDG_CONFIG_HOME="+filepath.Join(home, "cfg"))
	killTmux(b, filepath.Join(home, "tmux.sock"))
	cmd := exec.Command(s.bin, "serve")
	cmd.Env = s.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	b.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-exited
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		select {
		case <-exited:
			if strings.Contains(stderr.String(), `unknown host "tmux"`) {
				b.Skipf("this orcr has no tmux host wired yet: %s", strings.TrimSpace(stderr.String()))
			}
			b.Fatalf("orcr serve exited: %s", stderr.String())
		default:
		}
		c, err := socket.Dial(context.Background(), socket.SocketPath(home), "")
		if err == nil {
			info, err := c.Info(context.Background())
			c.Close()
			if err != nil {
				b.Fatal(err)
			}
			if info.Host != "tmux" {
				b.Skipf("orcr serve runs on host %q (%s), not tmux", info.Host, info.HostWhy)
			}
			return s
		}
		if time.Now().After(deadline) {
			b.Fatalf("server did not come up: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

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
			cmd := exec.Command(s.bin, "agent", "run", fmt.Sprintf("bench/r%d/a%d", i, j), "--", "sleep", "60")
			cmd.Env = s.env
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("agent run: %v\n%s", err, out)
			}
		}
		orcrTotal += time.Since(t0)
		b.StopTimer()

		sock := filepath.Join(shortDir(b), "raw.sock")
		killTmux(b, sock)
		start := exec.Command("tmux", "-S", sock, "-f", "/dev/null", "new-session", "-d", "-s", "raw", "tail", "-f", "/dev/null")
		start.Env = []string{"LANG=C.UTF-8"}
		if out, err := start.CombinedOutput(); err != nil {
			b.Fatalf("start raw tmux: %v %s", err, out)
		}
		loop := exec.Command("sh", "-c", fmt.Sprintf(`i=0; while [ $i -lt %d ]; do tmux -S "$1" new-window -d sleep 60 || exit 1; i=$((i+1)); done`, n), "sh", sock)
		loop.Env = []string{"LANG=C.UTF-8", "PATH=" + os.Getenv("PATH")}
		b.StartTimer()
		t0 = time.Now()
		if out, err := loop.CombinedOutput(); err != nil {
			b.Fatalf("raw loop: %v %s", err, out)
		}
		rawTotal += time.Since(t0)
	}
	runs := float64(b.N)
	b.ReportMetric(float64(orcrTotal.Milliseconds())/runs, "orcr-ms")
	b.ReportMetric(float64(rawTotal.Milliseconds())/runs, "raw-ms")
	b.ReportMetric(float64(orcrTotal)/float64(rawTotal), "ratio")
}

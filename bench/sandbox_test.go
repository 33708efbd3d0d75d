package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"orcr/core/socket"
	"orcr/core/wire"
	"orcr/sandbox/confine"
	"orcr/testutil/apiclient"
	"orcr/testutil/serve"
)

// BenchmarkSandboxedSpawn is a spawn confined with Landlock against an unconfined one
// on the same `orcr serve`, alternating, per host: from agent.run until the agent's
// program has written a file in its folder — the policy built and written, Landlock
// applied (by the launcher in the pane; pty-inprocess: by the server on a thread of its
// own), the program exec'd. Goal: confined ≤ 1.1× unconfined.
func BenchmarkSandboxedSpawn(b *testing.B) {
	if _, err := confine.KernelABI(); err != nil {
		b.Skipf("no Landlock: %v", err)
	}
	for _, host := range []string{"pty", "tmux"} {
		b.Run(host, func(b *testing.B) { benchSandboxedSpawn(b, host) })
	}
	// pty with the server confining from a thread of its own instead of the launcher
	// (ORCR_SANDBOX_IN_PROCESS=1, off by default: the agent loses its /proc/self).
	b.Run("pty-inprocess", func(b *testing.B) {
		b.Setenv("ORCR_SANDBOX_IN_PROCESS", "1")
		benchSandboxedSpawn(b, "pty")
	})
}

func benchSandboxedSpawn(b *testing.B, host string) {
	srv := serve.StartBench(b, host, "GO")
	c, err := apiclient.Dial(context.Background(), socket.SocketPath(srv.Home), "")
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	work := b.TempDir()
	var plain, boxed time.Duration
	n := 0
	spawn := func(sb *wire.Sandbox) time.Duration {
		n++
		mark := filepath.Join(work, fmt.Sprintf("m%d", n))
		t0 := time.Now()
		if _, err := c.Run(context.Background(), wire.RunParams{Path: fmt.Sprintf("bench/a%d", n), Cwd: work, Sandbox: sb,
			Argv: []string{"sh", "-c", "echo > " + mark + "; exec sleep 600"}}); err != nil {
			b.Fatal(err)
		}
		deadline := t0.Add(90 * time.Second)
		for {
			if _, err := os.Stat(mark); err == nil {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("agent %d never started", n)
			}
			time.Sleep(200 * time.Microsecond)
		}
		d := time.Since(t0)
		if _, err := c.Kill(context.Background(), wire.KillParams{Glob: fmt.Sprintf("bench/a%d", n)}); err != nil {
			b.Fatal(err)
		}
		return d
	}
	spawn(nil) // warm the server and the page cache
	spawn(&wire.Sandbox{Mode: wire.SandboxOn})
	for b.Loop() {
		plain += spawn(nil)
		boxed += spawn(&wire.Sandbox{Mode: wire.SandboxOn})
	}
	b.ReportMetric(float64(plain.Microseconds())/float64(b.N)/1000, "plain-ms/spawn")
	b.ReportMetric(float64(boxed.Microseconds())/float64(b.N)/1000, "sandboxed-ms/spawn")
	b.ReportMetric(float64(boxed)/float64(plain), "ratio")
}

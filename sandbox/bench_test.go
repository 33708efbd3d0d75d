package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"orcr/core"
	"orcr/core/wire"
	"orcr/pty"
	"orcr/sandbox/confine"
)

// BenchmarkWrapLaunch is the server's share of a confined spawn: the policy built
// (paths resolved, the git dir found) and written beside the agent's state.
func BenchmarkWrapLaunch(b *testing.B) {
	if _, err := confine.KernelABI(); err != nil {
		b.Skipf("no Landlock: %v", err)
	}
	root := b.TempDir()
	f := New(Options{Home: filepath.Join(root, "orcr"), Self: "/usr/bin/true", Socket: filepath.Join(root, "orcr", "orcr.sock")})
	cwd := b.TempDir()
	n := 0
	for b.Loop() {
		n++
		spec := &core.LaunchSpec{Argv: []string{"sh"}, Cwd: cwd, Env: []string{"HOME=/root", "PATH=/usr/bin:/bin"}}
		a := wire.Agent{ID: fmt.Sprint(n), Path: "a", Cwd: cwd, Sandbox: &wire.Sandbox{Mode: wire.SandboxOn}}
		if _, err := f.WrapLaunch(context.Background(), a, spec, core.Confinement{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPtyLaunch is a confined pty launch from a server thread (Options.InProcess:
// the policy built and written, the thread confined, the program started) against a plain one, in this process,
// alternating: from the launch until the program wrote a file.
func BenchmarkPtyLaunch(b *testing.B) {
	if _, err := confine.KernelABI(); err != nil {
		b.Skipf("no Landlock: %v", err)
	}
	root := b.TempDir()
	self, _ := os.Executable()
	f := New(Options{Home: filepath.Join(root, "orcr"), Self: self, Socket: filepath.Join(root, "orcr", "orcr.sock"), InProcess: InProcessOn})
	h := pty.New(pty.Options{})
	defer h.Shutdown(context.Background())
	work := b.TempDir()
	n := 0
	var plain, boxed time.Duration
	launch := func(sandbox bool) time.Duration {
		n++
		mark := filepath.Join(work, fmt.Sprint("m", n))
		spec := &core.LaunchSpec{Argv: []string{"sh", "-c", "echo > " + mark + "; exec sleep 60"}, Cwd: work,
			Env: []string{"HOME=/root", "PATH=/usr/bin:/bin"}}
		t0 := time.Now()
		if sandbox {
			a := wire.Agent{ID: fmt.Sprint(n), Path: "a", Host: "pty", Cwd: work, Sandbox: &wire.Sandbox{Mode: wire.SandboxOn}}
			if _, err := f.WrapLaunch(context.Background(), a, spec, core.Confinement{}); err != nil {
				b.Fatal(err)
			}
		}
		info, err := h.Launch(context.Background(), *spec)
		if err != nil {
			b.Fatal(err)
		}
		for deadline := t0.Add(time.Minute); ; {
			if _, err := os.Stat(mark); err == nil {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("launch %d (sandbox %v) never wrote its mark", n, sandbox)
			}
			time.Sleep(100 * time.Microsecond)
		}
		d := time.Since(t0)
		h.Close(context.Background(), info.ID)
		return d
	}
	launch(false)
	launch(true)
	for b.Loop() {
		plain += launch(false)
		boxed += launch(true)
	}
	b.ReportMetric(float64(plain.Microseconds())/float64(b.N)/1000, "plain-ms")
	b.ReportMetric(float64(boxed.Microseconds())/float64(b.N)/1000, "sandboxed-ms")
	b.ReportMetric(float64(boxed)/float64(plain), "ratio")
}

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
	"orcr/testutil/proc"
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
//
// own-folder launches each program in a folder of its own (a run's coders in their
// worktrees): every confined launch is a new policy — its ruleset, its thread.
func BenchmarkPtyLaunch(b *testing.B) {
	if _, err := confine.KernelABI(); err != nil {
		b.Skipf("no Landlock: %v", err)
	}
	b.Run("one-folder", func(b *testing.B) { benchPtyLaunch(b, false) })
	b.Run("own-folder", func(b *testing.B) { benchPtyLaunch(b, true) })
}

func benchPtyLaunch(b *testing.B, ownFolder bool) {
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
		dir := launchFolder(b, work, ownFolder, n)
		mark := filepath.Join(dir, fmt.Sprint("m", n))
		spec := &core.LaunchSpec{Argv: []string{"sh", "-c", "echo > " + mark + "; exec sleep 60"}, Cwd: dir,
			Env: []string{"HOME=/root", "PATH=/usr/bin:/bin"}}
		t0 := time.Now()
		if sandbox {
			a := wire.Agent{ID: fmt.Sprint(n), Path: "a", Host: "pty", Cwd: dir, Sandbox: &wire.Sandbox{Mode: wire.SandboxOn}}
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

// BenchmarkConfinedStartOverhead is what a confined pty launch adds to a plain one,
// without the program: the policy built (wrap-us: WrapLaunch), then (run-us) the
// ruleset got, a thread confined — or the one kept for the policy woken — and back,
// with a start that forks nothing. own-folder gives each launch a folder of its own
// (a new policy each time; mkdir here is ~0.4 ms, outside both figures). sparehits,
// builds and threads count what the ruleset cache did over the row.
func BenchmarkConfinedStartOverhead(b *testing.B) {
	if _, err := confine.KernelABI(); err != nil {
		b.Skipf("no Landlock: %v", err)
	}
	for _, own := range []bool{false, true} {
		name := "one-folder"
		if own {
			name = "own-folder"
		}
		b.Run(name, func(b *testing.B) {
			// orcr's home under $HOME, as a user's is (in /tmp, /tmp is granted
			// entry by entry: BenchmarkPtyLaunch's layout).
			home, _ := os.UserHomeDir()
			root, err := os.MkdirTemp(filepath.Join(home, ".cache"), "sb-")
			if err != nil {
				b.Skip(err)
			}
			defer os.RemoveAll(root)
			self, _ := os.Executable()
			f := New(Options{Home: filepath.Join(root, "orcr"), Self: self, Socket: filepath.Join(root, "orcr", "orcr.sock"), InProcess: InProcessOn})
			defer f.Close()
			work := b.TempDir()
			n := 0
			var wrapT, runT, cpuT time.Duration
			defer func() {
				b.ReportMetric(float64(cpuT.Microseconds())/float64(n), "cpu-us")
				b.ReportMetric(float64(wrapT.Microseconds())/float64(n), "wrap-us")
				b.ReportMetric(float64(runT.Microseconds())/float64(n), "run-us")
				b.ReportMetric(float64(f.rulesets.SpareHits), "sparehits")
				b.ReportMetric(float64(f.rulesets.Builds), "builds")
				b.ReportMetric(float64(f.rulesets.Threads), "threads")
			}()
			for b.Loop() {
				n++
				dir := launchFolder(b, work, own, n)
				spec := &core.LaunchSpec{Argv: []string{"sh"}, Cwd: dir, Env: []string{"HOME=/root", "PATH=/usr/bin:/bin"}}
				a := wire.Agent{ID: fmt.Sprint(n), Path: "a", Host: "pty", Cwd: dir, Sandbox: &wire.Sandbox{Mode: wire.SandboxOn}}
				// cpu-us: the process's CPU (its threads, ended ones included) from the
				// wrap to the next folder's making: the confinement's whole work, what
				// it makes ahead for the next launch included.
				c0 := proc.SelfCPU(b)
				t0 := time.Now()
				if _, err := f.WrapLaunch(context.Background(), a, spec, core.Confinement{}); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				wrapT += t1.Sub(t0)
				if err := spec.Confine.Run(func(string) error { return nil }); err != nil {
					b.Fatal(err)
				}
				runT += time.Since(t1)
				// Spawns come a few milliseconds apart (the program's own start): what
				// a confinement prepares off the spawn's path has that long.
				time.Sleep(2 * time.Millisecond)
				cpuT += proc.SelfCPU(b) - c0
			}
		})
	}
}

// launchFolder is the folder launch n runs in: work, or with own a new folder of its
// own in it.
func launchFolder(b *testing.B, work string, own bool, n int) string {
	if !own {
		return work
	}
	dir := filepath.Join(work, fmt.Sprint("d", n))
	if err := os.Mkdir(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	return dir
}

package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"orcr/core"
	"orcr/core/socket"
	"orcr/core/wire"
	"orcr/sandbox"
	"orcr/sandbox/confine"
	"orcr/testutil/apiclient"
	"orcr/testutil/serve"
	"orcr/testutil/testbin"
)

// BenchmarkSandboxedSpawn is a spawn confined with Landlock against an unconfined one
// on the same `orcr serve`, alternating, per host: from agent.run until the agent's
// program has written a file in its folder — the policy built and written, Landlock
// applied (pty: by the server on a thread of its own, the default; pty-launcher and
// tmux: by the launcher in the pane), the program exec'd. Goal: confined ≤ 1.1× unconfined.
//
// Each row runs with orcr's home where a user's is (under $HOME, ~/.local/state/orcr by
// default: /tmp is then granted as one folder), and again (/tmphome) where the tests
// put it, in /tmp: then /tmp is not granted but each of its other entries is, one rule
// each (sandbox's policy), which costs with the size of this machine's /tmp.
func BenchmarkSandboxedSpawn(b *testing.B) {
	if _, err := confine.KernelABI(); err != nil {
		b.Skipf("no Landlock: %v", err)
	}
	for _, layout := range []string{"", "/tmphome"} {
		// pty: the server confines from a thread of its own (the default, root
		// included); pty-launcher: forced to the launcher (ORCR_SANDBOX_IN_PROCESS=0);
		// tmux: the launcher, its only way.
		b.Run("pty"+layout, func(b *testing.B) { benchSandboxedSpawn(b, "pty", true, layout == "") })
		b.Run("pty-launcher"+layout, func(b *testing.B) { benchSandboxedSpawn(b, "pty", false, layout == "") })
		b.Run("tmux"+layout, func(b *testing.B) { benchSandboxedSpawn(b, "tmux", false, layout == "") })
	}
}

func benchSandboxedSpawn(b *testing.B, host string, inProcess, userHome bool) {
	srv := serve.StartBench(b, host, "GO")
	launcher := host == "pty" && !inProcess
	if launcher || userHome {
		// StartBench leaves the caller's ORCR_* variables out of the server's
		// environment (a b.Setenv never reached it: this row measured the launcher
		// until the report below was checked), so the server is started again with it,
		// and with its home under $HOME, as a user's is, when the row asks.
		srv.Stop()
		env := slices.Clone(srv.Env)
		if launcher {
			env = append(env, "ORCR_SANDBOX_IN_PROCESS=0")
		}
		if userHome {
			env = underHome(b, env, host)
		}
		srv = &serve.Bench{Server: serve.Start(b, serve.Options{Bin: srv.Bin, Env: env}), Bin: srv.Bin, Env: env}
	}
	c, err := apiclient.Dial(context.Background(), socket.SocketPath(srv.Home), "")
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	work := b.TempDir()
	var plain, boxed time.Duration
	n := 0
	var last wire.Agent
	spawn := func(sb *wire.Sandbox) time.Duration {
		n++
		mark := filepath.Join(work, fmt.Sprintf("m%d", n))
		t0 := time.Now()
		a, err := c.Run(context.Background(), wire.RunParams{Path: fmt.Sprintf("bench/a%d", n), Cwd: work, Sandbox: sb,
			Argv: []string{"sh", "-c", "echo > " + mark + "; exec sleep 600"}})
		if err != nil {
			b.Fatal(err)
		}
		last = a
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
	// The row measures the path it names: the report says who confined the agent.
	report := filepath.Join(srv.Home, "agents", last.ID, sandbox.ReportFile)
	var rep confine.Report
	for deadline := time.Now().Add(30 * time.Second); ; {
		r, ok, err := confine.ReadReport(report)
		if ok && err == nil {
			rep = r
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("no sandbox report at %s (%v)", report, err)
		}
		time.Sleep(time.Millisecond)
	}
	if rep.InProcess != inProcess {
		b.Fatalf("confined in the server: %v, want %v (report %+v)", rep.InProcess, inProcess, rep)
	}
	for b.Loop() {
		plain += spawn(nil)
		boxed += spawn(&wire.Sandbox{Mode: wire.SandboxOn})
	}
	b.ReportMetric(float64(plain.Microseconds())/float64(b.N)/1000, "plain-ms/spawn")
	b.ReportMetric(float64(boxed.Microseconds())/float64(b.N)/1000, "sandboxed-ms/spawn")
	b.ReportMetric(float64(boxed)/float64(plain), "ratio")
}

// underHome moves the server's ORCR_HOME (and its config) from StartBench's short
// folder in /tmp to one under $HOME/.cache, short too (unix socket paths are bounded),
// removed when the benchmark ends.
func underHome(b *testing.B, env []string, host string) []string {
	b.Helper()
	home, err := os.UserHomeDir()
	if err != nil {
		b.Skipf("no $HOME: %v", err)
	}
	parent := filepath.Join(home, ".cache")
	if err := os.MkdirAll(parent, 0o700); err != nil {
		b.Fatal(err)
	}
	dir, err := os.MkdirTemp(parent, "ob-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	old := ""
	var out []string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "ORCR_HOME="); ok {
			old = v
			continue
		}
		if strings.HasPrefix(kv, "XDG_CONFIG_HOME=") {
			continue
		}
		out = append(out, kv)
	}
	cfg, err := os.ReadFile(filepath.Join(old, "cfg", "orcr", "config.toml"))
	if err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "cfg", "orcr"), 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cfg", "orcr", "config.toml"), cfg, 0o600); err != nil {
		b.Fatal(err)
	}
	if host == "tmux" {
		serve.KillTmux(b, filepath.Join(dir, "tmux.sock"))
	}
	return append(out, "ORCR_HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, "cfg"))
}

// BenchmarkSandboxLauncher splits the launcher's cost from the rest of a confined
// spawn, without a server, alternating: /bin/true run directly; a small Go program
// (the fake agent, refusing a flag: a Go runtime's start and exit); the orcr binary's
// start and exit on its launcher path (a policy that does not exist: package inits,
// no Landlock); the launcher on the policy the server writes for an agent, execing
// /bin/true, with orcr's home under $HOME and in /tmp. launcher − orcr is the
// sandbox's own work (policy read, ruleset, restriction); orcr − go is what the orcr
// binary's size and package inits add to every process it starts.
func BenchmarkSandboxLauncher(b *testing.B) {
	if _, err := confine.KernelABI(); err != nil {
		b.Skipf("no Landlock: %v", err)
	}
	self := testbin.Build(b, "orcr")
	small := testbin.Build(b, "orcr/testutil/fakeagent")
	root := b.TempDir()
	work := filepath.Join(root, "work")
	if err := os.MkdirAll(work, 0o700); err != nil {
		b.Fatal(err)
	}
	// The launcher's policy as the server writes it: with orcr's home under $HOME (a
	// user's) and in /tmp (the tests': /tmp's other entries granted one by one).
	policy := func(home string) *core.LaunchSpec {
		f := sandbox.New(sandbox.Options{Home: home, Self: self, Socket: filepath.Join(home, "orcr.sock"), InProcess: sandbox.InProcessOff})
		spec := &core.LaunchSpec{Argv: []string{"/bin/true"}, Cwd: work, Env: []string{"HOME=" + os.Getenv("HOME"), "PATH=/usr/bin:/bin"}}
		a := wire.Agent{ID: "bench", Path: "bench", Cwd: work, Sandbox: &wire.Sandbox{Mode: wire.SandboxOn}}
		if ok, err := f.WrapLaunch(context.Background(), a, spec, core.Confinement{}); !ok || err != nil {
			b.Fatalf("wrap: %v %v", ok, err)
		}
		return spec
	}
	userHome, err := os.UserHomeDir()
	if err != nil {
		b.Skipf("no $HOME: %v", err)
	}
	os.MkdirAll(filepath.Join(userHome, ".cache"), 0o700)
	under, err := os.MkdirTemp(filepath.Join(userHome, ".cache"), "ob-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(under) })
	spec, specTmp := policy(under), policy(filepath.Join(root, "orcr"))
	run := func(want int, argv ...string) time.Duration {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir, cmd.Env = work, spec.Env
		t0 := time.Now()
		err := cmd.Run()
		d := time.Since(t0)
		if code := cmd.ProcessState.ExitCode(); code != want {
			b.Fatalf("%q: exit %d (%v), want %d", argv, code, err, want)
		}
		return d
	}
	var direct, goProg, orcr, launcher, launcherTmp time.Duration
	for b.Loop() {
		direct += run(0, "/bin/true")
		goProg += run(2, small, "-no-such-flag")
		orcr += run(126, self, "sandbox", "exec", "--policy", filepath.Join(root, "none.json"), "--", "/bin/true")
		launcher += run(0, spec.Argv...)
		launcherTmp += run(0, specTmp.Argv...)
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) / 1000 }
	b.ReportMetric(ms(direct), "direct-ms")
	b.ReportMetric(ms(goProg), "go-ms")
	b.ReportMetric(ms(orcr), "orcr-ms")
	b.ReportMetric(ms(launcher), "launcher-ms")
	b.ReportMetric(ms(launcherTmp), "launcher-tmphome-ms")
}

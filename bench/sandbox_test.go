package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"orcr/core"
	"orcr/core/socket"
	"orcr/core/wire"
	"orcr/sandbox"
	"orcr/sandbox/confine"
	"orcr/testutil/apiclient"
	"orcr/testutil/clis"
	"orcr/testutil/modelserver"
	"orcr/testutil/proc"
	"orcr/testutil/serve"
	"orcr/testutil/testbin"
	"orcr/testutil/wait"
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
//
// The rows spawn every agent in one folder, so every confined agent has the same
// policy and starts from the one thread the server keeps confined to it (sandbox's
// confine.Rulesets.Ready). pty/own-folder gives each agent a folder of its own, as a
// run's coders have their worktrees: each policy is new, so each confined spawn pays
// its thread, its ruleset and its restriction.
func BenchmarkSandboxedSpawn(b *testing.B) {
	if _, err := confine.KernelABI(); err != nil {
		b.Skipf("no Landlock: %v", err)
	}
	for _, layout := range []string{"", "/tmphome"} {
		// pty: the server confines from a thread of its own (the default, root
		// included); pty-launcher: forced to the launcher (ORCR_SANDBOX_IN_PROCESS=0);
		// tmux: the launcher, its only way.
		b.Run("pty"+layout, func(b *testing.B) { benchSandboxedSpawn(b, "pty", true, layout == "", false) })
		b.Run("pty-launcher"+layout, func(b *testing.B) { benchSandboxedSpawn(b, "pty", false, layout == "", false) })
		// tmux: a spare launcher, started before it is needed, takes the confined
		// launch (tmux/spare.go); tmux-nospare: each confined pane starts its own
		// launcher (ORCR_TMUX_SPARE=0), as before the spare.
		b.Run("tmux"+layout, func(b *testing.B) { benchSandboxedSpawn(b, "tmux", false, layout == "", false) })
		b.Run("tmux-nospare"+layout, func(b *testing.B) { benchSandboxedSpawn(b, "tmux-nospare", false, layout == "", false) })
	}
	b.Run("pty/own-folder", func(b *testing.B) { benchSandboxedSpawn(b, "pty", true, true, true) })
	// pty/floor: the pty row with both sides unconfined (the second with --sandbox=off),
	// the ratio a row reads when nothing differs — what the machine's load alone moves
	// a ratio by in the same run.
	b.Run("pty/floor", func(b *testing.B) { benchSandboxedSpawn(b, "pty", true, true, false, floorRow) })
}

// floorRow makes benchSandboxedSpawn time both sides unconfined.
const floorRow = "floor"

func benchSandboxedSpawn(b *testing.B, host string, inProcess, userHome, ownFolder bool, opts ...string) {
	floor := slices.Contains(opts, floorRow)
	host, noSpare := strings.CutSuffix(host, "-nospare")
	srv := serve.StartBench(b, host, "GO")
	launcher := host == "pty" && !inProcess
	if launcher || userHome || noSpare {
		// StartBench leaves the caller's ORCR_* variables out of the server's
		// environment (a b.Setenv never reached it: this row measured the launcher
		// until the report below was checked), so the server is started again with it,
		// and with its home under $HOME, as a user's is, when the row asks.
		srv.Stop()
		env := slices.Clone(srv.Env)
		if launcher {
			env = append(env, "ORCR_SANDBOX_IN_PROCESS=0")
		}
		if noSpare {
			env = append(env, "ORCR_TMUX_SPARE=0")
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
	// The server's CPU per spawn (its agent's run and kill): orcr's own work, less
	// blurred by the machine's load than the wall time.
	var plainCPU, boxedCPU time.Duration
	// At the kernel's clock tick (100 Hz): summed over a row's spawns, not one spawn's.
	cpu := func() time.Duration { return time.Duration(proc.CPUTicks(b, srv.PID())) * 10 * time.Millisecond }
	n := 0
	var last wire.Agent
	spawn := func(sb *wire.Sandbox) time.Duration {
		n++
		dir := work
		if ownFolder {
			dir = filepath.Join(work, fmt.Sprintf("a%d", n))
			if err := os.Mkdir(dir, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		mark := filepath.Join(dir, fmt.Sprintf("m%d", n))
		c0 := cpu()
		defer func() {
			if sb == nil {
				plainCPU += cpu() - c0
			} else {
				boxedCPU += cpu() - c0
			}
		}()
		t0 := time.Now()
		a, err := c.Run(context.Background(), wire.RunParams{Path: fmt.Sprintf("bench/a%d", n), Cwd: dir, Sandbox: sb,
			Argv: []string{"sh", "-c", "echo > " + mark + "; exec sleep 600"}})
		if err != nil {
			b.Fatal(err)
		}
		last = a
		// Woken by the mark's making (inotify), not a poll: a Go timer under a
		// millisecond sleeps one or more here, a step of 15–20 % of a spawn that
		// moved a row's median-ratio by as much (wait.Created).
		if err := wait.Created(mark, 90*time.Second); err != nil {
			b.Fatalf("agent %d never started: %v", n, err)
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
	if host == "tmux" {
		// The row measures the path it names: a confined launch in the spare (its pid
		// is the spare's), or with no spare at all.
		sparePID := func() string {
			out, _ := exec.Command("tmux", "-S", filepath.Join(srv.Home, "tmux.sock"), "list-panes", "-a",
				"-F", "#{session_name} #{pane_pid}").Output()
			var pids []string
			for _, l := range strings.Split(string(out), "\n") {
				if name, pid, ok := strings.Cut(l, " "); ok && strings.HasPrefix(name, "spare") {
					pids = append(pids, pid)
				}
			}
			return strings.Join(pids, " ")
		}
		if noSpare {
			spawn(&wire.Sandbox{Mode: wire.SandboxOn})
			if p := sparePID(); p != "" {
				b.Fatalf("a spare launcher (pid %s) with ORCR_TMUX_SPARE=0", p)
			}
		} else {
			var pids string
			wait.For(b, 30*time.Second, "the spare launchers connected", func() bool {
				socks, _ := filepath.Glob(filepath.Join(srv.Home, "spare", "*.sock"))
				pids = sparePID()
				return pids != "" && len(socks) == 0
			})
			spawn(&wire.Sandbox{Mode: wire.SandboxOn})
			// The launcher's report names its pid.
			var r confine.Report
			wait.For(b, 30*time.Second, "the sandbox report", func() bool {
				var ok bool
				r, ok, _ = confine.ReadReport(filepath.Join(srv.Home, "agents", last.ID, sandbox.ReportFile))
				return ok
			})
			if !slices.Contains(strings.Fields(pids), strconv.Itoa(r.PID)) {
				b.Fatalf("the confined agent's launcher was pid %d, the spares %s", r.PID, pids)
			}
		}
	}
	plainCPU, boxedCPU = 0, 0
	if floor {
		alternateWith(b, spawn, &wire.Sandbox{Mode: wire.SandboxOff})
	} else {
		alternate(b, spawn)
	}
	b.ReportMetric(float64(plainCPU.Microseconds())/float64(b.N)/1000, "plain-srvcpu-ms")
	b.ReportMetric(float64(boxedCPU.Microseconds())/float64(b.N)/1000, "sandboxed-srvcpu-ms")
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

// BenchmarkSandboxedClaudeSpawn is what a user feels: `orcr agent run fix/x --sandbox
// --provider claude` against the same without --sandbox, alternating, on one `orcr
// serve` per host, the real claude CLI against the scripted model server: from
// agent.run until the server says the agent is idle at its prompt (its screen, or
// claude's SessionStart hook, which runs `orcr hook` from inside the sandbox). pty confines
// from a server thread; tmux runs the launcher in the pane, whose start is part of
// what is measured. Goal: confined ≤ 1.1× unconfined. BenchmarkSandboxedSpawn's
// trivial program is the strict measure of orcr's own overhead; this is the share of
// it in a real agent's start. pty/own-folder starts each claude in a folder of its
// own, as `orcr run` starts its coders in their worktrees.
func BenchmarkSandboxedClaudeSpawn(b *testing.B) {
	if _, err := confine.KernelABI(); err != nil {
		b.Skipf("no Landlock: %v", err)
	}
	bin := clis.Find(b, "claude", "ORCR_CLAUDE_BIN")
	models, err := modelserver.Start()
	if err != nil {
		b.Fatal(err)
	}
	defer models.Close()
	models.SetDefault(modelserver.Turn{Text: "ok", Usage: modelserver.Usage{Input: 1, Output: 1}})
	for _, host := range []string{"pty", "tmux"} {
		b.Run(host, func(b *testing.B) { benchSandboxedClaude(b, host, bin, models.URL, false) })
	}
	// pty/own-folder: each claude in a folder of its own, as a run's coders are in
	// their worktrees — every confined one a new policy (its ruleset, its thread).
	b.Run("pty/own-folder", func(b *testing.B) { benchSandboxedClaude(b, "pty", bin, models.URL, true) })
}

// maxOwnFolders bounds the folders benchSandboxedClaude makes for its own-folder row
// (claude is told each is trusted before the first spawn).
const maxOwnFolders = 400

func benchSandboxedClaude(b *testing.B, host, bin, modelURL string, ownFolder bool) {
	dir := b.TempDir()
	cfg, work := filepath.Join(dir, "claude-config"), filepath.Join(dir, "work")
	for _, d := range []string{cfg, work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			b.Fatal(err)
		}
	}
	work, _ = filepath.EvalSymlinks(work)
	// folder is spawn n's folder: work, or one of its own.
	folder := func(n int) string {
		if !ownFolder {
			return work
		}
		return filepath.Join(work, fmt.Sprint("c", n))
	}
	trusted := []string{fmt.Sprintf(`%q:{"hasTrustDialogAccepted":true}`, work)}
	if ownFolder {
		for n := 1; n <= maxOwnFolders; n++ {
			if err := os.Mkdir(folder(n), 0o700); err != nil {
				b.Fatal(err)
			}
			trusted = append(trusted, fmt.Sprintf(`%q:{"hasTrustDialogAccepted":true}`, folder(n)))
		}
	}
	if err := os.WriteFile(filepath.Join(cfg, ".claude.json"), []byte(fmt.Sprintf(
		`{"hasCompletedOnboarding":true,"theme":"dark","projects":{%s}}`, strings.Join(trusted, ","))), 0o600); err != nil {
		b.Fatal(err)
	}
	srv := serve.StartBench(b, host, "GO")
	srv.Stop()
	env := append(underHome(b, slices.Clone(srv.Env), host), "CLAUDE_CONFIG_DIR="+cfg, "ANTHROPIC_BASE_URL="+modelURL,
		"ANTHROPIC_AUTH_TOKEN=t", "DISABLE_AUTOUPDATER=1", "ORCR_CLAUDE_BIN="+bin)
	srv = &serve.Bench{Server: serve.Start(b, serve.Options{Bin: srv.Bin, Env: env}), Bin: srv.Bin, Env: env}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := apiclient.Dial(ctx, socket.SocketPath(srv.Home), "")
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	info, err := c.Info(ctx)
	if err != nil {
		b.Fatal(err)
	}
	// The state is taken from the event stream: no polling delay on either side.
	events, err := c.Subscribe(ctx, wire.SubscribeParams{After: info.LastSeq, Paths: []string{"bench/**"}})
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	var last wire.Agent
	spawn := func(sb *wire.Sandbox) time.Duration {
		n++
		if n > maxOwnFolders {
			b.Fatalf("more than %d spawns: raise maxOwnFolders", maxOwnFolders)
		}
		name := fmt.Sprintf("bench/c%d", n)
		t0 := time.Now()
		a, err := c.Run(ctx, wire.RunParams{Path: name, Provider: "claude", Cwd: folder(n), Sandbox: sb})
		if err != nil {
			b.Fatal(err)
		}
		last = a
		timeout := time.After(wait.Scale(120 * time.Second))
	idle:
		for {
			select {
			case ev := <-events:
				a := ev.Agent
				if a == nil || a.Path != name {
					continue
				}
				switch a.State {
				case wire.StateIdle:
					break idle
				case wire.StateExited, wire.StateFailed, wire.StateKilled:
					r, _ := c.Read(ctx, wire.ReadParams{Target: name, Lines: 40})
					b.Fatalf("%s (sandbox %v) %s before its prompt:\n%s", name, sb != nil, a.State, r.Text)
				}
			case <-timeout:
				r, _ := c.Read(ctx, wire.ReadParams{Target: name, Lines: 40})
				b.Fatalf("%s (sandbox %v) never idle at its prompt:\n%s", name, sb != nil, r.Text)
			}
		}
		d := time.Since(t0)
		if _, err := c.Kill(ctx, wire.KillParams{Glob: name}); err != nil {
			b.Fatal(err)
		}
		return d
	}
	spawn(nil) // warm the server, claude's install in the page cache
	spawn(&wire.Sandbox{Mode: wire.SandboxOn})
	// The confined agent was confined as the row says: by the server on pty, by the
	// launcher on tmux.
	var rep confine.Report
	report := filepath.Join(srv.Home, "agents", last.ID, sandbox.ReportFile)
	if !wait.Every(30*time.Second, time.Millisecond, func() bool {
		r, ok, err := confine.ReadReport(report)
		rep = r
		return ok && err == nil
	}) {
		b.Fatalf("no sandbox report at %s", report)
	}
	if rep.InProcess != (host == "pty") {
		b.Fatalf("confined in the server: %v on %s (report %+v)", rep.InProcess, host, rep)
	}
	alternate(b, spawn)
}

// alternate times an unconfined spawn and a confined one in turn, b.N times each, and
// reports each one's mean and their ratio.
func alternate(b *testing.B, spawn func(*wire.Sandbox) time.Duration) {
	alternateWith(b, spawn, &wire.Sandbox{Mode: wire.SandboxOn})
}

// alternateWith is alternate with boxed as the second side's sandbox. Beside the
// ratio of the means it reports the ratio of the medians (median-ratio): a spawn that
// the machine's load stalled for tens of milliseconds moves a mean of 100 by a tenth,
// the median not.
func alternateWith(b *testing.B, spawn func(*wire.Sandbox) time.Duration, boxed *wire.Sandbox) {
	var plain, confined []time.Duration
	// The order turns every iteration (plain first, then confined first): a spawn
	// right after another's kill pays part of that kill's teardown, and the floor row
	// read 1.04–1.12 on a quiet machine with plain always first.
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			plain = append(plain, spawn(nil))
			confined = append(confined, spawn(boxed))
		} else {
			confined = append(confined, spawn(boxed))
			plain = append(plain, spawn(nil))
		}
	}
	sum := func(ds []time.Duration) (t time.Duration) {
		for _, d := range ds {
			t += d
		}
		return t
	}
	p, c := sum(plain), sum(confined)
	b.ReportMetric(float64(p.Microseconds())/float64(len(plain))/1000, "plain-ms/spawn")
	b.ReportMetric(float64(c.Microseconds())/float64(len(confined))/1000, "sandboxed-ms/spawn")
	b.ReportMetric(float64(c)/float64(p), "ratio")
	b.ReportMetric(float64(median(confined))/float64(median(plain)), "median-ratio")
	writeRaw(b, plain, confined)
}

// writeRaw writes a row's spawns, one pair per line (plain and confined, in µs, in the
// order they ran), to $ORCR_BENCH_RAW/<row>.csv when that folder is set: for what one
// number per row cannot show (how the two sides spread, how a ratio's estimators
// compare over a run).
func writeRaw(b *testing.B, plain, confined []time.Duration) {
	dir := os.Getenv("ORCR_BENCH_RAW")
	if dir == "" {
		return
	}
	var sb strings.Builder
	for i := range min(len(plain), len(confined)) {
		fmt.Fprintf(&sb, "%d,%d\n", plain[i].Microseconds(), confined[i].Microseconds())
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(b.Name()) + ".csv"
	if err := os.WriteFile(filepath.Join(dir, name), []byte(sb.String()), 0o644); err != nil {
		b.Errorf("raw spawns: %v", err)
	}
}

// median is the middle of ds (the mean of the two middle ones for an even count).
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

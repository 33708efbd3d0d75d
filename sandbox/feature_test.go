package sandbox

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"orcr/core"
	"orcr/core/wire"
	"orcr/sandbox/confine"
	"orcr/testutil/wait"
)

// On a kernel without Landlock a sandbox asked for is refused with the reason, at the
// spawn and at the launch; an agent that asks for none is left alone.
func TestNoLandlockRefuses(t *testing.T) {
	f := New(Options{Home: t.TempDir(), Self: "/usr/bin/orcr", KernelABI: func() (int, error) {
		return 0, errors.New("this kernel has no Landlock (test)")
	}})
	on := &wire.Sandbox{Mode: wire.SandboxOn}
	err := f.CheckSpawn(context.Background(), wire.RunParams{Path: "a", Sandbox: on})
	if err == nil || !strings.Contains(err.Error(), "this kernel has no Landlock (test)") || !strings.Contains(err.Error(), "--sandbox=off") {
		t.Fatalf("spawn: %v", err)
	}
	spec := &core.LaunchSpec{Argv: []string{"sh"}, Cwd: t.TempDir()}
	if ok, err := f.WrapLaunch(context.Background(), wire.Agent{ID: "x", Path: "a", Sandbox: on}, spec, core.Confinement{}); ok || err == nil {
		t.Fatalf("launch: confined=%v err=%v", ok, err)
	}
	if ok, err := f.WrapLaunch(context.Background(), wire.Agent{ID: "x", Path: "a"}, spec, core.Confinement{}); ok || err != nil || len(spec.Argv) != 1 {
		t.Fatalf("no sandbox asked: confined=%v err=%v argv=%q", ok, err, spec.Argv)
	}
	if err := f.CheckSpawn(context.Background(), wire.RunParams{Path: "a", Sandbox: &wire.Sandbox{Mode: wire.SandboxOff}}); err != nil {
		t.Fatalf("--sandbox=off refused: %v", err)
	}
}

// The policy: a linked worktree's commits need the repository's git dir; a grant
// that is a symlink to ~/.ssh, $HOME itself or has ".." is refused; the agent's own
// folder resolving into ~/.ssh refuses the launch.
func TestPolicyGrants(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	repo := filepath.Join(root, "repo")
	wt := filepath.Join(root, "wt")
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	os.MkdirAll(repo, 0o755)
	git := func(dir string, args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git(repo, "init", "-q", "-b", "main")
	git(repo, "commit", "-q", "--allow-empty", "-m", "init")
	git(repo, "worktree", "add", "-q", wt, "-b", "feature")
	os.Symlink(filepath.Join(home, ".ssh"), filepath.Join(root, "sshlink"))

	f := New(Options{Home: filepath.Join(root, "orcr"), Self: "/usr/bin/true", Socket: filepath.Join(root, "orcr", "orcr.sock")})
	spec := &core.LaunchSpec{Argv: []string{"sh"}, Cwd: wt, Env: []string{"HOME=" + home, "PATH=/usr/bin:/bin"}}
	a := wire.Agent{ID: "x", Path: "a", Cwd: wt, Sandbox: &wire.Sandbox{Mode: wire.SandboxOn}}
	p, err := f.build(a, spec, core.Confinement{RW: []string{filepath.Join(root, "sshlink"), home}, Ports: []int{8080}}, "", false)
	if err != nil {
		t.Fatal(err)
	}
	realRepoGit, _ := filepath.EvalSymlinks(filepath.Join(repo, ".git"))
	realWT, _ := filepath.EvalSymlinks(wt)
	if !slices.Contains(p.RW, realWT) || !slices.Contains(p.RW, realRepoGit) {
		t.Fatalf("rw %q lacks the worktree or the repository's git dir %s", p.RW, realRepoGit)
	}
	for _, d := range p.RW {
		if strings.HasPrefix(d, home) {
			t.Fatalf("rw %q grants part of $HOME", p.RW)
		}
	}
	notes := strings.Join(p.Notes, "\n")
	if !strings.Contains(notes, "holds credentials: refused") || !strings.Contains(notes, "would open all of $HOME") {
		t.Fatalf("notes:\n%s", notes)
	}
	if !slices.Equal(p.Ports, []int{443, 8080}) {
		t.Fatalf("ports %v", p.Ports)
	}
	a.Sandbox.RW = []string{"~/../etc"}
	if _, err := f.build(a, spec, core.Confinement{}, "", false); err == nil || !strings.Contains(err.Error(), `".."`) {
		t.Fatalf("~/../etc: %v", err)
	}
	a.Sandbox.RW = []string{filepath.Join(root, "sshlink")}
	if _, err := f.build(a, spec, core.Confinement{}, "", false); err == nil || !strings.Contains(err.Error(), "holds credentials") {
		t.Fatalf("a grant asked for through a link to ~/.ssh: %v", err)
	}
	a.Sandbox.RW = nil
	spec.Cwd = filepath.Join(root, "sshlink")
	if _, err := f.build(a, spec, core.Confinement{}, "", false); err == nil {
		t.Fatal("an agent whose folder is ~/.ssh through a link was confined to it")
	}
}

func TestRefusedLines(t *testing.T) {
	got := refusedLines("ok\ncat: /x: Permission denied\nfine\nEACCES: open '/y'\n", 10)
	if len(got) != 2 || !strings.Contains(got[0], "/x") || !strings.Contains(got[1], "/y") {
		t.Fatalf("%q", got)
	}
}

// A grant asked for that is $HOME, a credentials folder of it, or a link to one is
// refused when the agent is asked for, before anything is recorded.
func TestCheckSpawnRefusesHomeGrants(t *testing.T) {
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	link := filepath.Join(t.TempDir(), "keys")
	os.Symlink(filepath.Join(home, ".ssh"), link)
	f := New(Options{Home: t.TempDir(), Self: "/usr/bin/true", KernelABI: func() (int, error) { return 7, nil }})
	for rw, want := range map[string]string{"~": "would open all of $HOME", "~/.ssh": "holds credentials", link: "holds credentials",
		"~/../etc": `".."`, "rel/dir": "not an absolute path"} {
		err := f.CheckSpawn(context.Background(), wire.RunParams{Path: "a", Env: map[string]string{"HOME": home},
			Sandbox: &wire.Sandbox{Mode: wire.SandboxOn, RW: []string{rw}}})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("rw %q: %v, want %q", rw, err, want)
		}
	}
	if err := f.CheckSpawn(context.Background(), wire.RunParams{Path: "a", Env: map[string]string{"HOME": home},
		Sandbox: &wire.Sandbox{Mode: wire.SandboxOn, RW: []string{"~/.cache/go-build"}}}); err != nil {
		t.Errorf("~/.cache/go-build: %v", err)
	}
}

// A temporary folder that holds $HOME (a container's HOME=/tmp, here TMPDIR=$HOME) is
// not granted, nor anything in it: the agent gets a TMPDIR of its own, and ~/.ssh and
// the folder's other entries stay out of the policy — a few rules, not one per entry.
func TestSharedTmpGrantsNothingElse(t *testing.T) {
	root := t.TempDir()
	tmp := filepath.Join(root, "tmp") // $HOME and $TMPDIR both
	for _, d := range []string{".ssh", "other", "more"} {
		os.MkdirAll(filepath.Join(tmp, d), 0o700)
	}
	work := filepath.Join(root, "work")
	if err := os.MkdirAll(work, 0o700); err != nil {
		t.Fatal(err)
	}
	// The launcher's way: its policy file is written before the pane starts.
	f := New(Options{Home: filepath.Join(root, "orcr"), Self: "/usr/bin/true", Socket: filepath.Join(root, "orcr", "orcr.sock"),
		KernelABI: func() (int, error) { return 7, nil }, InProcess: InProcessOff})
	spec := &core.LaunchSpec{Argv: []string{"sh"}, Cwd: work, Env: []string{"HOME=" + tmp, "TMPDIR=" + tmp, "PATH=/usr/bin:/bin"}}
	a := wire.Agent{ID: "x", Path: "a", Cwd: work, Sandbox: &wire.Sandbox{Mode: wire.SandboxOn}}
	if ok, err := f.WrapLaunch(context.Background(), a, spec, core.Confinement{}); !ok || err != nil {
		t.Fatalf("wrap: %v %v", ok, err)
	}
	own := filepath.Join(f.o.Home, "sandbox-tmp")
	if envValue(spec.Env, "TMPDIR") != own {
		t.Fatalf("TMPDIR %q, want the agent's own %s", envValue(spec.Env, "TMPDIR"), own)
	}
	p, err := confine.Load(filepath.Join(f.o.Home, "agents", "x", PolicyFile))
	if err != nil {
		t.Fatal(err)
	}
	realTmp, _ := filepath.EvalSymlinks(tmp)
	realOwn, _ := filepath.EvalSymlinks(own)
	for _, list := range [][]string{p.RW, p.ROX, p.RO} {
		for _, d := range list {
			if d == realTmp || strings.HasPrefix(d, realTmp+"/") {
				t.Fatalf("policy grants %s of the folder that holds $HOME:\nrw %q\nrox %q\nro %q", d, p.RW, p.ROX, p.RO)
			}
		}
	}
	if p.Entries != nil {
		t.Fatalf("the entries of the folder that is $HOME are granted: %+v", p.Entries)
	}
	if !slices.Contains(p.RW, realOwn) {
		t.Fatalf("rw %q lacks the agent's own TMPDIR %s", p.RW, realOwn)
	}
	if !strings.Contains(strings.Join(p.Notes, "\n"), "holds $HOME or orcr's home: not granted") {
		t.Fatalf("notes %q", p.Notes)
	}
}

// /var/tmp is granted (SQLite picks it) unless it holds orcr's home or $HOME: the
// agents' policy files are there, and a confined agent that could write them could
// write the next agent's policy.
func TestVarTmpNotGrantedWhenItHoldsAHome(t *testing.T) {
	root := t.TempDir()
	old := varTmp
	varTmp = filepath.Join(root, "vartmp")
	defer func() { varTmp = old }()
	work := filepath.Join(root, "work")
	for _, d := range []string{work, filepath.Join(varTmp, "orcr")} {
		os.MkdirAll(d, 0o700)
	}
	spec := &core.LaunchSpec{Argv: []string{"sh"}, Cwd: work, Env: []string{"HOME=/nonexistent-home", "PATH=/usr/bin:/bin"}}
	a := wire.Agent{ID: "x", Path: "a", Cwd: work, Sandbox: &wire.Sandbox{Mode: wire.SandboxOn}}
	for home, granted := range map[string]bool{filepath.Join(varTmp, "orcr"): false, filepath.Join(root, "orcr"): true} {
		f := New(Options{Home: home, Self: "/usr/bin/true", KernelABI: func() (int, error) { return 7, nil }})
		p, err := f.build(a, spec, core.Confinement{}, "", false)
		if err != nil {
			t.Fatal(err)
		}
		real, _ := filepath.EvalSymlinks(varTmp)
		if slices.Contains(p.RW, real) != granted {
			t.Errorf("orcr's home %s: %s granted %v, want %v (rw %q)", home, varTmp, !granted, granted, p.RW)
		}
	}
}

// A grant that contains orcr's home (its store, every agent's state and socket) or its
// config folder (secrets.toml) — the agent's cwd, a role's or --sandbox-rw's rw or
// rox, or a link to one — is refused when the agent is asked for, before anything is
// recorded, and again at launch; a folder inside orcr's home (a run's worktree) is not.
func TestGrantHoldingOrcrHomeRefused(t *testing.T) {
	root := t.TempDir()
	state := filepath.Join(root, "user", ".local", "state", "orcr")
	cfg := filepath.Join(root, "user", ".config", "orcr")
	inside := filepath.Join(state, "worktrees", "w")
	for _, d := range []string{state, cfg, inside} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(t.TempDir(), "up")
	os.Symlink(filepath.Join(root, "user", ".local"), link)
	f := New(Options{Home: state, Config: cfg, Self: "/usr/bin/true", KernelABI: func() (int, error) { return 7, nil }})
	env := map[string]string{"HOME": filepath.Join(t.TempDir(), "elsewhere")}
	check := func(cwd string, rw, rox []string) error {
		return f.CheckSpawn(context.Background(), wire.RunParams{Path: "a", Cwd: cwd, Env: env,
			Sandbox: &wire.Sandbox{Mode: wire.SandboxOn, RW: rw, ROX: rox}})
	}
	for _, c := range []struct {
		cwd      string
		rw, rox  []string
		want     string
		wantPath string
	}{
		{cwd: filepath.Join(root, "user"), want: "the agent's folder", wantPath: state},
		{cwd: filepath.Join(root, "user", ".local"), want: "orcr's home", wantPath: state},
		{cwd: state, want: "orcr's home", wantPath: state},
		{cwd: link, want: "orcr's home", wantPath: state},
		{cwd: inside, rw: []string{filepath.Join(root, "user", ".config")}, want: "orcr's config folder", wantPath: cfg},
		{cwd: inside, rox: []string{root}, want: "orcr's home", wantPath: state},
	} {
		err := check(c.cwd, c.rw, c.rox)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.wantPath) {
			t.Errorf("cwd %s rw %q rox %q: %v, want %q naming %s", c.cwd, c.rw, c.rox, err, c.want, c.wantPath)
		}
	}
	if err := check(inside, []string{filepath.Join(root, "other")}, nil); err != nil {
		t.Errorf("a folder inside orcr's home, and one beside it: %v", err)
	}
	// At launch too (a role's rw reaches the policy there).
	a := wire.Agent{ID: "x", Path: "x", Cwd: inside, Sandbox: &wire.Sandbox{Mode: wire.SandboxOn, RW: []string{root}}}
	spec := &core.LaunchSpec{Argv: []string{"sh"}, Cwd: inside, Env: []string{"HOME=/nonexistent", "PATH=/usr/bin:/bin"}}
	if _, err := f.WrapLaunch(context.Background(), a, spec, core.Confinement{}); err == nil || !strings.Contains(err.Error(), "orcr's home") {
		t.Errorf("launch with rw %s: %v", root, err)
	}
}

// The policy file is written before the pane starts on every host but pty, which
// confines from a server thread and writes it once the program runs: tmux runs the
// launcher's argv (which reads the file) even where the server confines in-process.
func TestPolicyFileBeforeLaunchOffPty(t *testing.T) {
	root := t.TempDir()
	work := filepath.Join(root, "work")
	if err := os.MkdirAll(work, 0o700); err != nil {
		t.Fatal(err)
	}
	f := New(Options{Home: filepath.Join(root, "orcr"), Self: "/usr/bin/true", KernelABI: func() (int, error) { return 7, nil }})
	defer f.Close() // the pty launch's thread, confined ahead of its start
	for host, now := range map[string]bool{"tmux": true, "herdr": true, "pty": false} {
		id := "a-" + host
		spec := &core.LaunchSpec{Argv: []string{"sh"}, Cwd: work, Env: []string{"HOME=/nonexistent", "PATH=/usr/bin:/bin"}}
		a := wire.Agent{ID: id, Path: id, Host: host, Cwd: work, Sandbox: &wire.Sandbox{Mode: wire.SandboxOn}}
		if ok, err := f.WrapLaunch(context.Background(), a, spec, core.Confinement{}); !ok || err != nil {
			t.Fatalf("%s: %v %v", host, ok, err)
		}
		_, err := confine.Load(filepath.Join(f.o.Home, "agents", id, PolicyFile))
		if (err == nil) != now {
			t.Errorf("%s: policy written before the launch %v, want %v (%v)", host, err == nil, now, err)
		}
		if host == "pty" {
			spec.Confine.Started(1)
			if err := f.written(context.Background(), id); err != nil {
				t.Fatal(err)
			}
			if _, err := confine.Load(filepath.Join(f.o.Home, "agents", id, PolicyFile)); err != nil {
				t.Errorf("pty: no policy once started: %v", err)
			}
		}
	}
}

// An in-process launch's policy and report (--explain's) are not written while the
// launches go on: a burst of spawns does not pay their file creations. They are
// written once the launches pause for filesIdle, when explain asks for an agent's
// (written: that agent's only), and at Close; a relaunch of an agent whose files wait
// replaces them (its latest policy is the one written).
func TestInProcessFilesWaitForAPause(t *testing.T) {
	defer func(d time.Duration) { filesIdle = d }(filesIdle)
	filesIdle = time.Hour
	root := t.TempDir()
	f := New(Options{Home: filepath.Join(root, "orcr"), Self: "/usr/bin/true", KernelABI: func() (int, error) { return 7, nil }})
	policy := func(id string) (confine.Policy, error) {
		return confine.Load(filepath.Join(f.o.Home, "agents", id, PolicyFile))
	}
	launch := func(id, cwd string) {
		t.Helper()
		os.MkdirAll(cwd, 0o700)
		spec := &core.LaunchSpec{Argv: []string{"sh"}, Cwd: cwd, Env: []string{"HOME=/nonexistent", "PATH=/usr/bin:/bin"}}
		a := wire.Agent{ID: id, Path: id, Host: "pty", Cwd: cwd, Sandbox: &wire.Sandbox{Mode: wire.SandboxOn}}
		if ok, err := f.WrapLaunch(context.Background(), a, spec, core.Confinement{}); !ok || err != nil || spec.Confine == nil {
			t.Fatalf("%s: %v %v", id, ok, err)
		}
		spec.Confine.Started(4242)
	}
	for _, id := range []string{"a1", "a2", "a3"} {
		launch(id, filepath.Join(root, "w-"+id))
	}
	wait.Never(t, 300*time.Millisecond, "a launch's files written while the launches go on", func() bool {
		_, err1 := policy("a1")
		_, err3 := policy("a3")
		return err1 == nil || err3 == nil
	})
	// explain's wait writes that agent's.
	if err := f.written(context.Background(), "a2"); err != nil {
		t.Fatal(err)
	}
	if p, err := policy("a2"); err != nil || !slices.Contains(p.RW, filepath.Join(root, "w-a2")) {
		t.Fatalf("a2's policy once asked for: %+v %v", p, err)
	}
	if rep, ok, err := confine.ReadReport(filepath.Join(f.o.Home, "agents", "a2", ReportFile)); !ok || err != nil || rep.PID != 4242 || !rep.InProcess {
		t.Fatalf("a2's report once asked for: %+v %v %v", rep, ok, err)
	}
	if _, err := policy("a1"); err == nil {
		t.Fatal("a1's files written when a2's were asked for")
	}
	// a1 launched again in another folder before its files were written: the files
	// are the second launch's.
	launch("a1", filepath.Join(root, "w-a1-again"))
	f.Close()
	p, err := policy("a1")
	if err != nil || !slices.Contains(p.RW, filepath.Join(root, "w-a1-again")) || slices.Contains(p.RW, filepath.Join(root, "w-a1")) {
		t.Fatalf("a1's policy after Close: %+v %v", p, err)
	}
	if _, err := policy("a3"); err != nil {
		t.Fatalf("a3's files not written at Close: %v", err)
	}

	// An agent launched in-process, then by the launcher (another host) before its
	// files were written: the launcher's policy stays.
	filesIdle = time.Hour
	f = New(Options{Home: filepath.Join(root, "orcr"), Self: "/usr/bin/true", KernelABI: func() (int, error) { return 7, nil }})
	launch("c1", filepath.Join(root, "w-c1"))
	cwd := filepath.Join(root, "w-c1-tmux")
	os.MkdirAll(cwd, 0o700)
	spec := &core.LaunchSpec{Argv: []string{"sh"}, Cwd: cwd, Env: []string{"HOME=/nonexistent", "PATH=/usr/bin:/bin"}}
	if ok, err := f.WrapLaunch(context.Background(), wire.Agent{ID: "c1", Path: "c1", Host: "tmux", Cwd: cwd,
		Sandbox: &wire.Sandbox{Mode: wire.SandboxOn}}, spec, core.Confinement{}); !ok || err != nil {
		t.Fatalf("c1 on tmux: %v %v", ok, err)
	}
	f.Close()
	if p, err := policy("c1"); err != nil || !slices.Contains(p.RW, cwd) {
		t.Fatalf("c1's policy after its launcher's launch and Close: %+v %v", p, err)
	}

	// A pause writes them.
	filesIdle = 20 * time.Millisecond
	f = New(Options{Home: filepath.Join(root, "orcr"), Self: "/usr/bin/true", KernelABI: func() (int, error) { return 7, nil }})
	defer f.Close()
	launch("b1", filepath.Join(root, "w-b1"))
	wait.For(t, 10*time.Second, "b1's files once the launches paused", func() bool {
		_, err := policy("b1")
		return err == nil
	})
}

// A policy the build refuses stops the launch on every host: where the launcher runs
// (tmux) WrapLaunch says so before the pane starts; on the pty host, whose policy is
// built beside the host's own start, its Run says so and the program is never started.
func TestRefusedPolicyStopsTheLaunch(t *testing.T) {
	root := t.TempDir()
	work := filepath.Join(root, "work")
	if err := os.MkdirAll(work, 0o700); err != nil {
		t.Fatal(err)
	}
	f := New(Options{Home: filepath.Join(root, "orcr"), Self: "/usr/bin/true", KernelABI: func() (int, error) { return 7, nil }})
	defer f.Close()
	for _, host := range []string{"tmux", "pty"} {
		spec := &core.LaunchSpec{Argv: []string{"sh"}, Cwd: work, Env: []string{"HOME=" + root, "PATH=/usr/bin:/bin"}}
		a := wire.Agent{ID: "a-" + host, Path: "a-" + host, Host: host, Cwd: work,
			Sandbox: &wire.Sandbox{Mode: wire.SandboxOn, RW: []string{"~/../etc"}}}
		ok, err := f.WrapLaunch(context.Background(), a, spec, core.Confinement{})
		if host == "tmux" {
			if err == nil || !strings.Contains(err.Error(), `".."`) {
				t.Fatalf("tmux: wrap %v %v, want the refusal", ok, err)
			}
			continue
		}
		if !ok || err != nil || spec.Confine == nil {
			t.Fatalf("pty: wrap %v %v", ok, err)
		}
		started := false
		err = spec.Confine.Run(func(string) error { started = true; return nil })
		if err == nil || !strings.Contains(err.Error(), `".."`) || started {
			t.Fatalf("pty: run %v, started %v; want the refusal and no start", err, started)
		}
	}
}

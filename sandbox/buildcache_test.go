package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"orcr/core"
	"orcr/core/wire"
	"orcr/sandbox/confine"
	"orcr/testutil/wait"

	"golang.org/x/sys/unix"
)

// A launch's policy is kept per inputs (all of it but the agent's own folder and git
// dir, made at every launch) and used again while what it was made from holds;
// anything that would change a fresh build's answer has it made again: git's
// settings made and removed, the program made earlier on PATH. The agent's own part
// follows its folder (a link) re-pointed to another folder, or into ~/.ssh (refused,
// as a fresh build refuses it), the folder removed and made again, a repository made
// above the folder, while the rest stays kept; another agent in a folder of its own
// uses it too. After each, the policy is what a fresh build gives. It fails when the
// kept policy is used without the checks (holds), and without the cache (no hit).
func TestBuildKeptWhileItHolds(t *testing.T) {
	root := quietRoot(t)
	home := filepath.Join(root, "home")
	w1, w2 := filepath.Join(root, "top", "w1"), filepath.Join(root, "top", "w2")
	bin1, bin2 := filepath.Join(root, "bin1"), filepath.Join(root, "bin2")
	for _, d := range []string{filepath.Join(home, ".ssh", "keys"), w1, w2, bin1, bin2} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(bin2, "prog"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "cwd")
	repoint := func(to string) {
		t.Helper()
		os.Remove(link)
		if err := os.Symlink(to, link); err != nil {
			t.Fatal(err)
		}
	}
	repoint(w1)
	f := New(Options{Home: filepath.Join(root, "orcr"), Self: "/usr/bin/true", KernelABI: func() (int, error) { return 7, nil }})
	defer f.Close()
	a := wire.Agent{ID: "x", Path: "a", Cwd: link, Sandbox: &wire.Sandbox{Mode: wire.SandboxOn}}
	newSpec := func() *core.LaunchSpec {
		return &core.LaunchSpec{Argv: []string{"prog"}, Cwd: link,
			Env: []string{"HOME=" + home, "PATH=" + bin1 + ":" + bin2 + ":/usr/bin:/bin"}}
	}
	build := func(step string, hit bool) granted {
		t.Helper()
		h0 := f.builds.hits
		p, seen, err := f.buildSeen(a, newSpec(), core.Confinement{}, "", true)
		// What the build says it saw is what a stat gives now (the ruleset's check
		// takes it instead of a stat: confine.Policy.Seen).
		for path, id := range seen {
			if now, ok := confine.StatID(path); !ok || now != id {
				t.Fatalf("%s: %s seen as %v, a stat gives %v (%v)", step, path, id, now, ok)
			}
		}
		if err == nil && len(seen) == 0 {
			t.Fatalf("%s: nothing seen", step)
		}
		fresh, ferr := f.buildFresh(a, newSpec(), core.Confinement{}, "", true, nil)
		if (err == nil) != (ferr == nil) || (err == nil && !reflect.DeepEqual(p, fresh)) {
			t.Fatalf("%s: kept policy %+v (%v), a fresh build gives %+v (%v)", step, p, err, fresh, ferr)
		}
		if got := f.builds.hits > h0; got != hit {
			t.Errorf("%s: kept policy used %v, want %v", step, got, hit)
		}
		return granted{p.RW, p.ROX, p.RO, err}
	}
	real := func(p string) string { r, _ := filepath.EvalSymlinks(p); return r }
	// quiet waits for the kept policy's watch to stand for its checks (set off the
	// spawn's path once a check held: pathWatch), so that the step after it is
	// answered by the watch unless the watch heard of the change.
	quiet := func(step string) {
		t.Helper()
		watchQuiet(t, f, step)
	}
	unchanged := func() {
		t.Helper()
		// Another process's change in a folder of the way (the tests beside this one)
		// is heard too: the checks are made then, and the watch set again.
		for try := 0; ; try++ {
			quiet("unchanged")
			n := f.builds.watched.Load()
			build("unchanged", true)
			if f.builds.watched.Load() == n+1 {
				return
			}
			if try == 4 {
				t.Fatal("unchanged: the checks made five times, never answered by the quiet watch")
			}
		}
	}

	build("first", false)
	if c := build("again", true); !slices.Contains(c.rw, real(w1)) || !slices.Contains(c.rox, filepath.Join(bin2, "prog")) {
		t.Fatalf("again: rw %q rox %q", c.rw, c.rox)
	}
	unchanged()
	repoint(w2)
	if c := build("link re-pointed", true); !slices.Contains(c.rw, real(w2)) || slices.Contains(c.rw, real(w1)) {
		t.Errorf("link re-pointed: rw %q", c.rw)
	}
	unchanged()
	repoint(filepath.Join(home, ".ssh", "keys"))
	if c := build("link into ~/.ssh", false); c.err == nil || !strings.Contains(c.err.Error(), "credentials") {
		t.Errorf("link into ~/.ssh: %v, want refused", c.err)
	}
	repoint(w1)
	build("back", true)
	os.RemoveAll(w1)
	os.MkdirAll(w1, 0o700)
	if c := build("folder made again", true); !slices.Contains(c.rw, real(w1)) {
		t.Errorf("folder made again: rw %q", c.rw)
	}
	unchanged()
	os.WriteFile(filepath.Join(home, ".gitconfig"), nil, 0o600)
	if c := build("git settings made", false); !slices.Contains(c.ro, filepath.Join(home, ".gitconfig")) {
		t.Errorf("git settings made: ro %q", c.ro)
	}
	build("again", true)
	unchanged()
	os.Remove(filepath.Join(home, ".gitconfig"))
	build("git settings removed", false)
	build("again", true)
	unchanged()
	os.WriteFile(filepath.Join(bin1, "prog"), []byte("#!/bin/sh\n"), 0o755)
	if c := build("program earlier on PATH", false); !slices.Contains(c.rox, filepath.Join(bin1, "prog")) {
		t.Errorf("program earlier on PATH: rox %q", c.rox)
	}
	build("again", true)
	unchanged()
	// Its exec bit taken: the one after it on PATH again (heard as a change of mode).
	os.Chmod(filepath.Join(bin1, "prog"), 0o644)
	if c := build("program not executable", false); !slices.Contains(c.rox, filepath.Join(bin2, "prog")) {
		t.Errorf("program not executable: rox %q", c.rox)
	}
	build("again", true)
	unchanged()
	// gitDir looks up from the agent's folder as named (the link's folder).
	os.MkdirAll(filepath.Join(root, ".git"), 0o700)
	if c := build("repository above", true); !slices.Contains(c.rw, real(filepath.Join(root, ".git"))) {
		t.Errorf("repository above: rw %q", c.rw)
	}
	unchanged()
	// Another agent, in another folder: the rest of its policy is the one kept.
	other := a
	other.Cwd = w2
	h0 := f.builds.hits
	p, err := f.build(other, &core.LaunchSpec{Argv: []string{"prog"}, Cwd: w2,
		Env: []string{"HOME=" + home, "PATH=" + bin1 + ":" + bin2 + ":/usr/bin:/bin"}}, core.Confinement{}, "", true)
	if err != nil || !slices.Contains(p.RW, real(w2)) || slices.Contains(p.RW, real(w1)) || !slices.Equal(p.Own, []string{real(w2), real(filepath.Join(root, ".git"))}) {
		t.Fatalf("another agent's folder: rw %q own %q (%v)", p.RW, p.Own, err)
	}
	if f.builds.hits == h0 {
		t.Error("another agent's folder: the rest of its policy made again, not the one kept")
	}
}

// granted is what TestBuildKeptWhileItHolds looks at in a policy.
type granted struct {
	rw, rox, ro []string
	err         error
}

// BenchmarkPolicyBuild is a pty agent's policy made fresh (buildFresh) against kept
// and checked (build), for a folder of its own in /tmp and orcr's home elsewhere.
func BenchmarkPolicyBuild(b *testing.B) {
	root := b.TempDir()
	home, _ := os.UserHomeDir()
	f := New(Options{Home: filepath.Join(home, ".local", "state", "orcr"), Self: "/usr/bin/true", InProcess: InProcessOn,
		KernelABI: func() (int, error) { return 7, nil }})
	defer f.Close()
	a := wire.Agent{ID: "x", Path: "a", Host: "pty", Cwd: root, Sandbox: &wire.Sandbox{Mode: wire.SandboxOn}}
	spec := &core.LaunchSpec{Argv: []string{"sh"}, Cwd: root, Env: []string{"HOME=" + home, "PATH=/usr/local/bin:/usr/bin:/bin"}}
	for _, kept := range []bool{false, true} {
		name := "fresh"
		if kept {
			name = "kept"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				var err error
				if kept {
					_, err = f.build(a, spec, core.Confinement{}, "", true)
				} else {
					_, err = f.buildFresh(a, spec, core.Confinement{}, "", true, nil)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Launches at once share the kept policies safely (run with -race): each gets the
// folder its link pointed to at some moment of its build, never a mix.
func TestBuildKeptConcurrently(t *testing.T) {
	root := t.TempDir()
	w1, w2 := filepath.Join(root, "w1"), filepath.Join(root, "w2")
	os.MkdirAll(w1, 0o700)
	os.MkdirAll(w2, 0o700)
	link := filepath.Join(root, "cwd")
	os.Symlink(w1, link)
	f := New(Options{Home: filepath.Join(root, "orcr"), Self: "/usr/bin/true", KernelABI: func() (int, error) { return 7, nil }})
	defer f.Close()
	a := wire.Agent{ID: "x", Path: "a", Cwd: link, Sandbox: &wire.Sandbox{Mode: wire.SandboxOn}}
	r1, _ := filepath.EvalSymlinks(w1)
	r2, _ := filepath.EvalSymlinks(w2)
	done := make(chan struct{})
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			for range 100 {
				spec := &core.LaunchSpec{Argv: []string{"sh"}, Cwd: link, Env: []string{"HOME=/nonexistent", "PATH=/usr/bin:/bin"}}
				p, err := f.build(a, spec, core.Confinement{}, "", true)
				if err == nil && slices.Contains(p.RW, r1) == slices.Contains(p.RW, r2) {
					err = fmt.Errorf("rw %q: not one of the folders", p.RW)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	go func() {
		defer close(done)
		for i := range 50 {
			tmp := link + ".new"
			os.Remove(tmp)
			os.Symlink([]string{w1, w2}[i%2], tmp)
			os.Rename(tmp, link)
		}
	}()
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	<-done
}

// A kept policy's watch hears what changes a name's resolution without a change in the
// path's own folders: a link it leads through, in a folder of its own, re-pointed; and
// (as root) a mount on a folder of the way, and its unmount. After each, the policy
// is what a fresh build gives.
func TestKeptPolicyWatchHearsLinksAndMounts(t *testing.T) {
	root := quietRoot(t)
	home, work := filepath.Join(root, "home"), filepath.Join(root, "work")
	tmpA, tmpB, hops := filepath.Join(root, "tmpA"), filepath.Join(root, "tmpB"), filepath.Join(root, "hops")
	for _, d := range []string{home, work, tmpA, tmpB, hops} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// TMPDIR → hops/l2 → tmpA: hops is neither TMPDIR's folder nor its resolution's.
	if err := os.Symlink(filepath.Join(hops, "l2"), filepath.Join(root, "tl")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(tmpA, filepath.Join(hops, "l2")); err != nil {
		t.Fatal(err)
	}
	f := New(Options{Home: filepath.Join(root, "orcr"), Self: "/usr/bin/true", KernelABI: func() (int, error) { return 7, nil }})
	defer f.Close()
	a := wire.Agent{ID: "x", Path: "a", Cwd: work, Sandbox: &wire.Sandbox{Mode: wire.SandboxOn}}
	spec := func() *core.LaunchSpec {
		return &core.LaunchSpec{Argv: []string{"sh"}, Cwd: work,
			Env: []string{"HOME=" + home, "TMPDIR=" + filepath.Join(root, "tl"), "PATH=/usr/bin:/bin"}}
	}
	build := func(step string) confine.Policy {
		t.Helper()
		p, seen, err := f.buildSeen(a, spec(), core.Confinement{}, "", true)
		fresh, ferr := f.buildFresh(a, spec(), core.Confinement{}, "", true, nil)
		if err != nil || ferr != nil || !reflect.DeepEqual(p, fresh) {
			t.Fatalf("%s: kept policy %+v (%v), a fresh build gives %+v (%v)", step, p, err, fresh, ferr)
		}
		// What it says it saw (what the ruleset's check takes for a stat) is what a
		// stat gives now: a mount changes the inode, not the policy's names.
		for path, id := range seen {
			if now, ok := confine.StatID(path); !ok || now != id {
				t.Fatalf("%s: %s seen as %v, a stat gives %v (%v)", step, path, id, now, ok)
			}
		}
		return p
	}
	quietOnce := func(step string) bool {
		t.Helper()
		build(step)
		watchQuiet(t, f, step)
		n := f.builds.watched.Load()
		build(step + ", again")
		if f.builds.watched.Load() == n+1 {
			return true
		}
		return false
	}
	// Another process's change in a folder of the way (the tests beside this one) is
	// heard too: the checks are made then, and the watch set again.
	quiet := func(step string) {
		t.Helper()
		for try := 0; !quietOnce(step); try++ {
			if try == 4 {
				t.Fatalf("%s: the checks made five times, never answered by the quiet watch", step)
			}
		}
	}
	build("first")
	quiet("kept")
	repoint := filepath.Join(hops, "l2.new")
	if err := os.Symlink(tmpB, repoint); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(repoint, filepath.Join(hops, "l2")); err != nil {
		t.Fatal(err)
	}
	if p := build("a link on the way re-pointed"); !slices.Contains(p.RW, tmpB) || slices.Contains(p.RW, tmpA) {
		t.Fatalf("a link on the way re-pointed: rw %q, want %s", p.RW, tmpB)
	}
	if os.Geteuid() != 0 {
		return // mounting needs root
	}
	quiet("re-pointed")
	if err := unix.Mount("tmpfs", tmpB, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount: %v", err)
	}
	mounted := true
	defer func() {
		if mounted {
			unix.Unmount(tmpB, unix.MNT_DETACH)
		}
	}()
	build("a mount on the way")
	quiet("mounted")
	// Detached: the kept policy holds the mounted folder open (its resolution).
	if err := unix.Unmount(tmpB, unix.MNT_DETACH); err != nil {
		t.Fatal(err)
	}
	mounted = false
	build("unmounted")
}

// lookupDirs follows the kernel's resolution: each component's folder, through links
// (relative and absolute, in folders off the path), `..` from where a link led, up to
// the first name missing.
func TestLookupDirs(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"a/b", "x/y", "z"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// a/l → ../x/y (relative), x/y/m → root/z (absolute)
	if err := os.Symlink("../x/y", filepath.Join(root, "a", "l")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "z"), filepath.Join(root, "x", "y", "m")); err != nil {
		t.Fatal(err)
	}
	up := func(p string) []string {
		var ds []string
		for d := p; ; d = filepath.Dir(d) {
			ds = append([]string{d}, ds...)
			if d == "/" {
				return ds
			}
		}
	}
	j := func(s ...string) string { return filepath.Join(append([]string{root}, s...)...) }
	for _, c := range []struct {
		path string
		want []string
	}{
		{j("a", "b", "f"), append(up(root), j("a"), j("a", "b"))},
		{j("a", "l", "m", "f"), append(up(root), j("a"), j("x"), j("x", "y"), j("z"))},
		{j("a", "missing", "f"), append(up(root), j("a"))},
		{"relative/path", nil},
	} {
		if got := lookupDirs(c.path); !slices.Equal(got, c.want) {
			t.Errorf("lookupDirs(%s) = %q, want %q", c.path, got, c.want)
		}
	}
}

// quietRoot is a test's folder where other tests' files do not come and go (under
// $HOME/.cache rather than /tmp, when it can be made): a kept policy's watch hears
// every entry made in a folder of the way, /tmp's included.
func quietRoot(t *testing.T) string {
	t.Helper()
	if home, err := os.UserHomeDir(); err == nil {
		if err := os.MkdirAll(filepath.Join(home, ".cache"), 0o700); err == nil {
			if d, err := os.MkdirTemp(filepath.Join(home, ".cache"), "orcr-watch-"); err == nil {
				t.Cleanup(func() { os.RemoveAll(d) })
				return d
			}
		}
	}
	return t.TempDir()
}

// watchQuiet waits for a kept policy's watch to stand for its checks (set off the
// spawn's path once a check held: pathWatch).
func watchQuiet(t *testing.T, f *Feature, step string) {
	t.Helper()
	wait.For(t, 10*time.Second, step+": the kept policy's watch set", func() bool {
		f.builds.mu.Lock()
		defer f.builds.mu.Unlock()
		for _, b := range f.builds.m {
			if w := b.watch.Load(); w != nil && w.isQuiet() {
				return true
			}
		}
		return false
	})
}

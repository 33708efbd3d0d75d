package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"orcr/core"
	"orcr/core/wire"
	"orcr/sandbox/confine"
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
	root := t.TempDir()
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

	build("first", false)
	if c := build("again", true); !slices.Contains(c.rw, real(w1)) || !slices.Contains(c.rox, filepath.Join(bin2, "prog")) {
		t.Fatalf("again: rw %q rox %q", c.rw, c.rox)
	}
	repoint(w2)
	if c := build("link re-pointed", true); !slices.Contains(c.rw, real(w2)) || slices.Contains(c.rw, real(w1)) {
		t.Errorf("link re-pointed: rw %q", c.rw)
	}
	build("unchanged", true)
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
	build("unchanged", true)
	os.WriteFile(filepath.Join(home, ".gitconfig"), nil, 0o600)
	if c := build("git settings made", false); !slices.Contains(c.ro, filepath.Join(home, ".gitconfig")) {
		t.Errorf("git settings made: ro %q", c.ro)
	}
	os.Remove(filepath.Join(home, ".gitconfig"))
	build("git settings removed", false)
	os.WriteFile(filepath.Join(bin1, "prog"), []byte("#!/bin/sh\n"), 0o755)
	if c := build("program earlier on PATH", false); !slices.Contains(c.rox, filepath.Join(bin1, "prog")) {
		t.Errorf("program earlier on PATH: rox %q", c.rox)
	}
	// gitDir looks up from the agent's folder as named (the link's folder).
	os.MkdirAll(filepath.Join(root, ".git"), 0o700)
	if c := build("repository above", true); !slices.Contains(c.rw, real(filepath.Join(root, ".git"))) {
		t.Errorf("repository above: rw %q", c.rw)
	}
	build("unchanged", true)
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

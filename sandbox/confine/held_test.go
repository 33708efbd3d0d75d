package confine

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"orcr/testutil/wait"
)

// probes are what a confined thread tries in a policy's paths: each answers nil or
// the error the kernel gave.
func probes(root string) map[string]func() error {
	write := func(p string) func() error {
		return func() error { return os.WriteFile(p, []byte("y"), 0o600) }
	}
	read := func(p string) func() error {
		return func() error { _, err := os.ReadFile(p); return err }
	}
	list := func(p string) func() error {
		return func() error { _, err := os.ReadDir(p); return err }
	}
	mkdir := func(p string) func() error {
		return func() error { return os.Mkdir(p, 0o700) }
	}
	run := func(p string) func() error {
		// Forked from the confined thread: the program inherits its domain.
		return func() error { return exec.Command(p).Run() }
	}
	rename := func(from, to string) func() error {
		return func() error { return os.Rename(from, to) }
	}
	j := func(s ...string) string { return filepath.Join(append([]string{root}, s...)...) }
	return map[string]func() error{
		"rw dir: write":         write(j("rw", "new")),
		"rw dir: mkdir":         mkdir(j("rw", "sub")),
		"rw dir: move within":   rename(j("rw", "a"), j("rw", "b")),
		"rw dir: list":          list(j("rw")),
		"rw file: write":        write(j("rwfile")),
		"rw file: read":         read(j("rwfile")),
		"rox dir: read":         read(j("rox", "f")),
		"rox dir: exec":         run(j("rox", "f")),
		"rox dir: write":        write(j("rox", "f")),
		"rox dir: list":         list(j("rox")),
		"rox file: exec":        run(j("roxfile")),
		"rox file: write":       write(j("roxfile")),
		"ro dir: read":          read(j("ro", "f")),
		"ro dir: exec":          run(j("ro", "f")),
		"ro dir: list":          list(j("ro")),
		"ro file: read":         read(j("rofile")),
		"ro file: exec":         run(j("rofile")),
		"dev: write":            write("/dev/null"),
		"missing: write":        write(j("missing", "f")),
		"outside: read":         read(j("outside", "f")),
		"move out of rw to rox": rename(j("rw", "c"), j("rox", "c")),
	}
}

// A spare made from a policy's paths held (heldPolicy) grants what one built from the
// paths (newRuleset) does, path by path and right by right: read-write, read-execute
// and read folders and files, a device, a path missing, a move within and out of a
// folder.
func TestHeldPolicyGrantsWhatItsPathsDo(t *testing.T) {
	dirs := landlockFolders(t, "rw", "rox", "ro", "outside")
	root := filepath.Dir(dirs[0])
	p := Policy{
		RW:  []string{filepath.Join(root, "rw"), filepath.Join(root, "rwfile")},
		ROX: []string{"/usr", "/bin", filepath.Join(root, "rox"), filepath.Join(root, "roxfile")},
		RO:  []string{filepath.Join(root, "ro"), filepath.Join(root, "rofile")},
		Dev: []string{"/dev/null"},
	}
	p.RW = append(p.RW, filepath.Join(root, "missing"))
	results := map[string]map[string]string{}
	for _, way := range []string{"paths", "held"} {
		// Each way gets the same files afresh.
		for _, f := range []string{"rwfile", "roxfile", "rofile", "rw/a", "rw/c", "rox/f", "ro/f", "outside/f"} {
			if err := os.WriteFile(filepath.Join(root, f), []byte("#!/bin/sh\n"), 0o700); err != nil {
				t.Fatal(err)
			}
		}
		for _, f := range []string{"rw/b", "rw/new", "rw/sub", "rox/c"} {
			os.RemoveAll(filepath.Join(root, f))
		}
		var r *ruleset
		var err error
		if way == "paths" {
			r, err = newRuleset(p)
		} else {
			var h *heldPolicy
			if h, err = holdPolicy(p); err == nil {
				r, err = h.ruleset()
				// The ruleset holds its inodes: the descriptors can go.
				h.close()
			}
		}
		if err != nil {
			t.Fatalf("%s: %v", way, err)
		}
		w, err := newThread()
		if err != nil {
			t.Fatal(err)
		}
		if err := w.confine(r.fd, 0); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		if _, err := w.do(func() error {
			for name, probe := range probes(root) {
				got[name] = errno(probe())
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		w.end()
		syscall.Close(r.fd)
		got["warnings"] = strings.Join(r.rep.Warnings, "; ")
		got["ids"] = fmt.Sprint(r.ids)
		results[way] = got
	}
	for name, want := range results["paths"] {
		if got := results["held"][name]; got != want {
			t.Errorf("%s: from held paths %q, from the paths %q", name, got, want)
		}
	}
	// The probes tell rights apart: the policy grants some, refuses others.
	if results["paths"]["rw dir: write"] != "ok" || results["paths"]["rox dir: write"] == "ok" ||
		results["paths"]["ro dir: exec"] == "ok" || results["paths"]["rox file: exec"] != "ok" {
		t.Fatalf("the probes read no policy: %v", results["paths"])
	}
}

// A held policy not used for heldIdle is closed (its descriptors keep their mounts
// busy); the next spare opens the paths again.
func TestHeldPolicyClosedWhenIdle(t *testing.T) {
	dirs := landlockFolders(t, "shared")
	old := heldIdle
	heldIdle = 50 * time.Millisecond
	defer func() { heldIdle = old }()
	var s spares
	defer s.close()
	p := Policy{RW: []string{dirs[0]}, ROX: []string{"/usr"}}
	key := rulesetKey(p)
	r, err := s.build(key, p)
	if err != nil {
		t.Fatal(err)
	}
	syscall.Close(r.fd)
	held := func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.held)
	}
	if held() != 1 {
		t.Fatalf("%d policies held after a spare, want 1", held())
	}
	wait.For(t, 10*time.Second, "the idle held policy closed", func() bool { return held() == 0 })
}

// errno is the error number err carries, "ok" for none.
func errno(err error) string {
	var e syscall.Errno
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &e):
		return e.Error()
	}
	return err.Error()
}

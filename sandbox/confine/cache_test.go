package confine

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"orcr/testutil/clis"
)

// confined runs fn on an OS thread restricted by c to p, and ends that thread.
func confined(t *testing.T, c *Rulesets, p Policy, fn func()) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with its confinement
		if _, err := c.RestrictThread(p, 0); err != nil {
			done <- err
			return
		}
		fn()
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func writes(dir string) error {
	return os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o600)
}

// A ruleset is built once per policy and used again while its paths are the inodes
// it holds; a folder removed and made again at the same path is a new inode, which
// the old rule would not grant: the ruleset is built again and the new folder is
// writable. Same for one entry of a folder granted entry by entry (checked from one
// read of the folder), and a mountpoint (/dev/pts) does not defeat the reuse.
func TestRulesetsReusedUntilAPathChanges(t *testing.T) {
	if _, err := KernelABI(); err != nil {
		clis.Missingf(t, "no Landlock here: %v", err)
	}
	root := t.TempDir()
	work, outside, many := filepath.Join(root, "work"), filepath.Join(root, "outside"), filepath.Join(root, "many")
	var entries []string
	for i := range 12 {
		entries = append(entries, filepath.Join(many, fmt.Sprint("e", i)))
	}
	for _, d := range append([]string{work, outside}, entries...) {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	p := Policy{RW: append([]string{work}, entries...), ROX: []string{"/usr", "/lib", "/lib64", "/bin"},
		Dev: []string{"/dev/null", "/dev/pts", "/dev/shm", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}}
	var c Rulesets
	defer c.Close()
	check := func(step string, hits, builds int, dirs ...string) {
		t.Helper()
		var errs []error
		confined(t, &c, p, func() {
			for _, d := range dirs {
				errs = append(errs, writes(d))
			}
			errs = append(errs, writes(outside))
		})
		for i, d := range dirs {
			if errs[i] != nil {
				t.Errorf("%s: %s not writable: %v", step, d, errs[i])
			}
		}
		if errs[len(dirs)] == nil {
			t.Errorf("%s: the folder outside the policy was written", step)
		}
		if c.Hits != hits || c.Builds != builds {
			t.Errorf("%s: %d hits %d builds, want %d %d", step, c.Hits, c.Builds, hits, builds)
		}
	}
	check("first", 0, 1, work, entries[3])
	check("same policy", 1, 1, work, entries[3])
	os.RemoveAll(work)
	os.MkdirAll(work, 0o700)
	check("work made again", 1, 2, work)
	check("after the rebuild", 2, 2, work)
	os.RemoveAll(entries[5])
	os.MkdirAll(entries[5], 0o700)
	check("an entry made again", 2, 3, entries[5])
	os.RemoveAll(entries[7])
	check("an entry gone", 2, 4, entries[6])
	os.MkdirAll(entries[7], 0o700)
	check("an entry back", 2, 5, entries[7])
	if c.Len() != 1 {
		t.Fatalf("%d rulesets kept for one policy", c.Len())
	}
}

// The cache keeps at most maxRulesets, closing the least recently used.
func TestRulesetsBounded(t *testing.T) {
	if _, err := KernelABI(); err != nil {
		clis.Missingf(t, "no Landlock here: %v", err)
	}
	root := t.TempDir()
	var c Rulesets
	defer c.Close()
	for i := range maxRulesets + 5 {
		d := filepath.Join(root, fmt.Sprint(i))
		os.MkdirAll(d, 0o700)
		confined(t, &c, Policy{RW: []string{d}}, func() {})
	}
	if c.Len() != maxRulesets || c.Builds != maxRulesets+5 {
		t.Fatalf("%d kept, %d built", c.Len(), c.Builds)
	}
}

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"orcr/testutil/clis"
)

// A store directory another user owned and could write to let that user plant store/LOCK ->
// any file; a root `orcr serve` then wrote its pid into that file (badger opens LOCK itself,
// following links). Now the store is refused, at each step with the fix, and the victim file
// is never written.
func TestStoreOfAnotherUserWithPlantedLockIsRefused(t *testing.T) {
	clis.NeedRoot(t, "give the store to another uid")
	e := newEnv(t)
	store := filepath.Join(e.home, "store")
	if err := os.MkdirAll(store, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(e.home, 0o755); err != nil {
		t.Fatal(err)
	}
	// What the other user (uid 65534, nobody) can do with a store of its own, mode 0777.
	if err := os.Chown(store, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(store, 0o777); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(t.TempDir(), "victim.txt")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(store, "LOCK")
	if err := os.Symlink(victim, lock); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(lock, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	untouched := func(step string) {
		t.Helper()
		if b, err := os.ReadFile(victim); err != nil || string(b) != "precious\n" {
			t.Fatalf("%s: the victim file was written: %q %v", step, b, err)
		}
	}
	refused := func(step string, want ...string) {
		t.Helper()
		r := e.orcr("serve")
		if r.Code == 0 {
			t.Fatalf("%s: serve started (exit 0): %s", step, r.Err)
		}
		for _, w := range want {
			if !strings.Contains(r.Err, w) {
				t.Fatalf("%s: serve's error lacks %q:\n%s", step, w, r.Err)
			}
		}
		untouched(step)
	}
	refused("store owned by uid 65534", store+" belongs to uid 65534", "chown -R 0 "+store)
	if err := os.Chown(store, 0, 0); err != nil {
		t.Fatal(err)
	}
	refused("store writable by others", store+" is writable by other users", "chmod 700 "+store)
	if err := os.Chmod(store, 0o700); err != nil {
		t.Fatal(err)
	}
	refused("planted store/LOCK", lock+" is a symlink", "rm "+lock)
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	e.serve()
	e.must("agent", "ls")
	untouched("serving")
}

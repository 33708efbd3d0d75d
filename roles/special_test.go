package roles_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"orcr/roles"
)

// A role file or a repo's .orcr/config.toml that is a FIFO blocked the spawn that read it
// (and one that links to /dev/zero was read until memory ran out); each is refused with
// the reason, at once.
func TestSpecialRoleAndHookFilesRefused(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.toml"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.toml")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for name, want := range map[string]string{"fifo": "is not a regular file (it is a named pipe)", "zero": "is not a regular file (it is a character device)"} {
		_, _, err := roles.Load(dir, name, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("role %s: %v, want %q", name, err, want)
		}
	}
	repo := t.TempDir()
	os.MkdirAll(filepath.Join(repo, ".orcr"), 0o755)
	if err := syscall.Mkfifo(filepath.Join(repo, ".orcr", "config.toml"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := roles.LoadRepoConfig(repo); err == nil || !strings.Contains(err.Error(), "is not a regular file (it is a named pipe)") {
		t.Errorf("a FIFO .orcr/config.toml: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("refusing took %v", d)
	}
}

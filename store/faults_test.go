package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"orcr/core/wire"
)

// mountTmpfs mounts a tmpfs of size at a new directory, or skips where that is not allowed.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (needs root): %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir
}

// fillDisk writes a file until the file system is full and returns its path.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Write(buf); err != nil {
			if !strings.Contains(err.Error(), "no space") {
				t.Fatal(err)
			}
			return path
		}
	}
}

// writesWhileBroken puts enough 4 KiB records to rotate badger's memtable several times; each
// must be refused with store_unavailable, and reads must keep answering.
func writesWhileBroken(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	v := []byte(strings.Repeat("x", 4096))
	for i := range 3000 {
		err := s.Put(ctx, "b", fmt.Sprint("broken", i), v)
		if !errors.Is(err, wire.ErrStoreUnavailable) {
			t.Fatalf("put %d while the store cannot write: %v", i, err)
		}
		if i == 0 {
			t.Log(err)
		}
	}
	if got, err := s.Get(ctx, "b", "before"); err != nil || string(got) != "kept" {
		t.Fatalf("read while the store cannot write: %q %v", got, err)
	}
	if _, err := s.AppendEvent(ctx, sampleEvent(1, nil)); !errors.Is(err, wire.ErrStoreUnavailable) {
		t.Fatalf("append event: %v", err)
	}
	if err := s.PruneEvents(ctx, 1); !errors.Is(err, wire.ErrStoreUnavailable) {
		t.Fatalf("prune: %v", err)
	}
}

func writesResume(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	v := []byte(strings.Repeat("y", 4096))
	for i := range 3000 {
		if err := s.Put(ctx, "b", fmt.Sprint("after", i), v); err != nil {
			t.Fatalf("put %d after the store can write again: %v", i, err)
		}
	}
}

// A full disk made badger's next memtable write SIGBUS and killed the server (issue 11, item 7).
func TestDiskFullRefusesWritesKeepsReadsAndRecovers(t *testing.T) {
	mnt := mountTmpfs(t, "64m")
	s, err := Open(filepath.Join(mnt, "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Put(context.Background(), "b", "before", []byte("kept")); err != nil {
		t.Fatal(err)
	}
	filler := fillDisk(t, mnt)
	writesWhileBroken(t, s)
	os.Remove(filler)
	writesResume(t, s)
}

// A store directory that cannot take new files (immutable here; a read-only remount alike) left
// badger with a nil memtable after its next rotation, and the write after that asserted.
func TestUnwritableStoreRefusesWritesKeepsReadsAndRecovers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Put(context.Background(), "b", "before", []byte("kept")); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("chattr", "+i", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot make the store immutable here: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", dir).Run() })
	writesWhileBroken(t, s)
	if out, err := exec.Command("chattr", "-i", dir).CombinedOutput(); err != nil {
		t.Fatalf("chattr -i: %v %s", err, out)
	}
	writesResume(t, s)
}

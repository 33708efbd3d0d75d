package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fillTables writes events until badger has flushed them into table files, then closes.
func fillTables(t *testing.T, dir string) int {
	t.Helper()
	ctx := context.Background()
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for ; n < 20000; n++ {
		if _, err := s.AppendEvent(ctx, sampleEvent(n, nil)); err != nil {
			t.Fatal(err)
		}
		if n%500 == 0 {
			if ts, _ := filepath.Glob(filepath.Join(dir, "*.sst")); len(ts) >= 2 {
				break
			}
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return n
}

func tableFiles(t *testing.T, dir string) []string {
	t.Helper()
	ts, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	if len(ts) == 0 {
		t.Fatal("no table files were written")
	}
	return ts
}

// Opened without its MANIFEST, badger started empty and deleted the table files (issue 11,
// item 7); now the store is refused with the fix and the tables stay.
func TestMissingManifestIsRefusedAndTablesKept(t *testing.T) {
	dir := t.TempDir()
	fillTables(t, dir)
	before := tableFiles(t, dir)
	if err := os.Remove(filepath.Join(dir, "MANIFEST")); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, nil)
	var d *DamagedError
	if !errors.As(err, &d) || !strings.Contains(err.Error(), "no MANIFEST") || !strings.Contains(err.Error(), "mv "+dir) {
		t.Fatalf("open without MANIFEST: %v", err)
	}
	if after, _ := filepath.Glob(filepath.Join(dir, "*.sst")); len(after) != len(before) {
		t.Fatalf("tables %d before, %d after", len(before), len(after))
	}
}

// Zeroed bytes inside a table opened without error and reads skipped what they held; now
// opening verifies the tables and refuses.
func TestZeroedTableBytesAreRefusedAtOpen(t *testing.T) {
	dir := t.TempDir()
	n := fillTables(t, dir)
	ts := tableFiles(t, dir)
	// Intact, the verified open succeeds and reads every event.
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatalf("intact store refused: %v", err)
	}
	if evs, err := s.Events(context.Background(), 0, 0); err != nil || len(evs) != n+1 {
		t.Fatalf("intact store: %d events, %v; want %d", len(evs), err, n+1)
	}
	s.Close()
	f, err := os.OpenFile(ts[0], os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	zeros := make([]byte, 4096)
	if _, err := f.WriteAt(zeros, st.Size()/3); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = Open(dir, nil)
	var d *DamagedError
	if !errors.As(err, &d) || !strings.Contains(err.Error(), "mv "+dir) {
		t.Fatalf("open with a zeroed table: %v", err)
	}
	t.Log(err)
	if _, err := os.Stat(ts[0]); err != nil {
		t.Fatalf("the damaged table is gone: %v", err)
	}
}

// A value log with a garbage header said badger's "Invalid datakey id" and nothing else;
// now it is a DamagedError that says to restore or move the store aside, and the log stays.
func TestCorruptValueLogIsRefusedWithTheFix(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for n := range 50 {
		if _, err := s.AppendEvent(context.Background(), sampleEvent(n, nil)); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	logs, _ := filepath.Glob(filepath.Join(dir, "*.vlog"))
	if len(logs) == 0 {
		t.Fatal("no value log was written")
	}
	f, err := os.OpenFile(logs[0], os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{1, 2, 3, 4, 5, 6, 7, 8}, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = Open(dir, nil)
	var d *DamagedError
	if !errors.As(err, &d) || !strings.Contains(err.Error(), "looks damaged") || !strings.Contains(err.Error(), "mv "+dir) {
		t.Fatalf("open with a corrupt value log: %v", err)
	}
	if _, err := os.Stat(logs[0]); err != nil {
		t.Fatalf("the damaged value log is gone: %v", err)
	}
}

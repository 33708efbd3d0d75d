package workflow

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"orcr/store"
)

// TestFinishedRunsArePruned: finished runs past keep, or ended longer than retain
// ago, go with their log and output files; running ones stay whatever their age;
// a pruned run's number is not given again.
func TestFinishedRunsArePruned(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	home := t.TempDir()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := New(Options{Home: home, Keep: 2, Retain: 24 * time.Hour})
	s.st, s.runs = st, newLog(st)
	d, err := Parse("w", "w.toml", []byte(threeSteps))
	if err != nil {
		t.Fatal(err)
	}
	// w-1 … w-5 start an hour apart; all but w-3 are stopped an hour after.
	for i := 1; i <= 5; i++ {
		id, err := s.nextID(ctx, "w")
		if err != nil {
			t.Fatal(err)
		}
		at := t0.Add(time.Duration(i) * time.Hour)
		dir := filepath.Join(home, "workflows", id)
		os.MkdirAll(dir, 0o700)
		os.WriteFile(filepath.Join(dir, "pick.json"), []byte("{}"), 0o600)
		if _, _, err := s.runs.Create(ctx, id, Run{ID: id, Workflow: "w", Def: *d, Vars: d.Vars, Dir: dir}, Fact{Kind: FBegin}, at); err != nil {
			t.Fatal(err)
		}
		if i != 3 {
			if _, _, err := s.runs.Apply(ctx, id, Fact{Kind: FStop, Text: "test"}, at.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
	}
	names := func() []string { n, _ := s.runs.Names(ctx); return n }
	// Within retain: the two newest finished (w-5, w-4) and the running w-3 stay.
	gone, err := s.Prune(ctx, t0.Add(7*time.Hour))
	if err != nil || !slices.Equal(gone, []string{"w-2", "w-1"}) || !slices.Equal(names(), []string{"w-3", "w-4", "w-5"}) {
		t.Fatalf("keep 2: pruned %v (%v), left %v", gone, err, names())
	}
	if es, _ := s.runs.Entries(ctx, "w-1", 0, 0); len(es) != 0 {
		t.Fatalf("w-1's log left: %d entries", len(es))
	}
	if _, err := os.Stat(filepath.Join(home, "workflows", "w-1")); !os.IsNotExist(err) {
		t.Fatalf("w-1's output files left: %v", err)
	}
	if _, err := os.Stat(filepath.Join(home, "workflows", "w-4", "pick.json")); err != nil {
		t.Fatalf("w-4's output files: %v", err)
	}
	// Two days on: every finished run is past retain; the running one stays.
	if gone, err = s.Prune(ctx, t0.Add(48*time.Hour)); err != nil || !slices.Equal(names(), []string{"w-3"}) {
		t.Fatalf("retain: pruned %v (%v), left %v", gone, err, names())
	}
	// The next run is w-6, not a pruned one's number again.
	if id, err := s.nextID(ctx, "w"); err != nil || id != "w-6" {
		t.Fatalf("next id %q %v", id, err)
	}
}

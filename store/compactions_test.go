package store

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	badger "github.com/dgraph-io/badger/v4"

	"orcr/testutil/wait"
)

// compactorsRunning counts the goroutines of badger's compactors in this process (the
// store tests do not run in parallel, so they are the open store's).
func compactorsRunning() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return bytes.Count(buf[:n], []byte("(*levelsController).runCompactor("))
		}
		buf = make([]byte, 2*len(buf))
	}
}

func shortCompactIdle(t *testing.T) {
	t.Helper()
	old := compactIdle
	compactIdle = 200 * time.Millisecond
	t.Cleanup(func() { compactIdle = old })
}

// An idle store pauses badger's compactors (each woke 20 times a second to find nothing
// to do); a write starts them again, and once writes stop they pause again. Without the
// pause the two compactor goroutines stay.
func TestIdleStorePausesCompactors(t *testing.T) {
	shortCompactIdle(t)
	s := openT(t, t.TempDir())
	ctx := context.Background()
	wait.For(t, 10*time.Second, "the compactors of a store nothing writes to to pause", func() bool {
		return s.compactPauses.Load() == 1 && compactorsRunning() == 0
	})
	if err := s.PutAgent(ctx, sampleAgent(1)); err != nil {
		t.Fatal(err)
	}
	if n := compactorsRunning(); n != numCompactors {
		t.Fatalf("%d compactors run after a write, want %d", n, numCompactors)
	}
	wait.For(t, 10*time.Second, "the compactors to pause again once writes stop", func() bool {
		return s.compactPauses.Load() == 2 && compactorsRunning() == 0
	})
	got, err := s.GetAgent(ctx, sampleAgent(1).ID)
	if err != nil || got.ID != sampleAgent(1).ID {
		t.Fatalf("the agent written between the pauses: %+v, %v", got, err)
	}
}

// Writes after a pause are compacted: with level 0 due for compaction at one table, a
// burst of writes that flushes several memtables leaves level 0 empty and tables below it
// only if the write that ended the pause started the compactors (without the start level
// 0 keeps its tables and the compactors never pause again), and once level 0 is compacted
// they pause again.
func TestWritesAfterAPauseAreCompacted(t *testing.T) {
	shortCompactIdle(t)
	tweak := func(o badger.Options) badger.Options {
		return o.WithNumLevelZeroTables(1)
	}
	s, err := open(t.TempDir(), nil, gcInterval, tweak)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	wait.For(t, 10*time.Second, "the compactors to pause", func() bool { return compactorsRunning() == 0 })

	ctx, cancel := context.WithTimeout(context.Background(), wait.Scale(time.Minute))
	defer cancel()
	// Values under valueThreshold stay in the memtable: 200 of 60 KiB flush it six times.
	const n = 200
	value := bytes.Repeat([]byte("x"), 60<<10)
	t0 := time.Now()
	for i := range n {
		if err := s.Put(ctx, "test:big", fmt.Sprintf("k%04d", i), value); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
	t.Logf("writes took %s", time.Since(t0))
	wait.For(t, 30*time.Second, "level 0 to be compacted and the compactors to pause again", func() bool {
		return s.compactPauses.Load() >= 2 && compactorsRunning() == 0
	})
	t.Logf("paused again after %s", time.Since(t0))
	s.dbMu.RLock()
	levels := s.db.Levels()
	s.dbMu.RUnlock()
	moved := false
	for _, l := range levels {
		if l.Level > 0 && l.NumTables > 0 {
			moved = true
		}
		if l.Level == 0 && l.NumTables >= 1 {
			t.Fatalf("level 0 holds %d tables after the pause: %s", l.NumTables, fmt.Sprint(levels))
		}
	}
	if !moved {
		t.Fatalf("no table below level 0: %+v", levels)
	}
	kept := 0
	if err := s.Scan(ctx, "test:big", func(string, []byte) bool { kept++; return true }); err != nil || kept != n {
		t.Fatalf("read back %d values (%v), want %d", kept, err, n)
	}
}

package store

import (
	"errors"
	"testing"
	"time"

	badger "github.com/dgraph-io/badger/v4"

	"orcr/core/wire"
	"orcr/testutil/wait"
)

// A write badger is slow to answer while the disk has room is waited for: the store is
// not reopened under it. Past writeCap it once was, so a store at a high load (a flush
// behind a flush) failed that write and the ones behind it: TestManyEventsAcrossFlushes
// answered "it is being reopened after the disk filled" with 64 GB free, at a load of 35.
func TestSlowWriteWithRoomIsWaitedFor(t *testing.T) {
	defer func(c time.Duration) { writeCap = c }(writeCap)
	writeCap = 100 * time.Millisecond
	ctx := t.Context()
	s := openT(t, t.TempDir())
	s.dbMu.RLock()
	before := s.db
	s.dbMu.RUnlock()
	slow := writeCap + 2*stuckCheck // read here: the write's goroutine may outlive the test's restore
	err := s.write(ctx, func(db *badger.DB) error {
		// badger's side of a slow write: it answers after the store has looked at the
		// disk twice past writeCap, or as soon as the store gives up on it.
		wait.Until(slow, func() bool { return s.reopening.Load() })
		return db.Update(func(txn *badger.Txn) error { return txn.Set([]byte("slow"), []byte("done")) })
	})
	if err != nil {
		t.Fatalf("a slow write on a disk with room failed: %v", err)
	}
	s.dbMu.RLock()
	after := s.db
	s.dbMu.RUnlock()
	if s.reopening.Load() || after != before {
		t.Fatal("the store was reopened under a slow write on a disk with room")
	}
	if err := s.Put(ctx, "b", "next", []byte("kept")); err != nil {
		t.Fatalf("the write after the slow one: %v", err)
	}
	if v, err := s.Get(ctx, "b", "next"); err != nil || string(v) != "kept" {
		t.Fatalf("read back %q, %v", v, err)
	}
}

// A write that does not come back past writeCap while badger reports errors (a flush that
// fails on something the free-space check cannot see, a quota say, and is retried forever)
// is stuck, not slow: it is given up on and the store reopened, as on a full disk.
func TestStuckWriteWithBadgerErrorsIsGivenUp(t *testing.T) {
	defer func(c time.Duration) { writeCap = c }(writeCap)
	writeCap = 100 * time.Millisecond
	ctx := t.Context()
	s := openT(t, t.TempDir())
	stuck := writeCap + 5*stuckCheck // read here: the write's goroutine may outlive the test's restore
	err := s.write(ctx, func(db *badger.DB) error {
		// badger's side: a flush fails and is retried, and the write waits for it
		// until the store gives up on it and closes badger.
		s.opts.Logger.Errorf("error flushing memtable to disk: %s, retrying", "disk quota exceeded")
		if !wait.Until(stuck, func() bool { return s.reopening.Load() }) {
			return nil
		}
		return badger.ErrDBClosed
	})
	if !errors.Is(err, wire.ErrStoreUnavailable) {
		t.Fatalf("a write stuck behind badger's errors answered %v, want store_unavailable", err)
	}
	if !wait.Until(10*time.Second, func() bool {
		return s.Put(ctx, "b", "after", []byte("kept")) == nil
	}) {
		t.Fatal("writes did not resume after the reopen")
	}
}

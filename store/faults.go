package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	badger "github.com/dgraph-io/badger/v4"

	"orcr/core/wire"
)

// Badger writes its write-ahead log, value log and new tables through mmap. On a full disk a
// store into a page the file system cannot back is SIGBUS, which no Go code can recover (the
// server died in memTable.Put); on a file system turned read-only badger fails to create the
// next memtable, keeps a nil one and its next write asserts. So no write reaches badger unless
// the directory can take one right now: the file system is writable, the directory is
// writable (not immutable), and at least minFree bytes and a few inodes are free.
// Otherwise the write answers store_unavailable, reads go on, and the next write checks
// again, so writes resume by themselves once there is room. What remains is a race — space
// another process takes between the check and badger's write, or before a flush or a
// compaction badger runs on its own — and what follows update below deals with it.

// minFree is the free space a write needs: a new memtable file (2 × memTableSize), the table
// its flush builds, compaction's output and one large value. It is a variable only so that
// a test can switch the check off (diskfull_test.go).
var minFree uint64 = 16 << 20

// writeGuard remembers whether the last check failed, so the log says when writes stop and
// when they resume, not once per refused write.
type writeGuard struct {
	mu   sync.Mutex
	down string // why writes are refused; "" while they are accepted
}

// writable checks that a write can be made now.
func (s *Store) writable() error {
	why := s.cannotWrite()
	s.guard.mu.Lock()
	was := s.guard.down
	s.guard.down = why
	s.guard.mu.Unlock()
	switch {
	case why != "" && was == "":
		s.logger.Error("store cannot write; refusing writes until it can", "dir", s.dir, "why", why)
	case why == "" && was != "":
		s.logger.Info("store can write again", "dir", s.dir)
	}
	if why != "" {
		return unavailable(s.dir, why)
	}
	return nil
}

// cannotWrite is two system calls and no file: statfs (read-only mount, free bytes and
// free inodes) and access(W_OK) on the directory, which the kernel answers EPERM for an
// immutable directory, EROFS for a read-only file system and EACCES without permission.
// It once created and removed a probe file on every write: that was a tenth of the
// server's CPU in a spawn loop (two journalled directory changes per record).
func (s *Store) cannotWrite() string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(s.dir, &st); err != nil {
		return "statfs: " + err.Error()
	}
	if st.Flags&unixRDONLY != 0 {
		return "its file system is mounted read-only"
	}
	if free := uint64(st.Bavail) * uint64(st.Bsize); free < minFree {
		return fmt.Sprintf("the disk is full: %d KiB free, a write needs %d MiB", free>>10, minFree>>20)
	}
	if st.Files > 0 && st.Ffree < minFreeInodes {
		return fmt.Sprintf("the file system has no free inodes (%d left)", st.Ffree)
	}
	if err := syscall.Access(s.dir, unixWOK); err != nil {
		return "cannot create a file in it: " + err.Error()
	}
	return ""
}

// minFreeInodes is what a memtable rotation and a flush need (a few files), with room.
const minFreeInodes = 16

// unixWOK is W_OK for access(2).
const unixWOK = 0x2

// unixRDONLY is ST_RDONLY in statfs flags.
const unixRDONLY = 0x1

func unavailable(dir, why string) error {
	return &wire.Error{Code: wire.CodeStoreUnavailable, Message: fmt.Sprintf(
		"the store cannot write (%s: %s); reads still work, and writes resume by themselves once it can: free space or fix the mount",
		dir, why)}
}

// update is db.Update behind the write check; a write that fails on the file system anyway
// answers store_unavailable too.
func (s *Store) update(ctx context.Context, fn func(txn *badger.Txn) error) error {
	return s.write(ctx, func(db *badger.DB) error { return db.Update(fn) })
}

// What remains after the check is a race: another process can take the room between the
// check and badger's write. Every file badger maps is allocated when it is created (orcr's
// patched copy of ristretto's z.OpenMmapFile, third_party/ristretto), so the race no longer
// ends in SIGBUS on a sparse page: it is an ENOSPC when badger creates a file. Only one such
// failure hurts: a memtable rotation that cannot create the next memtable leaves badger
// without one, and its next write asserts and its next read dereferences nil. So the store
// keeps a reserve file of reserveSize bytes beside badger's; when a write reports that
// failure, the store deletes the reserve (room for the flush badger's close waits for and
// for the new memtable) and reopens badger, with reads waiting for the reopen. Writes are
// refused until the reserve can be made again, so there is always a reserve to spend.
// debug.SetPanicOnFault alone would not do: badger writes its files on its own goroutines;
// it guards the reads made on ours (guarded).

// reserveSize is a memtable file (2 × memTableSize), the table its flush writes, and room.
const reserveSize = 8 << 20

// reserveName is the reserve's file in the store directory (badger ignores other files).
const reserveName = "orcr-reserve"

// retryEvery bounds how often a refused write tries to make the reserve or reopen badger
// again (each try is a file allocation or a whole open).
const retryEvery = time.Second

// closeWait is how long a reopen waits for badger to close (its close flushes the last
// memtable, which needs room); past it the store stays unavailable until the close ends.
const closeWait = 10 * time.Second

// errLostMemtable is how badger reports a memtable rotation that could not create a file.
const errLostMemtable = "cannot create new mem table"

// A write can also hang inside badger. Under a burst of writes the flush queue fills (a flush
// compresses a whole memtable), and badger's write goroutine waits in ensureRoomForWrite for
// a flush to finish; if the disk fills then, the flush fails to create its table and retries
// forever, and the commit is never answered. Every later write waited for the write slot,
// and every read too, since a read timestamp waits for all earlier commits: `orcr agent run`
// hung on a full disk (the stack: PutAgentEvent in request.Wait, doWrites in
// ensureRoomForWrite's flushCond.Wait, the flusher in CreateTable, reads in
// oracle.readTs). Level 0 full while compaction cannot write stalls flushes the same way.
// So no wait is unbounded. A write waits for the slot and for badger in steps of stuckCheck;
// at each step the disk is checked, and on a disk that cannot take a write it gives up: a
// waiting write answers store_unavailable, and the write inside badger first spends the
// reserve (room for the flush it waits for) and, if badger still does not answer, has the
// store reopen badger, whose close answers the stuck commit (so it is never applied after
// the caller was told it failed) and frees reads. With room on the disk, past writeCap, the
// write inside badger is given up on the same way only if badger has logged an error since
// it began: a flush or a compaction failing on something the check cannot see (a quota, an
// I/O error), which badger retries forever. Without one badger is slow, not stuck (a flush
// behind a flush at a high load: single writes of 0.6–3.1 s at a load of ~20 under -race),
// and the write waits on, with a warning: it once was given up on at writeCap, and the
// reopen failed it and the writes behind it for nothing (TestManyEventsAcrossFlushes: "it is
// being reopened after the disk filled" with 64 GB free, at a load of 35). Writes waiting for
// the slot behind it still give up after writeCap, with nothing written.

// stuckCheck is how often a waiting write looks at the disk.
const stuckCheck = time.Second

// writeCap bounds a write's wait for the write slot; past it, the write inside badger is
// logged as slow. A variable only so that a test can shorten it.
var writeCap = 30 * time.Second

// lockWrite takes the write slot, giving up with store_unavailable at once while a reopen
// holds it, once the disk cannot take a write (the slot's holder is then stuck on it),
// after writeCap, or when ctx ends. Callers may hold their own locks (the engine's) while
// they write, so a write waiting here must not wait for a reopen.
func (s *Store) lockWrite(ctx context.Context) error {
	t := time.NewTicker(stuckCheck)
	defer t.Stop()
	start := time.Now()
	for {
		if s.reopening.Load() {
			return unavailable(s.dir, "it is being reopened after the disk filled during a write")
		}
		select {
		case s.writeSlot <- struct{}{}:
			select {
			case <-s.stop:
				<-s.writeSlot
				return errClosed
			default:
			}
			return nil
		case <-ctx.Done():
			return fmt.Errorf("wait for the store: %w", ctx.Err())
		case <-s.stop:
			return errClosed
		case <-t.C:
		}
		if err := s.writable(); err != nil {
			return err
		}
		if time.Since(start) > writeCap {
			return unavailable(s.dir, fmt.Sprintf("another write has waited for badger for over %s", writeCap))
		}
	}
}

func (s *Store) unlockWrite() { <-s.writeSlot }

var errClosed = errors.New("the store is closed")

// write runs fn on the database behind the write check, one write at a time, and answers
// within a bound (see above).
func (s *Store) write(ctx context.Context, fn func(db *badger.DB) error) error {
	if err := s.lockWrite(ctx); err != nil {
		return err
	}
	held := true
	defer func() {
		if held {
			s.unlockWrite()
		}
	}()
	if err := s.writable(); err != nil {
		return err
	}
	if err := s.readyLocked(); err != nil {
		return err
	}
	// The slot keeps db from being replaced (reopens hold it), so fn does not need dbMu; it
	// must not hold it either, or a reopen of a stuck badger would wait for fn.
	db := s.db
	s.wroteLocked(db)
	done := make(chan error, 1)
	// badger's errors are counted from before the write starts: one it logs at once
	// (a flush failing as the write begins) counts as since the write began.
	errs := s.badgerErrs.Load()
	go func() { done <- s.guarded(func() error { return fn(db) }) }()
	err, answered := s.await(done, errs)
	if !answered {
		s.logger.Error("badger has not answered a write and the disk has no room for it; reopening it", "dir", s.dir)
		held = false
		s.detachLocked()
		s.reopenLater()
		// The close answers the stuck commit at once (badger fails writes waiting for room
		// when it closes); wait for that answer so the caller is told what happened.
		t := time.NewTimer(stuckCheck)
		defer t.Stop()
		select {
		case err = <-done:
		case <-t.C:
			return unavailable(s.dir, "badger did not answer a write; it is being reopened")
		}
		if err != nil {
			return fmt.Errorf("%w: %v", unavailable(s.dir, "the disk filled during a write"), err)
		}
		return nil
	}
	if err != nil && strings.Contains(err.Error(), errLostMemtable) {
		s.logger.Error("badger could not create its next memtable (the disk filled after the check); reopening it", "dir", s.dir, "err", err)
		held = false
		s.detachLocked()
		s.reopenLater()
	}
	return s.classify(err)
}

// await waits for a write inside badger. It gives up (answered false) once the disk cannot
// take a write and spending the reserve did not help within stuckCheck, or past writeCap
// when badger has logged an error since the write began; a slow badger is waited for.
func (s *Store) await(done <-chan error, errs uint64) (err error, answered bool) {
	t := time.NewTicker(stuckCheck)
	defer t.Stop()
	start := time.Now()
	spent, warned := false, false
	for {
		select {
		case err := <-done:
			if warned {
				s.logger.Info("the slow write inside badger was answered", "dir", s.dir, "took", time.Since(start).Round(time.Millisecond))
			}
			return err, true
		case <-t.C:
		}
		why := s.cannotWrite()
		switch {
		case why == "" && time.Since(start) > writeCap && s.badgerErrs.Load() != errs:
			return nil, false
		case why == "":
			if !warned && time.Since(start) > writeCap {
				warned = true
				s.logger.Warn("a write has waited for badger for over "+writeCap.String()+"; the disk has room, so badger is slow, not stuck: waiting on", "dir", s.dir)
			}
		case !spent && s.hasReserve():
			spent = true
			s.logger.Error("a write waits inside badger on a full disk; spending the reserve so its flush has room", "dir", s.dir, "why", why)
			os.Remove(s.reservePath())
		default:
			return nil, false
		}
	}
}

// reopenLater finishes a reopen on its own goroutine, which takes over the caller's write
// slot: writes wait for it (and answer on their own when the disk is full); reads wait for
// it up to readWait.
func (s *Store) reopenLater() {
	s.reopening.Store(true)
	go func() {
		defer s.unlockWrite()
		defer s.reopening.Store(false)
		if err := s.reopenLocked(closeWait); err != nil {
			s.logger.Error("store reopen failed; writes and reads wait for the next try", "dir", s.dir, "err", err)
		}
	}()
}

// readyLocked makes sure a write may reach badger: the database is open (a reopen that
// failed is tried again) and the reserve exists (it is made again after it was spent).
// Tries are at most one per retryEvery.
func (s *Store) readyLocked() error {
	if s.db != nil && s.hasReserve() {
		return nil
	}
	if time.Since(s.lastTry) < retryEvery {
		return unavailable(s.dir, "the disk filled during a write; waiting for room again")
	}
	s.lastTry = time.Now()
	if s.db == nil {
		if err := s.reopenLocked(0); err != nil {
			return unavailable(s.dir, "reopening after the disk filled: "+err.Error())
		}
	}
	if err := s.makeReserve(); err != nil {
		return unavailable(s.dir, "no room for the store's "+strconv.Itoa(reserveSize>>20)+" MiB reserve: "+err.Error())
	}
	return nil
}

func (s *Store) reservePath() string { return filepath.Join(s.dir, reserveName) }

func (s *Store) hasReserve() bool {
	st, err := os.Lstat(s.reservePath())
	return err == nil && st.Mode().IsRegular() && st.Size() >= reserveSize
}

// makeReserve allocates the reserve file (fallocate: its blocks are taken now).
func (s *Store) makeReserve() error {
	f, err := os.OpenFile(s.reservePath(), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	err = syscall.Fallocate(int(f.Fd()), 0, 0, reserveSize)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(s.reservePath())
		return err
	}
	return nil
}

// keepReserve makes the reserve at Open when there is room; a store opened on a full disk
// refuses writes until there is.
func (s *Store) keepReserve() {
	if s.hasReserve() {
		return
	}
	if err := s.makeReserve(); err != nil {
		s.logger.Warn("store reserve not made; writes wait for room", "dir", s.dir, "err", err)
	}
}

// detachLocked takes badger out of use to reopen it: it spends the reserve (room for the
// flush badger's close waits for) and starts the close. The close comes before dbMu: it
// answers a commit stuck in badger, and reads waiting for that commit (a read timestamp
// waits for every earlier commit) hold dbMu's read lock until then. A read that meets the
// closing badger is caught by guarded. Reads that come after wait for reopenLocked.
func (s *Store) detachLocked() {
	old := s.db
	if old == nil {
		return
	}
	os.Remove(s.reservePath())
	done := make(chan error, 1)
	go func() { done <- old.Close() }()
	s.closing = done
	s.dbMu.Lock()
	s.db = nil
	s.reopened = make(chan struct{})
	s.dbMu.Unlock()
}

// reopenLocked opens badger again once the detached one has closed, waiting up to wait for
// that close (0: only look). Reads waiting for the reopen are let go when it ends, either way.
func (s *Store) reopenLocked(wait time.Duration) error {
	defer func() {
		s.dbMu.Lock()
		if s.reopened != nil {
			close(s.reopened)
			s.reopened = nil
		}
		s.dbMu.Unlock()
	}()
	select {
	case <-s.stop: // Close has taken or is taking the database down
		return errClosed
	default:
	}
	if s.closing != nil {
		var err error
		select {
		case err = <-s.closing:
		default:
			t := time.NewTimer(wait)
			defer t.Stop()
			select {
			case err = <-s.closing:
			case <-t.C:
				return errors.New("badger has not closed yet (its last memtable waits for room to be flushed)")
			}
		}
		if err != nil {
			s.logger.Warn("close of the store before its reopen", "dir", s.dir, "err", err)
		}
		s.closing = nil
	}
	db, err := badger.Open(s.opts)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	s.dbMu.Lock()
	s.db = db
	s.dbMu.Unlock()
	s.wroteLocked(db) // its open started its compactors: look at pausing them
	s.logger.Info("store reopened", "dir", s.dir)
	return nil
}

// readWait bounds how long a read waits for a reopen under way: as long as the reopen may
// wait for badger's close, and the open after it. It was 3 s, and at a load of 35 a reopen
// after the disk filled took longer: TestDiskFilledBetweenCheckAndWrite's reads answered
// "it is being reopened after the disk filled" (4 of 4 on the base code, under nice),
// where reads are to go on. A reopen that ends sooner lets the read go at once.
const readWait = closeWait + 5*time.Second

// view is db.View for reads. While badger is being reopened it waits up to readWait.
func (s *Store) view(fn func(txn *badger.Txn) error) error {
	for try := 0; ; try++ {
		s.dbMu.RLock()
		if db := s.db; db != nil {
			defer s.dbMu.RUnlock()
			return s.guarded(func() error { return db.View(fn) })
		}
		reopened := s.reopened
		s.dbMu.RUnlock()
		if reopened == nil || try > 0 {
			return unavailable(s.dir, "it is being reopened after the disk filled")
		}
		t := time.NewTimer(readWait)
		select {
		case <-reopened:
		case <-t.C:
		}
		t.Stop()
	}
}

// guarded runs a call into badger on this goroutine so that a fault in it is an error, not
// a dead server: a read of a mapped table page the file no longer backs (SIGBUS, made a
// panic by debug.SetPanicOnFault), or a read that meets badger without a memtable (a write
// lost it a moment ago and the reopen has not taken dbMu yet: a nil dereference inside
// badger). Both answer store_unavailable and are logged.
//
// A fault inside txn.NewIterator (badger without a memtable) leaves the iterator counted
// but never made, so the deferred Discard of db.View panics with unclosedIterator while the
// fault unwinds, and that panic is the one recovered; the store's own code closes every
// iterator it makes, so that panic means a fault too.
func (s *Store) guarded(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			// badger panics with ErrDBClosed when a call starts on a DB closed under
			// it (an iterator made while the disk-full reopen closed it): seen killing
			// the server in e2e TestServerLivesThroughDiskFilledDuringWrites under load.
			closed := false
			if e, ok := r.(error); ok && errors.Is(e, badger.ErrDBClosed) {
				closed = true
			}
			if _, ok := r.(runtime.Error); !ok && r != unclosedIterator && !closed {
				panic(r)
			}
			s.logger.Error("store call failed inside badger", "dir", s.dir, "panic", r)
			err = unavailable(s.dir, fmt.Sprintf("a call failed inside badger: %v", r))
		}
	}()
	return fn()
}

// unclosedIterator is badger's panic in Txn.Discard (txn.go) with an iterator still open.
const unclosedIterator = "Unclosed iterator at time of Txn.Discard."

func (s *Store) classify(err error) error {
	if err == nil {
		return nil
	}
	for _, e := range []error{syscall.ENOSPC, syscall.EROFS, syscall.EIO, syscall.EDQUOT, syscall.EPERM, syscall.EACCES} {
		if errors.Is(err, e) || strings.Contains(err.Error(), e.Error()) {
			return fmt.Errorf("%w: %v", unavailable(s.dir, e.Error()), err)
		}
	}
	return err
}

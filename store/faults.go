package store

import (
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
func (s *Store) update(fn func(txn *badger.Txn) error) error {
	return s.write(func(db *badger.DB) error { return db.Update(fn) })
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

// write runs fn on the database behind the write check, one write at a time.
func (s *Store) write(fn func(db *badger.DB) error) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if err := s.writable(); err != nil {
		return err
	}
	if err := s.readyLocked(); err != nil {
		return err
	}
	err := s.guarded(func() error {
		s.dbMu.RLock()
		defer s.dbMu.RUnlock()
		return fn(s.db)
	})
	if err != nil && strings.Contains(err.Error(), errLostMemtable) {
		s.logger.Error("badger could not create its next memtable (the disk filled after the check); reopening it", "dir", s.dir, "err", err)
		if rerr := s.reopenLocked(); rerr != nil {
			s.logger.Error("store reopen failed; writes and reads wait for the next try", "dir", s.dir, "err", rerr)
		}
	}
	return s.classify(err)
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
		if err := s.reopenLocked(); err != nil {
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

// reopenLocked spends the reserve and reopens badger. Reads wait meanwhile.
func (s *Store) reopenLocked() error {
	s.dbMu.Lock()
	defer s.dbMu.Unlock()
	var wait <-chan time.Time // the first try waits for the close; later ones only look
	if s.db != nil {
		os.Remove(s.reservePath())
		old := s.db
		s.db = nil
		done := make(chan error, 1)
		go func() { done <- old.Close() }()
		s.closing = done
		t := time.NewTimer(closeWait)
		defer t.Stop()
		wait = t.C
	}
	if s.closing != nil {
		notYet := errors.New("badger has not closed yet (its last memtable waits for room to be flushed)")
		var err error
		select {
		case err = <-s.closing:
		default:
			if wait == nil {
				return notYet
			}
			select {
			case err = <-s.closing:
			case <-wait:
				return notYet
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
	s.db = db
	s.logger.Info("store reopened", "dir", s.dir)
	return nil
}

// view is db.View for reads.
func (s *Store) view(fn func(txn *badger.Txn) error) error {
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	if s.db == nil {
		return unavailable(s.dir, "it is being reopened after the disk filled")
	}
	return s.guarded(func() error { return s.db.View(fn) })
}

// guarded runs a call into badger on this goroutine so that a fault in it is an error, not
// a dead server: a read of a mapped table page the file no longer backs (SIGBUS, made a
// panic by debug.SetPanicOnFault), or a read that meets badger without a memtable (a write
// lost it a moment ago and the reopen has not taken dbMu yet: a nil dereference inside
// badger). Both answer store_unavailable and are logged.
func (s *Store) guarded(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(runtime.Error); !ok {
				panic(r)
			}
			s.logger.Error("store call failed inside badger", "dir", s.dir, "panic", r)
			err = unavailable(s.dir, fmt.Sprintf("a call failed inside badger: %v", r))
		}
	}()
	return fn()
}

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

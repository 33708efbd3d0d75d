package store

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"

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
// again, so writes resume by themselves once there is room. What remains is a race:
// space taken between the check and badger's write, minFree bytes of it.

// minFree is the free space a write needs: a new memtable file (2 × memTableSize), the table
// its flush builds, compaction's output and one large value.
const minFree = 16 << 20

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
	if err := s.writable(); err != nil {
		return err
	}
	return s.classify(s.db.Update(fn))
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

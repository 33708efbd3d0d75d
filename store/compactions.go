package store

import (
	"time"
	_ "unsafe" // go:linkname, for badger's own stop and start of its compactors

	badger "github.com/dgraph-io/badger/v4"
)

// Badger's compactors (numCompactors goroutines, its levels.go runCompactor) each wake on
// a 50 ms ticker to look for a level to compact, whether or not anything was written: 40
// wake-ups a second, two thirds of all an idle `orcr serve` woke for (a runtime trace,
// ORCR_TRACE, of a server with no agents: 40 of ~60 a second, the same with 100 idle
// agents), and each one wakes a thread and the runtime's sysmon with it. Compaction only
// has work after writes: a memtable flush adds a table to level 0, a compaction makes a
// level outgrow its target. So the store pauses the compactors once no write has come for
// compactIdle and no level needs compacting (db.Levels: every score below 1, the same
// figure the compactors pick levels by), and starts them again in the next write, under
// the write slot, before the write reaches badger: every flush, and so every table level
// 0 receives, comes after a write that found them running. A flush still under way when
// they pause leaves at most one table more in level 0, compacted after the next write.
//
// Badger has no option for either (NumCompactors 0 turns compaction off for good, and a
// level 0 that fills then stalls every flush); its own stopCompactions and
// startCompactions, which Flatten and DropAll use around their work, are reached by
// go:linkname. The store calls neither Flatten nor DropAll, so nothing else starts or
// stops them. A badger upgrade that renames the two fails the build, not the store.

//go:linkname stopCompactions github.com/dgraph-io/badger/v4.(*DB).stopCompactions
func stopCompactions(db *badger.DB)

//go:linkname startCompactions github.com/dgraph-io/badger/v4.(*DB).startCompactions
func startCompactions(db *badger.DB)

// compactIdle is how long after the last write the compactors may pause. A variable
// only so that a test can shorten it.
var compactIdle = 10 * time.Second

// compaction is the pause's state. timer is made with the store and never replaced;
// the other fields are guarded by the write slot.
type compaction struct {
	timer     *time.Timer // the look at pausing (maybePause)
	armed     bool        // timer is due to fire, or firing
	paused    *badger.DB  // the database whose compactors are paused; nil while they run
	lastWrite time.Time   // the last write that reached badger
}

// initCompaction makes the timer and arms it: badger.Open starts the compactors, and
// a store that is never written pauses them too.
func (s *Store) initCompaction() {
	s.compact.lastWrite = time.Now()
	s.compact.armed = true
	s.compact.timer = time.AfterFunc(compactIdle, s.maybePause)
}

// wroteLocked is called, under the write slot, by every write before it reaches db: it
// starts db's compactors if they are paused and arms the look at pausing them again.
func (s *Store) wroteLocked(db *badger.DB) {
	c := &s.compact
	if c.paused == db {
		startCompactions(db)
		c.paused = nil
	}
	c.lastWrite = time.Now()
	if !c.armed {
		c.armed = true
		c.timer.Reset(compactIdle)
	}
}

// maybePause pauses the compactors when no write has come for compactIdle and no level
// needs compacting; otherwise it looks again later. While it is armed only it resets the
// timer, so a write under way (the slot taken) just has it look again compactIdle later.
func (s *Store) maybePause() {
	c := &s.compact
	select {
	case <-s.stop:
		return
	case s.writeSlot <- struct{}{}:
	default:
		c.timer.Reset(compactIdle)
		return
	}
	defer s.unlockWrite()
	select {
	case <-s.stop:
		return
	default:
	}
	db := s.db
	if db == nil || c.paused == db {
		// A reopen under way (its open starts running compactors, which the next
		// write's look pauses), or paused already.
		c.armed = false
		return
	}
	if quiet := time.Since(c.lastWrite); quiet < compactIdle {
		c.timer.Reset(compactIdle - quiet)
		return
	}
	if compactionDue(db) {
		c.timer.Reset(compactIdle)
		return
	}
	stopCompactions(db)
	c.paused = db
	c.armed = false
	s.compactPauses.Add(1)
}

// compactionDue reports whether a compactor would find work in db now: a level whose
// score (level 0: its tables against NumLevelZeroTables; the others: size against
// target) is 1 or more. Levels reports a score only for such levels.
func compactionDue(db *badger.DB) bool {
	for _, l := range db.Levels() {
		if l.Score >= 1 || l.Adjusted >= 1 {
			return true
		}
	}
	return false
}

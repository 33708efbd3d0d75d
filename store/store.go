// Package store owns orcr's durable state: a badger/v4 database behind core.Store,
// its key schema, the versioned encoding of its records, and how the database is tuned.
// Only the server process opens it; badger's directory lock refuses a second opener.
//
// # Key schema
//
// Every key starts with a one-letter family and a slash, so families never overlap and a
// prefix scan of one never sees another:
//
//	a/<agent id>                 one agent: {"v":1,"agent":{…wire.Agent…}}
//	e/<8-byte big-endian seq>    one event: {"v":1,"event":{…wire.Event…}}; big-endian so
//	                             byte order is seq order and Events is a forward scan
//	k/<bucket>/<key>             generic records of other owners; the value is the owner's
//	                             bytes, stored as given, and the owner versions its own
//	                             encoding. Bucket names may not contain "/", so bucket "a"
//	                             never sees the keys of "ab" or "a/b". A feature's buckets are
//	                             named "<feature>:<bucket>" (core.NamespacedBucket: schema 2,
//	                             migrate.go); the kernel's own ("limits") have no namespace.
//	m/seq                        8-byte big-endian high-water mark of event seqs, written in
//	                             the same transaction as every event, so PruneEvents can
//	                             delete every event and a restart still never reuses a seq
//	m/schema                     the key-schema version (decimal text) of the whole store
//
// # Versions
//
// Agent and event records carry "v", the version of their envelope. This build writes
// version 1 and reads version 1; a record with a newer version (written by a newer orcr)
// is reported as a *VersionError (errors.Is(err, ErrUnknownVersion)) naming the key and the
// versions, never decoded into a half-filled struct. The same applies to m/schema on Open:
// a store laid out by a newer schema is refused before anything is read or written, and
// one laid out by schema 1 is moved to schema 2 once (migrate.go).
// A future version 2 adds a decoder for it and keeps reading 1.
//
// # What survives a crash
//
// SyncWrites is off: a write returns once badger has put it in its write-ahead log, which
// lives in the memtable's file (*.mem) and the value log (*.vlog), both written through
// mmap. Those pages belong to the kernel's page cache the moment the copy is done, so a
// process crash or `kill -9` of the server loses nothing that a call has returned success
// for; on the next Open badger replays the log. TestCrashSIGKILL checks exactly that with
// a child process killed mid-stream. What can be lost is a power cut or kernel crash in the
// few seconds before the kernel writes those pages back (badger syncs them when a memtable
// is flushed and on Close). Each event is written together with m/seq in one transaction,
// so after any crash the event log is contiguous up to LastSeq.
//
// # Footprint
//
// Badger's defaults (64 MiB memtables × 5, 256 MiB block cache, 1 GiB value-log files)
// suit a database server, not a tool that keeps a few thousand small records; the
// constants below shrink every pool. Measured on the 2-core dev machine:
//
//   - TestRSSWith1000Agents: a fresh process that opens a store of 1,000 agents (about
//     2 KiB of JSON each) and lists them has a VmRSS of about 23–25 MiB, of which about
//     10 MiB is the test binary before Open, about 3 MiB Open, and the rest ListAgents
//     (decoded agents plus JSON garbage not yet collected).
//   - BenchmarkWritesPeakRSS: the same store taking 8,000 events of 2.7 KiB (what an
//     event that embeds a whole agent weighs) as fast as it can peaks at 65–85 MiB,
//     against about 100 MiB with badger's defaults; at a steady 1,000 events/s the peak
//     was about 67 MiB against 140 MiB with 4 MiB memtables, 2 MiB tables and no
//     compression. What grew was badger's pool of table-builder buffers (up to eight,
//     one released every 2 s once writes stop; no longer pooled: see
//     third_party/ristretto/README.orcr.md), Go's GC headroom over them, and the
//     mmapped tables, whose bytes count as file-backed RSS, so the size of the retained
//     event log matters. A soft memory limit for the process (GOMEMLIMIT=32MiB, or
//     debug.SetMemoryLimit) brought the burst peak to about 49 MiB. Prune events, and
//     keep stored events small.
//
// Limits that follow: one transaction holds at most ~300 KiB of inline records (15% of a
// memtable), which no method here approaches since values of 64 KiB and more go to the
// value log; one value may be at most 4 MiB (a value-log file; a request line is at most
// 1 MiB).
//
// # Disk
//
// Every file badger maps is allocated when it is created (faults.go), so the store takes
// its files' full size on disk from the start: the value-log file (2 × valueLogSize), two
// memtable files (2 × memTableSize each), the discard file (1 MiB), the tables, and the
// 8 MiB reserve, about 25 MiB for an empty store.
package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"

	"orcr/core"
	"orcr/core/wire"
)

var _ core.Store = (*Store)(nil)

// gcInterval is how often the value-log GC runs. Small records never reach the value log
// (see valueThreshold), so this is only for large agent screens and generic values.
const gcInterval = 10 * time.Minute

// Tuning. Each figure is chosen for thousands of records of a few KiB, one process;
// the package comment says what was measured. Badger's defaults are in the comments.
const (
	// memTableSize (64 MiB) bounds the skiplist arena, which lives on the Go heap and
	// counts toward the GC goal, and sets how much a flush builds at once.
	memTableSize = 2 << 20
	numMemtables = 2 // (5) one filling, one flushing
	// baseTableSize (2 MiB): every table builder (flush and compaction) starts with a
	// buffer of twice this, and badger pools up to eight builders while writes go on.
	baseTableSize = 512 << 10
	// Tables are zstd-compressed (default snappy): agent screens and events are text
	// that shrinks severalfold, and the tables are mmapped, so their size shows up in
	// RSS as file pages. Compression needs a block cache for decompressed blocks.
	blockCacheSize = 2 << 20 // (256 MiB)
	indexCacheSize = 2 << 20 // (0: every table's index and bloom filter kept in memory)
	// valueLogSize (1 GiB) per value-log file, mmapped at twice that and allocated on
	// disk in full (faults.go): 16 MiB files held 32 MiB each.
	valueLogSize   = 4 << 20
	valueThreshold = 64 << 10 // (1 MiB) records below this stay in the LSM beside their key
	numCompactors  = 2        // (4) badger's minimum when compaction is on
	numGoroutines  = 2        // (8) badger's stream framework; the machine has few cores
)

// Store is the badger-backed core.Store. Its methods are safe for concurrent use.
type Store struct {
	// dbMu guards db: every call uses db under it (read-locked); a reopen after badger
	// lost its memtable to a full disk (faults.go) replaces db under it alone. db is nil
	// while a reopen has not succeeded.
	dbMu   sync.RWMutex
	db     *badger.DB
	opts   badger.Options
	dir    string
	logger *slog.Logger
	// writeSlot (one token) serialises writes with the guard's check (faults.go): no write
	// reaches a badger whose memtable could not be created, nor one while the disk reserve
	// is spent. It is a channel, not a mutex, so that a wait for it is bounded.
	writeSlot chan struct{}
	closing   chan error    // a close of a lost db still under way (guarded by writeSlot)
	reopened  chan struct{} // closed when a reopen under way ends; nil when none is (guarded by dbMu)
	reopening atomic.Bool   // a reopen holds writeSlot: writes answer at once instead of waiting
	lastTry   time.Time     // the last attempt at a reopen or at the reserve (guarded by writeSlot)

	// appendMu serialises AppendEvent so seqs are assigned and committed in order: a
	// reader that sees seq N has also been able to see every seq below N.
	appendMu sync.Mutex
	lastSeq  atomic.Uint64

	guard writeGuard
	// badgerErrs counts the errors badger has logged (a flush or a compaction that
	// failed and is retried): a write waiting inside badger past writeCap with room on
	// the disk is given up on only when badger reported one since it began (faults.go).
	badgerErrs *atomic.Uint64

	stop   chan struct{}
	wg     sync.WaitGroup
	gcRuns atomic.Int64 // ticks of the value-log GC loop; tests watch it
	// compact pauses badger's compactors while no write comes (compactions.go).
	compact       compaction
	compactPauses atomic.Int64 // pauses so far; tests watch it
	closeOnce     sync.Once
	closeErr      error
}

// Open opens (creating if needed) the store in dir. A nil logger discards; badger's own
// messages reach it at warning level and above.
func Open(dir string, logger *slog.Logger) (*Store, error) {
	return open(dir, logger, gcInterval, nil)
}

// open is Open with test knobs: the GC interval, and tweak, which may change badger's
// options (benchmarks compare tunings with it).
func open(dir string, logger *slog.Logger, gcEvery time.Duration, tweak func(badger.Options) badger.Options) (*Store, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("component", "store")
	// Lstat, not MkdirAll alone: a link at dir (dangling or not) is for checkOwned to refuse.
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
	}
	if err := checkOwned(dir); err != nil {
		return nil, err
	}
	if err := checkIntact(dir); err != nil {
		return nil, err
	}
	errs := new(atomic.Uint64)
	opts := badgerOptions(dir, logger, errs)
	if tweak != nil {
		opts = tweak(opts)
	}
	if err := verifyTables(dir, opts); err != nil {
		return nil, err
	}
	db, err := badger.Open(opts)
	if err != nil {
		if derr := damagedOpen(dir, err); derr != nil {
			return nil, derr
		}
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	s := &Store{db: db, opts: opts, dir: dir, logger: logger, badgerErrs: errs, stop: make(chan struct{}), writeSlot: make(chan struct{}, 1)}
	if err := s.checkSchema(); err != nil {
		db.Close()
		return nil, err
	}
	last, err := s.recoverSeq()
	if err != nil {
		db.Close()
		return nil, err
	}
	s.lastSeq.Store(last)
	s.keepReserve()
	s.initCompaction()
	s.wg.Add(1)
	go s.gcLoop(gcEvery)
	return s, nil
}

func badgerOptions(dir string, logger *slog.Logger, errs *atomic.Uint64) badger.Options {
	return badger.DefaultOptions(dir).
		WithLogger(badgerLogger{l: logger, errs: errs}).
		WithMetricsEnabled(false).
		WithSyncWrites(false).
		WithMemTableSize(memTableSize).
		WithBaseTableSize(baseTableSize).
		WithNumMemtables(numMemtables).
		WithCompression(options.ZSTD).
		WithZSTDCompressionLevel(1).
		WithBlockCacheSize(blockCacheSize).
		WithIndexCacheSize(indexCacheSize).
		WithValueLogFileSize(valueLogSize).
		WithValueThreshold(valueThreshold).
		// Damage is found, not read past (damage.go): Open verifies every table first, and
		// badger verifies every block it reads and every value from the value log.
		WithChecksumVerificationMode(options.OnBlockRead).
		WithVerifyValueChecksum(true).
		WithNumCompactors(numCompactors).
		WithNumGoroutines(numGoroutines).
		// Every write is a blind Set or is serialised by Store itself, so badger's
		// read-write conflict tracking would only cost memory.
		WithDetectConflicts(false)
}

// checkSchema refuses a store laid out by a newer orcr, stamps a new one, and moves a
// schema-1 store's feature records to their namespaces (migrate.go).
func (s *Store) checkSchema() error {
	v1 := false
	// db.Update, not s.update: an existing store of this schema writes nothing here, so
	// a full disk must not keep the server from starting and serving reads.
	err := s.db.Update(func(txn *badger.Txn) error {
		item, err := txn.Get(keySchema)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return txn.Set(keySchema, []byte(strconv.Itoa(schemaVersion)))
		}
		if err != nil {
			return fmt.Errorf("read store schema: %w", err)
		}
		raw, err := item.ValueCopy(nil)
		if err != nil {
			return fmt.Errorf("read store schema: %w", err)
		}
		v, err := strconv.Atoi(string(raw))
		if err != nil {
			return fmt.Errorf("read store schema %q: %w", raw, err)
		}
		if v == 1 {
			v1 = true
			return nil
		}
		if v != schemaVersion {
			return &VersionError{Key: string(keySchema), Got: v, Want: schemaVersion}
		}
		return nil
	})
	if err != nil || !v1 {
		return err
	}
	return s.migrateV1()
}

// recoverSeq finds the highest seq ever assigned: the larger of m/seq and the last e/ key
// (the two agree unless the store predates m/seq; taking both costs one seek).
func (s *Store) recoverSeq() (uint64, error) {
	var last uint64
	err := s.view(func(txn *badger.Txn) error {
		item, err := txn.Get(keySeq)
		switch {
		case errors.Is(err, badger.ErrKeyNotFound):
		case err != nil:
			return err
		default:
			if err := item.Value(func(v []byte) error {
				if len(v) != 8 {
					return fmt.Errorf("m/seq has %d bytes, want 8", len(v))
				}
				last = binary.BigEndian.Uint64(v)
				return nil
			}); err != nil {
				return err
			}
		}
		opts := badger.DefaultIteratorOptions
		opts.Reverse = true
		opts.PrefetchValues = false
		opts.Prefix = prefixEvent
		it := txn.NewIterator(opts)
		defer it.Close()
		it.Seek(eventKey(^uint64(0)))
		if it.Valid() {
			seq, ok := seqOfKey(it.Item().Key())
			if !ok {
				return fmt.Errorf("malformed event key %x", it.Item().Key())
			}
			last = max(last, seq)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("recover event seq: %w", err)
	}
	return last, nil
}

// gcLoop reclaims value-log space on a ticker until Close.
func (s *Store) gcLoop(every time.Duration) {
	defer s.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		s.gcRuns.Add(1)
		// One call rewrites at most one file; repeat while it finds work. GC rewrites:
		// it waits for the guard like every other write.
		for {
			err := s.write(context.Background(), func(db *badger.DB) error { return db.RunValueLogGC(0.5) })
			if err != nil {
				if !errors.Is(err, badger.ErrNoRewrite) && !errors.Is(err, badger.ErrRejected) && !errors.Is(err, wire.ErrStoreUnavailable) {
					s.logger.Warn("value log gc", "err", err)
				}
				break
			}
			select {
			case <-s.stop:
				return
			default:
			}
		}
	}
}

// Close stops the GC loop and closes badger. It is safe to call more than once; later
// calls return the first call's result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		s.compact.timer.Stop()
		s.wg.Wait()
		// A reopen under way holds the slot for at most closeWait and an open; a write stuck
		// inside badger holds it until badger answers, which its close makes it do.
		t := time.NewTimer(closeWait + stuckCheck)
		defer t.Stop()
		select {
		case s.writeSlot <- struct{}{}:
			defer s.unlockWrite()
		case <-t.C:
			s.logger.Warn("closing the store while a write is still inside badger", "dir", s.dir)
		}
		s.dbMu.Lock()
		defer s.dbMu.Unlock()
		if s.db == nil {
			return
		}
		if err := s.db.Close(); err != nil {
			s.closeErr = fmt.Errorf("close store: %w", err)
		}
		s.db = nil
	})
	return s.closeErr
}

// LastSeq is the highest event seq ever assigned (0 for a new store).
func (s *Store) LastSeq() uint64 { return s.lastSeq.Load() }

// badgerLogger forwards badger's warnings and errors to slog and drops the chatter.
// badgerLogger logs badger's errors and warnings; it counts the errors in errs (when
// set), which tells a write stuck inside badger from a slow one (faults.go).
type badgerLogger struct {
	l    *slog.Logger
	errs *atomic.Uint64
}

func (b badgerLogger) Errorf(f string, args ...any) {
	if b.errs != nil {
		b.errs.Add(1)
	}
	b.l.Error("badger: " + trimNL(fmt.Sprintf(f, args...)))
}

func (b badgerLogger) Warningf(f string, args ...any) {
	b.l.Warn("badger: " + trimNL(fmt.Sprintf(f, args...)))
}

func (badgerLogger) Infof(string, ...any)  {}
func (badgerLogger) Debugf(string, ...any) {}

func trimNL(s string) string {
	for len(s) > 0 && s[len(s)-1] == '\n' {
		s = s[:len(s)-1]
	}
	return s
}

// ctxErr wraps a cancelled context with the operation's name.
func ctxErr(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

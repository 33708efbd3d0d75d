// Package outbox keeps a durable state machine in a store: a record per instance (its
// state, the seq of the last log entry it reflects, the actions asked for and not yet
// performed) and an append-only log of what happened to it (DESIGN §5 "Durable
// workflows are pure steps plus an outbox").
//
// The machine itself is a pure function Step(state, fact, now) → (state, actions,
// error) the caller gives. The rules:
//
//   - A fact is appended to the log before the step's result is recorded; the record
//     is written after, carrying the log's seq. A crash between the two leaves an
//     entry the record does not reflect, and Get replays it (Step is pure and the
//     entry keeps its instant, so the replay computes the same state).
//   - The actions a step asks for are the record's Outbox (intent), written in that
//     same record write; Did removes one with a "did" entry (outcome). A restarted
//     owner performs what is still in the Outbox, so every action is written to be
//     safe to perform twice.
//   - The record is a snapshot, written with Create and then every SnapshotEvery
//     entries; between snapshots the log alone is written and the current record is
//     kept in memory. A restart reads the snapshot and replays the entries after it.
//     So a fact costs one small log entry, not a rewrite of a record that may hold a
//     thousand items (a 1,000-item for_each rewrote ~100 KiB per fact into the value
//     log: +340 MiB of mapped files).
//
// Runs (orchestrate/run) and workflows both keep their state here. A machine may keep
// its records in a layout of its own (Machine.Encode/Decode, Machine.LogPrefix): runs
// keep the flat record and the "runlog.NAME" buckets they had before this package
// existed, so a run started by an older orcr goes on under a newer one.
package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"orcr/core/wire"
)

// Store is what the log needs of a store: core.Buckets has these methods.
type Store interface {
	Put(ctx context.Context, bucket, key string, value []byte) error
	Get(ctx context.Context, bucket, key string) ([]byte, error)
	Delete(ctx context.Context, bucket, key string) error
	Scan(ctx context.Context, bucket string, fn func(key string, value []byte) bool) error
	ScanFrom(ctx context.Context, bucket, from string, fn func(key string, value []byte) bool) error
}

// Entry types of the log.
const (
	EntryStart   = "start"   // the instance began (Begin): Actions are its first ones
	EntryFact    = "fact"    // Fact happened; Actions are what Step asked for
	EntryDid     = "did"     // the pending action Ref was performed (Text: its error, if any)
	EntryRefused = "refused" // Step refused Fact (Text: why); the state did not change
)

// Pending is an action asked for and not yet performed: entry Seq's I-th action.
type Pending[A any] struct {
	Seq    uint64    `json:"seq"`
	I      int       `json:"i"`
	At     time.Time `json:"at"`
	Action A         `json:"action"`
}

// Ref names the pending action in "did" entries: "SEQ.I".
func (p Pending[A]) Ref() string { return fmt.Sprintf("%d.%d", p.Seq, p.I) }

// Record is one instance's durable state.
type Record[S, A any] struct {
	Name    string       `json:"name"`
	State   S            `json:"state"`
	Seq     uint64       `json:"seq"` // the last log entry this record reflects
	Outbox  []Pending[A] `json:"outbox,omitempty"`
	Created time.Time    `json:"created"`
	Updated time.Time    `json:"updated"`
}

// Entry is one entry of an instance's log.
type Entry[F, A any] struct {
	Seq     uint64    `json:"seq"`
	At      time.Time `json:"at"`
	Type    string    `json:"type"`
	Fact    *F        `json:"fact,omitempty"`
	Actions []A       `json:"actions,omitempty"`
	Ref     string    `json:"ref,omitempty"`
	// Kind, Subject and What say, in a "did" entry, what the performed action was
	// (Machine.Describe), so a reader of the log need not look for the entry that
	// asked for it.
	Kind    string `json:"kind,omitempty"`
	Text    string `json:"text,omitempty"`
	Subject string `json:"m,omitempty"`
	What    string `json:"what,omitempty"`
}

// Machine is what a Log runs: the pure step, and which of its actions are to be
// performed (the others, notes for the log, never join the outbox).
type Machine[S, F, A any] struct {
	Step    func(s S, f F, now time.Time) (S, []A, error)
	Perform func(a A) bool

	// The rest is optional.

	// Fold is what the state keeps of every entry beyond what Step made of it
	// (after Step, for a fact; also for refused and did entries): bookkeeping that
	// moves with the log, replayed with it.
	Fold func(s S, e Entry[F, A]) S
	// Describe fills a did entry's Kind, Subject and What from its action.
	Describe func(a A) (kind, subject, what string)
	// Clone copies a state for a caller, who may then change it. Without it the
	// caller gets the cached value and must not change it.
	Clone func(s S) S
	// Encode and Decode store a record in a layout of the machine's own (both or
	// neither); by default a versioned envelope of Record.
	Encode func(rec Record[S, A]) ([]byte, error)
	Decode func(name string, b []byte) (Record[S, A], error)
	// LogPrefix names an instance's log bucket: LogPrefix+name (by default the
	// records' bucket + "log.").
	LogPrefix string
	// SnapshotEvery is how many log entries may follow the stored record (by
	// default the package's SnapshotEvery; 1: the record is written with every
	// entry, for a machine whose records are read from the store by others).
	SnapshotEvery uint64
}

// Log keeps the instances of one machine: records in bucket Bucket, each instance's
// entries in bucket Bucket+"log."+name. Each instance's changes are serialised by one
// lock, so a fact is logged, stepped and recorded before the next.
type Log[S, F, A any] struct {
	st     Store
	bucket string
	m      Machine[S, F, A]
	mu     sync.Mutex
	// cache holds the current record of the instances used lately, and the seq of
	// each one's last snapshot. Callers get the cached value: they must not change
	// it (Step returns a new state).
	cache map[string]*cached[S, A]
	// refused holds, per instance, the refusals logged since its last accepted
	// fact, so the same fact refused again is not logged again (a script asking for
	// the same thing in a loop grew a log by thousands of identical entries). Step
	// is pure: while no fact changed the state, the same fact is refused for the
	// same reason, and logging it again records nothing new.
	refused map[string]map[string]bool
}

// maxRefusalKeys bounds one instance's remembered refusals; past it a refusal is
// logged even if it was logged before (the log stays right, only longer).
const maxRefusalKeys = 1024

type cached[S, A any] struct {
	rec  Record[S, A]
	snap uint64
}

// SnapshotEvery is how many log entries may follow an instance's stored record.
const SnapshotEvery = 64

// maxCached bounds the records kept in memory.
const maxCached = 64

// ErrExists is what Create returns for a name that has a record.
var ErrExists = errors.New("exists")

// ErrNotFound is what Get returns for a name without a record (wire's not_found).
var ErrNotFound = wire.ErrNotFound

// New returns the log of machine m kept in st under bucket.
func New[S, F, A any](st Store, bucket string, m Machine[S, F, A]) *Log[S, F, A] {
	if m.Perform == nil {
		m.Perform = func(A) bool { return true }
	}
	if m.LogPrefix == "" {
		m.LogPrefix = bucket + "log."
	}
	if m.SnapshotEvery == 0 {
		m.SnapshotEvery = SnapshotEvery
	}
	return &Log[S, F, A]{st: st, bucket: bucket, m: m, cache: map[string]*cached[S, A]{}, refused: map[string]map[string]bool{}}
}

type envelope[S, A any] struct {
	V   int           `json:"v"`
	Rec *Record[S, A] `json:"rec"`
}

const version = 1

// Create stores a new instance whose state is s0 stepped with its first fact f.
func (l *Log[S, F, A]) Create(ctx context.Context, name string, s0 S, f F, now time.Time) (Record[S, A], []Pending[A], error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.st.Get(ctx, l.bucket, name); err == nil {
		return Record[S, A]{}, nil, fmt.Errorf("%s: %w", name, ErrExists)
	} else if !isNotFound(err) {
		return Record[S, A]{}, nil, err
	}
	s, actions, err := l.m.Step(s0, f, now)
	if err != nil {
		return Record[S, A]{}, nil, err
	}
	rec := Record[S, A]{Name: name, State: s0, Created: now}
	e := Entry[F, A]{Seq: 1, At: now, Type: EntryFact, Fact: &f, Actions: actions}
	if err := l.append(ctx, name, e); err != nil {
		return rec, nil, err
	}
	rec.State = s
	rec = l.with(rec, e)
	if err := l.put(ctx, rec); err != nil {
		return rec, nil, err
	}
	l.remember(rec, rec.Seq)
	return l.out(rec), rec.Outbox, nil
}

// Begin stores a new instance in state s whose first entry (a start) asks for
// actions: for a machine whose first state is made before it has a fact.
func (l *Log[S, F, A]) Begin(ctx context.Context, name string, s S, actions []A, now time.Time) (Record[S, A], error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.get(ctx, name); err == nil {
		return Record[S, A]{}, fmt.Errorf("%s: %w", name, ErrExists)
	} else if !errors.Is(err, ErrNotFound) {
		return Record[S, A]{}, err
	}
	rec := Record[S, A]{Name: name, State: s, Created: now}
	e := Entry[F, A]{Seq: 1, At: now, Type: EntryStart, Actions: actions}
	if err := l.append(ctx, name, e); err != nil {
		return rec, err
	}
	rec = l.with(rec, e)
	if err := l.put(ctx, rec); err != nil {
		return rec, err
	}
	l.remember(rec, rec.Seq)
	return l.out(rec), nil
}

// Amend changes the part of instance name's state no fact moves (what its owner
// keeps beside the machine: agent ids, times) and stores the record at once; the
// log does not hold the change, so it is written before Amend returns.
// fn gets the record (its state a copy it may change) and returns the new state.
func (l *Log[S, F, A]) Amend(ctx context.Context, name string, fn func(rec Record[S, A]) S) (Record[S, A], error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	rec, err := l.get(ctx, name)
	if err != nil {
		return rec, err
	}
	rec.State = fn(l.out(rec))
	if err := l.put(ctx, rec); err != nil {
		return l.out(rec), err
	}
	l.remember(rec, rec.Seq)
	return l.out(rec), nil
}

func (l *Log[S, F, A]) clone(s S) S {
	if l.m.Clone != nil {
		return l.m.Clone(s)
	}
	return s
}

// out is rec as a caller gets it: its state a copy when the machine can copy.
func (l *Log[S, F, A]) out(rec Record[S, A]) Record[S, A] {
	rec.State = l.clone(rec.State)
	return rec
}

// remember caches rec, whose stored snapshot is at seq snap.
func (l *Log[S, F, A]) remember(rec Record[S, A], snap uint64) {
	if _, ok := l.cache[rec.Name]; !ok && len(l.cache) >= maxCached {
		for k, c := range l.cache {
			if c.snap == c.rec.Seq { // nothing to lose: its record is stored
				delete(l.cache, k)
				break
			}
		}
	}
	l.cache[rec.Name] = &cached[S, A]{rec: rec, snap: snap}
}

// advanced caches rec after a new entry and stores it as the snapshot when
// SnapshotEvery entries followed the last one. A failed snapshot is tried again
// with the next entry: the log has everything. Its error is returned to a machine
// that writes its record with every entry (others read it from the store).
func (l *Log[S, F, A]) advanced(ctx context.Context, rec Record[S, A]) error {
	snap := uint64(0)
	if c, ok := l.cache[rec.Name]; ok {
		snap = c.snap
	}
	var err error
	if rec.Seq-snap >= l.m.SnapshotEvery {
		if err = l.put(ctx, rec); err == nil {
			snap = rec.Seq
		}
	}
	l.remember(rec, snap)
	if l.m.SnapshotEvery > 1 {
		return nil
	}
	return err
}

// with is rec after entry e: its actions join the outbox, a did leaves it.
func (l *Log[S, F, A]) with(rec Record[S, A], e Entry[F, A]) Record[S, A] {
	rec.Seq, rec.Updated = e.Seq, e.At
	rec.Outbox = slices.Clone(rec.Outbox)
	for i, a := range e.Actions {
		if l.m.Perform(a) {
			rec.Outbox = append(rec.Outbox, Pending[A]{Seq: e.Seq, I: i, At: e.At, Action: a})
		}
	}
	if e.Type == EntryDid {
		rec.Outbox = slices.DeleteFunc(rec.Outbox, func(p Pending[A]) bool { return p.Ref() == e.Ref })
	}
	if l.m.Fold != nil {
		rec.State = l.m.Fold(rec.State, e)
	}
	return rec
}

// Apply logs fact f, steps instance name with it and stores the result; it returns
// the new record and the pending actions this step added (perform them, then call
// Did). A fact Step refuses is logged as refused and returned as the error.
func (l *Log[S, F, A]) Apply(ctx context.Context, name string, f F, now time.Time) (Record[S, A], []Pending[A], error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	rec, err := l.get(ctx, name)
	if err != nil {
		return rec, nil, err
	}
	seq := rec.Seq + 1
	next, actions, stepErr := l.m.Step(rec.State, f, now)
	e := Entry[F, A]{Seq: seq, At: now, Type: EntryFact, Fact: &f, Actions: actions}
	if stepErr != nil {
		e = Entry[F, A]{Seq: seq, At: now, Type: EntryRefused, Fact: &f, Text: stepErr.Error()}
		b, _ := json.Marshal(f)
		key := string(b) + "\x00" + stepErr.Error()
		if l.refused[name][key] {
			return l.out(rec), nil, stepErr // logged already, and the state has not changed since
		}
		if l.refused[name] == nil {
			l.refused[name] = map[string]bool{}
		}
		if len(l.refused[name]) < maxRefusalKeys {
			l.refused[name][key] = true
		}
	} else {
		delete(l.refused, name) // the state changes: what was refused may not be now
	}
	if err := l.append(ctx, name, e); err != nil {
		return l.out(rec), nil, err
	}
	if stepErr == nil {
		rec.State = next
	}
	rec = l.with(rec, e)
	if err := l.advanced(ctx, rec); err != nil {
		return l.out(rec), nil, err
	}
	if stepErr != nil {
		return l.out(rec), nil, stepErr
	}
	var added []Pending[A]
	for _, p := range rec.Outbox {
		if p.Seq == seq {
			added = append(added, p)
		}
	}
	return l.out(rec), added, nil
}

// Did records that pending action p of instance name was performed (errText: how it
// failed, if it did). Recording it twice records it once.
func (l *Log[S, F, A]) Did(ctx context.Context, name string, p Pending[A], errText string, now time.Time) (Record[S, A], error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	rec, err := l.get(ctx, name)
	if err != nil {
		return rec, err
	}
	if !slices.ContainsFunc(rec.Outbox, func(x Pending[A]) bool { return x.Ref() == p.Ref() }) {
		return l.out(rec), nil // performed twice (a restart performed it again): recorded already
	}
	e := Entry[F, A]{Seq: rec.Seq + 1, At: now, Type: EntryDid, Ref: p.Ref(), Text: errText}
	if l.m.Describe != nil {
		e.Kind, e.Subject, e.What = l.m.Describe(p.Action)
	}
	if err := l.append(ctx, name, e); err != nil {
		return l.out(rec), err
	}
	rec = l.with(rec, e)
	return l.out(rec), l.advanced(ctx, rec)
}

// Get returns instance name's record with every logged entry applied.
func (l *Log[S, F, A]) Get(ctx context.Context, name string) (Record[S, A], error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	rec, err := l.get(ctx, name)
	return l.out(rec), err
}

// Names lists the instances in key order.
func (l *Log[S, F, A]) Names(ctx context.Context) ([]string, error) {
	var names []string
	err := l.st.Scan(ctx, l.bucket, func(key string, _ []byte) bool {
		names = append(names, key)
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", l.bucket, err)
	}
	return names, nil
}

// Entries returns instance name's log entries with seq > after, oldest first, at
// most limit (0: all); the scan seeks to after's successor.
func (l *Log[S, F, A]) Entries(ctx context.Context, name string, after uint64, limit int) ([]Entry[F, A], error) {
	var out []Entry[F, A]
	var derr error
	err := l.st.ScanFrom(ctx, l.logBucket(name), logKey(after+1), func(key string, v []byte) bool {
		var e Entry[F, A]
		if derr = json.Unmarshal(v, &e); derr != nil {
			derr = fmt.Errorf("%s: log entry %s: %w", name, key, derr)
			return false
		}
		if e.Seq > after {
			out = append(out, e)
		}
		return limit <= 0 || len(out) < limit
	})
	if err != nil {
		return nil, fmt.Errorf("%s: read log: %w", name, err)
	}
	return out, derr
}

// Delete removes instance name's record and log.
func (l *Log[S, F, A]) Delete(ctx context.Context, name string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var keys []string
	if err := l.st.Scan(ctx, l.logBucket(name), func(k string, _ []byte) bool { keys = append(keys, k); return true }); err != nil {
		return err
	}
	for _, k := range keys {
		if err := l.st.Delete(ctx, l.logBucket(name), k); err != nil {
			return err
		}
	}
	delete(l.cache, name)
	delete(l.refused, name)
	return l.st.Delete(ctx, l.bucket, name)
}

func (l *Log[S, F, A]) logBucket(name string) string { return l.m.LogPrefix + name }

func (l *Log[S, F, A]) get(ctx context.Context, name string) (Record[S, A], error) {
	if c, ok := l.cache[name]; ok {
		return c.rec, nil
	}
	b, err := l.st.Get(ctx, l.bucket, name)
	if isNotFound(err) {
		return Record[S, A]{}, fmt.Errorf("%s: %w", name, ErrNotFound)
	}
	if err != nil {
		return Record[S, A]{}, fmt.Errorf("get %s: %w", name, err)
	}
	rec, err := l.decode(name, b)
	if err != nil {
		return rec, err
	}
	stored := rec.Seq
	// Replay what the log has beyond the record (a crash between append and put).
	// Seqs are contiguous, so the first missing key ends the tail; reading by key
	// costs one lookup when there is none, which is almost always.
	replayed := false
	for next := rec.Seq + 1; ; next++ {
		b, err := l.st.Get(ctx, l.logBucket(name), logKey(next))
		if isNotFound(err) {
			break
		}
		if err != nil {
			return rec, fmt.Errorf("%s: read log entry %d: %w", name, next, err)
		}
		var e Entry[F, A]
		if err := json.Unmarshal(b, &e); err != nil {
			return rec, fmt.Errorf("%s: log entry %d: %w", name, next, err)
		}
		if e.Type == EntryFact && e.Fact != nil {
			// The state is stepped again; the actions are the ones logged (what
			// was asked for, and what the outbox's refs name).
			if s, _, err := l.m.Step(rec.State, *e.Fact, e.At); err == nil {
				rec.State = s
			}
		}
		rec = l.with(rec, e)
		replayed = true
	}
	snap := stored
	if replayed {
		if err := l.put(ctx, rec); err == nil {
			snap = rec.Seq
		}
	}
	l.remember(rec, snap)
	return rec, nil
}

func logKey(seq uint64) string { return fmt.Sprintf("%020d", seq) }

func (l *Log[S, F, A]) decode(name string, b []byte) (Record[S, A], error) {
	if l.m.Decode != nil {
		return l.m.Decode(name, b)
	}
	var env envelope[S, A]
	if err := json.Unmarshal(b, &env); err != nil {
		return Record[S, A]{}, fmt.Errorf("decode %s: %w", name, err)
	}
	if env.V != version || env.Rec == nil {
		return Record[S, A]{}, fmt.Errorf("%s: record version %d, this orcr reads version %d: upgrade orcr", name, env.V, version)
	}
	return *env.Rec, nil
}

func (l *Log[S, F, A]) put(ctx context.Context, rec Record[S, A]) error {
	var b []byte
	var err error
	if l.m.Encode != nil {
		b, err = l.m.Encode(rec)
	} else {
		b, err = json.Marshal(envelope[S, A]{V: version, Rec: &rec})
	}
	if err != nil {
		return fmt.Errorf("encode %s: %w", rec.Name, err)
	}
	if err := l.st.Put(ctx, l.bucket, rec.Name, b); err != nil {
		return fmt.Errorf("store %s: %w", rec.Name, err)
	}
	return nil
}

func (l *Log[S, F, A]) append(ctx context.Context, name string, e Entry[F, A]) error {
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode %s entry %d: %w", name, e.Seq, err)
	}
	if err := l.st.Put(ctx, l.logBucket(name), logKey(e.Seq), b); err != nil {
		return fmt.Errorf("log %s entry %d: %w", name, e.Seq, err)
	}
	return nil
}

// isNotFound says the store has no such key.
func isNotFound(err error) bool { return err != nil && errors.Is(err, wire.ErrNotFound) }

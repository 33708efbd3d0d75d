package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
)

// memStore is a Store in a map, for the log's own tests.
type memStore struct {
	m       map[string]map[string][]byte
	failPut func(bucket string) bool
}

func (s *memStore) Put(_ context.Context, b, k string, v []byte) error {
	if s.failPut != nil && s.failPut(b) {
		return errors.New("disk full")
	}
	if s.m[b] == nil {
		s.m[b] = map[string][]byte{}
	}
	s.m[b][k] = append([]byte(nil), v...)
	return nil
}

func (s *memStore) Get(_ context.Context, b, k string) ([]byte, error) {
	v, ok := s.m[b][k]
	if !ok {
		return nil, wire.ErrNotFound
	}
	return v, nil
}

// copy is the store as a restarted process finds it (its own writes stay its own).
func (s *memStore) copy() *memStore {
	c := &memStore{m: map[string]map[string][]byte{}}
	for b, kv := range s.m {
		c.m[b] = map[string][]byte{}
		for k, v := range kv {
			c.m[b][k] = v
		}
	}
	return c
}

func (s *memStore) Delete(_ context.Context, b, k string) error { delete(s.m[b], k); return nil }

func (s *memStore) Scan(ctx context.Context, b string, fn func(string, []byte) bool) error {
	return s.ScanFrom(ctx, b, "", fn)
}

func (s *memStore) ScanFrom(_ context.Context, b, from string, fn func(string, []byte) bool) error {
	var ks []string
	for k := range s.m[b] {
		if k >= from {
			ks = append(ks, k)
		}
	}
	sort.Strings(ks)
	for _, k := range ks {
		if !fn(k, s.m[b][k]) {
			return nil
		}
	}
	return nil
}

// The machine: a counter; fact "n" adds n and asks for one action "say n", "bad"
// is refused.
func counter() Machine[int, string, string] {
	return Machine[int, string, string]{
		Step: func(s int, f string, _ time.Time) (int, []string, error) {
			if f == "bad" {
				return s, nil, errors.New("refused")
			}
			return s + len(f), []string{"say " + f, "note " + f}, nil
		},
		Perform: func(a string) bool { return !strings.HasPrefix(a, "note") },
	}
}

func TestApplyDidAndReplay(t *testing.T) {
	ctx := context.Background()
	st := &memStore{m: map[string]map[string][]byte{}}
	l := New(st, "c", counter())
	now := time.Unix(1, 0)
	rec, pend, err := l.Create(ctx, "x", 0, "a", now)
	if err != nil || rec.State != 1 || len(pend) != 1 || pend[0].Action != "say a" {
		t.Fatalf("create: %+v %+v %v", rec, pend, err)
	}
	if _, _, err := l.Create(ctx, "x", 0, "a", now); !errors.Is(err, ErrExists) {
		t.Fatalf("created twice: %v", err)
	}
	rec, pend, err = l.Apply(ctx, "x", "bb", now)
	if err != nil || rec.State != 3 || len(rec.Outbox) != 2 || len(pend) != 1 {
		t.Fatalf("apply: %+v %+v %v", rec, pend, err)
	}
	if _, _, err := l.Apply(ctx, "x", "bad", now); err == nil {
		t.Fatal("a refused fact was taken")
	}
	rec, _ = l.Did(ctx, "x", pend[0], "", now)
	rec, _ = l.Did(ctx, "x", pend[0], "", now) // twice: once recorded
	if len(rec.Outbox) != 1 || rec.Seq != 4 {
		t.Fatalf("after did: %+v", rec)
	}
	// A restart (a new Log over the same store) replays what the snapshot lacks.
	if _, _, err := l.Apply(ctx, "x", "ccc", now); err != nil {
		t.Fatal(err)
	}
	rec, err = New(st, "c", counter()).Get(ctx, "x")
	if err != nil || rec.State != 6 || rec.Seq != 5 || len(rec.Outbox) != 2 || rec.Outbox[1].Action != "say ccc" {
		t.Fatalf("replayed: %+v %v", rec, err)
	}
	es, err := l.Entries(ctx, "x", 2, 2)
	if err != nil || len(es) != 2 || es[0].Seq != 3 || es[0].Type != EntryRefused || es[1].Type != EntryDid {
		t.Fatalf("entries: %+v %v", es, err)
	}
	if _, err := l.Get(ctx, "y"); !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}
}

// The record is stored every SnapshotEvery entries; a restart anywhere between
// snapshots finds the same record as the process that wrote the log.
func TestSnapshotsAndReplay(t *testing.T) {
	ctx := context.Background()
	st := &memStore{m: map[string]map[string][]byte{}}
	l := New(st, "c", counter())
	now := time.Unix(1, 0)
	if _, _, err := l.Create(ctx, "x", 0, "a", now); err != nil {
		t.Fatal(err)
	}
	for i := range 150 {
		_, pend, err := l.Apply(ctx, "x", "b", now)
		if err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			l.Did(ctx, "x", pend[0], "", now)
		}
		want, _ := l.Get(ctx, "x")
		got, err := New(st.copy(), "c", counter()).Get(ctx, "x")
		if err != nil || got.State != want.State || got.Seq != want.Seq || len(got.Outbox) != len(want.Outbox) {
			t.Fatalf("after %d facts: restarted %+v (%v), running %+v", i+1, got, err, want)
		}
	}
	var stored struct {
		Rec struct{ Seq uint64 } `json:"rec"`
	}
	b, _ := st.Get(ctx, "c", "x")
	json.Unmarshal(b, &stored)
	if last, _ := l.Get(ctx, "x"); stored.Rec.Seq == last.Seq || last.Seq-stored.Rec.Seq > SnapshotEvery {
		t.Fatalf("stored record at seq %d, log at %d: not a snapshot every %d", stored.Rec.Seq, last.Seq, SnapshotEvery)
	}
}

// The hooks runs use: a layout of the machine's own (flat record, its own log
// buckets), a record written with every entry, Begin, Amend, Fold, Describe, Clone,
// and the same refusal logged once while the state stands.
type tally struct {
	N     int            `json:"n"`
	Notes map[string]int `json:"notes,omitempty"` // Amend's part
	Seen  int            `json:"seen"`            // Fold's: every entry, refused too
}

func tallyMachine() Machine[tally, string, string] {
	c := counter()
	return Machine[tally, string, string]{
		Step: func(s tally, f string, now time.Time) (tally, []string, error) {
			n, as, err := c.Step(s.N, f, now)
			s.N = n
			return s, as, err
		},
		Perform:  c.Perform,
		Fold:     func(s tally, _ Entry[string, string]) tally { s.Seen++; return s },
		Describe: func(a string) (string, string, string) { return "say", strings.TrimPrefix(a, "say "), a },
		Clone: func(s tally) tally {
			m := map[string]int{}
			for k, v := range s.Notes {
				m[k] = v
			}
			s.Notes = m
			return s
		},
		Encode: func(r Record[tally, string]) ([]byte, error) {
			return json.Marshal(map[string]any{"flat": r.State, "seq": r.Seq, "outbox": r.Outbox})
		},
		Decode: func(name string, b []byte) (Record[tally, string], error) {
			var v struct {
				Flat   tally             `json:"flat"`
				Seq    uint64            `json:"seq"`
				Outbox []Pending[string] `json:"outbox"`
			}
			err := json.Unmarshal(b, &v)
			return Record[tally, string]{Name: name, State: v.Flat, Seq: v.Seq, Outbox: v.Outbox}, err
		},
		LogPrefix:     "tallylog.",
		SnapshotEvery: 1,
	}
}

func TestOwnLayoutBeginAmendAndRefusals(t *testing.T) {
	ctx := context.Background()
	st := &memStore{m: map[string]map[string][]byte{}}
	l := New(st, "tallies", tallyMachine())
	now := time.Unix(1, 0)
	rec, err := l.Begin(ctx, "x", tally{}, []string{"say hi", "note hi"}, now)
	if err != nil || rec.Seq != 1 || len(rec.Outbox) != 1 || rec.State.Seen != 1 {
		t.Fatalf("begin: %+v %v", rec, err)
	}
	if _, err := l.Begin(ctx, "x", tally{}, nil, now); !errors.Is(err, ErrExists) {
		t.Fatalf("begun twice: %v", err)
	}
	if _, err := l.Did(ctx, "x", rec.Outbox[0], "", now); err != nil {
		t.Fatal(err)
	}
	// The same refusal, asked for three times while nothing changed, is logged once;
	// after an accepted fact it is logged again.
	for range 3 {
		if _, _, err := l.Apply(ctx, "x", "bad", now); err == nil {
			t.Fatal("bad taken")
		}
	}
	if _, _, err := l.Apply(ctx, "x", "ab", now); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.Apply(ctx, "x", "bad", now); err == nil {
		t.Fatal("bad taken")
	}
	// Amend changes the owner's part and stores it at once; the caller's copy is its own.
	rec, err = l.Amend(ctx, "x", func(r Record[tally, string]) tally {
		r.State.Notes["agent"] = 7
		return r.State
	})
	if err != nil || rec.State.Notes["agent"] != 7 {
		t.Fatalf("amend: %+v %v", rec, err)
	}
	rec.State.Notes["agent"] = 99
	if got, _ := l.Get(ctx, "x"); got.State.Notes["agent"] != 7 {
		t.Fatalf("a caller's change reached the log's copy: %v", got.State.Notes)
	}
	// On disk: the machine's layout, written with every entry, its log under its prefix.
	var stored struct {
		Flat tally  `json:"flat"`
		Seq  uint64 `json:"seq"`
	}
	if err := json.Unmarshal(st.m["tallies"]["x"], &stored); err != nil || stored.Seq != 5 || stored.Flat.N != 2 || stored.Flat.Notes["agent"] != 7 || stored.Flat.Seen != 5 {
		t.Fatalf("stored %s (%v)", st.m["tallies"]["x"], err)
	}
	var types []string
	es, _ := l.Entries(ctx, "x", 0, 0)
	for _, e := range es {
		types = append(types, e.Type)
	}
	if got := strings.Join(types, " "); got != "start did refused fact refused" || len(st.m["tallylog.x"]) != 5 {
		t.Fatalf("log %s (%d in tallylog.x)", got, len(st.m["tallylog.x"]))
	}
	if d := es[1]; d.Kind != "say" || d.Subject != "hi" || d.What != "say hi" {
		t.Fatalf("did entry %+v", d)
	}
	// A restart reads the layout back.
	if got, err := New(st.copy(), "tallies", tallyMachine()).Get(ctx, "x"); err != nil || got.State.N != 2 || got.Seq != 5 || len(got.Outbox) != 1 {
		t.Fatalf("restarted: %+v %v", got, err)
	}
}

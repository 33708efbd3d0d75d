package listen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"orcr/core"
	"orcr/core/wire"
)

// Store is where a listener's records live: the listeners feature's buckets
// (core.Kernel.Buckets). Get reports a missing key as wire.ErrNotFound.
type Store = core.Buckets

// Buckets. Keys of the per-event buckets are "<listener>/<event id>"; listener names
// hold no '/', so one listener's records are one key prefix.
const (
	BucketState      = "listen.state"      // <listener> → State
	BucketProcessed  = "listen.processed"  // <listener>/<id> → Processed
	BucketDispatches = "listen.dispatches" // <listener>/<id> → Dispatch (intent, before the spawn)
	BucketHeld       = "listen.held"       // <listener>/<seq, 16 hex digits> → Event, oldest first
)

// Cursor is a source's position, one entry per repository (or "" for a source
// without repos): an RFC 3339 time for since-based listings, an event id for the
// issue-events walk. It moves only when a tick dispatched everything it saw.
type Cursor map[string]string

// Event is one thing a source saw. ID is unique within the listener and stable across
// polls, so the same event seen twice is recognised.
type Event struct {
	ID   string            `json:"id"`
	At   time.Time         `json:"at,omitzero"` // when it happened, if the source knows
	Vars map[string]string `json:"vars"`
}

// State is what a listener keeps between ticks. Held events — the ones a tick saw but
// has not dispatched yet (a rate limit was full, the action failed) — are records of
// their own in BucketHeld, one per event, so there is no cap on how many are held and
// a dispatch rewrites no list; HeldCount is their number as the last tick left it.
type State struct {
	Disabled bool   `json:"disabled,omitempty"`
	Cursor   Cursor `json:"cursor,omitempty"`
	// Held is where held events were kept before BucketHeld (up to 1000 in the state
	// itself); a tick moves any it finds there into the bucket.
	Held       []Event     `json:"held,omitempty"`
	HeldCount  int         `json:"heldCount,omitempty"`
	Dispatches []time.Time `json:"dispatches,omitempty"` // inside the longest rate window
	Fires      int         `json:"fires"`
	LastPoll   time.Time   `json:"lastPoll,omitzero"`
	NextPoll   time.Time   `json:"nextPoll,omitzero"`
	LastError  string      `json:"lastError,omitempty"`
	ErrorAt    time.Time   `json:"errorAt,omitzero"`
	Failures   int         `json:"failures,omitempty"` // consecutive failed ticks (poll or action), for back-off
	// Counted is the event whose dispatch the state last counted (time and fire), so
	// settling a dispatch a crash interrupted counts it exactly once: dispatches of one
	// listener are sequential, so at most one is ever pending.
	Counted string `json:"counted,omitempty"`
	// Failed counts events set aside for good: their dispatch could never succeed (a
	// path that cannot be made valid, a template naming a var the event lacks). Each
	// is marked processed with its reason and never retried; LastFailed is the latest,
	// "<id>: <reason>".
	Failed     int       `json:"failed,omitempty"`
	LastFailed string    `json:"lastFailed,omitempty"`
	FailedAt   time.Time `json:"failedAt,omitzero"`
}

// Processed marks an event dispatched: it is never dispatched again.
type Processed struct {
	At     time.Time `json:"at"`
	Target string    `json:"target,omitempty"` // the agent path or plan it became
	Error  string    `json:"error,omitempty"`  // why it was set aside without an action
}

// Dispatch is written before an action runs and removed once the event is marked
// processed, so a restart between the two finds it and can check whether the agent
// exists instead of spawning twice or forgetting the event.
type Dispatch struct {
	Event  Event     `json:"event"`
	Target string    `json:"target"` // the agent's path, or the plan's name
	At     time.Time `json:"at"`
	Plan   bool      `json:"plan,omitempty"` // the action drafts a plan
	// Workflow says the action starts a workflow run (Target: the workflow).
	Workflow bool `json:"workflow,omitempty"`
}

// HeldEvent is a held event and its place in the listener's queue.
type HeldEvent struct {
	Seq   uint64
	Event Event
}

// Records reads and writes one store's listener records.
type Records struct{ s Store }

// NewRecords wraps a store.
func NewRecords(s Store) *Records { return &Records{s: s} }

func eventKey(listener, id string) string { return listener + "/" + id }

// State loads a listener's state; a listener never run has the zero State.
func (r *Records) State(ctx context.Context, listener string) (State, error) {
	var st State
	b, err := r.s.Get(ctx, BucketState, listener)
	if errors.Is(err, wire.ErrNotFound) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("listener %s state: %w", listener, err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("listener %s state: %w", listener, err)
	}
	return st, nil
}

// PutState stores a listener's state.
func (r *Records) PutState(ctx context.Context, listener string, st State) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := r.s.Put(ctx, BucketState, listener, b); err != nil {
		return fmt.Errorf("listener %s state: %w", listener, err)
	}
	return nil
}

// IsProcessed says whether event id was dispatched.
func (r *Records) IsProcessed(ctx context.Context, listener, id string) (bool, error) {
	_, err := r.s.Get(ctx, BucketProcessed, eventKey(listener, id))
	if errors.Is(err, wire.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("listener %s processed %s: %w", listener, id, err)
	}
	return true, nil
}

// MarkProcessed records event id as dispatched and drops its dispatch intent.
func (r *Records) MarkProcessed(ctx context.Context, listener, id string, p Processed) error {
	b, _ := json.Marshal(p)
	if err := r.s.Put(ctx, BucketProcessed, eventKey(listener, id), b); err != nil {
		return fmt.Errorf("listener %s processed %s: %w", listener, id, err)
	}
	if err := r.s.Delete(ctx, BucketDispatches, eventKey(listener, id)); err != nil && !errors.Is(err, wire.ErrNotFound) {
		return fmt.Errorf("listener %s dispatch %s: %w", listener, id, err)
	}
	return nil
}

func heldKey(listener string, seq uint64) string {
	return fmt.Sprintf("%s/%016x", listener, seq)
}

// Held lists a listener's held events, oldest first (the keys' fixed-width sequence
// numbers sort in the order they were held).
func (r *Records) Held(ctx context.Context, listener string) ([]HeldEvent, error) {
	return r.held(ctx, listener, 0)
}

// held lists up to limit held events (0: all).
func (r *Records) held(ctx context.Context, listener string, limit int) ([]HeldEvent, error) {
	var out []HeldEvent
	var derr error
	prefix := listener + "/"
	err := r.s.Scan(ctx, BucketHeld, func(key string, value []byte) bool {
		rest, ok := strings.CutPrefix(key, prefix)
		if !ok {
			return true
		}
		seq, err := strconv.ParseUint(rest, 16, 64)
		if err != nil {
			return true // not a held key of this listener ("a/…" under listener "a/b" cannot occur: names hold no '/')
		}
		var e Event
		if derr = json.Unmarshal(value, &e); derr != nil {
			derr = fmt.Errorf("listener %s held event %s: %w", listener, rest, derr)
			return false
		}
		out = append(out, HeldEvent{Seq: seq, Event: e})
		return limit <= 0 || len(out) < limit
	})
	if err == nil {
		err = derr
	}
	if err != nil {
		return nil, fmt.Errorf("listener %s held events: %w", listener, err)
	}
	return out, nil
}

// Hold stores an event as held at seq.
func (r *Records) Hold(ctx context.Context, listener string, h HeldEvent) error {
	b, err := json.Marshal(h.Event)
	if err != nil {
		return err
	}
	if err := r.s.Put(ctx, BucketHeld, heldKey(listener, h.Seq), b); err != nil {
		return fmt.Errorf("listener %s hold %s: %w", listener, h.Event.ID, err)
	}
	return nil
}

// Unhold drops a held event (dispatched, failed for good, or found processed).
func (r *Records) Unhold(ctx context.Context, listener string, seq uint64) error {
	if err := r.s.Delete(ctx, BucketHeld, heldKey(listener, seq)); err != nil && !errors.Is(err, wire.ErrNotFound) {
		return fmt.Errorf("listener %s unhold: %w", listener, err)
	}
	return nil
}

// DropHeld forgets every held event of a listener (removed, or its source changed).
func (r *Records) DropHeld(ctx context.Context, listener string) error {
	return r.dropPrefix(ctx, BucketHeld, listener)
}

func (r *Records) dropPrefix(ctx context.Context, bucket, listener string) error {
	var keys []string
	if err := r.s.Scan(ctx, bucket, func(key string, _ []byte) bool {
		if strings.HasPrefix(key, listener+"/") {
			keys = append(keys, key)
		}
		return true
	}); err != nil {
		return err
	}
	for _, k := range keys {
		if err := r.s.Delete(ctx, bucket, k); err != nil && !errors.Is(err, wire.ErrNotFound) {
			return err
		}
	}
	return nil
}

// BeginDispatch records the intent to dispatch an event, before the action runs.
func (r *Records) BeginDispatch(ctx context.Context, listener string, d Dispatch) error {
	b, _ := json.Marshal(d)
	if err := r.s.Put(ctx, BucketDispatches, eventKey(listener, d.Event.ID), b); err != nil {
		return fmt.Errorf("listener %s dispatch %s: %w", listener, d.Event.ID, err)
	}
	return nil
}

// PendingDispatches lists dispatches begun and not marked processed: what a restart
// must settle first.
func (r *Records) PendingDispatches(ctx context.Context, listener string) ([]Dispatch, error) {
	var out []Dispatch
	var derr error
	err := r.s.Scan(ctx, BucketDispatches, func(key string, value []byte) bool {
		if !strings.HasPrefix(key, listener+"/") {
			return true
		}
		var d Dispatch
		if derr = json.Unmarshal(value, &d); derr != nil {
			return false
		}
		out = append(out, d)
		return true
	})
	if err == nil {
		err = derr
	}
	return out, err
}

// PruneProcessed forgets processed ids older than before (kept long enough that a
// source can no longer return them, e.g. past the since cursor), returning how many.
func (r *Records) PruneProcessed(ctx context.Context, listener string, before time.Time) (int, error) {
	var old []string
	err := r.s.Scan(ctx, BucketProcessed, func(key string, value []byte) bool {
		if !strings.HasPrefix(key, listener+"/") {
			return true
		}
		var p Processed
		if json.Unmarshal(value, &p) == nil && p.At.Before(before) {
			old = append(old, key)
		}
		return true
	})
	if err != nil {
		return 0, err
	}
	for _, k := range old {
		if err := r.s.Delete(ctx, BucketProcessed, k); err != nil {
			return 0, err
		}
	}
	return len(old), nil
}

// Remove deletes every record of a listener (its file was removed).
func (r *Records) Remove(ctx context.Context, listener string) error {
	for _, bucket := range []string{BucketProcessed, BucketDispatches, BucketHeld} {
		if err := r.dropPrefix(ctx, bucket, listener); err != nil {
			return err
		}
	}
	if err := r.s.Delete(ctx, BucketState, listener); err != nil && !errors.Is(err, wire.ErrNotFound) {
		return err
	}
	return nil
}

// PruneShown bounds one listener's processed marks without forgetting what its source
// still shows: a mark whose id is in shown stays whatever its age; of the others, those
// older than before go, and past keep of them so do the oldest. It returns how many it
// deleted.
func (r *Records) PruneShown(ctx context.Context, listener string, shown map[string]bool, before time.Time, keep int) (int, error) {
	prefix := listener + "/"
	by, err := r.processedMarks(ctx, func(key string) (string, bool) {
		id, ok := strings.CutPrefix(key, prefix)
		return listener, ok && !shown[id]
	})
	if err != nil {
		return 0, err
	}
	return r.dropMarks(ctx, by, before, keep)
}

// Prune bounds the processed marks of listeners that no longer run (removed), in one
// pass over the bucket: marks older than before go, and past keep per listener so do
// the oldest. Listeners that run (skip says which) prune their own against their
// source's listing (PruneShown), so an id the source still shows is never forgotten.
// It returns how many it deleted.
func (r *Records) Prune(ctx context.Context, before time.Time, keep int, skip func(listener string) bool) (int, error) {
	by, err := r.processedMarks(ctx, func(key string) (string, bool) {
		name, _, _ := strings.Cut(key, "/")
		return name, skip == nil || !skip(name)
	})
	if err != nil {
		return 0, err
	}
	return r.dropMarks(ctx, by, before, keep)
}

// mark is a processed mark's key and when it was made.
type mark struct {
	key string
	at  time.Time
}

// processedMarks reads the processed marks that pick takes, grouped by the listener
// pick names.
func (r *Records) processedMarks(ctx context.Context, pick func(key string) (listener string, ok bool)) (map[string][]mark, error) {
	by := map[string][]mark{}
	err := r.s.Scan(ctx, BucketProcessed, func(key string, value []byte) bool {
		name, ok := pick(key)
		if !ok {
			return true
		}
		var p Processed
		_ = json.Unmarshal(value, &p) // an unreadable mark has the zero time: it goes first
		by[name] = append(by[name], mark{key, p.At})
		return true
	})
	return by, err
}

// dropMarks deletes, per listener, the marks older than before and those past the
// newest keep. It returns how many it deleted.
func (r *Records) dropMarks(ctx context.Context, by map[string][]mark, before time.Time, keep int) (int, error) {
	n := 0
	for _, ms := range by {
		slices.SortFunc(ms, func(a, b mark) int { return b.at.Compare(a.at) }) // newest first
		for i, m := range ms {
			if i < keep && !m.at.Before(before) {
				continue
			}
			if err := r.s.Delete(ctx, BucketProcessed, m.key); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

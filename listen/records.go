package listen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"orcr/core/wire"
)

// Store is the part of the server's store a listener needs: core.Store's generic
// buckets, so the daemon passes its store as it is. Get reports a missing key as
// wire.ErrNotFound.
type Store interface {
	Put(ctx context.Context, bucket, key string, value []byte) error
	Get(ctx context.Context, bucket, key string) ([]byte, error)
	Delete(ctx context.Context, bucket, key string) error
	Scan(ctx context.Context, bucket string, fn func(key string, value []byte) bool) error
}

// Buckets. Keys of the per-event buckets are "<listener>/<event id>"; listener names
// hold no '/', so one listener's records are one key prefix.
const (
	BucketState      = "listen.state"      // <listener> → State
	BucketProcessed  = "listen.processed"  // <listener>/<id> → Processed
	BucketDispatches = "listen.dispatches" // <listener>/<id> → Dispatch (intent, before the spawn)
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

// State is what a listener keeps between ticks. Held events are the ones a tick saw
// but could not dispatch (a rate limit was full); they are not processed, and the
// cursor stayed put for them.
type State struct {
	Disabled   bool        `json:"disabled,omitempty"`
	Cursor     Cursor      `json:"cursor,omitempty"`
	Held       []Event     `json:"held,omitempty"`
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
}

// MaxHeld bounds the held events kept per listener; past it the oldest new events are
// not taken from the source this tick (the cursor stays, so none is lost).
const MaxHeld = 1000

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
	for _, bucket := range []string{BucketProcessed, BucketDispatches} {
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
			if err := r.s.Delete(ctx, bucket, k); err != nil {
				return err
			}
		}
	}
	if err := r.s.Delete(ctx, BucketState, listener); err != nil && !errors.Is(err, wire.ErrNotFound) {
		return err
	}
	return nil
}

// Prune bounds every listener's processed marks in one pass over the bucket: marks
// older than before go, and past keep per listener so do the oldest. It returns how
// many it deleted.
func (r *Records) Prune(ctx context.Context, before time.Time, keep int) (int, error) {
	type mark struct {
		key string
		at  time.Time
	}
	by := map[string][]mark{}
	err := r.s.Scan(ctx, BucketProcessed, func(key string, value []byte) bool {
		name, _, _ := strings.Cut(key, "/")
		var p Processed
		_ = json.Unmarshal(value, &p) // an unreadable mark has the zero time: it goes first
		by[name] = append(by[name], mark{key, p.At})
		return true
	})
	if err != nil {
		return 0, err
	}
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

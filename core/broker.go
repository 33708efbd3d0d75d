package core

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"orcr/core/wire"
)

// broker stores events and fans them out. An event is appended to the store before any
// subscriber sees it, so a subscriber that resumes with an `after` cursor misses nothing.
// Each subscriber pulls at its own pace: it reads from a recent in-memory window and
// falls back to the store when it is further behind, so a slow subscriber never blocks
// publishers and never loses events.
type broker struct {
	store Store

	mu     sync.Mutex
	recent []wire.Event // the last stored events, in seq order (see recentMax)
	// recentSize is what recent holds in bytes, by eventSize.
	recentSize int
	wake       chan struct{} // closed and replaced on every publish
	trans      map[*transientSub]struct{}
	// transients is len(trans), read without the lock (see hearsTransient).
	transients atomic.Int32
	// globbed are the subscribers that asked for some paths only. A publish wakes
	// them only for an event they would pass on (one of their paths, or no agent), not
	// for every agent's every change: in a spawn loop, the plans and runs features'
	// subscribers (plans/*/lead, runs/**) woke, read and dropped three events per
	// spawn.
	globbed map[*globSub]struct{}
}

// The recent window holds at most recentMax events and recentMaxBytes of them (by
// eventSize), and is cut to half of both when it passes either (one copy per half
// window, not one per event), keeping at least the newest event. An event carries a copy of
// its agent's record (~1 KiB in memory), so 4,096 of them were ~4 MB of the server's
// live heap after any burst (a 1,000-item for_each), which the collector's headroom
// makes ~6 MB of RSS; a subscriber further behind than the window reads the store, as
// it always could.
const (
	recentMax      = 4096
	recentMaxBytes = 1 << 20
)

// eventSize estimates what e keeps alive in the window: the event, its agent copy
// (whose strings it mostly shares with the record) and its data.
func eventSize(e *wire.Event) int {
	n := int(unsafe.Sizeof(*e))
	if e.Agent != nil {
		n += int(unsafe.Sizeof(*e.Agent)) + len(e.Agent.StateReason)
	}
	for k, v := range e.Data {
		n += 64 + len(k)
		if s, ok := v.(string); ok {
			n += len(s)
		}
	}
	return n
}

// keepLocked appends stored to the window and trims it. The caller holds b.mu.
func (b *broker) keepLocked(stored wire.Event) {
	b.recent = append(b.recent, stored)
	b.recentSize += eventSize(&stored)
	if len(b.recent) <= recentMax && b.recentSize <= recentMaxBytes {
		return
	}
	cut, size := 0, b.recentSize
	for len(b.recent)-cut > 1 && (len(b.recent)-cut > recentMax/2 || size > recentMaxBytes/2) {
		size -= eventSize(&b.recent[cut])
		cut++
	}
	b.recent = append(b.recent[:0:0], b.recent[cut:]...)
	b.recentSize = size
}

// globSub is a subscriber with paths: its own wake-up, a token set by a publish it
// cares about, and how many events it was not woken for since its last wake-up.
type globSub struct {
	glob    []Glob
	wake    chan struct{} // capacity 1
	skipped int
}

// skipWake bounds how many events a path subscriber is not woken for: at this many it
// is woken anyway, moves its cursor past them in memory, and so never falls out of the
// recent window into reading the store.
// The window holds 500–1,000 events of ~1 KiB (an agent's), so an eighth of that.
const skipWake = 128

// notifyLocked wakes every subscriber an event e concerns: all those without paths at
// once (closing the shared channel), and each path subscriber e passes the paths of.
func (b *broker) notifyLocked(e wire.Event) {
	close(b.wake)
	b.wake = make(chan struct{})
	for g := range b.globbed {
		if e.Agent != nil && !matchAny(g.glob, e.Agent.Path) {
			if g.skipped++; g.skipped < skipWake {
				continue
			}
		}
		g.skipped = 0
		select {
		case g.wake <- struct{}{}:
		default:
		}
	}
}

type transientSub struct {
	ch   chan wire.Event
	glob []Glob
}

func newBroker(s Store) *broker {
	return &broker{store: s, wake: make(chan struct{}), trans: map[*transientSub]struct{}{}, globbed: map[*globSub]struct{}{}}
}

// publish stores e, then wakes subscribers. It returns the stored event.
func (b *broker) publish(ctx context.Context, e wire.Event) (wire.Event, error) {
	if e.At.IsZero() {
		e.At = time.Now().UTC()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	// Appending under the lock keeps recent[] in seq order.
	stored, err := b.store.AppendEvent(ctx, e)
	if err != nil {
		return e, fmt.Errorf("store event: %w", err)
	}
	b.keepLocked(stored)
	b.notifyLocked(stored)
	return stored, nil
}

// publishAgent stores a's record and e in one transaction, then wakes subscribers.
func (b *broker) publishAgent(ctx context.Context, a wire.Agent, e wire.Event) (wire.Event, error) {
	if e.At.IsZero() {
		e.At = time.Now().UTC()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	stored, err := b.store.PutAgentEvent(ctx, a, e)
	if err != nil {
		return e, fmt.Errorf("store agent and event: %w", err)
	}
	b.keepLocked(stored)
	b.notifyLocked(stored)
	return stored, nil
}

// agentEventsLog is an EventLog that can store a record with several events in one
// transaction (store.Store can). A spawn admitted at once is one commit with it.
type agentEventsLog interface {
	PutAgentEvents(ctx context.Context, a wire.Agent, evs []wire.Event) ([]wire.Event, error)
}

// batches reports whether publishAgentEvents stores in one transaction.
func (b *broker) batches() bool {
	_, ok := b.store.(agentEventsLog)
	return ok
}

// publishAgentEvents is publishAgent with several events, stored with a's record in one
// transaction (the store must be an agentEventsLog: see batches) and delivered in order.
func (b *broker) publishAgentEvents(ctx context.Context, a wire.Agent, evs []wire.Event) ([]wire.Event, error) {
	log, ok := b.store.(agentEventsLog)
	if !ok {
		return nil, fmt.Errorf("store agent and events: the store takes one event per record")
	}
	now := time.Now().UTC()
	for i := range evs {
		if evs[i].At.IsZero() {
			evs[i].At = now
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	stored, err := log.PutAgentEvents(ctx, a, evs)
	if err != nil {
		return nil, fmt.Errorf("store agent and events: %w", err)
	}
	for _, ev := range stored {
		b.keepLocked(ev)
		b.notifyLocked(ev)
	}
	return stored, nil
}

// hearsTransient reports whether anyone subscribed to transient events: an agent loop
// that nobody hears spends nothing on announcing its screen's changes.
func (b *broker) hearsTransient() bool { return b.transients.Load() > 0 }

// publishTransient delivers a transient event (seq 0) to transient subscribers,
// dropping it for subscribers whose buffer is full.
func (b *broker) publishTransient(e wire.Event) {
	if e.At.IsZero() {
		e.At = time.Now().UTC()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.trans {
		if e.Agent != nil && !matchAny(s.glob, e.Agent.Path) {
			continue
		}
		select {
		case s.ch <- e:
		default:
		}
	}
}

// since returns stored events after seq, from memory when possible, and a channel
// closed at the next publish.
func (b *broker) since(ctx context.Context, after uint64) ([]wire.Event, <-chan struct{}, error) {
	b.mu.Lock()
	wake := b.wake
	if n := len(b.recent); n > 0 && b.recent[0].Seq <= after+1 {
		var out []wire.Event
		if after < b.recent[n-1].Seq {
			i := int(after + 1 - b.recent[0].Seq)
			if i < 0 {
				i = 0
			}
			out = append(out, b.recent[i:]...)
		}
		b.mu.Unlock()
		return out, wake, nil
	}
	last := b.store.LastSeq()
	b.mu.Unlock()
	if after >= last {
		return nil, wake, nil
	}
	evs, err := b.store.Events(ctx, after, 1000)
	if err != nil {
		return nil, wake, fmt.Errorf("read events: %w", err)
	}
	return evs, wake, nil
}

// subscribe streams stored events with seq > after (filtered by globs), then live ones,
// and transient ones when asked, until ctx ends.
func (b *broker) subscribe(ctx context.Context, after uint64, globs []Glob, transient bool) <-chan wire.Event {
	out := make(chan wire.Event, 256)
	var ts *transientSub
	if transient {
		ts = &transientSub{ch: make(chan wire.Event, 64), glob: globs}
		b.mu.Lock()
		b.trans[ts] = struct{}{}
		b.transients.Store(int32(len(b.trans)))
		b.mu.Unlock()
	}
	var gs *globSub
	if len(globs) > 0 {
		gs = &globSub{glob: globs, wake: make(chan struct{}, 1)}
		b.mu.Lock()
		b.globbed[gs] = struct{}{}
		b.mu.Unlock()
	}
	go func() {
		defer close(out)
		defer func() {
			b.mu.Lock()
			if ts != nil {
				delete(b.trans, ts)
				b.transients.Store(int32(len(b.trans)))
			}
			if gs != nil {
				delete(b.globbed, gs)
			}
			b.mu.Unlock()
		}()
		var tch chan wire.Event
		if ts != nil {
			tch = ts.ch
		}
		cursor := after
		for {
			evs, wake, err := b.since(ctx, cursor)
			if err != nil {
				return
			}
			if gs != nil {
				// Registered before the first since: a publish after that read has left
				// its token (a token from before it only wakes once for nothing).
				wake = gs.wake
			}
			for _, e := range evs {
				cursor = e.Seq
				if e.Agent != nil && !matchAny(globs, e.Agent.Path) {
					continue
				}
				select {
				case out <- e:
				case <-ctx.Done():
					return
				}
			}
			if len(evs) > 0 {
				continue // there may be more in the store
			}
			select {
			case <-wake:
			case e := <-tch:
				select {
				case out <- e:
				case <-ctx.Done():
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

func matchAny(globs []Glob, p string) bool {
	if len(globs) == 0 {
		return true
	}
	for _, g := range globs {
		if g.Match(p) {
			return true
		}
	}
	return false
}

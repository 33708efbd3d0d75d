package web

import (
	"context"
	"encoding/json"
	"sync"

	"orcr/core"
	"orcr/core/wire"
)

// hubSize is how many recent events the hub keeps encoded, at least (up to twice).
const hubSize = 4096

// frame is one event encoded as an SSE frame.
type frame struct {
	seq uint64
	b   []byte
}

// hub is the gateway's one subscription to the events: each event is encoded once
// and kept in a ring of the last hubSize, from which every stream without a filter
// reads. With 100 clients a stream of its own each cost 100 store reads and 100
// encodings per event (p99 134 ms from publish to client); the hub costs one. A
// client whose cursor is older than the ring (a reconnect after a long absence, a
// client too slow to keep up) reads the store on a subscription of its own until it
// is back within the ring.
type hub struct {
	// mu is read-locked by every stream at every event (100 streams wake at once)
	// and write-locked by the one writer: readers do not queue behind each other.
	mu      sync.RWMutex
	ring    []frame // oldest first
	base    uint64  // the hub holds every event with seq > base
	changed chan struct{}
}

// startHub subscribes after the newest stored event and fills the ring until ctx ends.
func startHub(ctx context.Context, k core.Kernel) (*hub, error) {
	base := k.LastSeq()
	ch, err := k.Subscribe(core.WithCaller(ctx, caller()), wire.SubscribeParams{After: base})
	if err != nil {
		return nil, err
	}
	h := &hub{base: base, changed: make(chan struct{})}
	go func() {
		for ev := range ch {
			h.add(ev)
		}
	}()
	return h, nil
}

func encodeFrame(ev wire.Event) []byte {
	b, err := json.Marshal(ev)
	if err != nil {
		return nil
	}
	var s sse
	s.event(ev.Seq, ev.Event, b)
	return s.buf.Bytes()
}

func (h *hub) add(ev wire.Event) {
	f := frame{seq: ev.Seq, b: encodeFrame(ev)}
	h.mu.Lock()
	if len(h.ring) >= 2*hubSize { // trimmed by halves: no copy per event
		h.base = h.ring[hubSize-1].seq
		h.ring = append(h.ring[:0], h.ring[hubSize:]...)
	}
	h.ring = append(h.ring, f)
	close(h.changed)
	h.changed = make(chan struct{})
	h.mu.Unlock()
}

// since appends to dst the frames after cursor (at most max) and returns them,
// whether the hub covers the cursor at all, and a channel closed at the next event.
// A stream passes the same dst each time: no allocation per event per client.
func (h *hub) since(dst []frame, cursor uint64, max int) ([]frame, bool, <-chan struct{}) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if cursor < h.base {
		return dst, false, h.changed
	}
	// The ring is in seq order: find the first frame after cursor.
	lo, hi := 0, len(h.ring)
	for lo < hi {
		m := (lo + hi) / 2
		if h.ring[m].seq <= cursor {
			lo = m + 1
		} else {
			hi = m
		}
	}
	end := min(len(h.ring), lo+max)
	return append(dst, h.ring[lo:end]...), true, h.changed
}

// covers reports whether the hub holds every event after cursor.
func (h *hub) covers(cursor uint64) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return cursor >= h.base
}

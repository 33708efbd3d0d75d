package web

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"

	"orcr/core"
	"orcr/core/wire"
)

// The hub's ring holds the last hubSize events at least, up to twice as many, and
// up to 2×hubBytes of encoded frames: it is trimmed by its older half when it passes
// either bound (a few events with big records cost as much as many small ones).
// They are variables for the tests, which make a ring small enough to fall behind;
// a hub copies them when it starts.
var (
	hubSize  = 4096
	hubBytes = 4 << 20
)

// hubBatch is the most frames a stream takes from the ring at once: its slice of them
// is 64 × 32 bytes, a few KB per client whatever the backlog.
const hubBatch = 64

// frame is one event encoded as an SSE frame.
type frame struct {
	seq uint64
	b   []byte
}

// hub is the gateway's one subscription to the events: each event is encoded once
// and kept in a ring of the last hubSize, from which every stream without a filter
// reads. With 100 clients a stream of its own each cost 100 store reads and 100
// encodings per event (p99 134 ms from publish to client); the hub costs one. It is
// started with the gateway (a server without one has no hub) and loads the last
// hubSize stored events first, so a client that resumes after a server restart (its
// Last-Event-ID a little older than the restart) reads the ring, not the store. A
// client whose cursor is older than the ring (a reconnect after a long absence, a
// client too slow to keep up) reads the store on a subscription of its own until it
// is back within the ring; at most catchUpMax of them at once.
type hub struct {
	// mu is read-locked by every stream at every event (100 streams wake at once)
	// and write-locked by the one writer: readers do not queue behind each other.
	mu      sync.RWMutex
	ring    []frame // oldest first
	bytes   int     // the frames' bytes in ring
	size    int     // hubSize, hubBytes when it started
	max     int
	base    uint64 // the hub holds every event with seq > base
	changed chan struct{}
	// catchUps bounds the streams reading the store at once: each such read holds up
	// to a page of decoded events and a queue of its own (the kernel's), so 100
	// browsers that come back after a long absence take turns instead of holding 100
	// pages at once.
	catchUps chan struct{}
}

// catchUpMax is how many streams read older events than the ring's from the store at
// once.
const catchUpMax = 4

// startHub subscribes after the last hubSize stored events and fills the ring until
// ctx ends.
func startHub(ctx context.Context, k core.Kernel) (*hub, error) {
	size, maxBytes := hubSize, hubBytes
	base := k.LastSeq()
	base -= min(base, uint64(size))
	ch, err := k.Subscribe(core.WithCaller(ctx, caller()), wire.SubscribeParams{After: base})
	if err != nil {
		return nil, err
	}
	h := newHub(base, size, maxBytes)
	go func() {
		for ev := range ch {
			h.add(ev)
		}
	}()
	return h, nil
}

func newHub(base uint64, size, maxBytes int) *hub {
	return &hub{base: base, size: size, max: maxBytes, changed: make(chan struct{}), catchUps: make(chan struct{}, catchUpMax)}
}

// encodeFrame is ev as an SSE frame (nil when it cannot be encoded).
func encodeFrame(ev wire.Event) []byte {
	b, err := json.Marshal(ev)
	if err != nil {
		return nil
	}
	return appendEvent(make([]byte, 0, len(b)+len(ev.Event)+40), ev.Seq, ev.Event, b)
}

// appendEvent appends one event in SSE form: id when seq > 0 (transient events have
// none, so they move no cursor), its name, its data on one line (JSON has no raw
// newline).
func appendEvent(dst []byte, seq uint64, name string, data []byte) []byte {
	if seq > 0 {
		dst = append(dst, "id: "...)
		dst = strconv.AppendUint(dst, seq, 10)
		dst = append(dst, '\n')
	}
	if name != "" {
		dst = append(dst, "event: "...)
		dst = append(dst, oneLine(name)...)
		dst = append(dst, '\n')
	}
	dst = append(dst, "data: "...)
	dst = append(dst, data...)
	return append(dst, "\n\n"...)
}

func (h *hub) add(ev wire.Event) {
	f := frame{seq: ev.Seq, b: encodeFrame(ev)}
	h.mu.Lock()
	if n := len(h.ring); n > 0 && (n >= 2*h.size || h.bytes >= 2*h.max) { // trimmed by halves: no copy per event
		half := max(1, n/2)
		for _, old := range h.ring[:half] {
			h.bytes -= len(old.b)
		}
		h.base = h.ring[half-1].seq
		clear(h.ring[copy(h.ring, h.ring[half:]):]) // the dropped frames' bytes are freed
		h.ring = h.ring[:len(h.ring)-half]
	}
	h.ring = append(h.ring, f)
	h.bytes += len(f.b)
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

package web

import (
	"strings"
	"testing"

	"orcr/core/wire"
)

// The ring is bounded in bytes as well as in events: events with big records are
// let go of by halves once they pass twice the bound, the base moves with them, and
// a cursor older than the base is told to read the store.
func TestHubRingBoundedInBytes(t *testing.T) {
	const maxBytes = 1 << 20
	h := newHub(0, 1<<20, maxBytes)
	big := strings.Repeat("x", 64<<10)
	for seq := uint64(1); seq <= 200; seq++ {
		h.add(wire.Event{Seq: seq, Event: "big", Data: map[string]any{"s": big}})
		if h.bytes > 2*maxBytes+70<<10 {
			t.Fatalf("after seq %d the ring holds %d bytes, over twice %d and one frame", seq, h.bytes, maxBytes)
		}
	}
	sum := 0
	for _, f := range h.ring {
		sum += len(f.b)
	}
	if sum != h.bytes {
		t.Fatalf("the ring counts %d bytes, holds %d", h.bytes, sum)
	}
	if h.base == 0 || h.ring[0].seq != h.base+1 || h.ring[len(h.ring)-1].seq != 200 {
		t.Fatalf("base %d, ring from %d to %d", h.base, h.ring[0].seq, h.ring[len(h.ring)-1].seq)
	}
	if _, ok, _ := h.since(nil, h.base-1, hubBatch); ok {
		t.Fatalf("a cursor before the base %d was served from the ring", h.base)
	}
	got, ok, _ := h.since(nil, h.base, hubBatch)
	if !ok || len(got) != min(hubBatch, len(h.ring)) || got[0].seq != h.base+1 {
		t.Fatalf("from the base: ok %v, %d frames", ok, len(got))
	}
	// Trimmed by count too, and by at least one frame whatever the sizes.
	h = newHub(0, 4, 1)
	for seq := uint64(1); seq <= 20; seq++ {
		h.add(wire.Event{Seq: seq, Event: "small"})
		if len(h.ring) > 2 {
			t.Fatalf("after seq %d the ring holds %d frames, over one byte twice", seq, len(h.ring))
		}
	}
	if h.base != 19 && h.base != 18 {
		t.Fatalf("base %d after 20 events in a ring of at most two", h.base)
	}
}

func TestAppendEvent(t *testing.T) {
	for _, c := range []struct {
		seq  uint64
		name string
		want string
	}{
		{12, "agent.state", "id: 12\nevent: agent.state\ndata: {}\n\n"},
		{0, "screen", "event: screen\ndata: {}\n\n"},
		{3, "a\nb", "id: 3\nevent: a b\ndata: {}\n\n"},
	} {
		if got := string(appendEvent(nil, c.seq, c.name, []byte("{}"))); got != c.want {
			t.Errorf("appendEvent(%d, %q) = %q, want %q", c.seq, c.name, got, c.want)
		}
	}
}

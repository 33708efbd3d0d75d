package core

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
)

// The broker's recent window is bounded by bytes as well as by count: 5,000 events
// that each carry an agent keep at most recentMaxBytes (~1,000 of them, not 4,096),
// events with big data fewer still (but the newest always), and a subscriber
// resuming from before the window gets every event, in order, from the store.
func TestRecentWindowIsBoundedByBytes(t *testing.T) {
	b := newBroker(&eventLog{})
	ctx := context.Background()
	publish := func(i int, data string) {
		a := wire.Agent{ID: fmt.Sprint(i), Path: fmt.Sprintf("w/a%d", i), State: wire.StateWorking, StateReason: "output flowing"}
		ev := wire.Event{Event: wire.EventAgentState, Agent: &a}
		if data != "" {
			ev.Data = map[string]any{"text": data}
		}
		if _, err := b.publishAgent(ctx, a, ev); err != nil {
			t.Fatal(err)
		}
	}
	check := func(what string) {
		t.Helper()
		b.mu.Lock()
		defer b.mu.Unlock()
		size := 0
		for i := range b.recent {
			size += eventSize(&b.recent[i])
		}
		if size != b.recentSize {
			t.Fatalf("%s: window counted %d bytes, holds %d", what, b.recentSize, size)
		}
		if size > recentMaxBytes || len(b.recent) > recentMax || len(b.recent) == 0 {
			t.Fatalf("%s: window of %d events, %d bytes (bounds %d, %d)", what, len(b.recent), size, recentMax, recentMaxBytes)
		}
	}
	for i := range 5000 {
		publish(i, "")
	}
	check("5,000 agent events")
	b.mu.Lock()
	if n := len(b.recent); n >= 2048 {
		b.mu.Unlock()
		t.Fatalf("the window holds %d agent events (~1 KiB each): not bounded by bytes", n)
	}
	b.mu.Unlock()
	big := strings.Repeat("x", 16<<10)
	for i := 5000; i < 5400; i++ {
		publish(i, big)
	}
	check("400 events of 16 KiB")

	// A subscriber from seq 0 is far behind the window: it reads the store, then the
	// window, and misses nothing.
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := b.subscribe(sctx, 0, nil, false)
	for want := uint64(1); want <= 5400; want++ {
		select {
		case e := <-ch:
			if e.Seq != want {
				t.Fatalf("resumed subscriber got seq %d, want %d", e.Seq, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("resumed subscriber stalled before seq %d", want)
		}
	}
}

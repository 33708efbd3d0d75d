package core

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"orcr/core/wire"
	"orcr/testutil/wait"
)

// eventLog is the part of a Store the broker uses, in memory.
type eventLog struct {
	Store // the rest is never called
	mu    sync.Mutex
	evs   []wire.Event
}

func (l *eventLog) AppendEvent(_ context.Context, e wire.Event) (wire.Event, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e.Seq = uint64(len(l.evs)) + 1
	l.evs = append(l.evs, e)
	return e, nil
}

func (l *eventLog) PutAgentEvent(ctx context.Context, _ wire.Agent, e wire.Event) (wire.Event, error) {
	return l.AppendEvent(ctx, e)
}

func (l *eventLog) LastSeq() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return uint64(len(l.evs))
}

func (l *eventLog) Events(_ context.Context, after uint64, limit int) ([]wire.Event, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if after >= uint64(len(l.evs)) {
		return nil, nil
	}
	out := l.evs[after:]
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return append([]wire.Event(nil), out...), nil
}

// TestPathSubscriberWokenOnlyForItsEvents: a subscriber that asked for some paths is
// not woken by other agents' events (no token is left for it), is woken by one of its
// own and by an event of no agent, is woken anyway after skipWake others (so it never
// falls behind the recent window), and receives exactly its events, in order, through
// more than recentMax others.
func TestPathSubscriberWokenOnlyForItsEvents(t *testing.T) {
	b := newBroker(&eventLog{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g, err := ParseGlob("", "runs/**")
	if err != nil {
		t.Fatal(err)
	}
	sub := b.subscribe(ctx, 0, []Glob{g}, false)
	ev := func(path string) wire.Event {
		e := wire.Event{Event: wire.EventAgentState}
		if path != "" {
			e.Agent = &wire.Agent{Path: path}
		}
		return e
	}
	publish := func(path string) {
		t.Helper()
		if _, err := b.publish(ctx, ev(path)); err != nil {
			t.Fatal(err)
		}
	}
	next := func() wire.Event {
		t.Helper()
		select {
		case e := <-sub:
			return e
		case <-time.After(10 * time.Second):
			t.Fatal("no event for the path subscriber within 10 s")
		}
		return wire.Event{}
	}
	tokens := func() int {
		b.mu.Lock()
		defer b.mu.Unlock()
		n := 0
		for gs := range b.globbed {
			n += len(gs.wake)
		}
		return n
	}

	publish("runs/a")
	if e := next(); e.Agent.Path != "runs/a" {
		t.Fatalf("first event for %s", e.Agent.Path)
	}
	// A subscriber whose first read came after that publish still holds its token
	// (it wakes once for nothing, by design); under load it may not have taken it
	// yet when the event arrives here. Once it has, it is asleep.
	if !wait.Until(10*time.Second, func() bool { return tokens() == 0 }) {
		t.Fatal("the runs/** subscriber never took its wake-up token")
	}
	// The subscriber has read everything; others' events leave it asleep.
	for i := range skipWake - 1 {
		publish(fmt.Sprintf("other/a%d", i))
		if n := tokens(); n != 0 {
			t.Fatalf("an event of other/a%d woke the runs/** subscriber", i)
		}
	}
	publish("other/last") // the skipWake-th: woken to move its cursor
	b.mu.Lock()
	for gs := range b.globbed {
		if gs.skipped != 0 {
			t.Fatalf("after %d others' events the subscriber was not woken (skipped %d)", skipWake, gs.skipped)
		}
	}
	b.mu.Unlock()

	// Through more than the recent window of others' events, it gets exactly its own
	// and those of no agent, in order.
	var want []string
	for i := range 2*recentMax + 10 {
		switch {
		case i%1500 == 0:
			p := fmt.Sprintf("runs/m%d", i)
			publish(p)
			want = append(want, p)
		case i%2100 == 0:
			publish("")
			want = append(want, "(none)")
		default:
			publish(fmt.Sprintf("other/b%d", i))
		}
	}
	for i, w := range want {
		e := next()
		got := "(none)"
		if e.Agent != nil {
			got = e.Agent.Path
		}
		if got != w {
			t.Fatalf("event %d for the subscriber is %s, want %s", i, got, w)
		}
	}
	select {
	case e := <-sub:
		t.Fatalf("an event the subscriber did not ask for: %+v", e)
	case <-time.After(50 * time.Millisecond): // nothing more is due: a short look
	}
}

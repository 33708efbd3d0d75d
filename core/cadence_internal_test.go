package core

import (
	"testing"
	"time"
)

// TestCadenceSettle: the quiet time before a screen counts as settled follows the
// agent's pauses: a burst's redraws do not count, a 2 s rhythm makes it 4 s, long
// pauses are capped, old ones forgotten, and reset forgets them all.
func TestCadenceSettle(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	var c cadence
	for _, d := range []time.Duration{0, 50 * time.Millisecond, 100 * time.Millisecond, 400 * time.Millisecond} {
		c.output(at(d))
	}
	if got := c.settle(at(time.Second)); got != quietAfter {
		t.Fatalf("after one burst: %s, want the base %s", got, quietAfter)
	}
	c.output(at(2400 * time.Millisecond)) // a 2 s pause
	if got := c.settle(at(3 * time.Second)); got != 4*time.Second {
		t.Fatalf("after a 2 s pause: %s, want 4s", got)
	}
	c.output(at(9400 * time.Millisecond)) // a 7 s pause: capped
	if got := c.settle(at(10 * time.Second)); got != settleMax {
		t.Fatalf("after a 7 s pause: %s, want the cap %s", got, settleMax)
	}
	c.output(at(30 * time.Second)) // 20 s: idle in between, not a rhythm
	if got := c.settle(at(31 * time.Second)); got != settleMax {
		t.Fatalf("a 20 s pause changed the settle time: %s", got)
	}
	if got := c.settle(at(50 * time.Second)); got != quietAfter {
		t.Fatalf("pauses older than %s still count: %s", cadenceKeep, got)
	}
	c.output(at(52 * time.Second))
	c.reset()
	if got := c.settle(at(53 * time.Second)); got != quietAfter {
		t.Fatalf("after reset: %s", got)
	}
}

// Package wait is how tests wait: poll a condition with a deadline and a growing
// delay, never sleep a fixed time and hope.
//
// Every deadline scales with $ORCR_TEST_WAIT_SCALE (a factor, default 1): on a
// machine slower or busier than the one a test was written on, `ORCR_TEST_WAIT_SCALE=3
// go test …` gives every wait three times as long instead of failing on load. A wait
// that passes returns as soon as its condition holds, so a large factor costs
// nothing on a fast machine; it only delays the failure of a wait that never holds.
//
// A wait that must pass in full is another thing: a negative check ("nothing is
// dispatched for 3 s") or a product timer the test lets run out (an idle_after, a
// hard timeout) costs its whole length every time the test passes, and a check that
// passes is not made more certain by waiting six times as long. Those take Held (at
// most HoldMax times d, whatever the factor) and Never, not Scale and Until.
package wait

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// ScaleEnv names the variable that multiplies every deadline.
const ScaleEnv = "ORCR_TEST_WAIT_SCALE"

// For polls cond (5 ms, doubling up to 200 ms) until it holds, and fails the test
// naming what it waited for when timeout (scaled) passes first.
func For(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Until(timeout, cond) {
		t.Fatalf("timed out after %s waiting for %s", Scale(timeout), what)
	}
}

// Until polls cond like For and reports whether it held before timeout (scaled)
// passed, for a caller that words its own failure (with the last screen it saw, say)
// or that has something to do when the wait runs out (kill what did not exit).
func Until(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(Scale(timeout))
	for delay := 5 * time.Millisecond; ; delay = min(delay*2, 200*time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(delay)
	}
}

// Every polls cond every interval (back to back for 0), without Until's growing
// delay, until it holds or timeout (scaled) passes, and reports whether it held: for
// a wait that is itself measured (a latency, the moment to kill) or that must keep
// a steady pressure (reads racing a stream).
func Every(timeout, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(Scale(timeout))
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(interval)
	}
}

// HoldMax is the most a held wait (Held, Never) grows with $ORCR_TEST_WAIT_SCALE.
const HoldMax = 2

// Held is d multiplied by $ORCR_TEST_WAIT_SCALE but by at most HoldMax (and never
// less than d: a factor below 1 does not shorten a negative check), for a wait
// that must pass in full: the window of a negative check, a product timer (an
// idle_after, a hard timeout) a test sets and then waits out. A loaded machine still
// gets some slack (what a window watches for may itself be slowed), but the window
// does not cost 3-6 times its length in every passing run the way a deadline that
// fails would.
func Held(d time.Duration) time.Duration {
	f, err := strconv.ParseFloat(os.Getenv(ScaleEnv), 64)
	if err != nil || f <= 1 {
		return d
	}
	return time.Duration(float64(d) * min(f, HoldMax))
}

// Never polls cond like Until for the held window d (Held) and fails the test naming
// what happened if cond holds at any poll: a negative check, which passes only by
// running to its end.
func Never(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	window := Held(d)
	deadline := time.Now().Add(window)
	for delay := 5 * time.Millisecond; ; delay = min(delay*2, 200*time.Millisecond) {
		if cond() {
			t.Fatalf("%s within %s", what, window)
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(delay)
	}
}

// Scale is d multiplied by $ORCR_TEST_WAIT_SCALE, for a deadline that is not a wait
// (a command's context, a read's timeout) and for a failure message naming the time
// a wait really had. A missing, unreadable or non-positive factor counts as 1.
func Scale(d time.Duration) time.Duration {
	f, err := strconv.ParseFloat(os.Getenv(ScaleEnv), 64)
	if err != nil || f <= 0 {
		return d
	}
	return time.Duration(float64(d) * f)
}

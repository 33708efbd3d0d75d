// Package wait is how tests wait: poll a condition with a deadline and a growing
// delay, never sleep a fixed time and hope.
//
// Every deadline scales with $ORCR_TEST_WAIT_SCALE (a factor, default 1): on a
// machine slower or busier than the one a test was written on, `ORCR_TEST_WAIT_SCALE=3
// go test …` gives every wait three times as long instead of failing on load. A wait
// that passes returns as soon as its condition holds, so a large factor costs
// nothing on a fast machine; it only delays the failure of a wait that never holds.
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

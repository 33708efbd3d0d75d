// Package wait is how tests wait: poll a condition with a deadline and a growing
// delay, never sleep a fixed time and hope.
package wait

import (
	"testing"
	"time"
)

// For polls cond (5 ms, doubling up to 200 ms) until it holds, and fails the test
// naming what it waited for when timeout passes first.
func For(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Until(timeout, cond) {
		t.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
}

// Until polls cond like For and reports whether it held before timeout passed, for a
// caller that words its own failure (with the last screen it saw, say) or that has
// something to do when the wait runs out (kill what did not exit).
func Until(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
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

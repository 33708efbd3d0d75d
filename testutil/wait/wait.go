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
	deadline := time.Now().Add(timeout)
	for delay := 5 * time.Millisecond; ; delay = min(delay*2, 200*time.Millisecond) {
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(delay)
	}
}

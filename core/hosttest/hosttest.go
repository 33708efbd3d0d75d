// Package hosttest is the host conformance suite: one table of behaviours that every
// core.Host implementation (pty, tmux, herdr) must pass unchanged.
//
// Each case gets its own host from Factory.New and runs as a parallel subtest, so New
// must be safe to call concurrently and must give every call its own backing state
// (temp dirs from t). Cases only use POSIX programs found on every test machine (sh,
// cat, printf, sleep, stty) and the GNU `cat -v -T` flags. Every wait polls a condition
// with a deadline; nothing sleeps a fixed time and hopes.
package hosttest

import (
	"context"
	"testing"
	"time"

	"orcr/core"
	"orcr/testutil/wait"
)

// Factory builds hosts for the suite.
type Factory struct {
	// New returns a fresh host with its own state (temp dirs from t). The suite shuts
	// it down at the end of the test.
	New func(t *testing.T) core.Host
	// Reopen simulates a server restart: it returns a new Host value attached to the
	// same backing host as old (old has been shut down). Nil when panes end with the
	// server (the embedded host), which skips the adoption cases.
	Reopen func(t *testing.T, old core.Host) core.Host
}

// conformanceCase is one behaviour of the table.
type conformanceCase struct {
	name string
	run  func(t *testing.T, f Factory)
}

// cases is the table every host must pass.
var cases = []conformanceCase{
	{"ArgvCwdEnv", testArgvCwdEnv},
	{"UnicodeAndLongLine", testUnicodeAndLongLine},
	{"SendTextLiteral", testSendTextLiteral},
	{"NamedKeysReachReader", testNamedKeysReachReader},
	{"CtrlCInterrupts", testCtrlCInterrupts},
	{"UnknownKeyRejected", testUnknownKeyRejected},
	{"ReadAfterClear", testReadAfterClear},
	{"ExitCode", testExitCode},
	{"CloseDeadPane", testCloseDeadPane},
	{"CloseLivePane", testCloseLivePane},
	{"CloseUnknownPane", testCloseUnknownPane},
	{"Resize", testResize},
	{"ScrollbackLines", testScrollbackLines},
	{"ReadANSI", testReadANSI},
	{"FiftyPanes", testFiftyPanes},
	{"AttachOrStream", testAttachOrStream},
	{"AdoptAfterRestart", testAdoptAfterRestart},
}

// Run runs every conformance case against hosts from f.
func Run(t *testing.T, f Factory) {
	t.Helper()
	if f.New == nil {
		t.Fatal("hosttest: Factory.New is nil")
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, f)
		})
	}
}

// waitFor polls cond until it returns true or timeout (scaled by
// $ORCR_TEST_WAIT_SCALE, as every wait of the suite is: a loaded machine's) passes,
// then fails the test with what the last poll said. cond returns a description of
// what it saw for the message.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	timeout = wait.Scale(timeout)
	deadline := time.Now().Add(timeout)
	delay := 5 * time.Millisecond
	for {
		ok, seen := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s; last seen:\n%s", timeout, what, seen)
		}
		time.Sleep(delay)
		if delay < 100*time.Millisecond {
			delay *= 2
		}
	}
}

// ctx returns a context that ends with the test or after a minute, whichever is first.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

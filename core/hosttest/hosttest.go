// Package hosttest is the host conformance suite: one table of behaviours that every
// core.Host implementation (pty, tmux, herdr) must pass unchanged.
package hosttest

import (
	"testing"

	"orcr/core"
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

// Run runs every conformance case against hosts from f.
func Run(t *testing.T, f Factory) {
	t.Helper()
	// Cases are filled in by the pty host work; see the package comment.
	_ = f
}

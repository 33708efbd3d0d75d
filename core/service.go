// Package core is orcr's agent kernel: agent records, paths, globs, lineage, the state
// machine and its one signal fold, admission (with the Gate interface features plug
// into), the events broker and GC, and the kernel's socket methods (KernelMethods;
// every surface calls them through a wire.Transport). It defines the interfaces it needs (Host,
// Provider, Store, Gate) and imports none of their implementations, and none of the
// feature packages (schedule, …) built beside it; the daemon wires them.
package core

import (
	"context"
)

// Caller is who is calling, as the socket server established it.
type Caller struct {
	// ClaimedID is the ORCR_ID the caller says it runs inside ("" for none). The engine
	// verifies it: the peer process must descend from that agent's pane process.
	ClaimedID string
	// PID and UID are the peer credentials of the connection.
	PID int
	UID int
	// InProcess is true for calls from the dashboard hosting the engine; nothing to verify.
	InProcess bool
	// Node is set for a call that came over that node's link (DESIGN §14: its panes'
	// orcr reaches this server through the socket the link forwards there). The node's
	// pids are not this machine's: the claim is verified against the agents placed on
	// that node instead, and a call without a claim is refused.
	Node string
}

type callerKey struct{}

// WithCaller attaches a verified caller to ctx.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller attached to ctx, if any.
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}

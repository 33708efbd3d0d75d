package core

import (
	"context"

	"orcr/core/wire"
)

// Feature is the one contract every room built beside the kernel implements
// (schedules, accounts, listeners, plans, runs, roles, and the rooms to come: nodes,
// web, MCP, workflows; DESIGN §5). The daemon builds the kernel, then starts a list
// of features: each gets the Kernel in Start and nothing else, serves its own socket
// methods (Methods) and is closed in reverse order at shutdown.
type Feature interface {
	// Name is the feature's short name: its Buckets namespace and its name in logs.
	Name() string
	// Methods are the feature's socket methods: each a typed declaration from the
	// feature's api package with the handler that serves it.
	Methods() []wire.Handler
	// Start hands the feature the kernel; it starts what runs in the background.
	Start(ctx context.Context, k Kernel) error
	// Close stops what Start started.
	Close() error
}

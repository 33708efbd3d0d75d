package core

import (
	"context"

	"orcr/core/wire"
)

// Feature is the one contract every room built beside the kernel implements
// (schedules, accounts, listeners, plans, runs, roles, and the rooms to come: nodes,
// web, MCP, workflows; DESIGN §5). The daemon builds the features from their options
// and hands the list to Engine.Start, which starts them in order once the agents are
// loaded and opens admission after the last: each gets its own Kernel in Start and
// nothing else, serves its own socket methods (Methods) and is closed in reverse
// order at shutdown.
type Feature interface {
	// Name is the feature's short name: its Buckets namespace and its name in logs.
	Name() string
	// Methods are the feature's socket methods: each a typed declaration from the
	// feature's api package with the handler that serves it.
	Methods() []wire.Handler
	// Start hands the feature the kernel; it registers its admission hooks and the
	// capabilities it provides, and starts what runs in the background. Another
	// feature may not have started yet: look capabilities up when they are needed.
	Start(ctx context.Context, k Kernel) error
	// Close stops what Start started. It is called on every feature of the list at
	// shutdown, also on one whose Start failed or never ran.
	Close() error
}

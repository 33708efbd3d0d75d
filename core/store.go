package core

import (
	"context"

	"orcr/core/wire"
)

// Store is the durable truth of the server. Only the server process opens it. The
// badger implementation lives in store/.
type Store interface {
	PutAgent(ctx context.Context, a wire.Agent) error
	GetAgent(ctx context.Context, id string) (wire.Agent, error) // wire.ErrNotFound
	ListAgents(ctx context.Context) ([]wire.Agent, error)
	DeleteAgent(ctx context.Context, id string) error

	// AppendEvent assigns the next seq to e, stores it and returns it. Seqs are
	// strictly increasing across restarts.
	AppendEvent(ctx context.Context, e wire.Event) (wire.Event, error)
	// PutAgentEvent writes a's record and appends e (as AppendEvent does) in one
	// transaction: a state change and its event are stored together or not at all.
	PutAgentEvent(ctx context.Context, a wire.Agent, e wire.Event) (wire.Event, error)
	// Events returns stored events with seq > after, oldest first, at most limit (0: all).
	Events(ctx context.Context, after uint64, limit int) ([]wire.Event, error)
	LastSeq() uint64
	// PruneEvents deletes events with seq <= upTo.
	PruneEvents(ctx context.Context, upTo uint64) error

	// Generic records for other owners (schedules, queue, usage readings, plans):
	// a bucket is a short name, keys sort bytewise.
	Put(ctx context.Context, bucket, key string, value []byte) error
	Get(ctx context.Context, bucket, key string) ([]byte, error) // wire.ErrNotFound
	Delete(ctx context.Context, bucket, key string) error
	// Scan calls fn for every key in bucket in key order until fn returns false.
	Scan(ctx context.Context, bucket string, fn func(key string, value []byte) bool) error

	Close() error
}

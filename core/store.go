package core

import (
	"context"

	"orcr/core/wire"
)

// The server's durable truth is three small stores, one per owner: the agents'
// records and the event log are the kernel's; Buckets hold the features' records. The
// badger implementation of all three lives in store/; only the server process opens
// it. A feature never sees AgentStore or EventLog: its Kernel hands it Buckets
// namespaced to its name (see Kernel.Buckets).

// AgentStore keeps the agents' records.
type AgentStore interface {
	PutAgent(ctx context.Context, a wire.Agent) error
	GetAgent(ctx context.Context, id string) (wire.Agent, error) // wire.ErrNotFound
	ListAgents(ctx context.Context) ([]wire.Agent, error)
	DeleteAgent(ctx context.Context, id string) error
}

// EventLog is the ordered log of events the broker serves.
type EventLog interface {
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
}

// Buckets are generic records: a bucket is a short name (no "/"), keys sort
// bytewise, values are the owner's bytes, versioned by the owner.
type Buckets interface {
	Put(ctx context.Context, bucket, key string, value []byte) error
	Get(ctx context.Context, bucket, key string) ([]byte, error) // wire.ErrNotFound
	Delete(ctx context.Context, bucket, key string) error
	// Scan calls fn for every key in bucket in key order until fn returns false.
	Scan(ctx context.Context, bucket string, fn func(key string, value []byte) bool) error
	// ScanFrom is Scan starting at the first key >= from: a page deep in a long
	// bucket (a run's log) then costs its own rows, not every row before it.
	ScanFrom(ctx context.Context, bucket, from string, fn func(key string, value []byte) bool) error
}

// Store is the whole store the kernel opens over: the three parts and Close.
type Store interface {
	AgentStore
	EventLog
	Buckets
	Close() error
}

// NamespaceSep joins a feature's name and its own bucket name into the bucket the
// store keeps: feature "schedules", bucket "runs.nightly" → "schedules:runs.nightly".
// A feature's name holds no separator, so no feature can name a bucket inside another's.
const NamespaceSep = ":"

// NamespacedBucket is the store's name of a feature's bucket.
func NamespacedBucket(feature, bucket string) string { return feature + NamespaceSep + bucket }

// namespaced is a feature's view of the Buckets: every bucket it names lives under
// its own name.
type namespaced struct {
	b    Buckets
	name string
}

// FeatureBuckets is b as feature sees it: its bucket "x" is b's "feature:x". Tests of
// a feature use it to read a store as the feature does.
func FeatureBuckets(b Buckets, feature string) Buckets { return namespaced{b: b, name: feature} }

func (n namespaced) Put(ctx context.Context, bucket, key string, value []byte) error {
	return n.b.Put(ctx, NamespacedBucket(n.name, bucket), key, value)
}

func (n namespaced) Get(ctx context.Context, bucket, key string) ([]byte, error) {
	return n.b.Get(ctx, NamespacedBucket(n.name, bucket), key)
}

func (n namespaced) Delete(ctx context.Context, bucket, key string) error {
	return n.b.Delete(ctx, NamespacedBucket(n.name, bucket), key)
}

func (n namespaced) Scan(ctx context.Context, bucket string, fn func(key string, value []byte) bool) error {
	return n.b.Scan(ctx, NamespacedBucket(n.name, bucket), fn)
}

func (n namespaced) ScanFrom(ctx context.Context, bucket, from string, fn func(key string, value []byte) bool) error {
	return n.b.ScanFrom(ctx, NamespacedBucket(n.name, bucket), from, fn)
}

package store

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"

	badger "github.com/dgraph-io/badger/v4"

	"orcr/core/wire"
)

// ctxCheckEvery is how many records a scan visits between context checks.
const ctxCheckEvery = 256

// PutAgent writes (or replaces) the agent's record.
func (s *Store) PutAgent(ctx context.Context, a wire.Agent) error {
	if err := ctxErr(ctx, "put agent"); err != nil {
		return err
	}
	if a.ID == "" {
		return wire.Errorf(wire.CodeInvalidParams, "store: agent has no id")
	}
	val, err := encodeAgent(&a)
	if err != nil {
		return err
	}
	if err := s.update(ctx, func(txn *badger.Txn) error {
		return txn.Set(agentKey(a.ID), val)
	}); err != nil {
		return fmt.Errorf("put agent %s: %w", a.ID, err)
	}
	return nil
}

// GetAgent reads one agent; a missing id is wire.ErrNotFound.
func (s *Store) GetAgent(ctx context.Context, id string) (wire.Agent, error) {
	var a wire.Agent
	if err := ctxErr(ctx, "get agent"); err != nil {
		return a, err
	}
	key := agentKey(id)
	err := s.view(func(txn *badger.Txn) error {
		item, err := txn.Get(key)
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error { return decodeAgent(key, v, &a) })
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return wire.Agent{}, wire.Errorf(wire.CodeNotFound, "agent %s not found in the store", id)
	}
	if err != nil {
		return wire.Agent{}, fmt.Errorf("get agent %s: %w", id, err)
	}
	return a, nil
}

// ListAgents returns every agent in id order (UUIDv7 ids sort by creation time).
//
// JSON decoding dominates the cost, so records are read in batches and each batch is
// decoded on its own goroutine, up to GOMAXPROCS at once; the bound also caps how many
// raw records are held at a time. Values are not prefetched: agent records sit in the LSM
// beside their keys (below valueThreshold), so prefetching would only add a copy.
func (s *Store) ListAgents(ctx context.Context) ([]wire.Agent, error) {
	if err := ctxErr(ctx, "list agents"); err != nil {
		return nil, err
	}
	var (
		batches []*agentBatch
		wg      sync.WaitGroup
		sem     = make(chan struct{}, runtime.GOMAXPROCS(0))
		cur     = &agentBatch{}
	)
	flush := func() {
		b := cur
		batches = append(batches, b)
		cur = &agentBatch{}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			b.decode()
		})
	}
	err := s.view(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Prefix = prefixAgent
		opts.PrefetchValues = false
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			v, err := item.ValueCopy(nil)
			if err != nil {
				return err
			}
			cur.keys = append(cur.keys, item.KeyCopy(nil))
			cur.vals = append(cur.vals, v)
			if len(cur.vals) == listBatch {
				if err := ctx.Err(); err != nil {
					return err
				}
				flush()
			}
		}
		if len(cur.vals) > 0 {
			flush()
		}
		return ctx.Err()
	})
	wg.Wait()
	if err != nil {
		return nil, fmt.Errorf("list agents: %w", err)
	}
	n := 0
	for _, b := range batches {
		if b.err != nil {
			return nil, fmt.Errorf("list agents: %w", b.err)
		}
		n += len(b.out)
	}
	out := make([]wire.Agent, 0, n)
	for _, b := range batches {
		out = append(out, b.out...)
	}
	return out, nil
}

// listBatch is how many records one ListAgents decode job holds.
const listBatch = 128

type agentBatch struct {
	keys, vals [][]byte
	out        []wire.Agent
	err        error
}

func (b *agentBatch) decode() {
	b.out = make([]wire.Agent, len(b.vals))
	for i, v := range b.vals {
		if b.err = decodeAgent(b.keys[i], v, &b.out[i]); b.err != nil {
			break
		}
	}
	b.keys, b.vals = nil, nil
}

// DeleteAgent removes the agent's record; deleting a missing id is not an error.
func (s *Store) DeleteAgent(ctx context.Context, id string) error {
	if err := ctxErr(ctx, "delete agent"); err != nil {
		return err
	}
	if err := s.update(ctx, func(txn *badger.Txn) error {
		return txn.Delete(agentKey(id))
	}); err != nil {
		return fmt.Errorf("delete agent %s: %w", id, err)
	}
	return nil
}

package store

import (
	"context"
	"fmt"

	badger "github.com/dgraph-io/badger/v4"

	"orcr/core/wire"
)

// pruneBatch bounds how many deletes share one write batch flush.
const pruneBatch = 1000

// AppendEvent assigns e the next seq, stores it together with the m/seq high-water mark
// in one transaction, and returns it. Appends are serialised: seqs come out contiguous
// and in commit order, so a reader that sees seq N can already see every seq below it.
func (s *Store) AppendEvent(ctx context.Context, e wire.Event) (wire.Event, error) {
	if err := ctxErr(ctx, "append event"); err != nil {
		return wire.Event{}, err
	}
	out, err := s.appendWith(ctx, []wire.Event{e}, "append event", nil)
	if err != nil {
		return wire.Event{}, err
	}
	return out[0], nil
}

// PutAgentEvent writes a's record and appends e with the next seq in one transaction:
// one commit instead of two for every state change.
func (s *Store) PutAgentEvent(ctx context.Context, a wire.Agent, e wire.Event) (wire.Event, error) {
	out, err := s.PutAgentEvents(ctx, a, []wire.Event{e})
	if err != nil {
		return wire.Event{}, err
	}
	return out[0], nil
}

// PutAgentEvents writes a's record and appends evs with the next seqs, in their order,
// in one transaction: a spawn admitted at once stores its record as starting with its
// agent.spawned and its agent.state events in one commit instead of two.
func (s *Store) PutAgentEvents(ctx context.Context, a wire.Agent, evs []wire.Event) ([]wire.Event, error) {
	if err := ctxErr(ctx, "put agent and event"); err != nil {
		return nil, err
	}
	if a.ID == "" {
		return nil, wire.Errorf(wire.CodeInvalidParams, "store: agent has no id")
	}
	if len(evs) == 0 {
		return nil, wire.Errorf(wire.CodeInvalidParams, "store: agent %s with no event", a.ID)
	}
	aval, err := encodeAgent(&a)
	if err != nil {
		return nil, err
	}
	return s.appendWith(ctx, evs, "put agent "+a.ID+" with event", func(txn *badger.Txn) error {
		return txn.Set(agentKey(a.ID), aval)
	})
}

// appendWith gives evs the next seqs and commits them, the m/seq high-water mark and
// what with writes (nil: nothing) in one transaction. Appends are serialised on
// appendMu, so seqs come out contiguous and in commit order. A failed commit is "what
// SEQ: err", SEQ the first event's.
func (s *Store) appendWith(ctx context.Context, evs []wire.Event, what string, with func(*badger.Txn) error) ([]wire.Event, error) {
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	first := s.lastSeq.Load() + 1
	out := make([]wire.Event, len(evs))
	vals := make([][]byte, len(evs))
	for i, e := range evs {
		e.Seq = first + uint64(i)
		val, err := encodeEvent(&e)
		if err != nil {
			return nil, err
		}
		out[i], vals[i] = e, val
	}
	last := first + uint64(len(evs)) - 1
	if err := s.update(ctx, func(txn *badger.Txn) error {
		if with != nil {
			if err := with(txn); err != nil {
				return err
			}
		}
		for i, val := range vals {
			if err := txn.Set(eventKey(first+uint64(i)), val); err != nil {
				return err
			}
		}
		return txn.Set(keySeq, seqBytes(last))
	}); err != nil {
		return nil, fmt.Errorf("%s %d: %w", what, first, err)
	}
	s.lastSeq.Store(last)
	return out, nil
}

// Events returns stored events with seq > after, oldest first, at most limit (0 or less:
// all of them).
func (s *Store) Events(ctx context.Context, after uint64, limit int) ([]wire.Event, error) {
	if err := ctxErr(ctx, "read events"); err != nil {
		return nil, err
	}
	if after == ^uint64(0) {
		return nil, nil
	}
	var out []wire.Event
	if limit > 0 {
		out = make([]wire.Event, 0, min(limit, 1024))
	}
	err := s.view(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Prefix = prefixEvent
		if limit > 0 && limit < opts.PrefetchSize {
			opts.PrefetchSize = limit
		}
		it := txn.NewIterator(opts)
		defer it.Close()
		n := 0
		for it.Seek(eventKey(after + 1)); it.Valid(); it.Next() {
			if limit > 0 && len(out) >= limit {
				break
			}
			if n++; n%ctxCheckEvery == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			item := it.Item()
			out = append(out, wire.Event{})
			dst := &out[len(out)-1]
			if err := item.Value(func(v []byte) error { return decodeEvent(item.Key(), v, dst) }); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read events after %d: %w", after, err)
	}
	return out, nil
}

// PruneEvents deletes events with seq <= upTo. The high-water mark stays, so later
// appends (and appends after a restart) continue above every seq ever handed out.
func (s *Store) PruneEvents(ctx context.Context, upTo uint64) error {
	if err := ctxErr(ctx, "prune events"); err != nil {
		return err
	}
	err := s.write(ctx, func(db *badger.DB) error {
		wb := db.NewWriteBatch()
		defer wb.Cancel()
		err := db.View(func(txn *badger.Txn) error {
			opts := badger.DefaultIteratorOptions
			opts.Prefix = prefixEvent
			opts.PrefetchValues = false
			it := txn.NewIterator(opts)
			defer it.Close()
			n := 0
			for it.Rewind(); it.Valid(); it.Next() {
				seq, ok := seqOfKey(it.Item().Key())
				if !ok || seq > upTo {
					break
				}
				if n++; n%pruneBatch == 0 {
					if err := ctx.Err(); err != nil {
						return err
					}
				}
				if err := wb.Delete(it.Item().KeyCopy(nil)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		return wb.Flush()
	})
	if err != nil {
		return fmt.Errorf("prune events up to %d: %w", upTo, err)
	}
	return nil
}

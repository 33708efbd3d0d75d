package store

import (
	"context"
	"errors"
	"fmt"

	badger "github.com/dgraph-io/badger/v4"

	"orcr/core/wire"
)

// Put stores value under key in bucket. The value is stored as given.
func (s *Store) Put(ctx context.Context, bucket, key string, value []byte) error {
	if err := ctxErr(ctx, "put"); err != nil {
		return err
	}
	k, err := bucketKey(bucket, key)
	if err != nil {
		return err
	}
	// badger keeps the slice until the commit; copy so the caller may reuse its buffer.
	v := append([]byte(nil), value...)
	if err := s.update(ctx, func(txn *badger.Txn) error { return txn.Set(k, v) }); err != nil {
		return fmt.Errorf("put %s/%s: %w", bucket, key, err)
	}
	return nil
}

// Get returns a copy of the value under key in bucket; a missing key is wire.ErrNotFound.
func (s *Store) Get(ctx context.Context, bucket, key string) ([]byte, error) {
	if err := ctxErr(ctx, "get"); err != nil {
		return nil, err
	}
	k, err := bucketKey(bucket, key)
	if err != nil {
		return nil, err
	}
	var out []byte
	err = s.view(func(txn *badger.Txn) error {
		item, err := txn.Get(k)
		if err != nil {
			return err
		}
		out, err = item.ValueCopy(nil)
		return err
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, wire.Errorf(wire.CodeNotFound, "%s/%s not found in the store", bucket, key)
	}
	if err != nil {
		return nil, fmt.Errorf("get %s/%s: %w", bucket, key, err)
	}
	return out, nil
}

// Delete removes key from bucket; deleting a missing key is not an error.
func (s *Store) Delete(ctx context.Context, bucket, key string) error {
	if err := ctxErr(ctx, "delete"); err != nil {
		return err
	}
	k, err := bucketKey(bucket, key)
	if err != nil {
		return err
	}
	if err := s.update(ctx, func(txn *badger.Txn) error { return txn.Delete(k) }); err != nil {
		return fmt.Errorf("delete %s/%s: %w", bucket, key, err)
	}
	return nil
}

// Scan calls fn for every key of bucket in byte order until fn returns false. fn sees a
// consistent snapshot taken when Scan starts and may keep value (it is a copy); it may
// write to the store, but those writes are not visible to the same scan.
func (s *Store) Scan(ctx context.Context, bucket string, fn func(key string, value []byte) bool) error {
	return s.ScanFrom(ctx, bucket, "", fn)
}

// ScanFrom is Scan starting at the first key >= from (the iterator seeks there, so the
// keys before it are not read).
func (s *Store) ScanFrom(ctx context.Context, bucket, from string, fn func(key string, value []byte) bool) error {
	if err := ctxErr(ctx, "scan"); err != nil {
		return err
	}
	p, err := bucketPrefix(bucket)
	if err != nil {
		return err
	}
	err = s.view(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Prefix = p
		it := txn.NewIterator(opts)
		defer it.Close()
		n := 0
		start := append(append([]byte(nil), p...), from...)
		for it.Seek(start); it.Valid(); it.Next() {
			if n++; n%ctxCheckEvery == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			item := it.Item()
			v, err := item.ValueCopy(nil)
			if err != nil {
				return err
			}
			if !fn(string(item.Key()[len(p):]), v) {
				return nil
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("scan %s: %w", bucket, err)
	}
	return nil
}

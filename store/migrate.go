package store

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	badger "github.com/dgraph-io/badger/v4"

	"orcr/core"
)

// Schema 2 keeps each feature's buckets under its name: feature "schedules", bucket
// "schedules" is k/schedules:schedules/<key> (core.NamespacedBucket), so a feature
// sees only its own records (core.Kernel.Buckets). Schema 1 kept them under the bare
// bucket names below; Open moves a schema-1 store's records to their feature's
// namespace once, then stamps schema 2. Each batch moves its keys in one transaction
// (the new key written and the old deleted together), so a crash mid-way leaves
// every record in exactly one place and the next Open finishes the move. The
// kernel's own bucket ("limits") is not a feature's and stays where it is.

// v1Owners says which feature owned each bucket of schema 1: a bucket named name, or
// every bucket starting with it when prefix is set. The feature names are the
// features' Name constants (schedule.Name, accounts.Name, listen.Name,
// orchestrate.Name, run.Name); daemon's TestStoreOfSchema1OpensIntact holds them to it.
var v1Owners = []struct {
	name    string
	prefix  bool
	feature string
}{
	{"schedules", false, "schedules"},
	{"schedrun.", true, "schedules"},
	{"acct.windows", false, "accounts"},
	{"budgets", false, "accounts"},
	{"listen.", true, "listeners"},
	{"plans", false, "plans"},
	{"planwatch", false, "plans"},
	{"runs", false, "runs"},
	{"runlog.", true, "runs"},
	{"runwatch", false, "runs"},
}

// v2Bucket is where schema 2 keeps a schema-1 bucket; ok is false for a bucket that
// stays (the kernel's, or one already namespaced).
func v2Bucket(bucket string) (string, bool) {
	if strings.Contains(bucket, core.NamespaceSep) {
		return "", false
	}
	for _, o := range v1Owners {
		if bucket == o.name || o.prefix && strings.HasPrefix(bucket, o.name) {
			return core.NamespacedBucket(o.feature, bucket), true
		}
	}
	return "", false
}

// migrateBatch bounds one transaction of the move: well under badger's limit on a
// transaction (about 300 KiB of inline records, see the package comment).
const (
	migrateBatchKeys  = 500
	migrateBatchBytes = 128 << 10
)

// migrateV1 moves every record of a schema-1 feature bucket to its namespace, then
// stamps schema 2.
func (s *Store) migrateV1() error {
	moved, err := s.moveBuckets(v2Bucket)
	if err != nil {
		return fmt.Errorf("move the store's records to schema %d: %w", schemaVersion, err)
	}
	if err := s.stampSchema(schemaVersion); err != nil {
		return err
	}
	s.logger.Info("store moved to a new schema", "from", 1, "to", schemaVersion, "records", moved)
	return nil
}

func (s *Store) stampSchema(v int) error {
	if err := s.db.Update(func(txn *badger.Txn) error {
		return txn.Set(keySchema, []byte(strconv.Itoa(v)))
	}); err != nil {
		return fmt.Errorf("stamp store schema %d: %w", v, err)
	}
	return nil
}

// moveBuckets moves every record of a bucket to[bucket] names (ok) to that bucket, a
// batch per transaction, and returns how many it moved.
func (s *Store) moveBuckets(to func(bucket string) (string, bool)) (int, error) {
	var after []byte // the last key looked at
	moved := 0
	for {
		type kv struct{ old, new, val []byte }
		var batch []kv
		size := 0
		done := true
		err := s.db.View(func(txn *badger.Txn) error {
			opts := badger.DefaultIteratorOptions
			opts.Prefix = prefixBucket
			it := txn.NewIterator(opts)
			defer it.Close()
			it.Rewind()
			if after != nil {
				it.Seek(after)
			}
			for ; it.Valid(); it.Next() {
				k := it.Item().KeyCopy(nil)
				if after != nil && bytes.Equal(k, after) {
					continue
				}
				if len(batch) >= migrateBatchKeys || size >= migrateBatchBytes {
					done = false
					return nil
				}
				after = k
				rest := k[len(prefixBucket):]
				i := bytes.IndexByte(rest, '/')
				if i < 0 {
					continue
				}
				nb, ok := to(string(rest[:i]))
				if !ok {
					continue
				}
				v, err := it.Item().ValueCopy(nil)
				if err != nil {
					return err
				}
				nk := append(append(append([]byte(nil), prefixBucket...), nb...), rest[i:]...)
				batch = append(batch, kv{k, nk, v})
				size += len(k) + len(nk) + len(v)
			}
			return nil
		})
		if err != nil {
			return moved, err
		}
		if len(batch) > 0 {
			err = s.db.Update(func(txn *badger.Txn) error {
				for _, m := range batch {
					if err := txn.Set(m.new, m.val); err != nil {
						return err
					}
					if err := txn.Delete(m.old); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return moved, err
			}
			moved += len(batch)
		}
		if done {
			return moved, nil
		}
	}
}

// LayOutAsSchema1 moves the feature records of the closed store in dir back to the
// bucket names of schema 1 and stamps schema 1: the store as an orcr from before the
// features' namespaces left it, for tests that the move keeps every feature's records.
// A namespaced record that schema 1 had no bucket for is an error naming it: schema 1
// could not have held it.
func LayOutAsSchema1(dir string) error {
	s, err := Open(dir, nil)
	if err != nil {
		return err
	}
	defer s.Close()
	var stray string
	if _, err := s.moveBuckets(func(bucket string) (string, bool) {
		_, b, ok := strings.Cut(bucket, core.NamespaceSep)
		if !ok {
			return "", false
		}
		if nb, ok := v2Bucket(b); ok && nb == bucket {
			return b, true
		}
		if stray == "" {
			stray = bucket
		}
		return "", false
	}); err != nil {
		return err
	}
	if stray != "" {
		return fmt.Errorf("bucket %s has no schema-1 name (v1Owners)", stray)
	}
	return s.stampSchema(1)
}

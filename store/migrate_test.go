package store

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"

	badger "github.com/dgraph-io/badger/v4"

	"orcr/core"
)

// layV1 writes records as a schema-1 store keeps them: bare bucket names, m/schema 1.
func layV1(t *testing.T, dir string, recs map[[2]string]string) {
	t.Helper()
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = s.db.Update(func(txn *badger.Txn) error {
		for bk, v := range recs {
			k, err := bucketKey(bk[0], bk[1])
			if err != nil {
				return err
			}
			if err := txn.Set(k, []byte(v)); err != nil {
				return err
			}
		}
		return txn.Set(keySchema, []byte("1"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// A store of schema 1 opens with every feature's records in the feature's namespace,
// the kernel's where they were, and schema 2 stamped; more records than one batch
// moves are all moved.
func TestSchema1MovesFeatureBuckets(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	recs := map[[2]string]string{
		{"schedules", "job"}:               "s",
		{"schedrun.job", "0001"}:           "sr",
		{"acct.windows", "claude/w"}:       "w",
		{"budgets", "review/**"}:           "b",
		{"listen.docs", "gh"}:              "d",
		{"plans", "demo"}:                  "p",
		{"planwatch", "seq"}:               "9",
		{"runs", "demo"}:                   "r",
		{"runlog.demo", "00000001"}:        "l",
		{"runwatch", "seq"}:                "7",
		{"limits", "global"}:               "kernel",
		{"unknown.owner", "x"}:             "stays",
		{"listeners:listen.state", "done"}: "already moved",
	}
	n := migrateBatchKeys*2 + 17
	for i := range n {
		recs[[2]string{"listen.processed", fmt.Sprintf("gh/%05d", i)}] = strconv.Itoa(i)
	}
	layV1(t, dir, recs)

	s, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for bk, v := range recs {
		want := bk[0]
		if nb, ok := v2Bucket(bk[0]); ok {
			want = nb
			if _, err := s.Get(ctx, bk[0], bk[1]); err == nil {
				t.Errorf("%s/%s is still under its schema-1 name", bk[0], bk[1])
			}
		}
		got, err := s.Get(ctx, want, bk[1])
		if err != nil || string(got) != v {
			t.Errorf("%s/%s: %q, %v; want %q", want, bk[1], got, err, v)
		}
	}
	// Seen as the features see them.
	if got, err := core.FeatureBuckets(s, "schedules").Get(ctx, "schedules", "job"); err != nil || string(got) != "s" {
		t.Errorf("schedules' own bucket: %q, %v", got, err)
	}
	count := 0
	if err := core.FeatureBuckets(s, "listeners").Scan(ctx, "listen.processed", func(string, []byte) bool { count++; return true }); err != nil || count != n {
		t.Errorf("listeners' processed ids: %d, %v; want %d", count, err, n)
	}
	var v []byte
	if err := s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(keySchema)
		if err != nil {
			return err
		}
		v, err = item.ValueCopy(nil)
		return err
	}); err != nil || string(v) != strconv.Itoa(schemaVersion) {
		t.Fatalf("schema after the move: %q, %v", v, err)
	}
}

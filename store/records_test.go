package store

import (
	"bytes"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	badger "github.com/dgraph-io/badger/v4"

	"orcr/core/wire"
)

func TestBucketsIsolated(t *testing.T) {
	ctx := t.Context()
	s := openT(t, t.TempDir())
	put := func(b, k, v string) {
		t.Helper()
		if err := s.Put(ctx, b, k, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	put("a", "z", "a/z")
	put("a", "m", "a/m")
	put("a", "b", "a/b")
	put("ab", "c", "ab/c")
	put("ab", "a", "ab/a")
	// An agent record must not appear in bucket "a" either (agents live under a/).
	if err := s.PutAgent(ctx, sampleAgent(1)); err != nil {
		t.Fatal(err)
	}
	scan := func(b string) []string {
		t.Helper()
		var out []string
		if err := s.Scan(ctx, b, func(k string, v []byte) bool {
			out = append(out, k+"="+string(v))
			return true
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got, want := scan("a"), []string{"b=a/b", "m=a/m", "z=a/z"}; !slices.Equal(got, want) {
		t.Errorf("scan a = %v, want %v", got, want)
	}
	if got, want := scan("ab"), []string{"a=ab/a", "c=ab/c"}; !slices.Equal(got, want) {
		t.Errorf("scan ab = %v, want %v", got, want)
	}
	if got := scan("abc"); got != nil {
		t.Errorf("scan of empty bucket = %v", got)
	}
	if _, err := s.Get(ctx, "ab", "b"); !errors.Is(err, wire.ErrNotFound) {
		t.Errorf("Get(ab, b) err = %v, want not_found", err)
	}

	// Scan stops when fn says so.
	var n int
	s.Scan(ctx, "a", func(string, []byte) bool { n++; return false })
	if n != 1 {
		t.Errorf("scan visited %d keys after fn returned false", n)
	}

	// Get returns a copy; mutating it or the Put buffer changes nothing stored.
	buf := []byte("original")
	put("c", "k", string(buf))
	got, _ := s.Get(ctx, "c", "k")
	got[0] = 'X'
	again, _ := s.Get(ctx, "c", "k")
	if string(again) != "original" {
		t.Errorf("stored value changed through a returned slice: %q", again)
	}

	if err := s.Delete(ctx, "a", "m"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "a", "m"); !errors.Is(err, wire.ErrNotFound) {
		t.Errorf("Get after Delete: %v", err)
	}
	if err := s.Delete(ctx, "a", "never"); err != nil {
		t.Errorf("Delete of missing key: %v", err)
	}

	for _, bad := range []string{"", "a/b"} {
		if err := s.Put(ctx, bad, "k", nil); wire.CodeOf(err) != wire.CodeInvalidParams {
			t.Errorf("Put to bucket %q: %v, want invalid_params", bad, err)
		}
	}
	if err := s.Put(ctx, "a", "", nil); wire.CodeOf(err) != wire.CodeInvalidParams {
		t.Errorf("Put with empty key: %v, want invalid_params", err)
	}
}

func TestAgentNotFoundAndDelete(t *testing.T) {
	ctx := t.Context()
	s := openT(t, t.TempDir())
	_, err := s.GetAgent(ctx, "nope")
	if !errors.Is(err, wire.ErrNotFound) || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("GetAgent(missing) = %v, want not_found naming the id", err)
	}
	a := sampleAgent(3)
	if err := s.PutAgent(ctx, a); err != nil {
		t.Fatal(err)
	}
	a.State = wire.StateKilled
	if err := s.PutAgent(ctx, a); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetAgent(ctx, a.ID)
	if err != nil || got.State != wire.StateKilled {
		t.Fatalf("GetAgent after overwrite: %v %v", got.State, err)
	}
	if err := s.DeleteAgent(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetAgent(ctx, a.ID); !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("GetAgent after delete: %v", err)
	}
	if list, _ := s.ListAgents(ctx); len(list) != 0 {
		t.Fatalf("ListAgents after delete: %d", len(list))
	}
	if err := s.PutAgent(ctx, wire.Agent{}); wire.CodeOf(err) != wire.CodeInvalidParams {
		t.Fatalf("PutAgent without id: %v", err)
	}
}

func TestUnknownRecordVersion(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	s := openT(t, dir)
	raw := func(key []byte, val string) {
		t.Helper()
		if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set(key, []byte(val)) }); err != nil {
			t.Fatal(err)
		}
	}
	// Version 2 with a shape that would not even decode as version 1.
	raw(agentKey("future"), `{"v":2,"agent":{"id":42,"path":["x"]}}`)
	_, err := s.GetAgent(ctx, "future")
	var ve *VersionError
	if !errors.Is(err, ErrUnknownVersion) || !errors.As(err, &ve) || ve.Got != 2 || ve.Want != 1 {
		t.Fatalf("GetAgent(v2) = %v, want a VersionError 2 vs 1", err)
	}
	if !strings.Contains(err.Error(), "a/future") || !strings.Contains(err.Error(), "upgrade orcr") {
		t.Errorf("message does not say which record and what to do: %v", err)
	}
	if _, err := s.ListAgents(ctx); !errors.Is(err, ErrUnknownVersion) {
		t.Errorf("ListAgents with a v2 record = %v", err)
	}
	// Version 2 that happens to decode cleanly is still refused.
	raw(agentKey("future"), `{"v":2,"agent":{"id":"future"}}`)
	if _, err := s.GetAgent(ctx, "future"); !errors.Is(err, ErrUnknownVersion) {
		t.Errorf("GetAgent(v2, decodable) = %v", err)
	}
	// No version at all.
	raw(agentKey("bare"), `{"id":"bare"}`)
	if _, err := s.GetAgent(ctx, "bare"); !errors.Is(err, ErrUnknownVersion) {
		t.Errorf("GetAgent(no version) = %v", err)
	}
	// Garbage is a decode error, not a version error.
	raw(agentKey("junk"), `not json`)
	if _, err := s.GetAgent(ctx, "junk"); err == nil || errors.Is(err, ErrUnknownVersion) {
		t.Errorf("GetAgent(junk) = %v, want a decode error", err)
	}

	if _, err := s.AppendEvent(ctx, sampleEvent(1, nil)); err != nil {
		t.Fatal(err)
	}
	raw(eventKey(2), `{"v":3,"event":{"seq":"two"}}`)
	_, err = s.Events(ctx, 0, 0)
	if !errors.Is(err, ErrUnknownVersion) || !strings.Contains(err.Error(), "e/2") {
		t.Fatalf("Events with a v3 record = %v", err)
	}

	// A whole store laid out by a newer schema is refused at Open.
	raw(keySchema, "3")
	s.Close()
	if s2, err := Open(dir, nil); !errors.Is(err, ErrUnknownVersion) {
		if s2 != nil {
			s2.Close()
		}
		t.Fatalf("Open of a schema-3 store = %v, want ErrUnknownVersion", err)
	}
}

func TestBadgerLoggerLevels(t *testing.T) {
	var buf bytes.Buffer
	l := badgerLogger{l: slog.New(slog.NewTextHandler(&buf, nil))}
	l.Infof("chatter %d\n", 1)
	l.Debugf("chatter %d", 2)
	l.Warningf("disk %s\n", "slow")
	l.Errorf("broken %d", 3)
	out := buf.String()
	if strings.Contains(out, "chatter") {
		t.Errorf("info/debug reached the log: %s", out)
	}
	if !strings.Contains(out, `level=WARN msg="badger: disk slow"`) ||
		!strings.Contains(out, `level=ERROR msg="badger: broken 3"`) {
		t.Errorf("warnings/errors missing or malformed: %s", out)
	}
}

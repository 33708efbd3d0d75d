package core_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"orcr/adapters/shell"
	"orcr/core"
	"orcr/core/wire"
	"orcr/pty"
	"orcr/store"
)

// countingStore counts the events the engine reads back from the log.
type countingStore struct {
	*store.Store
	read atomic.Int64
}

func (s *countingStore) Events(ctx context.Context, after uint64, limit int) ([]wire.Event, error) {
	evs, err := s.Store.Events(ctx, after, limit)
	s.read.Add(int64(len(evs)))
	return evs, err
}

// A sweep with no event old enough to prune reads one event from the log, not a page
// of 500 (which an idle server decoded every 30 s).
func TestSweepReadsOneEventWhenNothingIsOld(t *testing.T) {
	home := t.TempDir()
	st, err := store.Open(home+"/store", nil)
	if err != nil {
		t.Fatal(err)
	}
	cs := &countingStore{Store: st}
	eng, err := core.NewEngine(core.Options{Store: cs, Host: pty.New(pty.Options{}), Providers: []core.Provider{shell.New()},
		Home: home, Socket: home + "/orcr.sock"})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := &rig{eng: eng, store: st, home: home}
	t.Cleanup(r.stop)
	ctx := context.Background()
	for _, p := range []string{"s/a", "s/b", "s/c"} {
		if _, err := eng.Run(ctx, wire.RunParams{Path: p, Argv: []string{"true"}}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the agents to end and their events to be logged", 30*time.Second, func() bool {
		for _, p := range []string{"s/a", "s/b", "s/c"} {
			if a, err := eng.Get(ctx, p); err != nil || !a.State.Terminal() {
				return false
			}
		}
		return st.LastSeq() >= 6
	})
	before := cs.read.Load()
	if _, err := eng.GC(ctx, wire.GCParams{}); err != nil {
		t.Fatal(err)
	}
	if n := cs.read.Load() - before; n > 1 {
		t.Fatalf("a sweep with nothing to prune read %d events from the log", n)
	}
}

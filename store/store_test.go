package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	badger "github.com/dgraph-io/badger/v4"

	"orcr/core/wire"
	"orcr/testutil/wait"
)

func openT(t testing.TB, dir string) *Store {
	t.Helper()
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// sampleAgent fills every kind of field so a lossy encoding would show.
func sampleAgent(i int) wire.Agent {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second)
	code := i % 3
	cost := 0.25 * float64(i)
	return wire.Agent{
		ID:          fmt.Sprintf("0193a000-0000-7000-8000-%012d", i),
		Path:        fmt.Sprintf("review/auth/a%d", i),
		ParentID:    "0193a000-0000-7000-8000-000000000000",
		ParentPath:  "review/auth",
		Provider:    "shell",
		Model:       "sonnet",
		Argv:        []string{"sh", "-c", fmt.Sprintf("echo %d; exec cat", i)},
		Cwd:         "/tmp/work",
		Env:         map[string]string{"K": fmt.Sprint(i)},
		Prompt:      "do the thing",
		Priority:    i % 5,
		State:       wire.StateExited,
		StateSource: "host",
		StateReason: "process ended",
		Blocked:     &wire.Blocked{Kind: "question", Detail: "why?", Options: []wire.Option{{Label: "a", Key: "1", Meaning: wire.MeaningAllowOnce}, {Label: "b", Key: "2", Meaning: wire.MeaningDeny}}},
		Host:        "pty",
		PaneID:      fmt.Sprintf("p%d", i),
		PID:         1000 + i,
		ExitCode:    &code,
		LastScreen:  strings.Repeat(fmt.Sprintf("line %d of the last screen\n", i), 40),
		Usage:       wire.Usage{InputTokens: int64(i) * 100, OutputTokens: 7, CostUSD: &cost, Priced: true},
		CreatedAt:   t0,
		StartedAt:   &t0,
		StateAt:     t0.Add(time.Minute),
		UpdatedAt:   t0.Add(time.Minute),
	}
}

func sampleEvent(i int, a *wire.Agent) wire.Event {
	return wire.Event{
		Event: wire.EventAgentState,
		At:    time.Date(2026, 11, 30, 12, 0, 0, i, time.UTC),
		Agent: a,
		From:  wire.StateWorking,
		To:    wire.StateDone,
		Rule:  "test",
		Data:  map[string]any{"i": float64(i), "who": "tester"},
	}
}

func TestReopenReturnsSameAgentsAndEvents(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	s := openT(t, dir)

	var agents []wire.Agent
	for i := range 50 {
		a := sampleAgent(i)
		agents = append(agents, a)
		if err := s.PutAgent(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	// A record larger than the value threshold lives in the value log, not the LSM.
	big := sampleAgent(50)
	big.LastScreen = strings.Repeat("x", 3*valueThreshold)
	agents = append(agents, big)
	if err := s.PutAgent(ctx, big); err != nil {
		t.Fatal(err)
	}
	var events []wire.Event
	for i := range 100 {
		var a *wire.Agent
		if i%2 == 0 {
			a = &agents[i%len(agents)]
		}
		e, err := s.AppendEvent(ctx, sampleEvent(i, a))
		if err != nil {
			t.Fatal(err)
		}
		if e.Seq != uint64(i+1) {
			t.Fatalf("event %d got seq %d", i, e.Seq)
		}
		events = append(events, e)
	}
	if err := s.Put(ctx, "sched", "nightly", []byte(`{"every":"24h"}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s2 := openT(t, dir)
	gotAgents, err := s2.ListAgents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotAgents, agents) {
		t.Fatalf("agents after reopen differ:\n got %d, first %+v\nwant %d, first %+v",
			len(gotAgents), gotAgents[0], len(agents), agents[0])
	}
	one, err := s2.GetAgent(ctx, big.ID)
	if err != nil || !reflect.DeepEqual(one, big) {
		t.Fatalf("GetAgent(big) after reopen: %v, equal=%v", err, reflect.DeepEqual(one, big))
	}
	gotEvents, err := s2.Events(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotEvents, events) {
		t.Fatalf("events after reopen differ: got %d want %d\n got[0] %+v\nwant[0] %+v",
			len(gotEvents), len(events), gotEvents[0], events[0])
	}
	if s2.LastSeq() != 100 {
		t.Fatalf("LastSeq after reopen = %d, want 100", s2.LastSeq())
	}
	v, err := s2.Get(ctx, "sched", "nightly")
	if err != nil || string(v) != `{"every":"24h"}` {
		t.Fatalf("Get after reopen = %q, %v", v, err)
	}
}

func TestSeqMonotonicAcrossReopenAndPrune(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	s := openT(t, dir)
	if s.LastSeq() != 0 {
		t.Fatalf("new store LastSeq = %d", s.LastSeq())
	}
	appendN := func(s *Store, n int) uint64 {
		t.Helper()
		var last uint64
		for i := range n {
			e, err := s.AppendEvent(ctx, sampleEvent(i, nil))
			if err != nil {
				t.Fatal(err)
			}
			if e.Seq <= last {
				t.Fatalf("seq went from %d to %d", last, e.Seq)
			}
			last = e.Seq
		}
		return last
	}
	if got := appendN(s, 5); got != 5 {
		t.Fatalf("last seq %d, want 5", got)
	}
	s.Close()

	s = openT(t, dir)
	if s.LastSeq() != 5 {
		t.Fatalf("LastSeq after reopen = %d, want 5", s.LastSeq())
	}
	if got := appendN(s, 1); got != 6 {
		t.Fatalf("first seq after reopen = %d, want 6", got)
	}
	// Prune part, then everything.
	if err := s.PruneEvents(ctx, 3); err != nil {
		t.Fatal(err)
	}
	evs, err := s.Events(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if seqs := seqsOf(evs); !slices.Equal(seqs, []uint64{4, 5, 6}) {
		t.Fatalf("after prune 3: seqs %v", seqs)
	}
	if err := s.PruneEvents(ctx, 1000); err != nil {
		t.Fatal(err)
	}
	if evs, _ := s.Events(ctx, 0, 0); len(evs) != 0 {
		t.Fatalf("after prune all: %d events left", len(evs))
	}
	if got := appendN(s, 1); got != 7 {
		t.Fatalf("seq after prune = %d, want 7", got)
	}
	if err := s.PruneEvents(ctx, 7); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s = openT(t, dir)
	if s.LastSeq() != 7 {
		t.Fatalf("LastSeq after prune-all and reopen = %d, want 7", s.LastSeq())
	}
	if got := appendN(s, 1); got != 8 {
		t.Fatalf("seq after prune-all and reopen = %d, want 8", got)
	}
	s.Close()

	// A store without m/seq (older layout or damage) still recovers from the last e/ key.
	s = openT(t, dir)
	if err := s.db.Update(func(txn *badger.Txn) error { return txn.Delete(keySeq) }); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openT(t, dir)
	if s.LastSeq() != 8 {
		t.Fatalf("LastSeq recovered from e/ keys = %d, want 8", s.LastSeq())
	}
}

func seqsOf(evs []wire.Event) []uint64 {
	var out []uint64
	for _, e := range evs {
		out = append(out, e.Seq)
	}
	return out
}

func TestConcurrentAppendUniqueContiguous(t *testing.T) {
	ctx := t.Context()
	s := openT(t, t.TempDir())
	const workers, each = 8, 200
	var mu sync.Mutex
	var got []uint64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				e := sampleEvent(i, nil)
				e.Data = map[string]any{"w": float64(w), "i": float64(i)}
				out, err := s.AppendEvent(ctx, e)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				got = append(got, out.Seq)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	slices.Sort(got)
	for i, seq := range got {
		if seq != uint64(i+1) {
			t.Fatalf("sorted seqs not 1..%d: position %d has %d", workers*each, i, seq)
		}
	}
	stored, err := s.Events(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != workers*each {
		t.Fatalf("stored %d events, want %d", len(stored), workers*each)
	}
	seen := map[[2]float64]bool{}
	for i, e := range stored {
		if e.Seq != uint64(i+1) {
			t.Fatalf("stored event %d has seq %d", i, e.Seq)
		}
		seen[[2]float64{e.Data["w"].(float64), e.Data["i"].(float64)}] = true
	}
	if len(seen) != workers*each {
		t.Fatalf("%d distinct payloads stored, want %d", len(seen), workers*each)
	}
	if s.LastSeq() != workers*each {
		t.Fatalf("LastSeq = %d", s.LastSeq())
	}
}

func TestEventsAfterAndLimit(t *testing.T) {
	ctx := t.Context()
	s := openT(t, t.TempDir())
	for i := range 20 {
		if _, err := s.AppendEvent(ctx, sampleEvent(i, nil)); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		after uint64
		limit int
		want  []uint64
	}{
		{0, 3, []uint64{1, 2, 3}},
		{17, 0, []uint64{18, 19, 20}},
		{17, 10, []uint64{18, 19, 20}},
		{5, 2, []uint64{6, 7}},
		{20, 0, nil},
		{1 << 40, 5, nil},
		{^uint64(0), 0, nil},
	}
	for _, c := range cases {
		evs, err := s.Events(ctx, c.after, c.limit)
		if err != nil {
			t.Fatal(err)
		}
		if got := seqsOf(evs); !slices.Equal(got, c.want) {
			t.Errorf("Events(%d, %d) = %v, want %v", c.after, c.limit, got, c.want)
		}
	}
	all, _ := s.Events(ctx, 0, -1)
	if len(all) != 20 {
		t.Errorf("Events(0, -1) returned %d, want all 20", len(all))
	}
}

func TestSecondOpenRefused(t *testing.T) {
	dir := t.TempDir()
	openT(t, dir)
	s2, err := Open(dir, nil)
	if err == nil {
		s2.Close()
		t.Fatal("a second Open of the same directory succeeded")
	}
}

func TestCloseIdempotentAndStopsGC(t *testing.T) {
	ctx := t.Context()
	s, err := open(t.TempDir(), nil, 2*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Give the GC something: large values, rewritten so old copies become garbage.
	for round := range 3 {
		for i := range 20 {
			v := bytes.Repeat([]byte{byte(round)}, 2*valueThreshold)
			if err := s.Put(ctx, "blob", fmt.Sprint(i), v); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !wait.Until(10*time.Second, func() bool { return s.gcRuns.Load() >= 3 }) {
		t.Fatalf("value-log GC loop ran %d times in 10s", s.gcRuns.Load())
	}
	v, err := s.Get(ctx, "blob", "7")
	if err != nil || len(v) != 2*valueThreshold || v[0] != 2 {
		t.Fatalf("value after GC ran: len %d, %v", len(v), err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return: GC loop not stopped")
	}
	runs := s.gcRuns.Load()
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.GetAgent(ctx, "x"); err == nil || errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("GetAgent after Close = %v, want a closed-store error", err)
	}
	if s.gcRuns.Load() != runs {
		t.Fatal("GC loop still running after Close")
	}
}

func TestCancelledContext(t *testing.T) {
	s := openT(t, t.TempDir())
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	checks := map[string]error{
		"PutAgent": s.PutAgent(ctx, sampleAgent(1)),
		"Put":      s.Put(ctx, "b", "k", nil),
		"Prune":    s.PruneEvents(ctx, 1),
	}
	_, checks["AppendEvent"] = s.AppendEvent(ctx, sampleEvent(1, nil))
	_, checks["ListAgents"] = s.ListAgents(ctx)
	_, checks["Events"] = s.Events(ctx, 0, 0)
	for name, err := range checks {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context = %v", name, err)
		}
	}
	if s.LastSeq() != 0 {
		t.Errorf("a cancelled append took seq %d", s.LastSeq())
	}
}

// TestListAgentsManyBatches crosses several decode batches: order must be id order and a
// bad record in a middle batch must fail the whole listing.
func TestListAgentsManyBatches(t *testing.T) {
	ctx := t.Context()
	s := openT(t, t.TempDir())
	const n = 5*listBatch + 7
	for i := n - 1; i >= 0; i-- { // written in reverse; listed in key order
		if err := s.PutAgent(ctx, sampleAgent(i)); err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.ListAgents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != n {
		t.Fatalf("listed %d, want %d", len(list), n)
	}
	for i, a := range list {
		if want := sampleAgent(i); !reflect.DeepEqual(a, want) {
			t.Fatalf("position %d holds %s, want %s", i, a.ID, want.ID)
		}
	}
	bad := sampleAgent(3*listBatch + 1).ID
	if err := s.db.Update(func(txn *badger.Txn) error {
		return txn.Set(agentKey(bad), []byte(`{"v":9,"agent":{}}`))
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ListAgents(ctx); !errors.Is(err, ErrUnknownVersion) || !strings.Contains(err.Error(), bad) {
		t.Fatalf("ListAgents with a bad record in a middle batch = %v", err)
	}
}

// TestManyEventsAcrossFlushes writes several memtables' worth of events so reads, prunes
// and seq recovery go through flushed tables and tombstones, not one memtable.
func TestManyEventsAcrossFlushes(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	s := openT(t, dir)
	a := sampleAgent(1)
	const n = 4000 // ~2.7 KiB each: several 2 MiB memtables
	for i := range n {
		if _, err := s.AppendEvent(ctx, sampleEvent(i, &a)); err != nil {
			t.Fatal(err)
		}
	}
	if tables := s.db.Tables(); len(tables) == 0 {
		t.Fatalf("no table was flushed after %d events; the test does not cover what it says", n)
	}
	if err := s.PruneEvents(ctx, n/2); err != nil {
		t.Fatal(err)
	}
	check := func(s *Store) {
		t.Helper()
		evs, err := s.Events(ctx, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != n/2 || evs[0].Seq != n/2+1 || evs[len(evs)-1].Seq != n {
			t.Fatalf("after prune: %d events, first %d", len(evs), evs[0].Seq)
		}
		page, err := s.Events(ctx, n-10, 5)
		if err != nil || !slices.Equal(seqsOf(page), []uint64{n - 9, n - 8, n - 7, n - 6, n - 5}) {
			t.Fatalf("page = %v, %v", seqsOf(page), err)
		}
	}
	check(s)
	s.Close()
	s = openT(t, dir)
	check(s)
	if s.LastSeq() != n {
		t.Fatalf("LastSeq = %d, want %d", s.LastSeq(), n)
	}
}

// PutAgentEvent stores the record and the event together, with seqs shared with
// AppendEvent, and both survive a reopen.
func TestPutAgentEventOneWrite(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendEvent(ctx, sampleEvent(0, nil)); err != nil {
		t.Fatal(err)
	}
	a := sampleAgent(3)
	a.State = wire.StateWorking
	ev, err := s.PutAgentEvent(ctx, a, wire.Event{Event: wire.EventAgentState, From: wire.StateStarting, To: wire.StateWorking, Agent: &a})
	if err != nil {
		t.Fatal(err)
	}
	if ev.Seq != 2 {
		t.Fatalf("seq %d, want 2 (after the plain append)", ev.Seq)
	}
	if _, err := s.PutAgentEvent(ctx, wire.Agent{}, wire.Event{Event: wire.EventAgentState}); wire.CodeOf(err) != wire.CodeInvalidParams {
		t.Fatalf("agent without id: %v", err)
	}
	if s.LastSeq() != 2 {
		t.Fatalf("a refused write moved the seq to %d", s.LastSeq())
	}
	s.Close()
	s = openT(t, dir)
	got, err := s.GetAgent(ctx, a.ID)
	if err != nil || got.State != wire.StateWorking {
		t.Fatalf("agent after reopen: %v %v", got.State, err)
	}
	evs, err := s.Events(ctx, 1, 0)
	if err != nil || len(evs) != 1 || evs[0].Seq != 2 || evs[0].To != wire.StateWorking {
		t.Fatalf("events after reopen: %+v %v", evs, err)
	}
}

// PutAgentEvents stores the record and several events in one transaction, with the next
// seqs in their order; a refused write takes no seq; all of it survives a reopen.
func TestPutAgentEventsOneWrite(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendEvent(ctx, sampleEvent(0, nil)); err != nil {
		t.Fatal(err)
	}
	a := sampleAgent(4)
	queued := a
	queued.State = wire.StateQueued
	a.State = wire.StateStarting
	evs, err := s.PutAgentEvents(ctx, a, []wire.Event{
		{Event: wire.EventAgentSpawned, To: wire.StateQueued, Agent: &queued},
		{Event: wire.EventAgentState, From: wire.StateQueued, To: wire.StateStarting, Agent: &a},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].Seq != 2 || evs[1].Seq != 3 {
		t.Fatalf("stored %+v, want seqs 2 and 3", evs)
	}
	if _, err := s.PutAgentEvents(ctx, a, nil); wire.CodeOf(err) != wire.CodeInvalidParams {
		t.Fatalf("no events: %v", err)
	}
	if s.LastSeq() != 3 {
		t.Fatalf("a refused write moved the seq to %d", s.LastSeq())
	}
	s.Close()
	s = openT(t, dir)
	got, err := s.GetAgent(ctx, a.ID)
	if err != nil || got.State != wire.StateStarting {
		t.Fatalf("agent after reopen: %v %v", got.State, err)
	}
	back, err := s.Events(ctx, 1, 0)
	if err != nil || len(back) != 2 || back[0].Event != wire.EventAgentSpawned || back[0].Agent.State != wire.StateQueued ||
		back[1].Seq != 3 || back[1].To != wire.StateStarting {
		t.Fatalf("events after reopen: %+v %v", back, err)
	}
	if s.LastSeq() != 3 {
		t.Fatalf("seq after reopen %d, want 3", s.LastSeq())
	}
}

package listen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"orcr/core/wire"
)

// memStore is an in-memory Store with core.Store's semantics (missing keys are
// wire.ErrNotFound, Scan in key order); beforePut lets a test crash the tick at a
// chosen write.
type memStore struct {
	mu        sync.Mutex
	data      map[string]map[string][]byte
	beforePut func(bucket, key string)
	// refuse, when set, is asked before each put: an error is the store refusing it
	// (as the real store answers store_unavailable on a full disk).
	refuse func(bucket, key string) error
}

func newMemStore() *memStore { return &memStore{data: map[string]map[string][]byte{}} }

func (m *memStore) Put(_ context.Context, bucket, key string, value []byte) error {
	if m.beforePut != nil {
		m.beforePut(bucket, key)
	}
	if m.refuse != nil {
		if err := m.refuse(bucket, key); err != nil {
			return err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.data[bucket] == nil {
		m.data[bucket] = map[string][]byte{}
	}
	m.data[bucket][key] = slices.Clone(value)
	return nil
}

func (m *memStore) Get(_ context.Context, bucket, key string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.data[bucket][key]
	if !ok {
		return nil, wire.ErrNotFound
	}
	return slices.Clone(v), nil
}

func (m *memStore) Delete(_ context.Context, bucket, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.data[bucket], key)
	return nil
}

func (m *memStore) Scan(ctx context.Context, bucket string, fn func(string, []byte) bool) error {
	return m.ScanFrom(ctx, bucket, "", fn)
}

func (m *memStore) ScanFrom(_ context.Context, bucket, from string, fn func(string, []byte) bool) error {
	// A snapshot, as core.Store's Scan sees one: fn may write to the store.
	m.mu.Lock()
	keys := make([]string, 0, len(m.data[bucket]))
	vals := make(map[string][]byte, len(m.data[bucket]))
	for k, v := range m.data[bucket] {
		if k >= from {
			keys = append(keys, k)
			vals[k] = v
		}
	}
	m.mu.Unlock()
	sort.Strings(keys)
	for _, k := range keys {
		if !fn(k, vals[k]) {
			break
		}
	}
	return nil
}

// sinceSource imitates a GitHub since-listing: events updated at or after the cursor
// (inclusive, as GitHub's since is), oldest first, and only those that exist by now.
type sinceSource struct {
	events []Event // sorted by At
	now    func() time.Time
	polls  []time.Time
	fail   error
}

func (s *sinceSource) Poll(_ context.Context, c Cursor) (Poll, error) {
	now := s.now()
	s.polls = append(s.polls, now)
	if s.fail != nil {
		return Poll{}, s.fail
	}
	var since time.Time
	if c[""] != "" {
		since, _ = time.Parse(time.RFC3339Nano, c[""])
	}
	next := Cursor{"": c[""]}
	var out []Event
	for _, e := range s.events {
		if e.At.Before(since) || e.At.After(now) {
			continue
		}
		out = append(out, e)
		next[""] = e.At.Format(time.RFC3339Nano)
	}
	return Poll{Events: out, Cursor: next}, nil
}

// agents is the fake dispatcher: it "spawns" by recording the target, and can crash
// (panic) right after or right before a chosen event's spawn.
type agents struct {
	now         func() time.Time
	spawned     map[string][]time.Time // event id → spawn times
	order       []string
	crashAfter  string
	crashBefore string
	failing     error
}

func newAgents(now func() time.Time) *agents {
	return &agents{now: now, spawned: map[string][]time.Time{}}
}

type crash struct{}

func (a *agents) Dispatch(_ context.Context, _ Listener, e Event, target string) error {
	if a.failing != nil {
		return a.failing
	}
	if e.ID == a.crashBefore {
		a.crashBefore = ""
		panic(crash{})
	}
	a.spawned[e.ID] = append(a.spawned[e.ID], a.now())
	a.order = append(a.order, e.ID)
	if e.ID == a.crashAfter {
		a.crashAfter = ""
		panic(crash{})
	}
	return nil
}

func (a *agents) Done(_ context.Context, d Dispatch) (bool, error) {
	return len(a.spawned[d.Event.ID]) > 0, nil
}

// tickSurvivingCrash runs one tick; a crash{} panic is the process dying mid-tick.
func tickSurvivingCrash(t *testing.T, tk *Ticker) (res TickResult, crashed bool) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(crash); !ok {
				panic(r)
			}
			crashed = true
		}
	}()
	res, err := tk.Tick(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res, false
}

// TestSimulatedDays runs a listener minute by minute over days of a fake clock: 100
// events arrive at random times on day one, the limits allow 5 an hour and 30 a day.
// Every event must be dispatched exactly once, never before it arrived, never over a
// window; held events are never marked processed; the cursor never passes a held
// event; and no poll happens at a ceiling.
func TestSimulatedDays(t *testing.T) {
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	now := start
	clock := func() time.Time { return now }
	rng := rand.New(rand.NewPCG(1, 2))
	var evs []Event
	for i := range 100 {
		at := start.Add(time.Duration(rng.Int64N(int64(24 * time.Hour)))).Truncate(time.Second)
		evs = append(evs, Event{ID: fmt.Sprint("e", i), At: at, Vars: map[string]string{"n": fmt.Sprint(i)}})
	}
	slices.SortFunc(evs, func(a, b Event) int { return a.At.Compare(b.At) })
	arrival := map[string]time.Time{}
	for _, e := range evs {
		arrival[e.ID] = e.At
	}
	limits := []RateLimit{{Max: 5, Per: time.Hour, Text: "1h"}, {Max: 30, Per: 24 * time.Hour, Text: "day"}}
	l := mustParse(t, "sim", `interval = "2m"
[source]
type = "shell"
command = "unused"
[action]
path = "sim/{{id}}"
role = "r"
prompt = "{{n}}"
[[rate_limits]]
max = 5
per = "1h"
[[rate_limits]]
max = 30
per = "day"
`)
	store := newMemStore()
	rec := NewRecords(store)
	src := &sinceSource{events: evs, now: clock}
	ag := newAgents(clock)
	tk := &Ticker{Listener: l, Records: rec, Source: src, Dispatcher: ag, Now: clock}
	ctx := context.Background()

	var dispatchTimes []time.Time
	for now.Before(start.Add(6 * 24 * time.Hour)) {
		before := len(ag.order)
		pollsBefore := len(src.polls)
		if _, err := tk.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		if len(src.polls) > pollsBefore {
			// A poll only when a dispatch could fit.
			check := NewLimiter(limits, dispatchTimes)
			if !check.Allow(now) {
				t.Fatalf("%s: polled at a ceiling", now)
			}
		}
		for _, id := range ag.order[before:] {
			dispatchTimes = append(dispatchTimes, now)
			if now.Before(arrival[id]) {
				t.Fatalf("%s dispatched at %s before it arrived at %s", id, now, arrival[id])
			}
		}
		st, err := rec.State(ctx, "sim")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range st.Held {
			if done, _ := rec.IsProcessed(ctx, "sim", e.ID); done {
				t.Fatalf("%s: held event %s is marked processed", now, e.ID)
			}
			if c := st.Cursor[""]; c != "" {
				cur, _ := time.Parse(time.RFC3339Nano, c)
				if cur.After(e.At) {
					t.Fatalf("%s: cursor %s passed held event %s at %s", now, c, e.ID, e.At)
				}
			}
		}
		if len(ag.order) == len(evs) && len(st.Held) == 0 {
			break
		}
		now = now.Add(time.Minute)
	}

	if len(ag.order) != len(evs) {
		t.Fatalf("dispatched %d of %d by %s", len(ag.order), len(evs), now)
	}
	for _, e := range evs {
		if n := len(ag.spawned[e.ID]); n != 1 {
			t.Fatalf("%s dispatched %d times", e.ID, n)
		}
	}
	// Oldest first.
	for i, id := range ag.order {
		if id != evs[i].ID {
			t.Fatalf("dispatch %d was %s, want %s (arrival order)", i, id, evs[i].ID)
		}
	}
	for i, d := range dispatchTimes {
		for _, lim := range limits {
			n := 0
			for _, e := range dispatchTimes[:i+1] {
				if d.Sub(e) < lim.Per {
					n++
				}
			}
			if n > lim.Max {
				t.Fatalf("at %s: %d dispatches within %s (max %d)", d, n, lim.Text, lim.Max)
			}
		}
	}
	// The pace is the limit's, not slower: 30 a day means the last of 100 goes on day 4.
	if last := dispatchTimes[len(dispatchTimes)-1]; last.After(start.Add(4 * 24 * time.Hour)) {
		t.Fatalf("last dispatch at %s: slower than the limits require", last)
	}
	st, _ := rec.State(ctx, "sim")
	if st.Fires != 100 || len(st.Held) != 0 {
		t.Fatalf("state fires %d held %d", st.Fires, len(st.Held))
	}
	t.Logf("100 events, %d polls, last dispatch %s", len(src.polls), dispatchTimes[len(dispatchTimes)-1].Sub(start))
}

func mustParse(t testing.TB, name, doc string) Listener {
	t.Helper()
	l, err := Parse(name, []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

const crashDoc = `interval = "1m"
[source]
type = "shell"
command = "unused"
[action]
path = "c/{{id}}"
role = "r"
prompt = "{{id}}"
[[rate_limits]]
max = 100
per = "1h"
`

// TestRestartMidTick crashes the tick at each point between a dispatch's intent and its
// processed mark; after a restart (a new Ticker over the same store) every event is
// dispatched exactly once and counted once against the rate limit.
func TestRestartMidTick(t *testing.T) {
	points := []string{"before the spawn", "after the spawn", "after the state write"}
	for _, point := range points {
		t.Run(point, func(t *testing.T) {
			now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
			clock := func() time.Time { return now }
			var evs []Event
			for i := range 5 {
				evs = append(evs, Event{ID: fmt.Sprint("e", i), At: now.Add(-time.Duration(5-i) * time.Minute)})
			}
			store := newMemStore()
			ag := newAgents(clock)
			switch point {
			case "before the spawn":
				ag.crashBefore = "e2"
			case "after the spawn":
				ag.crashAfter = "e2"
			case "after the state write":
				store.beforePut = func(bucket, key string) {
					if bucket == BucketProcessed && key == "c/e2" {
						store.beforePut = nil
						panic(crash{})
					}
				}
			}
			l := mustParse(t, "c", crashDoc)
			src := &sinceSource{events: evs, now: clock}
			tk := &Ticker{Listener: l, Records: NewRecords(store), Source: src, Dispatcher: ag, Now: clock}
			if _, crashed := tickSurvivingCrash(t, tk); !crashed {
				t.Fatal("no crash")
			}
			now = now.Add(time.Minute)
			// The restart: a fresh Ticker; the agents (panes) outlived the server.
			tk = &Ticker{Listener: l, Records: NewRecords(store), Source: src, Dispatcher: ag, Now: clock}
			res, crashed := tickSurvivingCrash(t, tk)
			if crashed || res.Err != nil {
				t.Fatalf("after restart: %+v", res)
			}
			for _, e := range evs {
				if n := len(ag.spawned[e.ID]); n != 1 {
					t.Fatalf("%s spawned %d times (order %v)", e.ID, n, ag.order)
				}
			}
			st, _ := NewRecords(store).State(context.Background(), "c")
			pending, _ := NewRecords(store).PendingDispatches(context.Background(), "c")
			if st.Fires != 5 || len(st.Dispatches) != 5 || len(st.Held) != 0 || len(pending) != 0 {
				t.Fatalf("fires %d, dispatch times %d, held %d, pending %d", st.Fires, len(st.Dispatches), len(st.Held), len(pending))
			}
		})
	}
}

func TestPollFailuresBackOffAndDispatchFailuresHold(t *testing.T) {
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	l := mustParse(t, "f", crashDoc)
	src := &sinceSource{events: []Event{{ID: "a", At: now}, {ID: "b", At: now}}, now: clock, fail: errors.New("github: list issues o/r: server error (502)")}
	ag := newAgents(clock)
	rec := NewRecords(newMemStore())
	tk := &Ticker{Listener: l, Records: rec, Source: src, Dispatcher: ag, Now: clock}
	ctx := context.Background()
	for i, wait := range []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute} {
		res, err := tk.Tick(ctx)
		if err != nil || res.Err == nil || !res.NextPoll.Equal(now.Add(wait)) {
			t.Fatalf("failure %d: %+v %v", i+1, res, err)
		}
		if res, _ := tk.Tick(ctx); res.Skipped != "not due" {
			t.Fatalf("polled before the back-off ended: %+v", res)
		}
		now = res.NextPoll
	}
	st, _ := rec.State(ctx, "f")
	if st.Failures != 3 || st.LastError == "" {
		t.Fatalf("state %+v", st)
	}

	// The source recovers, the action fails: both events held, the cursor stays, and
	// the next attempt backs off further (the failures go on counting: 8m, then 16m,
	// capped at 30m).
	src.fail, ag.failing = nil, errors.New("spawn refused")
	for i, wait := range []time.Duration{8 * time.Minute, 16 * time.Minute, 30 * time.Minute, 30 * time.Minute} {
		res, _ := tk.Tick(ctx)
		st, _ = rec.State(ctx, "f")
		if res.Dispatched != 0 || res.Held != 2 || st.Failures != 4+i || st.Cursor[""] != "" ||
			!strings.Contains(st.LastError, "spawn refused") || !res.NextPoll.Equal(now.Add(wait)) || !st.NextPoll.Equal(res.NextPoll) {
			t.Fatalf("dispatch failure %d: %+v / %+v", i+1, res, st)
		}
		if res, _ := tk.Tick(ctx); res.Skipped != "not due" || res.Held != 2 {
			t.Fatalf("tried again before the back-off ended: %+v", res)
		}
		now = res.NextPoll
	}
	if n := len(ag.order); n != 0 {
		t.Fatalf("%d dispatched while the action failed", n)
	}
	ag.failing = nil
	res, _ := tk.Tick(ctx)
	st, _ = rec.State(ctx, "f")
	if res.Dispatched != 2 || res.Held != 0 || st.Cursor[""] == "" || st.LastError != "" || st.Failures != 0 ||
		len(ag.order) != 2 || !res.NextPoll.Equal(now.Add(time.Minute)) {
		t.Fatalf("recovered: %+v / %+v", res, st)
	}

	st.Disabled = true
	_ = rec.PutState(ctx, "f", st)
	now = now.Add(time.Hour)
	if res, _ := tk.Tick(ctx); res.Skipped != "disabled" {
		t.Fatalf("disabled: %+v", res)
	}
}

func TestShellSourceThroughTick(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	l := mustParse(t, "sh", `interval = "1m"
[source]
type = "shell"
command = "cat work.txt"
[action]
path = "work/{{ticket}}"
role = "r"
prompt = "{{title}}"
`)
	write := func(s string) {
		if err := os.WriteFile(dir+"/work.txt", []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"id":"T1","ticket":"T1","title":"one"}` + "\n" + `{"id":"T2","ticket":"T2","title":"two"}` + "\n" + `{"id":"T3","title":"no ticket var"}` + "\nnot json {\n")
	ag := newAgents(clock)
	rec := NewRecords(newMemStore())
	tk := &Ticker{Listener: l, Records: rec, Source: ShellSource{Command: l.Source.Command, Dir: dir, Timeout: 5 * time.Second}, Dispatcher: ag, Now: clock}
	ctx := context.Background()
	res, err := tk.Tick(ctx)
	if err != nil || res.Dispatched != 2 || res.Held != 0 {
		t.Fatalf("first tick: %+v %v", res, err)
	}
	// T3 cannot render its path: set aside with the reason, not retried forever.
	st, _ := rec.State(ctx, "sh")
	if done, _ := rec.IsProcessed(ctx, "sh", "T3"); !done || st.LastError == "" {
		t.Fatalf("T3: processed %v, last error %q", done, st.LastError)
	}
	now = now.Add(time.Minute)
	write(`{"id":"T1","ticket":"T1","title":"one"}` + "\n" + `{"id":"T4","ticket":"T4","title":"four"}` + "\n")
	res, _ = tk.Tick(ctx)
	if res.Dispatched != 1 || slices.Compare(ag.order, []string{"T1", "T2", "T4"}) != 0 {
		t.Fatalf("second tick: %+v, order %v", res, ag.order)
	}
	now = now.Add(time.Minute)
	tk.Source = ShellSource{Command: "exit 4", Dir: dir}
	if res, _ = tk.Tick(ctx); res.Err == nil || res.Dispatched != 0 {
		t.Fatalf("failing command: %+v", res)
	}
}

package listen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"orcr/core"
	listenapi "orcr/listen/api"
	"orcr/store"
	"orcr/testutil/wait"
)

// "Nothing dropped": the listener cases with counts, over the real store (badger),
// reopened across restarts, real shell sources, and the kernel's path rule.

// logBuf is a log file the test can read while the service writes it.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// storeRig is the listener service over a badger store that a restart closes and
// reopens; the agents (fakeAgents: the kernel's records, with its path rule) outlive
// the server, as panes do.
type storeRig struct {
	t        *testing.T
	dir      string // listener files
	storeDir string
	k        *fakeKernel
	ag       *fakeAgents
	log      *logBuf
	st       *store.Store
	svc      *Service
}

func newStoreRig(t *testing.T) *storeRig {
	r := &storeRig{t: t, dir: t.TempDir(), storeDir: t.TempDir(), k: &fakeKernel{}, ag: &fakeAgents{}, log: &logBuf{}}
	r.start()
	return r
}

func (r *storeRig) start() {
	st, err := store.Open(r.storeDir, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { st.Close() })
	svc, err := NewService(ServiceOptions{Dir: r.dir, Rescan: 20 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(r.log, nil))})
	if err != nil {
		r.t.Fatal(err)
	}
	if err := svc.Start(context.Background(), testKernel{k: r.k, ag: r.ag, st: core.FeatureBuckets(st, Name)}); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { svc.Close() }) // runs before the store's close
	r.st, r.svc = st, svc
}

// restart stops the service and closes the store, then opens both again.
func (r *storeRig) restart() {
	r.svc.Close()
	if err := r.st.Close(); err != nil {
		r.t.Fatal(err)
	}
	r.start()
}

func (r *storeRig) write(name, doc string) {
	r.t.Helper()
	tmp := filepath.Join(r.dir, "."+name)
	if err := os.WriteFile(tmp, []byte(doc), 0o600); err != nil {
		r.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(r.dir, name+".toml")); err != nil {
		r.t.Fatal(err)
	}
}

func (r *storeRig) waitListener(name, what string, within time.Duration, cond func(listenapi.Listener) bool) listenapi.Listener {
	r.t.Helper()
	var l listenapi.Listener
	wait.For(r.t, within, what, func() bool {
		var err error
		l, err = r.svc.ListenerGet(context.Background(), name)
		return err == nil && cond(l)
	})
	return l
}

// spawnCounts counts the agents spawned at each path.
func (r *storeRig) spawnCounts() map[string]int {
	out := map[string]int{}
	for _, p := range r.ag.paths() {
		out[p]++
	}
	return out
}

func agentDoc(cmd, path, prompt, extra string) string {
	return fmt.Sprintf("interval = \"1s\"\n[source]\ntype = \"shell\"\ncommand = %q\ntimeout = \"30s\"\n[action]\npath = %q\nprompt = %q\nprovider = \"shell\"\ncommand = \"true\"\n%s",
		cmd, path, prompt, extra)
}

// A source that hands out 1,500 items once (a queue it empties), under a rate limit:
// every item is held until its turn and dispatched once. The held events were capped at
// 1,000 and the other 500 silently dropped.
func TestOneShotSourceRateLimitedDropsNothing(t *testing.T) {
	r := newStoreRig(t)
	queue := filepath.Join(t.TempDir(), "queue.txt")
	var b strings.Builder
	for i := 1; i <= 1500; i++ {
		fmt.Fprintf(&b, "job%d\n", i)
	}
	if err := os.WriteFile(queue, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := fmt.Sprintf("if [ -f %[1]s ]; then cat %[1]s; rm %[1]s; fi", queue)
	r.write("jobs", agentDoc(cmd, "jobs/{{id}}", "run {{id}}", "[[rate_limits]]\nmax = 500\nper = \"1s\"\n"))
	// Held drains to 0 either when all 1,500 went or when the 500 over a cap were lost.
	// (Generous: under -race on a loaded machine 1,500 dispatches through badger take a
	// while; the test takes seconds otherwise.)
	l := r.waitListener("jobs", "the queue drains", 3*time.Minute, func(l listenapi.Listener) bool {
		return l.Fires >= 1000 && l.Held == 0
	})
	counts := r.spawnCounts()
	var missing []string
	for i := 1; i <= 1500; i++ {
		p := fmt.Sprintf("jobs/job%d", i)
		if counts[p] != 1 {
			missing = append(missing, fmt.Sprintf("%s×%d", p, counts[p]))
		}
	}
	if len(missing) > 0 || len(counts) != 1500 || l.Fires != 1500 || l.Failures != 0 {
		t.Fatalf("dispatched %d paths (fires %d, failures %d, last error %q); wrong: %d, e.g. %v",
			len(counts), l.Fires, l.Failures, l.LastError, len(missing), missing[:min(5, len(missing))])
	}
	if strings.Contains(r.log.String(), "level=ERROR") {
		t.Fatalf("errors logged:\n%s", r.log.String())
	}
}

// A shell source printing 10,500 stable lines: each dispatched once, and once only
// across a restart. The hourly prune (run at the start) kept 10,000 ids per listener,
// and the 500 it forgot, still printed, ran twice.
func TestStableListingFiresOnceAcrossRestart(t *testing.T) {
	r := newStoreRig(t)
	const n = 10_500
	r.write("stable", agentDoc(fmt.Sprintf("seq 1 %d", n), "w/{{id}}", "do {{id}}", ""))
	r.waitListener("stable", "every line dispatched", 5*time.Minute, func(l listenapi.Listener) bool {
		return l.Fires == n && l.Held == 0
	})
	r.restart()
	since := time.Now()
	// Two polls after the restart: the first prunes (a new ticker prunes at once), the
	// second would dispatch what the prune forgot.
	l := r.waitListener("stable", "a poll after the restart", time.Minute, func(l listenapi.Listener) bool {
		return l.LastPoll != nil && l.LastPoll.After(since)
	})
	first := *l.LastPoll
	l = r.waitListener("stable", "a second poll after the restart", time.Minute, func(l listenapi.Listener) bool {
		return l.LastPoll != nil && l.LastPoll.After(first)
	})
	counts := r.spawnCounts()
	twice := 0
	for _, c := range counts {
		if c > 1 {
			twice++
		}
	}
	if len(counts) != n || twice != 0 || l.Fires != n {
		t.Fatalf("%d paths, %d of them spawned more than once, fires %d (want %d once each)\nlog:\n%s",
			len(counts), twice, l.Fires, n, grepLines(r.log.String(), "prune"))
	}
}

func grepLines(s, word string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, word) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// Pruning still bounds the ids: one the source stopped showing goes once it is past
// the age bound; the ones it shows stay however old they are.
func TestPruneForgetsOnlyWhatTheSourceNoLongerShows(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	l := mustParse(t, "p", agentDoc("cat list.txt", "p/{{id}}", "{{id}}", ""))
	list := func(ids string) {
		if err := os.WriteFile(filepath.Join(dir, "list.txt"), []byte(strings.ReplaceAll(ids, " ", "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ag := newAgents(clock)
	rec := NewRecords(st)
	ticker := func() *Ticker { // a new one is a restart
		return &Ticker{Listener: l, Records: rec, Source: ShellSource{Command: l.Source.Command, Dir: dir}, Dispatcher: ag, Now: clock}
	}
	list("a b c")
	if res, err := ticker().Tick(ctx); err != nil || res.Dispatched != 3 || res.Pruned != 0 {
		t.Fatalf("first tick: %+v %v", res, err)
	}
	now = now.Add(31 * 24 * time.Hour)
	list("b c")
	res, err := ticker().Tick(ctx)
	if err != nil || res.Dispatched != 0 || res.Pruned != 1 {
		t.Fatalf("31 days on: %+v %v", res, err)
	}
	for id, want := range map[string]bool{"a": false, "b": true, "c": true} {
		if done, _ := rec.IsProcessed(ctx, "p", id); done != want {
			t.Fatalf("%s processed %v, want %v", id, done, want)
		}
	}
	// Garbage in the output is not a full listing: nothing is pruned by it.
	now = now.Add(31 * 24 * time.Hour)
	list("c {not-json")
	if res, err := ticker().Tick(ctx); err != nil || res.Pruned != 0 {
		t.Fatalf("a listing with garbage pruned: %+v %v", res, err)
	}
	if done, _ := rec.IsProcessed(ctx, "p", "b"); !done {
		t.Fatal("b was pruned by a listing with garbage")
	}
}

// Poison events: a title that renders 17 levels deep or a 5,000-character segment is
// made a valid path (folded, truncated); an event that can never dispatch (its prompt
// names a var it lacks) is failed alone, with the reason, and the events behind it go
// on. Both used to be held and retried with back-off forever, blocking the rest.
func TestPoisonEventFailsAloneAndTheRestGoOn(t *testing.T) {
	r := newStoreRig(t)
	src := filepath.Join(t.TempDir(), "events.jsonl")
	deep := strings.TrimSuffix(strings.Repeat("level/", 17), "/")
	long := strings.Repeat("Long Title ", 455) // 5,005 characters
	lines := []string{
		fmt.Sprintf(`{"id":"deep","title":%q,"task":"t1"}`, deep),
		fmt.Sprintf(`{"id":"long","title":%q,"task":"t2"}`, long),
		`{"id":"poison","title":"no task"}`,
		`{"id":"fine","title":"Fine one","task":"t4"}`,
	}
	if err := os.WriteFile(src, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.write("p", agentDoc("cat "+src, "ev/{{id}}/{{title}}", "do {{task}}", ""))
	l := r.waitListener("p", "three dispatched, one failed", 30*time.Second, func(l listenapi.Listener) bool {
		return l.Fires == 3 && l.Failed == 1
	})
	if l.Held != 0 || l.Failures != 0 || !strings.HasPrefix(l.LastFailed, `poison: `) ||
		!strings.Contains(l.LastFailed, `the event has no "task"`) || l.FailedAt == nil {
		t.Fatalf("listener: held %d failures %d failed %q", l.Held, l.Failures, l.LastFailed)
	}
	got := r.spawnCounts()
	folded := "ev/deep/" + strings.TrimSuffix(strings.Repeat("level/", 13), "/") + "/level-level-level-level"
	want := []string{folded, "ev/fine/fine-one"}
	for _, p := range want {
		if got[p] != 1 {
			t.Fatalf("no agent at %s: %v", p, got)
		}
	}
	var longPath string
	for p := range got {
		if strings.HasPrefix(p, "ev/long/") {
			longPath = p
		}
	}
	seg := strings.TrimPrefix(longPath, "ev/long/")
	if len(seg) > 64 || len(seg) < 60 || !strings.HasPrefix(seg, "long-title-long-title-") || len(got) != 3 {
		t.Fatalf("the long title's path %q (%d), agents %v", longPath, len(seg), got)
	}
	// Not retried: polls go on, the poison stays failed once.
	polled := *l.LastPoll
	l = r.waitListener("p", "another poll", 30*time.Second, func(l listenapi.Listener) bool {
		return l.LastPoll.After(polled)
	})
	if l.Fires != 3 || l.Failed != 1 || len(r.ag.paths()) != 3 {
		t.Fatalf("after another poll: fires %d failed %d agents %d", l.Fires, l.Failed, len(r.ag.paths()))
	}
	if !strings.Contains(r.log.String(), "listener event failed; not retried") {
		t.Fatalf("the failure is not logged:\n%s", r.log.String())
	}
}

// The one bound on held events is the store's room, and it is loud: a store that refuses
// to hold more fails the listener with the count held (state, error, log), and once it
// has room again the rest are held and go out.
func TestHeldBoundIsLoud(t *testing.T) {
	dir := t.TempDir()
	ms := newMemStore()
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	l := mustParse(t, "q", agentDoc("seq 1 300", "q/{{id}}", "{{id}}", "[[rate_limits]]\nmax = 100\nper = \"1h\"\n"))
	full := errors.New("store unavailable: the disk is full")
	holds := 0
	ms.refuse = func(bucket, _ string) error {
		if bucket == BucketHeld {
			if holds >= 250 {
				return full
			}
			holds++
		}
		return nil
	}
	var log logBuf
	ag := newAgents(clock)
	rec := NewRecords(ms)
	tk := &Ticker{Listener: l, Records: rec, Source: ShellSource{Command: l.Source.Command, Dir: dir}, Dispatcher: ag, Now: clock,
		Logger: slog.New(slog.NewTextHandler(&log, nil))}
	res, err := tk.Tick(ctx)
	if err != nil || !errors.Is(res.Err, full) || res.Dispatched != 100 || res.Held != 150 {
		t.Fatalf("refused: %+v %v", res, err)
	}
	st, _ := rec.State(ctx, "q")
	if st.Failures != 1 || !strings.Contains(st.LastError, "250 events held; the store refused to hold 251 and the 49 after it") {
		t.Fatalf("state: failures %d, %q", st.Failures, st.LastError)
	}
	if !strings.Contains(log.String(), "listener cannot hold more events") || !strings.Contains(log.String(), "held=150") {
		t.Fatalf("log:\n%s", log.String())
	}
	ms.refuse = nil
	for i := 0; st.Fires < 300 && i < 10; i++ {
		now = now.Add(time.Hour)
		if _, err := tk.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		st, _ = rec.State(ctx, "q")
	}
	for i := 1; i <= 300; i++ {
		if n := len(ag.spawned[fmt.Sprint(i)]); n != 1 {
			t.Fatalf("%d spawned %d times", i, n)
		}
	}
	if st.Failures != 0 || st.HeldCount != 0 || st.LastError != "" {
		t.Fatalf("recovered: %+v", st)
	}
}

// Held events an older version kept in the state itself are moved into their records
// at the next tick and go out in order, once each.
func TestLegacyHeldEventsMoveToTheirRecords(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	l := mustParse(t, "old", agentDoc("printf 'c\\nd\\n'", "old/{{id}}", "{{id}}", ""))
	rec := NewRecords(newMemStore())
	legacy := State{Held: []Event{withCommonVars(l, Event{ID: "a", Vars: map[string]string{"line": "a"}}),
		withCommonVars(l, Event{ID: "b", Vars: map[string]string{"line": "b"}})}}
	if err := rec.PutState(ctx, "old", legacy); err != nil {
		t.Fatal(err)
	}
	ag := newAgents(clock)
	tk := &Ticker{Listener: l, Records: rec, Source: ShellSource{Command: l.Source.Command}, Dispatcher: ag, Now: clock}
	res, err := tk.Tick(ctx)
	if err != nil || res.Dispatched != 4 || res.Held != 0 || strings.Join(ag.order, " ") != "a b c d" {
		t.Fatalf("tick: %+v %v, order %v", res, err, ag.order)
	}
	st, _ := rec.State(ctx, "old")
	if len(st.Held) != 0 || st.HeldCount != 0 || st.Fires != 4 {
		t.Fatalf("state %+v", st)
	}
}

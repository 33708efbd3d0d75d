package listen

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"orcr/core"
	"orcr/core/wire"
	listenapi "orcr/listen/api"
	"orcr/testutil/wait"
)

// fakeKernel records published events.
type fakeKernel struct {
	mu  sync.Mutex
	evs []wire.Event
}

func (k *fakeKernel) Publish(_ context.Context, ev wire.Event) (wire.Event, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.evs = append(k.evs, ev)
	return ev, nil
}

func (k *fakeKernel) count(kind, name string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := 0
	for _, e := range k.evs {
		if e.Event == kind && e.Data["name"] == name {
			n++
		}
	}
	return n
}

// testKernel is the kernel a listener service gets in these tests: the fakes above
// and below for what it uses (events, agents, plans), and its buckets. The other
// methods of core.Kernel are nil: the service must not call them.
type testKernel struct {
	core.Kernel
	k     *fakeKernel
	ag    *fakeAgents
	plans Plans // nil: no plans feature
	st    Store
}

func (t testKernel) Publish(ctx context.Context, ev wire.Event) (wire.Event, error) {
	return t.k.Publish(ctx, ev)
}

func (t testKernel) Run(ctx context.Context, p wire.RunParams) (wire.Agent, error) {
	return t.ag.Run(ctx, p)
}

func (t testKernel) List(ctx context.Context, p wire.ListParams) ([]wire.Agent, error) {
	return t.ag.List(ctx, p)
}

func (t testKernel) Buckets() core.Buckets { return t.st }

func (t testKernel) Lookup(name string) (any, bool) {
	if name != PlansCapability || t.plans == nil {
		return nil, false
	}
	return t.plans, true
}

// fakeAgents keeps the agents Run was asked for, as the kernel would.
type fakeAgents struct {
	mu     sync.Mutex
	as     []wire.Agent
	params []wire.RunParams
	err    error
}

func (f *fakeAgents) Run(_ context.Context, p wire.RunParams) (wire.Agent, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return wire.Agent{}, f.err
	}
	// The kernel's own path rule, so a path it would refuse is refused here too.
	if err := core.ValidatePath(p.Path); err != nil {
		return wire.Agent{}, err
	}
	a := wire.Agent{ID: fmt.Sprint(len(f.as) + 1), Path: p.Path, Provider: p.Provider, Prompt: p.Prompt, Argv: p.Argv, Env: p.Env, Role: p.Role}
	f.as = append(f.as, a)
	f.params = append(f.params, p)
	return a, nil
}

func (f *fakeAgents) List(_ context.Context, p wire.ListParams) ([]wire.Agent, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []wire.Agent
	for _, a := range f.as {
		if a.Path == p.Glob {
			out = append(out, a)
		}
	}
	return out, nil
}

func (f *fakeAgents) paths() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, a := range f.as {
		out = append(out, a.Path)
	}
	return out
}

type svcRig struct {
	t     *testing.T
	dir   string
	k     *fakeKernel
	ag    *fakeAgents
	plans *fakePlans
	st    *memStore
	svc   *Service
}

func newSvcRig(t *testing.T) *svcRig {
	r := &svcRig{t: t, dir: t.TempDir(), k: &fakeKernel{}, ag: &fakeAgents{}, plans: newFakePlans(), st: newMemStore()}
	r.start()
	return r
}

func (r *svcRig) start() { r.startWith(20 * time.Millisecond) }

// startWith starts the service with its timed rescan every rescan.
func (r *svcRig) startWith(rescan time.Duration) {
	svc, err := NewService(ServiceOptions{Dir: r.dir, Rescan: rescan})
	if err != nil {
		r.t.Fatal(err)
	}
	if err := svc.Start(context.Background(), testKernel{k: r.k, ag: r.ag, plans: r.plans, st: r.st}); err != nil {
		r.t.Fatal(err)
	}
	r.svc = svc
	r.t.Cleanup(func() { svc.Close() })
}

func (r *svcRig) write(name, doc string) {
	r.t.Helper()
	tmp := filepath.Join(r.dir, "."+name)
	if err := os.WriteFile(tmp, []byte(doc), 0o600); err != nil {
		r.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(r.dir, name+".toml")); err != nil {
		r.t.Fatal(err)
	}
}

func (r *svcRig) get(name string) (listenapi.Listener, error) {
	return r.svc.ListenerGet(context.Background(), name)
}

func shellDoc(cmd, prompt string) string {
	return fmt.Sprintf("interval = \"1s\"\n[source]\ntype = \"shell\"\ncommand = %q\n[action]\npath = \"w/{{id}}\"\nprompt = %q\nprovider = \"shell\"\ncommand = \"true\"\n", cmd, prompt)
}

func TestServiceHotReload(t *testing.T) {
	r := newSvcRig(t)
	r.write("a", shellDoc("echo one", "p {{id}}"))
	wait.For(t, 5*time.Second, "a dispatches", func() bool { return len(r.ag.paths()) == 1 })
	r.ag.mu.Lock()
	a := r.ag.as[0]
	r.ag.mu.Unlock()
	if a.Path != "w/one" || a.Prompt != "p one" || a.Env["ORCR_EVENT_ID"] != "one" || a.Env[EnvListener] != "a" ||
		strings.Join(a.Argv, " ") != "sh -c true" {
		t.Fatalf("agent %+v", a)
	}
	// Changed: the new line fires, the old does not again.
	r.write("a", shellDoc("printf 'one\\ntwo\\n'", "q {{id}}"))
	wait.For(t, 5*time.Second, "two dispatches", func() bool { return len(r.ag.paths()) == 2 })
	// Broken: shown with its line; b keeps running.
	r.write("b", shellDoc("echo bee", "b"))
	r.write("a", "interval = \"1s\"\n[source]\ntype = \"nope\"\n")
	wait.For(t, 5*time.Second, "a invalid", func() bool {
		l, err := r.get("a")
		return err == nil && l.State == "invalid" && strings.Contains(l.Error, "line 3")
	})
	wait.For(t, 5*time.Second, "b dispatches", func() bool { return len(r.ag.paths()) == 3 })
	if r.k.count(listenapi.EventListenerInvalid, "a") != 1 || r.k.count(listenapi.EventListenerDispatched, "b") != 1 {
		t.Fatalf("events %+v", r.k.evs)
	}
	// Removed.
	if err := os.Remove(filepath.Join(r.dir, "a.toml")); err != nil {
		t.Fatal(err)
	}
	wait.For(t, 5*time.Second, "a removed", func() bool { _, err := r.get("a"); return err != nil })
	if r.k.count(listenapi.EventListenerRemoved, "a") != 1 {
		t.Fatal("no removed event")
	}
}

func TestServiceAPIDocuments(t *testing.T) {
	r := newSvcRig(t)
	ctx := context.Background()
	for doc, want := range map[string]string{
		"[source]\ntype = \"shell\"\ncommand = \"true\"\n[action]\npath = \"a\"\nprompt = \"x\"\nrole = \"Impl or\"\n":                                           "line 7: role",
		"[source]\ntype = \"shell\"\ncommand = \"true\"\n[action]\nplan = \"{{id}}\"\n":                                                                          "needs repo",
		"[source]\ntype = \"shell\"\ncommand = \"true\"\n[action]\nplan = \"{{id}}\"\nrepo = \"/r\"\nrole = \"x\"\n":                                             "line 7: an action with plan",
		"[source]\ntype = \"shell\"\ncommand = \"true\"\n[action]\npath = \"a\"\nprompt = \"x\"\nprovider = \"shell\"\ncommand = \"true\"\nidentity = \"A B\"\n": "line 9: identity",
		"[source]\ntype = \"shell\"\ncommand = \"true\"\n[action]\nplan = \"{{id}}\"\nrepo = \"/r\"\nidentity = \"x\"\n":                                         "line 7: an action with plan",
		"[source]\ntype = \"shell\"\ncommand = \"true\"\n[action]\npath = \"a\"\nprompt = \"x\"\nprovider = \"shell\"\n":                                         "needs command",
	} {
		_, err := r.svc.ListenerPut(ctx, listenapi.ListenerPutParams{Name: "api", Document: doc})
		var we *wire.Error
		if !errors.As(err, &we) || we.Code != wire.CodeInvalidParams || !strings.Contains(err.Error(), want) {
			t.Fatalf("put %q: %v, want %q", doc, err, want)
		}
	}
	r.write("file", shellDoc("true", "x"))
	wait.For(t, 5*time.Second, "file loads", func() bool { _, err := r.get("file"); return err == nil })
	if _, err := r.svc.ListenerPut(ctx, listenapi.ListenerPutParams{Name: "file", Document: shellDoc("true", "x")}); err == nil {
		t.Fatal("put over a file's listener")
	}
	if err := r.svc.ListenerRemove(ctx, "file"); err == nil || !strings.Contains(err.Error(), "delete the file") {
		t.Fatalf("remove a file's listener: %v", err)
	}
	l, err := r.svc.ListenerPut(ctx, listenapi.ListenerPutParams{Name: "api", Document: shellDoc("echo z", "z")})
	if err != nil || l.Origin != "api" || l.State != "enabled" {
		t.Fatalf("put: %v %+v", err, l)
	}
	wait.For(t, 5*time.Second, "api dispatches", func() bool { return len(r.ag.paths()) == 1 })
	// Disabled survives a restart, and stops dispatch.
	if l, err := r.svc.ListenerEnable(ctx, "api", false); err != nil || l.State != "disabled" {
		t.Fatalf("disable: %v %+v", err, l)
	}
	r.svc.Close()
	r.start()
	l, err = r.get("api")
	if err != nil || l.State != "disabled" || l.Fires != 1 || l.Document == "" {
		t.Fatalf("after restart: %v %+v", err, l)
	}
	if _, err := r.svc.ListenerEnable(ctx, "api", true); err != nil {
		t.Fatal(err)
	}
	if err := r.svc.ListenerRemove(ctx, "api"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.get("api"); err == nil {
		t.Fatal("removed listener still there")
	}
	if len(r.ag.paths()) != 1 {
		t.Fatalf("agents %v", r.ag.paths())
	}
}

// A spawn that fails holds its event (recorded, nothing lost) and goes out once it can.
func TestServiceDispatchFailureHolds(t *testing.T) {
	r := newSvcRig(t)
	r.ag.mu.Lock()
	r.ag.err = &wire.Error{Code: wire.CodePathTaken, Message: "w/one is already working"}
	r.ag.mu.Unlock()
	r.write("a", shellDoc("echo one", "p"))
	wait.For(t, 5*time.Second, "held", func() bool {
		l, err := r.get("a")
		return err == nil && l.Held == 1 && strings.Contains(l.LastError, "already working")
	})
	r.ag.mu.Lock()
	r.ag.err = nil
	r.ag.mu.Unlock()
	wait.For(t, 5*time.Second, "dispatched", func() bool {
		l, err := r.get("a")
		return err == nil && l.Held == 0 && l.Fires == 1 && len(r.ag.paths()) == 1
	})
}

func TestPruneIsBounded(t *testing.T) {
	ctx := context.Background()
	rec := NewRecords(newMemStore())
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range 30 {
		for _, name := range []string{"a", "b"} {
			if err := rec.MarkProcessed(ctx, name, fmt.Sprint(i), Processed{At: t0.Add(time.Duration(i) * time.Hour)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Older than hour 5 goes; past 10 per listener the oldest go.
	n, err := rec.Prune(ctx, t0.Add(5*time.Hour), 10, nil)
	if err != nil || n != 40 {
		t.Fatalf("pruned %d %v", n, err)
	}
	for _, id := range []string{"19", "4"} {
		if done, _ := rec.IsProcessed(ctx, "b", id); done {
			t.Fatalf("%s survived", id)
		}
	}
	if done, _ := rec.IsProcessed(ctx, "a", "29"); !done {
		t.Fatal("the newest was pruned")
	}
}

func TestPruneShownKeepsWhatTheSourceShows(t *testing.T) {
	ctx := context.Background()
	rec := NewRecords(newMemStore())
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range 30 {
		for _, name := range []string{"a", "ab"} {
			if err := rec.MarkProcessed(ctx, name, fmt.Sprint(i), Processed{At: t0.Add(time.Duration(i) * time.Hour)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Of a's 30 marks, 0 and 1 are still shown and stay whatever their age; of the other
	// 28, those older than hour 5 go (2, 3, 4), and past the newest 10 so do the oldest:
	// 20 to 29 stay, 18 are deleted. ab's marks are another listener's and stay.
	n, err := rec.PruneShown(ctx, "a", map[string]bool{"0": true, "1": true}, t0.Add(5*time.Hour), 10)
	if err != nil || n != 18 {
		t.Fatalf("pruned %d %v, want 18", n, err)
	}
	for id, want := range map[string]bool{"0": true, "1": true, "2": false, "19": false, "20": true, "29": true} {
		if done, _ := rec.IsProcessed(ctx, "a", id); done != want {
			t.Errorf("a/%s kept %v, want %v", id, done, want)
		}
	}
	for _, id := range []string{"0", "2", "19"} {
		if done, _ := rec.IsProcessed(ctx, "ab", id); !done {
			t.Errorf("ab/%s was pruned by a's prune", id)
		}
	}
	// Prune skips the listeners that run: here ab, so only a's marks are bounded.
	n, err = rec.Prune(ctx, t0.Add(5*time.Hour), 5, func(l string) bool { return l == "ab" })
	if err != nil || n != 7 {
		t.Fatalf("prune pruned %d %v, want 7 (a's 12 marks down to 5)", n, err)
	}
	if done, _ := rec.IsProcessed(ctx, "ab", "0"); !done {
		t.Error("a skipped listener's mark was pruned")
	}
}

// TestEditsApplyAtOnce: with the timed rescan an hour away, a listener file written in
// place, replaced by a rename, made invalid and removed each applies at once — the
// folder is watched (watch.go).
func TestEditsApplyAtOnce(t *testing.T) {
	r := &svcRig{t: t, dir: t.TempDir(), k: &fakeKernel{}, ag: &fakeAgents{}, plans: newFakePlans(), st: newMemStore()}
	r.startWith(time.Hour)
	// Written in place (an editor saving over the file).
	if err := os.WriteFile(filepath.Join(r.dir, "a.toml"), []byte(shellDoc("echo one", "p {{id}}")), 0o600); err != nil {
		t.Fatal(err)
	}
	wait.For(t, 5*time.Second, "a, written in place, dispatches", func() bool { return len(r.ag.paths()) == 1 })
	r.write("a", shellDoc("printf 'one\\ntwo\\n'", "q {{id}}")) // renamed over
	wait.For(t, 5*time.Second, "a, renamed over, dispatches its new line", func() bool { return len(r.ag.paths()) == 2 })
	r.write("a", "interval = \"1s\"\n[source]\ntype = \"nope\"\n")
	wait.For(t, 5*time.Second, "a invalid", func() bool {
		l, err := r.get("a")
		return err == nil && l.State == "invalid"
	})
	if err := os.Remove(filepath.Join(r.dir, "a.toml")); err != nil {
		t.Fatal(err)
	}
	wait.For(t, 5*time.Second, "a removed", func() bool { _, err := r.get("a"); return err != nil })
}

// TestFirstListenerInAFolderMadeLater: the listener folder and its parent do not exist
// when the server starts; made later (mkdir -p) with a first listener in it, the
// listener runs at once, not at the next timed rescan (an hour here) — the nearest
// existing parent is watched meanwhile.
func TestFirstListenerInAFolderMadeLater(t *testing.T) {
	// Two levels missing, as ~/.config/orcr/listeners is on a new machine.
	r := &svcRig{t: t, dir: filepath.Join(t.TempDir(), "orcr", "listeners"), k: &fakeKernel{}, ag: &fakeAgents{}, plans: newFakePlans(), st: newMemStore()}
	r.startWith(time.Hour)
	if err := os.MkdirAll(r.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// Written a moment after the folder, as a user would: the folder is watched by
	// then, or the rescan its making caused has found the file.
	r.write("a", shellDoc("echo one", "p {{id}}"))
	wait.For(t, 5*time.Second, "a, in a folder made after the start, dispatches", func() bool { return len(r.ag.paths()) == 1 })
	r.write("b", shellDoc("echo bee", "b"))
	wait.For(t, 5*time.Second, "b dispatches", func() bool { return len(r.ag.paths()) == 2 })
}

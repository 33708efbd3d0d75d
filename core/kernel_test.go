package core_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"orcr/adapters/shell"
	"orcr/core"
	"orcr/core/wire"
	"orcr/pty"
	"orcr/store"
	"orcr/testutil/wait"
)

// feature is a core.Feature whose Start runs what the test gives it.
type feature struct {
	name   string
	start  func(ctx context.Context, k core.Kernel) error
	k      core.Kernel
	closed bool
}

func (f *feature) Name() string            { return f.name }
func (f *feature) Methods() []wire.Handler { return nil }
func (f *feature) Close() error            { f.closed = true; return nil }
func (f *feature) Start(ctx context.Context, k core.Kernel) error {
	f.k = k
	if f.start != nil {
		return f.start(ctx, k)
	}
	return nil
}

// holdGate refuses every agent, saying so, and counts the asks.
type holdGate struct {
	mu    sync.Mutex
	asked int
}

func (g *holdGate) Admit(context.Context, wire.Agent) (bool, string, time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.asked++
	return false, "held by the test's gate", time.Time{}
}

func (g *holdGate) asks() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.asked
}

// startEngine starts an engine with features on the store in home.
func startEngine(t *testing.T, home string, features ...core.Feature) (*core.Engine, func()) {
	t.Helper()
	st, err := store.Open(home+"/store", nil)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := core.NewEngine(core.Options{Store: st, Host: pty.New(pty.Options{}), Providers: []core.Provider{shell.New()},
		Home: home, Socket: home + "/orcr.sock"})
	if err != nil {
		t.Fatal(err)
	}
	stop := func() {
		for i := len(features) - 1; i >= 0; i-- {
			features[i].Close()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		eng.Close(ctx)
		st.Close()
	}
	if err := eng.Start(context.Background(), features...); err != nil {
		stop()
		t.Fatal(err)
	}
	return eng, stop
}

// An agent queued before a restart waits for the features: admission opens only once
// every feature's Start has run, so it is never admitted past a gate its feature had
// not registered yet. The feature's Start watches the agent for a while before it
// registers its gate; had admission run before the features started (as it did when
// the daemon started the features after the engine), the agent, with no gate to hold
// it, would have started in that while.
func TestRestoredQueueWaitsForTheFeaturesGates(t *testing.T) {
	home := t.TempDir()
	ctx := context.Background()
	first := &feature{name: "gate", start: func(_ context.Context, k core.Kernel) error { k.AddGate(&holdGate{}); return nil }}
	eng, stop := startEngine(t, home, first)
	a, err := eng.Run(ctx, wire.RunParams{Path: "held/one", Argv: []string{"sleep", "30"}})
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if a.State != wire.StateQueued {
		t.Fatalf("the agent was %s before the restart, want queued", a.State)
	}

	gate := &holdGate{}
	var early wire.State
	second := &feature{name: "gate", start: func(ctx context.Context, k core.Kernel) error {
		deadline := time.Now().Add(time.Second)
		for time.Now().Before(deadline) && early == "" {
			if got, err := k.Get(ctx, a.ID); err == nil && got.State != wire.StateQueued {
				early = got.State
			}
			time.Sleep(20 * time.Millisecond)
		}
		k.AddGate(gate)
		return nil
	}}
	eng, stop = startEngine(t, home, second)
	defer stop()
	if early != "" {
		t.Fatalf("the restored agent became %s before its feature's gate was registered", early)
	}
	wait.For(t, 10*time.Second, "the registered gate to be asked", func() bool { return gate.asks() > 0 })
	got, err := eng.Get(ctx, a.ID)
	if err != nil || got.State != wire.StateQueued {
		t.Fatalf("after the features started: %s, %v; want queued (held)", got.State, err)
	}
	q, err := eng.Queue(ctx)
	if err != nil || len(q.Entries) != 1 || !strings.Contains(q.Entries[0].Waiting, "held by the test's gate") {
		t.Fatalf("queue: %+v, %v", q.Entries, err)
	}
}

// thing is what one test feature provides and another looks up by an interface of
// its own.
type thing struct{}

func (thing) Hello() string { return "hello" }

// Features reach each other through the registry, typed by the consumer's interface,
// looked up after both started whatever their order; each one's buckets are its own.
func TestFeaturesMeetThroughTheRegistry(t *testing.T) {
	ctx := context.Background()
	consumer := &feature{name: "consumer", start: func(ctx context.Context, k core.Kernel) error {
		if _, ok := core.Lookup[interface{ Hello() string }](k, "thing"); ok {
			return errors.New("found a thing that starts later")
		}
		return k.Buckets().Put(ctx, "x", "k", []byte("consumer's"))
	}}
	provider := &feature{name: "provider", start: func(ctx context.Context, k core.Kernel) error {
		k.Provide("thing", thing{})
		return k.Buckets().Put(ctx, "x", "k", []byte("provider's"))
	}}
	home := t.TempDir()
	_, stop := startEngine(t, home, consumer, provider)
	h, ok := core.Lookup[interface{ Hello() string }](consumer.k, "thing")
	if !ok || h.Hello() != "hello" {
		t.Fatalf("lookup after start: %v %v", h, ok)
	}
	if _, ok := core.Lookup[interface{ Bye() }](consumer.k, "thing"); ok {
		t.Fatal("a capability without the consumer's methods was handed out")
	}
	for f, want := range map[*feature]string{consumer: "consumer's", provider: "provider's"} {
		if got, err := f.k.Buckets().Get(ctx, "x", "k"); err != nil || string(got) != want {
			t.Errorf("%s's bucket x: %q, %v", f.name, got, err)
		}
	}
	stop()
	st, err := store.Open(home+"/store", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got, err := st.Get(ctx, "provider:x", "k"); err != nil || string(got) != "provider's" {
		t.Errorf("the store's provider:x: %q, %v", got, err)
	}
	if _, err := st.Get(ctx, "x", "k"); !errors.Is(err, wire.ErrNotFound) {
		t.Errorf("a feature wrote outside its namespace: %v", err)
	}
}

// Two features of one name would share their buckets: the engine refuses to start
// them, and a feature's failing Start is the engine's error, naming it.
func TestFeatureNamesAndFailures(t *testing.T) {
	home := t.TempDir()
	st, err := store.Open(home+"/store", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, c := range []struct {
		fs   []core.Feature
		want string
	}{
		{[]core.Feature{&feature{name: "a"}, &feature{name: "a"}}, `two features are named "a"`},
		{[]core.Feature{&feature{name: "a:b"}}, `feature name "a:b"`},
		{[]core.Feature{&feature{name: "bad", start: func(context.Context, core.Kernel) error { return errors.New("boom") }}}, "start bad: boom"},
	} {
		eng, err := core.NewEngine(core.Options{Store: st, Host: pty.New(pty.Options{}), Home: home, Socket: home + "/orcr.sock"})
		if err != nil {
			t.Fatal(err)
		}
		err = eng.Start(context.Background(), c.fs...)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		eng.Close(ctx)
		cancel()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("start: %v; want %q", err, c.want)
		}
	}
}

// server.info names the providers the server runs, so clients offer those (the
// dashboard's spawn form) instead of a list of their own.
func TestInfoNamesTheProviders(t *testing.T) {
	eng, stop := startEngine(t, t.TempDir())
	defer stop()
	info, err := eng.Info(context.Background())
	if err != nil || strings.Join(info.Providers, ",") != "shell" {
		t.Fatalf("info providers: %v, %v; want the engine's one provider, shell", info.Providers, err)
	}
}

package core

import (
	"context"
	"fmt"
	"regexp"
	"sync"
	"sync/atomic"

	"orcr/core/wire"
)

// Kernel is the one interface a feature gets (DESIGN §5), in its Start: the agent
// operations, the events, the caller's identity, the fields of an agent a feature
// owns, the admission hooks, a registry through which features reach each other
// without importing each other, and Buckets namespaced to the feature. A feature
// never sees the agents store or the event log.
type Kernel interface {
	// The agents, as every client sees them.
	Run(ctx context.Context, p wire.RunParams) (wire.Agent, error)
	Get(ctx context.Context, target string) (wire.Agent, error)
	List(ctx context.Context, p wire.ListParams) ([]wire.Agent, error)
	Send(ctx context.Context, p wire.SendParams) error
	Read(ctx context.Context, p wire.ReadParams) (wire.ReadResult, error)
	Wait(ctx context.Context, p wire.WaitParams) (wire.WaitResult, error)
	Kill(ctx context.Context, p wire.KillParams) (wire.KillResult, error)
	Resume(ctx context.Context, p wire.ResumeParams) (wire.Agent, error)
	Queue(ctx context.Context) (wire.QueueResult, error)

	// Publish stores an event and delivers it to subscribers.
	Publish(ctx context.Context, ev wire.Event) (wire.Event, error)
	// Subscribe streams events with seq > p.After, then live ones, until ctx ends.
	Subscribe(ctx context.Context, p wire.SubscribeParams) (<-chan wire.Event, error)
	// LastSeq is the seq of the newest stored event: a feature that reads the
	// agents and then follows the events subscribes after the seq it read first.
	LastSeq() uint64

	// CallerAgent returns the verified agent the caller of ctx runs inside, or nil
	// for a root caller (a claim that does not verify is an error).
	CallerAgent(ctx context.Context) (*wire.Agent, error)

	// Amend lets a feature change the fields it owns on an agent's record (hook runs,
	// limit counters) and announces the change as agent.updated. fn must not change
	// the state: states move only through the kernel's rules.
	Amend(ctx context.Context, id string, fn func(a *wire.Agent)) (wire.Agent, error)
	// StopAgent kills one agent with a reason the record keeps (a role's hard timeout).
	StopAgent(ctx context.Context, id, reason string) error
	// CloseEnded closes ended agent id's pane now, keeping its last screen on the
	// record (what gc.exited_grace does later), for a feature that has taken what it
	// needed of the agent: a workflow's finished items would otherwise keep a
	// thousand exited panes (terminals in the server, on the pty host) for the grace.
	CloseEnded(ctx context.Context, id, why string) error
	// Readmit asks admission to look at the queue again: a gate's facts changed (a
	// window reset, a budget removed) without a run or an end to wake it.
	Readmit()

	// AddGate adds an admission condition after the ones already there (see Gate;
	// a Placer or SpawnChecker is asked as such too).
	AddGate(g Gate)
	// SetResolver makes r the resolver of run requests (one per server: roles).
	SetResolver(r RunResolver)
	// AddLaunchHook runs h before each launch, after the hooks already there.
	AddLaunchHook(h LaunchHook)
	// SetRemote makes r where agents placed on a node live (one per server: nodes;
	// remote.go). Mirror applies what an agent's node reports to its record here,
	// its state included; it refuses an agent that runs on this machine.
	SetRemote(r Remote)
	Mirror(ctx context.Context, id string, fn func(a *wire.Agent)) (wire.Agent, error)

	// Provide offers v to the other features under name (a capability such as
	// "plans" or "accounts"); Lookup finds what another feature provided. Look up
	// lazily, when the capability is needed, not in Start: features start in list
	// order and the provider may come later. See the generic Lookup.
	Provide(name string, v any)
	Lookup(name string) (any, bool)

	// Buckets is the store of the feature's own records: its bucket "x" is kept as
	// "<feature name>:x", apart from every other feature's.
	Buckets() Buckets
}

// Lookup finds the capability another feature provided under name, typed by the
// interface the caller defines (the consumer owns the interface; the provider only
// has to have the methods). ok is false when nothing is provided under name or it
// lacks T's methods.
func Lookup[T any](k Kernel, name string) (T, bool) {
	var zero T
	v, ok := k.Lookup(name)
	if !ok {
		return zero, false
	}
	t, ok := v.(T)
	return t, ok
}

// featureName is what a feature may be called: it is its buckets' namespace. It is
// compiled on first use: a CLI process links core and never starts a feature.
var featureName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9.-]{0,31}$`) })

// extensions is what features plug into the engine: the admission hooks and the
// registry. The hooks are an immutable snapshot swapped whole, so admission reads
// them without a lock of its own; registration takes mu.
type extensions struct {
	mu       sync.Mutex
	provided map[string]any
	hooks    atomic.Pointer[hooks]
}

// hooks are the admission hooks features registered: the gates (the memory guard
// first), the run resolver and the launch hooks.
type hooks struct {
	gates    []Gate
	resolver RunResolver
	launch   []LaunchHook
	remote   Remote
}

func (x *extensions) load() *hooks { return x.hooks.Load() }

// change applies fn to a copy of the hooks and makes it the snapshot.
func (x *extensions) change(fn func(h *hooks)) {
	x.mu.Lock()
	defer x.mu.Unlock()
	h := *x.hooks.Load()
	h.gates = append([]Gate(nil), h.gates...)
	h.launch = append([]LaunchHook(nil), h.launch...)
	fn(&h)
	x.hooks.Store(&h)
}

// featureKernel is the Kernel one feature gets: the engine, seen from that feature.
// It forwards to the engine by hand rather than embedding it, so a feature cannot
// reach the engine's other methods by a type assertion.
type featureKernel struct {
	e       *Engine
	name    string
	buckets Buckets
}

var _ Kernel = (*featureKernel)(nil)

func newFeatureKernel(e *Engine, name string) *featureKernel {
	return &featureKernel{e: e, name: name, buckets: FeatureBuckets(e.store, name)}
}

func (k *featureKernel) Run(ctx context.Context, p wire.RunParams) (wire.Agent, error) {
	return k.e.Run(ctx, p)
}

func (k *featureKernel) Get(ctx context.Context, target string) (wire.Agent, error) {
	return k.e.Get(ctx, target)
}

func (k *featureKernel) List(ctx context.Context, p wire.ListParams) ([]wire.Agent, error) {
	return k.e.List(ctx, p)
}

func (k *featureKernel) Send(ctx context.Context, p wire.SendParams) error { return k.e.Send(ctx, p) }

func (k *featureKernel) Read(ctx context.Context, p wire.ReadParams) (wire.ReadResult, error) {
	return k.e.Read(ctx, p)
}

func (k *featureKernel) Wait(ctx context.Context, p wire.WaitParams) (wire.WaitResult, error) {
	return k.e.Wait(ctx, p)
}

func (k *featureKernel) Kill(ctx context.Context, p wire.KillParams) (wire.KillResult, error) {
	return k.e.Kill(ctx, p)
}

func (k *featureKernel) Resume(ctx context.Context, p wire.ResumeParams) (wire.Agent, error) {
	return k.e.Resume(ctx, p)
}

func (k *featureKernel) Queue(ctx context.Context) (wire.QueueResult, error) { return k.e.Queue(ctx) }

func (k *featureKernel) Publish(ctx context.Context, ev wire.Event) (wire.Event, error) {
	return k.e.broker.publish(ctx, ev)
}

func (k *featureKernel) Subscribe(ctx context.Context, p wire.SubscribeParams) (<-chan wire.Event, error) {
	return k.e.Subscribe(ctx, p)
}

func (k *featureKernel) Buckets() Buckets { return k.buckets }

func (k *featureKernel) LastSeq() uint64 { return k.e.store.LastSeq() }

func (k *featureKernel) CallerAgent(ctx context.Context) (*wire.Agent, error) {
	return k.e.callerAgent(ctx)
}

func (k *featureKernel) Readmit() { k.e.kickAdmission() }

func (k *featureKernel) Amend(ctx context.Context, id string, fn func(a *wire.Agent)) (wire.Agent, error) {
	e := k.e
	e.mu.Lock()
	rt := e.agents[id]
	e.mu.Unlock()
	if rt == nil {
		return wire.Agent{}, wire.Errorf(wire.CodeNotFound, "no agent %s", id)
	}
	a, _, err := e.change(ctx, rt, func(a wire.Agent) (wire.Agent, *wire.Event, bool) {
		st, src, why := a.State, a.StateSource, a.StateReason
		fn(&a)
		a.State, a.StateSource, a.StateReason = st, src, why
		return a, &wire.Event{Event: wire.EventAgentUpdated}, true
	})
	return a, err
}

func (k *featureKernel) StopAgent(ctx context.Context, id, reason string) error {
	e := k.e
	e.mu.Lock()
	rt := e.agents[id]
	e.mu.Unlock()
	if rt == nil {
		return wire.Errorf(wire.CodeNotFound, "no agent %s", id)
	}
	e.killOne(ctx, rt, reason, func(a wire.Agent) bool { return !a.State.Terminal() })
	return nil
}

func (k *featureKernel) CloseEnded(ctx context.Context, id, why string) error {
	e := k.e
	e.mu.Lock()
	rt := e.agents[id]
	var a wire.Agent
	open := false
	if rt != nil {
		a = rt.a
		open = a.PaneID != "" && e.panes[a.PaneID] == a.ID
	}
	e.mu.Unlock()
	switch {
	case rt == nil:
		return wire.Errorf(wire.CodeNotFound, "no agent %s", id)
	case !a.State.Terminal():
		return wire.Errorf(wire.CodeInvalidParams, "agent %s is %s: only an ended agent's pane is closed", id, a.State)
	case !open:
		return nil // closed already (by gc, or a host that closes exited panes)
	}
	e.closeEndedPane(ctx, rt, a, wire.GCAction{Rule: "feature", Action: "close_pane", AgentID: a.ID, Path: a.Path, Detail: why})
	return nil
}

func (k *featureKernel) AddGate(g Gate) {
	k.e.ext.change(func(h *hooks) { h.gates = append(h.gates, g) })
	k.e.kickAdmission()
}

func (k *featureKernel) SetResolver(r RunResolver) {
	k.e.ext.change(func(h *hooks) { h.resolver = r })
}

func (k *featureKernel) AddLaunchHook(lh LaunchHook) {
	k.e.ext.change(func(h *hooks) { h.launch = append(h.launch, lh) })
}

func (k *featureKernel) SetRemote(r Remote) {
	k.e.ext.change(func(h *hooks) { h.remote = r })
}

func (k *featureKernel) Mirror(ctx context.Context, id string, fn func(a *wire.Agent)) (wire.Agent, error) {
	return mirror(ctx, k.e, id, fn)
}

func (k *featureKernel) Provide(name string, v any) {
	x := &k.e.ext
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.provided == nil {
		x.provided = map[string]any{}
	}
	if _, dup := x.provided[name]; dup {
		k.e.log.Warn("feature capability provided twice; the later wins", "name", name, "feature", k.name)
	}
	x.provided[name] = v
}

func (k *featureKernel) Lookup(name string) (any, bool) {
	x := &k.e.ext
	x.mu.Lock()
	defer x.mu.Unlock()
	v, ok := x.provided[name]
	return v, ok
}

// startFeatures starts each feature in order with its own Kernel. Two features with
// one name would share their buckets, so that is refused before anything starts.
func startFeatures(ctx context.Context, e *Engine, features []Feature) error {
	seen := map[string]bool{}
	for _, f := range features {
		n := f.Name()
		if !featureName().MatchString(n) {
			return fmt.Errorf("feature name %q: use [a-z][a-z0-9.-]*, at most 32 characters", n)
		}
		if seen[n] {
			return fmt.Errorf("two features are named %q; each needs its own name (its buckets' namespace)", n)
		}
		seen[n] = true
	}
	for _, f := range features {
		if err := f.Start(ctx, newFeatureKernel(e, f.Name())); err != nil {
			return fmt.Errorf("start %s: %w", f.Name(), err)
		}
	}
	return nil
}

// providerReady says whether provider can start now: it is known, its program is
// found (Detect, cached for readyFresh) and the host has its integration.
func providerReady(ctx context.Context, e *Engine, provider string) error {
	prov, ok := e.providers[provider]
	if !ok {
		return wire.Errorf(wire.CodeUnknownProvider, "unknown provider %q", provider)
	}
	if ic, ok := e.host.(IntegrationChecker); ok && provider != "shell" {
		if err := ic.RequireIntegration(ctx, provider); err != nil {
			return err
		}
	}
	return e.ready.check(ctx, prov)
}

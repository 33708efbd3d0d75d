package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"orcr/core/wire"
)

// Options configure an Engine. Store and Host are required.
type Options struct {
	Store     Store
	Host      Host
	HostWhy   string // why this host was chosen (doctor, server.info)
	Providers []Provider
	Logger    *slog.Logger
	Home      string // ORCR_HOME
	Socket    string // the socket path agents get in ORCR_SOCKET
	Self      string // absolute path of the orcr binary
	// Secrets is secrets.toml, where env values naming {{secret.NAME}} are looked up at
	// launch ("" : such values fail the spawn).
	Secrets string
	Limits  Limits
	// BaseEnv is the environment panes start from (default os.Environ()); nesting
	// variables are stripped from it (see CleanEnv).
	BaseEnv []string
	// GC are the lifecycle collection rules; the zero value means DefaultGCRules.
	GC GCRules
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
}

// Limits are the admission caps of the queue.
type Limits struct {
	Global    int            // 0: unlimited
	Provider  map[string]int // provider → cap; absent or 0: unlimited
	MinFreeMB int            // hold admission while free memory is below this
	Aging     time.Duration  // waiting time worth one priority level (0: no aging)
	// Origin says where each cap's value came from, by cap name (CapGlobal, CapMinFree,
	// a provider): OriginConfig, OriginRuntime or how a default was derived.
	Origin map[string]string
}

// Engine is the in-process implementation of Service: it owns the agents, the queue and
// the event log, and drives the host and the provider adapters.
type Engine struct {
	opts      Options
	store     Store
	host      Host
	providers map[string]Provider
	log       *slog.Logger
	broker    *broker
	started   time.Time

	mu     sync.Mutex
	agents map[string]*agentRT // id → runtime
	panes  map[string]string   // pane id → agent id
	// earlyExit holds exits of panes whose agent loop had not started yet.
	earlyExit map[string]*int
	limits    Limits

	admitWake chan struct{}
	mem       *memoryGate // the first gate
	// ext holds what features plug in: the gates after the memory guard, the run
	// resolver, the launch hooks and the registry (kernel.go).
	ext    extensions
	fl     fleet      // queue and GC (core/queue.go, gc.go)
	ready  readyCache // providers' Detect results (extend.go)
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// agentRT is the runtime side of one agent record. a is guarded by Engine.mu.
type agentRT struct {
	a       wire.Agent
	obs     atomic.Pointer[observerBox] // set when the loop starts; read by Send, answers and hooks
	turns   int                         // prompts and sends given; turns idle into done
	events  chan func()                 // work for the agent's loop (hooks, output, exit)
	outputs chan struct{}
	judge   chan struct{} // read the screen now (after an answer)
	// sent: a send ending in Enter started a turn (TurnOnSend providers); the loop
	// moves the agent to working and closes the channel it is given.
	sent chan chan struct{}
	// lastInput is when a send last typed into the pane (unix nanoseconds of the
	// engine's clock): gc.idle_after counts idle time from it as from the state's
	// change, so an agent given work a moment ago is not stopped before its program
	// shows that it took it. Atomic: the collection reads it inside the lock holds
	// of a kill or hibernation.
	lastInput atomic.Int64
	// wake is the first message of a hibernated agent being woken (resume.go); the
	// launch gives it as the prompt. nil when not waking; "" wakes without a message.
	wake *string
	// launchPrompt is the prompt the running launch was given when it is not the
	// record's (a wake's message, or none): the observer judges the launch by it, so a
	// claude woken without a message goes idle when its session starts instead of
	// staying "launched" as if it worked on the record's first prompt.
	launchPrompt *string
	// eager: an answer waits for the screen to change, so the loop reads it on every
	// output instead of at most every screenEvery.
	eager atomic.Int32
	// promptAt is when the current prompt's options were first recorded (Engine.mu).
	promptAt time.Time
	exit     chan paneEnd
	stop     context.CancelFunc
	done     chan struct{}
}

// NewEngine builds an engine; call Start to reconcile with the host and begin serving.
func NewEngine(opts Options) (*Engine, error) {
	if opts.Store == nil || opts.Host == nil {
		return nil, errors.New("engine needs a store and a host")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.BaseEnv == nil {
		opts.BaseEnv = os.Environ()
	}
	e := &Engine{
		opts:      opts,
		store:     opts.Store,
		host:      opts.Host,
		providers: map[string]Provider{},
		log:       opts.Logger,
		broker:    newBroker(opts.Store),
		agents:    map[string]*agentRT{},
		panes:     map[string]string{},
		earlyExit: map[string]*int{},
		limits:    opts.Limits,
		admitWake: make(chan struct{}, 1),
	}
	for _, p := range opts.Providers {
		e.providers[p.Name()] = p
	}
	e.mem = &memoryGate{e: e}
	e.ext.hooks.Store(&hooks{gates: []Gate{e.mem}})
	return e, nil
}

func (e *Engine) now() time.Time { return e.opts.Now().UTC() }

// Start loads the store, reconciles live panes with the host (re-adopting them or
// marking them lost), starts the host-event loop, then starts the features in order,
// each with its own Kernel, and only then the admission loop. So an agent queued
// before a restart is admitted after every feature had its Start to register its
// gate, resolver and launch hooks: none passes a gate that is not there yet. A
// feature that fails to start is an error; the caller closes the features (every
// one of them: Close must be safe on a feature whose Start did not run).
func (e *Engine) Start(ctx context.Context, features ...Feature) error {
	e.started = e.now()
	e.ctx, e.cancel = context.WithCancel(context.Background())
	all, err := e.store.ListAgents(ctx)
	if err != nil {
		return fmt.Errorf("load agents: %w", err)
	}
	panes, err := e.host.List(ctx)
	if err != nil {
		return fmt.Errorf("list host panes: %w", err)
	}
	e.mu.Lock()
	for _, a := range all {
		e.agents[a.ID] = &agentRT{a: a}
	}
	e.mu.Unlock()
	if err := e.reconcile(ctx, panes); err != nil {
		return err
	}
	e.startFleet()
	e.wg.Add(1)
	go e.hostEventLoop()
	if err := startFeatures(ctx, e, features); err != nil {
		return err
	}
	startAdmission(e)
	return nil
}

// Close stops the engine's loops and releases the host connection. Panes of hosts
// that outlive the server keep running; the embedded host's panes end.
func (e *Engine) Close(ctx context.Context) error {
	if e.cancel != nil {
		e.cancel()
	}
	e.mu.Lock()
	for _, rt := range e.agents {
		if rt.stop != nil {
			rt.stop()
		}
	}
	e.mu.Unlock()
	err := e.host.Shutdown(ctx)
	e.wg.Wait()
	return err
}

// reconcile re-adopts live panes after a restart and marks vanished ones lost.
func (e *Engine) reconcile(ctx context.Context, panes []PaneInfo) error {
	byID := map[string]PaneInfo{}
	byName := map[string]PaneInfo{}
	for _, p := range panes {
		byID[p.ID] = p
		byName[p.Name] = p
	}
	e.mu.Lock()
	var rts []*agentRT
	for _, rt := range e.agents {
		rts = append(rts, rt)
	}
	e.mu.Unlock()
	sort.Slice(rts, func(i, j int) bool { return rts[i].a.CreatedAt.Before(rts[j].a.CreatedAt) })
	claimed := map[string]bool{}
	for _, rt := range rts {
		a := rt.a
		if a.State == wire.StateHibernated {
			continue // no pane: a send or a resume wakes it
		}
		if a.Node != "" {
			continue // its pane is on its node, which still runs it (remote.go)
		}
		if a.State.Terminal() || a.State == wire.StateQueued {
			if _, open := byID[a.PaneID]; a.PaneID != "" && open {
				// An ended agent's pane still open (tmux keeps dead panes): it is
				// this agent's to close after the grace period, unless a newer
				// agent turns out to hold the same id.
				claimed[a.PaneID] = true
				e.mu.Lock()
				e.panes[a.PaneID] = a.ID
				e.mu.Unlock()
			}
			continue
		}
		p, ok := byID[a.PaneID]
		if a.PaneID == "" {
			// The server died between admission and launch: a pane may exist by name.
			p, ok = byName[a.Path]
			if ok && claimed[p.ID] {
				ok = false
			}
		}
		switch {
		case ok && !p.Dead:
			claimed[p.ID] = true
			e.adopt(ctx, rt, p)
		case ok && p.Dead:
			claimed[p.ID] = true
			e.mutate(ctx, rt, func(a *wire.Agent) {
				a.PaneID, a.ExitCode = p.ID, p.ExitCode
			}, nil)
			e.finish(ctx, rt, wire.StateExited, "host", "process ended while the server was down", p.ExitCode)
		case e.neverLaunched(a):
			e.requeue(ctx, rt)
		default:
			why := fmt.Sprintf("pane vanished while the server was down (found missing at %s)", e.now().Format(time.RFC3339))
			if stopOrphan(a) {
				why += fmt.Sprintf("; its process %d was still running, unwatched, and was stopped", a.PID)
			}
			e.finish(ctx, rt, wire.StateLost, "server", why, nil)
		}
	}
	return nil
}

func (e *Engine) adopt(ctx context.Context, rt *agentRT, p PaneInfo) {
	e.mu.Lock()
	e.panes[p.ID] = rt.a.ID
	e.mu.Unlock()
	a, _ := e.mutate(ctx, rt, func(a *wire.Agent) { a.PaneID, a.PID = p.ID, p.PID }, nil)
	// The turns given before the restart are not stored; an agent that had a prompt
	// or ended a turn has had one, so its next settled screen is a turn's end (done),
	// not idle. Without this a shell agent adopted mid-turn never reports done again.
	if e.mu.Lock(); rt.turns == 0 && (InitialTurns(a) > 0 || a.State == wire.StateDone) {
		rt.turns = 1
	}
	e.mu.Unlock()
	if a.State == wire.StateStarting {
		// The server died after the pane started but before it recorded the launch.
		e.setState(ctx, rt, wire.StateWorking, "server", "re-adopted after a restart", nil)
	}
	e.startLoop(rt)
}

// changeLocked is the one writer of agent records. Under e.mu, which the caller
// holds, decide sees the current record and returns the changed copy with the event
// that announces it (nil: a silent write), or ok=false to leave the record alone. The
// check, the set, the store write and the event all happen in that one lock hold, so
// no other change can land between a decision and its write (a kill between a signal's
// check and its write once turned killed back into done).
func (e *Engine) changeLocked(ctx context.Context, rt *agentRT, decide func(a wire.Agent) (wire.Agent, *wire.Event, bool)) (wire.Agent, bool, error) {
	next, ev, ok := decide(rt.a)
	if !ok {
		return rt.a, false, nil
	}
	return e.writeLocked(ctx, rt, next, ev)
}

// change is changeLocked taking the lock.
func (e *Engine) change(ctx context.Context, rt *agentRT, decide func(a wire.Agent) (wire.Agent, *wire.Event, bool)) (wire.Agent, bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.changeLocked(ctx, rt, decide)
}

// writeLocked makes a the record, stores it and publishes ev (if not nil) carrying it.
func (e *Engine) writeLocked(ctx context.Context, rt *agentRT, a wire.Agent, ev *wire.Event) (wire.Agent, bool, error) {
	a.UpdatedAt = e.now()
	rt.a = a
	if leftLive(a.State) {
		dropLiveLocked(e, rt)
	}
	if ev == nil {
		if err := e.store.PutAgent(ctx, a); err != nil {
			e.log.Error("store agent", "id", a.ID, "err", err)
			return a, true, fmt.Errorf("store agent: %w", err)
		}
		return a, true, nil
	}
	// Events carry the record without its last screen: the log stays small and the
	// screen is one agent.get away. Record and event are one transaction.
	ea := a
	ea.LastScreen = ""
	ev.Agent = &ea
	if _, err := e.broker.publishAgent(ctx, a, *ev); err != nil {
		e.log.Error("publish", "id", a.ID, "err", err)
		return a, true, err
	}
	return a, true, nil
}

// mutate changes facts of the record that need no check (pane ids, screens, cwd) and
// publishes ev (if not nil) carrying the new record.
func (e *Engine) mutate(ctx context.Context, rt *agentRT, fn func(a *wire.Agent), ev *wire.Event) (wire.Agent, error) {
	a, _, err := e.change(ctx, rt, func(a wire.Agent) (wire.Agent, *wire.Event, bool) {
		fn(&a)
		return a, ev, true
	})
	return a, err
}

// setState moves an agent to a non-terminal state (MoveTo's rule: no-op when terminal
// already, or when nothing changes).
func (e *Engine) setState(ctx context.Context, rt *agentRT, to wire.State, source, reason string, blocked *wire.Blocked) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.setStateLocked(ctx, rt, to, source, reason, blocked)
}

func (e *Engine) setStateLocked(ctx context.Context, rt *agentRT, to wire.State, source, reason string, blocked *wire.Blocked) bool {
	now := e.now()
	_, ok, _ := e.changeLocked(ctx, rt, func(a wire.Agent) (wire.Agent, *wire.Event, bool) {
		next, ev, ok := MoveTo(a, to, source, reason, blocked, now)
		return next, &ev, ok
	})
	return ok
}

// finish moves an agent to a terminal state once (End's rule).
func (e *Engine) finish(ctx context.Context, rt *agentRT, to wire.State, source, reason string, code *int) bool {
	return e.end(ctx, rt, to, source, reason, code, nil)
}

// end is finish with a condition checked in the same lock hold: when ok is not nil it
// sees the record first, may add to it (a last screen), and can decline the end.
func (e *Engine) end(ctx context.Context, rt *agentRT, to wire.State, source, reason string, code *int, ok func(a *wire.Agent) bool) bool {
	now := e.now()
	_, ended, _ := e.change(ctx, rt, func(a wire.Agent) (wire.Agent, *wire.Event, bool) {
		if ok != nil && !a.State.Terminal() && !ok(&a) {
			return a, nil, false
		}
		next, ev, done := End(a, to, source, reason, code, now)
		return next, &ev, done
	})
	if ended {
		e.kickAdmission()
	}
	return ended
}

func (rt *agentRT) observer() Observer {
	if b := rt.obs.Load(); b != nil {
		return b.Observer
	}
	return nil
}

// observerBox holds an agent's Observer for atomic.Pointer: the loop sets it after the
// pane's record is stored, so a send that sees the pane may read it meanwhile (the race
// detector caught TestSendTypesOnlyText reading it while startLoop wrote it).
type observerBox struct{ Observer }

// paneEnd is how a pane ended: its process exited (code when known), or the pane
// vanished from the host (closed from outside, host server restarted).
type paneEnd struct {
	code *int
	gone bool
}

func newID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}

// Publish stores an event and delivers it to subscribers. Owners inside the server
// (GC; features through their Kernel) use it for events that are not agent state
// changes.
func (e *Engine) Publish(ctx context.Context, ev wire.Event) (wire.Event, error) {
	return e.broker.publish(ctx, ev)
}

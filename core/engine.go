package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"sync"
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
	Limits    Limits
	// BaseEnv is the environment panes start from (default os.Environ()); nesting
	// variables are stripped from it (see CleanEnv).
	BaseEnv []string
	// UsageReport aggregates agents and limit readings into the usage report
	// (core/usage.go provides one); nil gives readings only.
	UsageReport func(agents []wire.Agent, readings []wire.LimitReading, p wire.UsageParams) wire.UsageResult
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
	fl        fleet // queue, GC and schedules (core/queue.go, gc.go, schedule.go)
	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
}

// agentRT is the runtime side of one agent record. a is guarded by Engine.mu.
type agentRT struct {
	a       wire.Agent
	obs     Observer    // owned by the agent's loop goroutine
	turns   int         // prompts and sends given; turns idle into done
	events  chan func() // work for the agent's loop (hooks, output, exit)
	outputs chan struct{}
	judge   chan struct{} // read the screen now (after an answer)
	// lastInput is when orcr last typed into the pane (answers wait inputGap after it).
	lastInput time.Time
	exit      chan paneEnd
	stop      context.CancelFunc
	done      chan struct{}
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
	if opts.UsageReport == nil {
		opts.UsageReport = UsageReport
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
	return e, nil
}

func (e *Engine) now() time.Time { return e.opts.Now().UTC() }

// Start loads the store, reconciles live panes with the host (re-adopting them or
// marking them lost), and starts the admission and host-event loops.
func (e *Engine) Start(ctx context.Context) error {
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
	e.wg.Add(2)
	go e.hostEventLoop()
	go e.admitLoop()
	e.kickAdmission()
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
			e.finish(ctx, rt, wire.StateLost, "server",
				fmt.Sprintf("pane vanished while the server was down (found missing at %s)", e.now().Format(time.RFC3339)), nil)
		}
	}
	return nil
}

func (e *Engine) adopt(ctx context.Context, rt *agentRT, p PaneInfo) {
	e.mu.Lock()
	e.panes[p.ID] = rt.a.ID
	e.mu.Unlock()
	a, _ := e.mutate(ctx, rt, func(a *wire.Agent) { a.PaneID, a.PID = p.ID, p.PID }, nil)
	if a.State == wire.StateStarting {
		// The server died after the pane started but before it recorded the launch.
		e.setState(ctx, rt, wire.StateWorking, "server", "re-adopted after a restart", nil)
	}
	e.startLoop(rt)
}

// mutate applies fn to the agent record, stores it, and publishes ev (if not nil)
// carrying the new record. It is the only writer of agent records.
func (e *Engine) mutate(ctx context.Context, rt *agentRT, fn func(a *wire.Agent), ev *wire.Event) (wire.Agent, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	fn(&rt.a)
	rt.a.UpdatedAt = e.now()
	a := rt.a
	if ev == nil {
		if err := e.store.PutAgent(ctx, a); err != nil {
			e.log.Error("store agent", "id", a.ID, "err", err)
			return a, fmt.Errorf("store agent: %w", err)
		}
		return a, nil
	}
	// Events carry the record without its last screen: the log stays small and the
	// screen is one agent.get away. Record and event are one transaction.
	ea := a
	ea.LastScreen = ""
	ev.Agent = &ea
	if _, err := e.broker.publishAgent(ctx, a, *ev); err != nil {
		e.log.Error("publish", "id", a.ID, "err", err)
		return a, err
	}
	return a, nil
}

// setState moves an agent to a non-terminal state (no-op when terminal already).
func (e *Engine) setState(ctx context.Context, rt *agentRT, to wire.State, source, reason string, blocked *wire.Blocked) {
	e.mu.Lock()
	from := rt.a.State
	same := from == to && rt.a.StateReason == reason && rt.a.StateSource == source
	e.mu.Unlock()
	if from.Terminal() || same {
		return
	}
	if to != wire.StateBlocked {
		blocked = nil
	}
	// A new state is an agent.state event; the same state newly explained (another
	// signal confirmed it, or the reason changed) is an agent.updated event, so a
	// subscriber's "why" stays current too.
	ev := &wire.Event{Event: wire.EventAgentUpdated}
	if from != to {
		ev = &wire.Event{Event: wire.EventAgentState, From: from, To: to}
	}
	now := e.now()
	e.mutate(ctx, rt, func(a *wire.Agent) {
		if a.State != to {
			a.StateAt = now
		}
		a.State, a.StateSource, a.StateReason, a.Blocked = to, source, reason, blocked
	}, ev)
}

// finish moves an agent to a terminal state once, keeping its last screen.
func (e *Engine) finish(ctx context.Context, rt *agentRT, to wire.State, source, reason string, code *int) {
	e.mu.Lock()
	from := rt.a.State
	e.mu.Unlock()
	if from.Terminal() {
		return
	}
	now := e.now()
	e.mutate(ctx, rt, func(a *wire.Agent) {
		a.State, a.StateSource, a.StateReason, a.StateAt = to, source, reason, now
		a.Blocked = nil
		a.EndedAt = &now
		if code != nil {
			c := *code
			a.ExitCode = &c
		}
		a.QueuePos = 0
	}, &wire.Event{Event: wire.EventAgentState, From: from, To: to})
	e.kickAdmission()
}

func (rt *agentRT) observer() Observer { return rt.obs }

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
// (schedules, runs, GC) use it for events that are not agent state changes.
func (e *Engine) Publish(ctx context.Context, ev wire.Event) (wire.Event, error) {
	return e.broker.publish(ctx, ev)
}

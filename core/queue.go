package core

import (
	"context"
	"fmt"
	"maps"
	"math"
	"sort"
	"strings"
	"time"

	"orcr/core/wire"
)

// The admission queue (DESIGN §7). Every agent.run lands here as a queued record; the
// admission loop starts queued agents within the global and per-provider caps, highest
// priority first, then oldest, while free memory stays above the guard.
//
// Aging: an entry's rank is its arrival time minus priority × aging, so one priority
// level is worth `aging` of waiting. A priority-0 job that has waited that long ranks
// with a priority-1 job that has just arrived, and nothing starves. Because the rank is
// linear in time, "now" cancels out of every comparison: the order never changes while
// entries wait, so the queue stays sorted incrementally (binary-search insert, lazy
// removal) and an admission decision is one pass from the front, never a sort.
//
// Config (config.toml; `orcr queue caps` changes the same values at runtime, and
// SIGHUP to the server reloads them):
//
//	[limits]
//	global = 6          # live agents in all (absent: derived from memory, see caps.go; 0: unlimited)
//	claude = 3          # per provider (claude, codex, opencode, pi, shell, or any adapter)
//	min_free_mb = 1500  # hold admission while MemAvailable is below this; re-read every 2 s
//	aging_seconds = 600 # waiting time worth one priority level (default 600; 0: strict priority)

// MaxLaunching bounds the agents being launched at once. Admission takes no more while
// this many launches are in flight: the rest of a burst waits queued, with its position,
// instead of as goroutines on the host (10,500 admitted at once left 4,388 goroutines
// waiting on tmux, 9,066 agents starting for 30 minutes and the server at 67 % CPU). A
// launch is a few host round trips, so 8 at once keeps a 2-core machine busy without
// queueing inside tmux.
const MaxLaunching = 8

// DefaultAging is what one priority level is worth in waiting time.
const DefaultAging = 10 * time.Minute

// memRecheck is how often a queue the memory guard holds re-reads free memory.
const memRecheck = 2 * time.Second

// fleet is the engine's queue and GC state. It is guarded by Engine.mu
// unless a field says otherwise.
type fleet struct {
	q   admitQueue
	inQ map[*agentRT]struct{} // agents in q.items
	// live holds the admitted agents that have not ended (nor gone back to the queue,
	// nor hibernated), each with the provider it counts for in running; total is
	// len(live). writeLocked drops an agent the moment its record leaves, so admission
	// reads the counts without a pass over every live agent.
	live    map[*agentRT]string
	running map[string]int
	loaded  bool // the first admission loaded the queue from e.agents
	// admitting: admission runs (startAdmission), which Start begins once every
	// feature's Start has returned. Before, a spawn (a feature's Start resuming its work calls
	// agent.run) only waits in the queue: launching it at once would run the features'
	// launch hooks (a sandbox's WrapLaunch) while their Start still sets them up.
	admitting bool
	// launching counts admitted agents whose launch (worktree, hooks, the host's new
	// pane) has not returned; admission keeps it at most MaxLaunching.
	launching int
	gc        GCRules
	pruned    uint64 // events up to this seq are known pruned
}

// qEntry is one queued agent with its rank inputs copied, so comparisons never read
// the record. Its arrival never changes while it waits; its priority changes only
// through reprioritise, which updates the entry and re-sorts under Engine.mu.
type qEntry struct {
	rt   *agentRT
	prio int
	at   int64 // arrival, unix nanoseconds
	id   string
}

// admitQueue is kept sorted in admission order.
type admitQueue struct {
	items []qEntry
	aging time.Duration
	dirty bool // order changed since positions were last written
}

// rankBefore reports whether a is admitted before b.
func (q *admitQueue) rankBefore(a, b *qEntry) bool {
	if q.aging > 0 && a.prio != b.prio {
		// Seconds as float64: exact enough to order (sub-microsecond), and no overflow
		// for any priority a user can type.
		va := float64(a.at)/1e9 - float64(a.prio)*q.aging.Seconds()
		vb := float64(b.at)/1e9 - float64(b.prio)*q.aging.Seconds()
		if va != vb {
			return va < vb
		}
	}
	if a.prio != b.prio {
		return a.prio > b.prio
	}
	if a.at != b.at {
		return a.at < b.at
	}
	return a.id < b.id
}

func entryOf(rt *agentRT) qEntry {
	return qEntry{rt: rt, prio: rt.a.Priority, at: rt.a.CreatedAt.UnixNano(), id: rt.a.ID}
}

// insert places e at its rank (O(log n) to find, one memmove to make room) and
// renumbers the entries from there on, so positions are right before the next
// admission: O(1) for the usual arrival at the back.
func (q *admitQueue) insert(e qEntry) {
	i := sort.Search(len(q.items), func(i int) bool { return q.rankBefore(&e, &q.items[i]) })
	q.items = append(q.items, qEntry{})
	copy(q.items[i+1:], q.items[i:])
	q.items[i] = e
	for j := i; j < len(q.items); j++ {
		setQueuePosLocked(q.items[j].rt, j+1)
	}
}

// setAging re-sorts when the aging step changes (rare: config reload or queue caps).
func (q *admitQueue) setAging(d time.Duration) {
	if d == q.aging {
		return
	}
	q.aging = d
	sort.SliceStable(q.items, func(i, j int) bool { return q.rankBefore(&q.items[i], &q.items[j]) })
	q.dirty = true
}

// pick chooses the entries to admit given the caps, what runs now, the free launch
// slots (negative: no bound) and the gates, removes them and every entry that is no
// longer queued (killed while waiting), and refreshes the positions of the rest. It
// returns the admitted and the dropped agents, the first gate refusal and the earliest
// time a gate wants to be asked again. One pass; the caller holds Engine.mu.
func (q *admitQueue) pick(lim Limits, running map[string]int, total, slots int, gate func(a wire.Agent) (bool, string, time.Time)) (out, dropped []*agentRT, held string, retryAt time.Time) {
	keep := q.items[:0]
	full := map[string]bool{} // providers at their cap
	globalFull := lim.Global > 0 && total >= lim.Global
	for _, en := range q.items {
		rt := en.rt
		if rt.a.State != wire.StateQueued {
			dropped = append(dropped, rt)
			q.dirty = true
			continue
		}
		if globalFull || full[rt.a.Provider] || (slots >= 0 && len(out) >= slots) {
			keep = append(keep, en)
			continue
		}
		if c := lim.Provider[rt.a.Provider]; c > 0 && running[rt.a.Provider] >= c {
			full[rt.a.Provider] = true
			keep = append(keep, en)
			continue
		}
		if ok, why, at := gate(rt.a); !ok {
			if held == "" {
				held = why
			}
			if !at.IsZero() && (retryAt.IsZero() || at.Before(retryAt)) {
				retryAt = at
			}
			keep = append(keep, en)
			continue
		}
		running[rt.a.Provider]++
		total++
		globalFull = lim.Global > 0 && total >= lim.Global
		out = append(out, rt)
		q.dirty = true
	}
	clear(q.items[len(keep):]) // drop references for the GC
	q.items = keep
	if q.dirty {
		for i, en := range q.items {
			setQueuePosLocked(en.rt, i+1)
		}
		q.dirty = false
	}
	return out, dropped, held, retryAt
}

// enqueue adds a freshly stored queued agent to the queue and wakes admission.
func (e *Engine) enqueue(rt *agentRT) {
	e.mu.Lock()
	if e.fl.loaded && rt.a.State == wire.StateQueued {
		if _, ok := e.fl.inQ[rt]; !ok {
			e.fl.inQ[rt] = struct{}{}
			e.fl.q.insert(entryOf(rt))
		}
	}
	e.mu.Unlock()
	e.kickAdmission()
}

// reprioritise answers queue.priority: it changes a queued agent's priority (stored,
// with an agent.updated event) and moves its queue entry to its new rank in the same
// lock hold, so the next admission already sees the new order. Only a queued agent
// has a place to move; any other is refused with not_queued. It is a plain function
// so the kernel grows no method.
func reprioritise(ctx context.Context, e *Engine, p wire.PriorityParams) (wire.Agent, error) {
	if (p.To == nil) == (p.By == 0) {
		return wire.Agent{}, wire.Errorf(wire.CodeInvalidParams, "give the new priority (to) or the change (by), one of them")
	}
	rt, err := e.resolve(ctx, p.Target)
	if err != nil {
		return wire.Agent{}, err
	}
	e.mu.Lock()
	defer e.kickAdmission()
	defer e.mu.Unlock()
	if rt.a.State != wire.StateQueued {
		return rt.a, wire.Errorf(wire.CodeNotQueued, "%s is %s, not queued: a priority only orders the queue", rt.a.Path, rt.a.State)
	}
	prio := rt.a.Priority + p.By
	if p.To != nil {
		prio = *p.To
	}
	if prio < -wire.MaxPriority || prio > wire.MaxPriority {
		return rt.a, wire.Errorf(wire.CodeInvalidParams, "priority %d out of range: it must be %d to %d", prio, -wire.MaxPriority, wire.MaxPriority)
	}
	a, _, err := e.changeLocked(ctx, rt, func(a wire.Agent) (wire.Agent, *wire.Event, bool) {
		a.Priority = prio
		return a, &wire.Event{Event: wire.EventAgentUpdated}, true
	})
	if err != nil {
		return a, err
	}
	if _, ok := e.fl.inQ[rt]; ok {
		q := &e.fl.q
		for i := range q.items {
			if q.items[i].rt == rt {
				q.items[i].prio = prio
			}
		}
		sort.SliceStable(q.items, func(i, j int) bool { return q.rankBefore(&q.items[i], &q.items[j]) })
		for i, en := range q.items {
			setQueuePosLocked(en.rt, i+1)
		}
	}
	return rt.a, nil
}

// loadQueueLocked builds the queue and the live set from the records, once.
func (e *Engine) loadQueueLocked() {
	if e.fl.loaded {
		return
	}
	e.fl.loaded = true
	if e.fl.inQ == nil {
		e.fl.inQ = map[*agentRT]struct{}{}
	}
	if e.fl.live == nil {
		e.fl.live, e.fl.running = map[*agentRT]string{}, map[string]int{}
	}
	e.fl.q.aging = e.limits.Aging
	for _, rt := range e.agents {
		switch {
		case rt.a.State == wire.StateQueued:
			e.fl.inQ[rt] = struct{}{}
			e.fl.q.items = append(e.fl.q.items, entryOf(rt))
		case rt.a.State.Live() && !leftLive(rt.a.State):
			addLiveLocked(e, rt)
		}
	}
	q := &e.fl.q
	sort.Slice(q.items, func(i, j int) bool { return q.rankBefore(&q.items[i], &q.items[j]) })
	for i, en := range q.items {
		setQueuePosLocked(en.rt, i+1)
	}
}

// setQueuePosLocked writes a queued record's position. Positions are derived from the
// queue's order: held in memory only (the queue rebuilds them when it loads), they
// make no event and no store write, which keeps an arrival O(1). The write is a
// check-and-set like every other: a record that has left the queue (killed while
// waiting, admitted) keeps position 0, which End and MoveTo set when it leaves.
func setQueuePosLocked(rt *agentRT, pos int) {
	if rt.a.State == wire.StateQueued {
		rt.a.QueuePos = pos
	}
}

// runningLocked counts admitted agents that have not ended, per provider and in all.
// The map is the caller's to change.
func (e *Engine) runningLocked() (map[string]int, int) {
	return maps.Clone(e.fl.running), len(e.fl.live)
}

// leftLive reports whether a record in state s no longer counts against the caps: it
// ended, or has no process (hibernated; woken, it is admitted again), or waits in the
// queue again.
func leftLive(s wire.State) bool {
	return s.Terminal() || s == wire.StateHibernated || s == wire.StateQueued
}

// addLiveLocked counts an admitted agent against the caps, once.
func addLiveLocked(e *Engine, rt *agentRT) {
	if _, ok := e.fl.live[rt]; ok || e.fl.live == nil {
		return
	}
	e.fl.live[rt] = rt.a.Provider
	e.fl.running[rt.a.Provider]++
}

// dropLiveLocked stops counting an agent against the caps (writeLocked calls it when
// its record leaves: see leftLive).
func dropLiveLocked(e *Engine, rt *agentRT) {
	prov, ok := e.fl.live[rt]
	if !ok {
		return
	}
	delete(e.fl.live, rt)
	if e.fl.running[prov]--; e.fl.running[prov] <= 0 {
		delete(e.fl.running, prov)
	}
}

// setLimits changes the admission caps; they apply at the next admission.
func (e *Engine) setLimits(l Limits) {
	e.mu.Lock()
	e.limits = l
	e.mu.Unlock()
	e.kickAdmission()
}

// ApplyLimits validates l and makes it the caps (config load and reload).
func (e *Engine) ApplyLimits(l Limits) error {
	if err := e.validateLimits(l); err != nil {
		return err
	}
	e.setLimits(l)
	return nil
}

// Limits returns the caps in force.
func (e *Engine) Limits() Limits {
	e.mu.Lock()
	defer e.mu.Unlock()
	return cloneLimits(e.limits)
}

func cloneLimits(l Limits) Limits {
	c := l
	c.Provider = make(map[string]int, len(l.Provider))
	for k, v := range l.Provider {
		c.Provider[k] = v
	}
	c.Origin = make(map[string]string, len(l.Origin))
	for k, v := range l.Origin {
		c.Origin[k] = v
	}
	return c
}

// wellKnownProviders may carry caps before their adapter is installed (a config
// written for claude stays valid on a machine without it).
var wellKnownProviders = []string{"claude", "codex", "opencode", "pi", "shell"}

func (e *Engine) validateLimits(l Limits) error {
	if l.Global < 0 {
		return wire.Errorf(wire.CodeInvalidParams, "global cap %d must not be negative (0 means unlimited)", l.Global)
	}
	if l.MinFreeMB < 0 {
		return wire.Errorf(wire.CodeInvalidParams, "min_free_mb %d must not be negative (0 turns the memory guard off)", l.MinFreeMB)
	}
	if l.Aging < 0 {
		return wire.Errorf(wire.CodeInvalidParams, "aging %s must not be negative (0 turns aging off)", l.Aging)
	}
	known := map[string]bool{}
	for _, n := range wellKnownProviders {
		known[n] = true
	}
	for n := range e.providers {
		known[n] = true
	}
	names := make([]string, 0, len(l.Provider))
	for n := range l.Provider {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !known[n] {
			var ks []string
			for k := range known {
				ks = append(ks, k)
			}
			sort.Strings(ks)
			return wire.Errorf(wire.CodeUnknownProvider, "cap for unknown provider %q; known: %s", n, strings.Join(ks, ", "))
		}
		if l.Provider[n] < 0 {
			return wire.Errorf(wire.CodeInvalidParams, "%s cap %d must not be negative (0 means unlimited)", n, l.Provider[n])
		}
	}
	return nil
}

// SetCaps changes some caps at runtime (queue.caps) and returns the queue under them.
func (e *Engine) SetCaps(ctx context.Context, p wire.CapsParams) (wire.QueueResult, error) {
	l := e.Limits()
	if p.Global != nil {
		l.Global = *p.Global
		l.Origin[CapGlobal] = OriginRuntime
	}
	if p.MinFreeMB != nil {
		l.MinFreeMB = *p.MinFreeMB
		l.Origin[CapMinFree] = OriginRuntime
	}
	if p.AgingSeconds != nil {
		if *p.AgingSeconds < 0 || *p.AgingSeconds > math.MaxInt32 {
			return wire.QueueResult{}, wire.Errorf(wire.CodeInvalidParams, "aging %ds out of range (0 turns aging off)", *p.AgingSeconds)
		}
		l.Aging = time.Duration(*p.AgingSeconds) * time.Second
	}
	for k, v := range p.Provider {
		l.Provider[k] = v
		l.Origin[k] = OriginRuntime
	}
	if err := e.validateLimits(l); err != nil {
		return wire.QueueResult{}, err
	}
	for k, v := range l.Provider {
		if v == 0 {
			delete(l.Provider, k)
		}
	}
	e.setLimits(l)
	e.log.Info("caps changed", "global", l.Global, "provider", fmt.Sprint(l.Provider), "minFreeMb", l.MinFreeMB, "aging", l.Aging)
	return e.Queue(ctx)
}

func (e *Engine) kickAdmission() {
	select {
	case e.admitWake <- struct{}{}:
	default:
	}
}

// startAdmission opens admission once every feature has started: from here a spawn
// that nothing holds is launched at once (spawnLocked), and admission's loop takes
// the queue, starting with what waited meanwhile.
func startAdmission(e *Engine) {
	e.mu.Lock()
	e.fl.admitting = true
	e.mu.Unlock()
	e.wg.Add(1)
	go e.admitLoop()
	e.kickAdmission()
}

func (e *Engine) admitLoop() {
	defer e.wg.Done()
	recheck := time.NewTimer(time.Hour)
	recheck.Stop()
	defer recheck.Stop()
	for {
		select {
		case <-e.ctx.Done():
			return
		case <-e.admitWake:
		case <-recheck.C:
		}
		out, retryAt := e.admit()
		if !retryAt.IsZero() {
			if !recheck.Stop() {
				select {
				case <-recheck.C:
				default:
				}
			}
			recheck.Reset(max(time.Until(retryAt), 5*time.Millisecond))
		}
		for _, rt := range out {
			e.wg.Add(1)
			go launchAdmitted(e, rt)
		}
	}
}

// launchAdmitted launches an agent admission took (counted in e.fl.launching and
// e.wg by the caller) and frees its launch slot after.
func launchAdmitted(e *Engine, rt *agentRT) {
	defer e.wg.Done()
	defer func() {
		// The slot is free: admission may take the next queued agent.
		e.mu.Lock()
		e.fl.launching--
		e.mu.Unlock()
		e.kickAdmission()
	}()
	e.mu.Lock()
	ok := rt.a.State == wire.StateStarting
	e.mu.Unlock()
	if ok { // not killed between admission and here
		e.launch(e.ctx, rt)
	}
}

// admissionGate is the gate admission asks about each agent it may take: the
// features' gates, then (on a yes) the placers, whose placements it notes in placed
// (account) and onNode (node) by agent id. A gate's yes is final within the pass, so
// the placers are asked right then: each placement is seen by the gates deciding the
// agents after it. The caller holds e.mu.
func admissionGate(e *Engine) (gate func(a wire.Agent) (bool, string, time.Time), placed, onNode map[string]string) {
	placed, onNode = map[string]string{}, map[string]string{}
	gate = func(a wire.Agent) (bool, string, time.Time) {
		ok, why, at := e.gateLocked(e.ctx, a)
		if ok {
			if acct := e.placeLocked(e.ctx, a); acct != "" {
				placed[a.ID] = acct
				a.Account = acct // the node placer looks for a place with this account
			}
			if n := nodeLocked(e.ctx, e, a); n != "" {
				onNode[a.ID] = n
			}
		}
		return ok, why, at
	}
	return gate, placed, onNode
}

// admitted is a's record once admission took it: starting, with the account and node
// it was placed on (when any).
func admitted(a wire.Agent, acct, node string, now time.Time) (wire.Agent, wire.Event, bool) {
	next, ev, ok := MoveTo(a, wire.StateStarting, "server", "admitted", nil, now)
	if ok && acct != "" {
		next.Account = acct
	}
	if ok && node != "" {
		next.Node = node
	}
	return next, ev, ok
}

// admit picks the queued agents that may start now and marks them starting (stored
// before anything is launched, so a crash never launches one twice). retryAt is when
// a gate that holds some of them wants to be asked again (zero: no such wish).
func (e *Engine) admit() (out []*agentRT, retryAt time.Time) {
	e.mu.Lock()
	e.loadQueueLocked()
	if len(e.fl.q.items) == 0 {
		// Nothing waits (the pass after each launch, most often): nothing to decide.
		e.mu.Unlock()
		return nil, time.Time{}
	}
	lim := e.limits
	e.fl.q.setAging(lim.Aging)
	running, total := e.runningLocked()
	gate, placed, onNode := admissionGate(e)
	out, dropped, held, retryAt := e.fl.q.pick(lim, running, total, max(0, MaxLaunching-e.fl.launching), gate)
	for _, rt := range dropped {
		delete(e.fl.inQ, rt)
	}
	// Each admitted agent becomes starting in the same lock hold as the decision, so a
	// kill cannot slip between them; the pick saw every one of them queued. Its
	// account is part of the same write.
	started := out[:0]
	now := e.now()
	for _, rt := range out {
		delete(e.fl.inQ, rt)
		acct, node := placed[rt.a.ID], onNode[rt.a.ID]
		_, ok, _ := e.changeLocked(e.ctx, rt, func(a wire.Agent) (wire.Agent, *wire.Event, bool) {
			next, ev, ok := admitted(a, acct, node, now)
			return next, &ev, ok
		})
		if ok {
			addLiveLocked(e, rt)
			started = append(started, rt)
		}
	}
	out = started
	e.fl.launching += len(out)
	e.mu.Unlock()
	if held != "" {
		e.log.Info("admission held", "why", held)
	}
	return out, retryAt
}

// neverLaunched reports whether an agent found starting after a restart was admitted
// but never launched: it has no pane id, and its host (tmux, herdr), whose panes
// outlive the server, shows no pane by its name, so nothing of it ever ran.
func (e *Engine) neverLaunched(a wire.Agent) bool {
	return a.State == wire.StateStarting && a.PaneID == "" && e.host.Name() != "pty"
}

// requeue returns an admitted agent that never launched to the queue, where its
// original arrival keeps its place.
func (e *Engine) requeue(ctx context.Context, rt *agentRT) {
	e.setState(ctx, rt, wire.StateQueued, "server", "admitted but not launched before the server stopped; queued again", nil)
}

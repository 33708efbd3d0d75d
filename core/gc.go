package core

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"orcr/core/wire"
)

// Lifecycle GC (DESIGN §7): three declarative rules, each of which names itself in the
// event it publishes, so `orcr agent ls`, the dashboard and the event log can say why
// something went away.
//
//	gc.exited_grace  a pane whose agent ended is closed this long after the end; the
//	                 record keeps the last screen (saved at exit, or here if missing)
//	gc.idle_after    a live agent done or idle this long is stopped, unless --keep
//	gc.retain        records ended this long ago are deleted, and events older than
//	                 this are pruned from the log
//
// Config: [gc] exited_grace = "10m", idle_after = "8h", retain = "168h" are the
// defaults; "0" turns a rule off. The sweep runs every 30 s and on `orcr gc`.

// GCRules are the collection rules. A zero duration means the default; a negative one
// turns the rule off.
type GCRules struct {
	ExitedGrace time.Duration
	IdleAfter   time.Duration
	Retain      time.Duration
	Every       time.Duration // how often the sweep runs
	// IdleAction is what gc.idle_after does: "stop" (default) or "hibernate" (keep
	// the session; a send resumes it). An agent with no session is stopped.
	IdleAction string
}

// Idle actions.
const (
	IdleStop      = "stop"
	IdleHibernate = "hibernate"
)

// Rule names as they appear in events.
const (
	RuleExitedGrace = "gc.exited_grace"
	RuleIdleAfter   = "gc.idle_after"
	RuleRetain      = "gc.retain"
)

// DefaultGCRules are the rules when the config says nothing.
func DefaultGCRules() GCRules {
	return GCRules{ExitedGrace: 10 * time.Minute, IdleAfter: 8 * time.Hour, Retain: 7 * 24 * time.Hour, Every: 30 * time.Second}
}

// withDefaults fills zero fields from DefaultGCRules.
func (r GCRules) withDefaults() GCRules {
	d := DefaultGCRules()
	if r.ExitedGrace == 0 {
		r.ExitedGrace = d.ExitedGrace
	}
	if r.IdleAfter == 0 {
		r.IdleAfter = d.IdleAfter
	}
	if r.Retain == 0 {
		r.Retain = d.Retain
	}
	if r.Every <= 0 {
		r.Every = d.Every
	}
	return r
}

// SetGCRules changes the rules (config reload); the next sweep uses them.
func (e *Engine) SetGCRules(r GCRules) {
	e.mu.Lock()
	e.fl.gc = r.withDefaults()
	e.mu.Unlock()
}

func secs(d time.Duration) int {
	if d < 0 {
		return 0
	}
	return int(d / time.Second)
}

// GC runs the rules now (gc.run); with DryRun it only says what it would do.
func (e *Engine) GC(ctx context.Context, p wire.GCParams) (wire.GCResult, error) {
	return e.collect(ctx, p.DryRun)
}

// gcLoop sweeps on a ticker until the engine stops.
func (e *Engine) gcLoop() {
	defer e.wg.Done()
	e.mu.Lock()
	every := e.fl.gc.Every
	e.mu.Unlock()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-e.ctx.Done():
			return
		case <-t.C:
		}
		if _, err := e.collect(e.ctx, false); err != nil && e.ctx.Err() == nil {
			e.log.Warn("gc sweep", "err", err)
		}
	}
}

type gcTarget struct {
	rt *agentRT
	a  wire.Agent
}

// quietSince is when agent a of rt last changed state or was given input, whichever
// is later: what gc.idle_after measures its idle time from.
func quietSince(a wire.Agent, rt *agentRT) time.Time {
	if in := rt.lastInput.Load(); in != 0 && time.Unix(0, in).After(a.StateAt) {
		return time.Unix(0, in)
	}
	return a.StateAt
}

// collect applies the rules once.
func (e *Engine) collect(ctx context.Context, dryRun bool) (wire.GCResult, error) {
	now := e.now()
	e.mu.Lock()
	rules := e.fl.gc
	if rules == (GCRules{}) {
		rules = DefaultGCRules()
	}
	targets := make([]gcTarget, 0, len(e.agents))
	// owner says which agent a pane id belongs to now: host pane ids can be reused
	// (the embedded host after a restart, tmux after its server restarted), and an
	// ended agent's old id must never close a newer agent's pane.
	owner := make(map[string]string, len(e.panes))
	for id, agent := range e.panes {
		owner[id] = agent
	}
	for _, rt := range e.agents {
		targets = append(targets, gcTarget{rt: rt, a: rt.a})
	}
	e.mu.Unlock()
	sort.Slice(targets, func(i, j int) bool { return targets[i].a.CreatedAt.Before(targets[j].a.CreatedAt) })
	res := wire.GCResult{DryRun: dryRun, Actions: []wire.GCAction{},
		ExitedGraceSeconds: secs(rules.ExitedGrace), IdleAfterSeconds: secs(rules.IdleAfter), RetainSeconds: secs(rules.Retain)}
	panes := map[string]bool{}
	if infos, err := e.host.List(ctx); err == nil {
		for _, p := range infos {
			panes[p.ID] = true
		}
	} else {
		return res, fmt.Errorf("list host panes: %w", err)
	}
	// Old events go first, so the events this sweep publishes are not among them.
	if rules.Retain > 0 {
		upTo, err := e.prunableEvents(ctx, now.Add(-rules.Retain))
		if err != nil {
			return res, err
		}
		if upTo > 0 {
			res.Actions = append(res.Actions, wire.GCAction{Rule: RuleRetain, Action: "prune_events",
				Detail: fmt.Sprintf("events up to seq %d (older than %s)", upTo, rules.Retain)})
			if !dryRun {
				if err := e.store.PruneEvents(ctx, upTo); err != nil {
					return res, fmt.Errorf("prune events: %w", err)
				}
				e.mu.Lock()
				e.fl.pruned = upTo
				e.mu.Unlock()
				e.broker.publish(ctx, wire.Event{Event: wire.EventEventsPruned, Rule: RuleRetain,
					Data: map[string]any{"upTo": upTo}})
			}
		}
	}
	act := func(t gcTarget, rule, action, detail string) wire.GCAction {
		return wire.GCAction{Rule: rule, Action: action, AgentID: t.a.ID, Path: t.a.Path, Detail: detail}
	}
	for _, t := range targets {
		a := t.a
		ended := a.EndedAt != nil && a.State.Terminal()
		paneOpen := a.PaneID != "" && panes[a.PaneID] && owner[a.PaneID] == a.ID
		switch {
		case ended && rules.Retain > 0 && now.Sub(*a.EndedAt) >= rules.Retain:
			x := act(t, RuleRetain, "remove", fmt.Sprintf("%s %s ago (retain %s)", a.State, age(now.Sub(*a.EndedAt)), rules.Retain))
			res.Actions = append(res.Actions, x)
			if !dryRun {
				if err := e.removeAgent(ctx, t.rt, a, paneOpen, x); err != nil {
					return res, err
				}
			}
		case ended && paneOpen && rules.ExitedGrace > 0 && now.Sub(*a.EndedAt) >= rules.ExitedGrace:
			x := act(t, RuleExitedGrace, "close_pane", fmt.Sprintf("%s %s ago (grace %s)", a.State, age(now.Sub(*a.EndedAt)), rules.ExitedGrace))
			res.Actions = append(res.Actions, x)
			if !dryRun {
				e.closeEndedPane(ctx, t.rt, a, x)
			}
		case (a.State == wire.StateDone || a.State == wire.StateIdle) && !a.Keep && rules.IdleAfter > 0 && now.Sub(quietSince(a, t.rt)) >= rules.IdleAfter:
			x := act(t, RuleIdleAfter, "stop", fmt.Sprintf("%s for %s (idle_after %s)", a.State, age(now.Sub(quietSince(a, t.rt))), rules.IdleAfter))
			res.Actions = append(res.Actions, x)
			if !dryRun {
				// Decided on a snapshot: stop it only if it is idle still (a prompt
				// may have arrived since), checked in the same lock hold as the kill.
				// The collection event goes out in that hold too, just before the kill.
				idle := func(cur wire.Agent) bool {
					if cur.State != wire.StateDone && cur.State != wire.StateIdle || now.Sub(quietSince(cur, t.rt)) < rules.IdleAfter {
						return false
					}
					e.publishGC(ctx, a, x)
					return true
				}
				if rules.IdleAction != IdleHibernate || !e.hibernate(ctx, t.rt, "hibernated by "+RuleIdleAfter+": "+x.Detail, idle) {
					e.killOne(ctx, t.rt, "stopped by "+RuleIdleAfter+": "+x.Detail, idle)
				}
			}
		}
	}
	return res, nil
}

func (e *Engine) publishGC(ctx context.Context, a wire.Agent, x wire.GCAction) {
	a.LastScreen = "" // events stay small; the record has it
	if _, err := e.broker.publish(ctx, wire.Event{Event: wire.EventGCCollected, Agent: &a, Rule: x.Rule,
		Data: map[string]any{"action": x.Action, "detail": x.Detail}}); err != nil {
		e.log.Warn("publish gc event", "err", err)
	}
}

// closeEndedPane closes the pane of an ended agent, keeping its last screen.
func (e *Engine) closeEndedPane(ctx context.Context, rt *agentRT, a wire.Agent, x wire.GCAction) {
	if a.LastScreen == "" {
		if scr, err := e.host.Read(ctx, a.PaneID, ReadOpts{Lines: 200}); err == nil {
			e.mutate(ctx, rt, func(r *wire.Agent) { r.LastScreen = scr.Text }, nil)
		}
	}
	if err := e.host.Close(ctx, a.PaneID); err != nil {
		e.log.Warn("gc close pane", "pane", a.PaneID, "err", err)
		return
	}
	e.mu.Lock()
	delete(e.panes, a.PaneID)
	e.mu.Unlock()
	e.publishGC(ctx, a, x)
}

// removeAgent deletes an ended agent's record and state directory.
func (e *Engine) removeAgent(ctx context.Context, rt *agentRT, a wire.Agent, paneOpen bool, x wire.GCAction) error {
	if paneOpen {
		_ = e.host.Close(ctx, a.PaneID)
	}
	if err := e.store.DeleteAgent(ctx, a.ID); err != nil {
		return fmt.Errorf("delete agent %s: %w", a.ID, err)
	}
	e.mu.Lock()
	delete(e.agents, a.ID)
	if a.PaneID != "" && e.panes[a.PaneID] == a.ID {
		delete(e.panes, a.PaneID)
	}
	e.mu.Unlock()
	if e.opts.Home != "" {
		_ = os.RemoveAll(filepath.Join(e.opts.Home, "agents", a.ID))
	}
	a.LastScreen = ""
	if _, err := e.broker.publish(ctx, wire.Event{Event: wire.EventAgentRemoved, Agent: &a, Rule: x.Rule,
		Data: map[string]any{"action": x.Action, "detail": x.Detail}}); err != nil {
		e.log.Warn("publish remove event", "err", err)
	}
	return nil
}

// prunableEvents returns the highest seq of the oldest run of events stamped before
// cutoff (0: none). Events are appended in time order, so the scan stops at the first
// newer one.
func (e *Engine) prunableEvents(ctx context.Context, cutoff time.Time) (uint64, error) {
	e.mu.Lock()
	after := e.fl.pruned
	e.mu.Unlock()
	var upTo uint64
	// The first read is of one event: on almost every sweep the oldest is not old
	// enough, and reading (and decoding) 500 to learn that was most of what an idle
	// server did every 30 s.
	for n := 1; ; n = 500 {
		evs, err := e.store.Events(ctx, after, n)
		if err != nil {
			return 0, fmt.Errorf("read events: %w", err)
		}
		for _, ev := range evs {
			if !ev.At.Before(cutoff) {
				return upTo, nil
			}
			upTo = ev.Seq
		}
		if len(evs) < n {
			return upTo, nil
		}
		after = evs[len(evs)-1].Seq
	}
}

// age is a short human duration for GC details.
func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		return d.Round(time.Minute).String()
	default:
		return d.Round(time.Hour).String()
	}
}

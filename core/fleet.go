package core

// This file holds the fleet's views (the queue, usage); the queue's logic is in
// queue.go, GC in gc.go.

import (
	"context"
	"encoding/json"
	"strconv"

	"orcr/core/wire"
)

// Queue shows queued agents against the caps, in admission order, each with why it
// is still waiting.
func (e *Engine) Queue(ctx context.Context) (wire.QueueResult, error) {
	e.mu.Lock()
	e.loadQueueLocked()
	lim := e.limits
	res := wire.QueueResult{Global: lim.Global, Caps: map[string]int{}, MinFreeMB: lim.MinFreeMB,
		Running: map[string]int{}}
	for k, v := range lim.Provider {
		res.Caps[k] = v
	}
	if len(lim.Origin) > 0 {
		res.Origins = make(map[string]string, len(lim.Origin))
		for k, v := range lim.Origin {
			res.Origins[k] = v
		}
	}
	running, total := e.runningLocked()
	for k, v := range running {
		res.Running[k] = v
	}
	res.Total = total
	res.Launching, res.MaxLaunching = e.fl.launching, MaxLaunching
	slots := MaxLaunching - e.fl.launching
	pos := 0
	for _, en := range e.fl.q.items {
		rt := en.rt
		if rt.a.State != wire.StateQueued {
			continue
		}
		pos++
		why := "next in line"
		c := lim.Provider[rt.a.Provider]
		ok, held, _ := e.gateLocked(ctx, rt.a)
		switch {
		case !ok:
			why = held
		case lim.Global > 0 && total >= lim.Global:
			why = "global cap " + strconv.Itoa(lim.Global) + " reached"
		case c > 0 && running[rt.a.Provider] >= c:
			why = rt.a.Provider + " cap " + strconv.Itoa(c) + " reached"
		case slots <= 0:
			why = "a launch slot (" + strconv.Itoa(MaxLaunching) + " agents launch at once)"
		default:
			slots--
			// Admission would take this one next: count it so later entries see the
			// caps as they will be.
			running[rt.a.Provider]++
			total++
		}
		res.Entries = append(res.Entries, wire.QueueEntry{Pos: pos, AgentID: rt.a.ID, Path: rt.a.Path,
			Provider: rt.a.Provider, Priority: rt.a.Priority, QueuedAt: rt.a.CreatedAt, Waiting: why})
	}
	res.FreeMB = e.mem.freeLocked()
	e.mu.Unlock()
	return res, nil
}

// FreeMemoryMB reads MemAvailable from /proc/meminfo (-1 when unknown).
func FreeMemoryMB() int { return meminfoMB("MemAvailable:") }

// Usage reports tokens and cost by provider, model and window.
func (e *Engine) Usage(ctx context.Context, p wire.UsageParams) (wire.UsageResult, error) {
	e.mu.Lock()
	agents := e.currentLocked(true)
	e.mu.Unlock()
	var readings []wire.LimitReading
	err := e.store.Scan(ctx, "limits", func(_ string, v []byte) bool {
		var r wire.LimitReading
		if json.Unmarshal(v, &r) == nil {
			readings = append(readings, r)
		}
		return true
	})
	if err != nil {
		return wire.UsageResult{}, err
	}
	return UsageReport(agents, readings, p), nil
}

// startFleet sets up the queue and GC and starts GC's loop. Engine.Start calls it
// after reconciling with the host.
func (e *Engine) startFleet() {
	e.mu.Lock()
	e.fl.gc = e.opts.GC.withDefaults()
	e.loadQueueLocked()
	e.mu.Unlock()
	e.wg.Add(1)
	go e.gcLoop()
}

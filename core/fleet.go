package core

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"

	"orcr/core/wire"
)

// Queue shows queued agents against the caps.
func (e *Engine) Queue(ctx context.Context) (wire.QueueResult, error) {
	e.renumberQueue()
	e.mu.Lock()
	lim := e.limits
	res := wire.QueueResult{Global: lim.Global, Caps: map[string]int{}, MinFreeMB: lim.MinFreeMB,
		Running: map[string]int{}}
	for k, v := range lim.Provider {
		res.Caps[k] = v
	}
	var queued []*agentRT
	for _, rt := range e.agents {
		switch {
		case rt.a.State == wire.StateQueued:
			queued = append(queued, rt)
		case rt.a.State.Live():
			res.Running[rt.a.Provider]++
			res.Total++
		}
	}
	sortQueue(queued)
	for i, rt := range queued {
		why := "next in line"
		switch {
		case lim.Global > 0 && res.Total >= lim.Global:
			why = "global cap " + strconv.Itoa(lim.Global) + " reached"
		case lim.Provider[rt.a.Provider] > 0 && res.Running[rt.a.Provider] >= lim.Provider[rt.a.Provider]:
			why = rt.a.Provider + " cap " + strconv.Itoa(lim.Provider[rt.a.Provider]) + " reached"
		}
		res.Entries = append(res.Entries, wire.QueueEntry{Pos: i + 1, AgentID: rt.a.ID, Path: rt.a.Path,
			Provider: rt.a.Provider, Priority: rt.a.Priority, QueuedAt: rt.a.CreatedAt, Waiting: why})
	}
	e.mu.Unlock()
	res.FreeMB = FreeMemoryMB()
	return res, nil
}

// FreeMemoryMB reads MemAvailable from /proc/meminfo (-1 when unknown).
func FreeMemoryMB() int {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "MemAvailable:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				kb, _ := strconv.Atoi(f[1])
				return kb / 1024
			}
		}
	}
	return -1
}

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
	if e.opts.UsageReport == nil {
		return wire.UsageResult{Readings: readings}, nil
	}
	return e.opts.UsageReport(agents, readings, p), nil
}

// Schedules lists the durable schedules.
func (e *Engine) Schedules(ctx context.Context) ([]wire.Schedule, error) {
	var out []wire.Schedule
	err := e.store.Scan(ctx, "schedules", func(_ string, v []byte) bool {
		var s wire.Schedule
		if json.Unmarshal(v, &s) == nil {
			out = append(out, s)
		}
		return true
	})
	return out, err
}

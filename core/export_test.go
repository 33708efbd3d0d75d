package core

import (
	"context"
	"time"
)

// SetFreeMemoryFunc replaces the free-memory reader of the memory guard (tests).
func (e *Engine) SetFreeMemoryFunc(f func() int) {
	e.mu.Lock()
	e.mem.read, e.mem.at = f, time.Time{}
	e.mu.Unlock()
	e.kickAdmission()
}

// ApplySignal folds s into agent id as its loop would (tests of the transition rules).
func (e *Engine) ApplySignal(ctx context.Context, id string, s *Signal) {
	e.mu.Lock()
	rt := e.agents[id]
	e.mu.Unlock()
	e.apply(ctx, rt, s)
}

package core

import (
	"context"
	"fmt"
	"time"

	"orcr/core/secretenv"
	"orcr/core/wire"
)

// Gate is a condition of admission beyond the caps: the memory guard is the first;
// accounts (usage windows) and budgets plug in the same way (Kernel.AddGate). The
// admission loop asks every gate, in order, about each queued agent the caps would
// let start; the first that says no holds that agent — only that one: work another
// gate-holder would not touch (another provider, model or path) keeps going.
type Gate interface {
	// Admit says whether a may start now. When it may not, reason says why (shown
	// in `orcr queue`, e.g. "budget review/**: $5.00 of $5.00 spent") and retryAt when
	// to ask again (zero: whenever admission wakes next — a run, an end, a caps
	// change). The agent carries what a gate decides on: provider, model, path,
	// priority, parent.
	//
	// Admit is called with the engine's lock held, for admission and for the queue
	// view alike, so it must be quick, free of side effects, and must not call back
	// into the engine; a gate that needs slow facts (a usage endpoint) keeps its own
	// reading fresh on its own goroutine and answers from it.
	Admit(ctx context.Context, a wire.Agent) (ok bool, reason string, retryAt time.Time)
}

// memoryGate holds admission while free memory is below limits.min_free_mb. One
// reading serves every agent of an admission pass (it is re-read after memFresh),
// so a long queue costs one read of /proc/meminfo, not one per agent.
type memoryGate struct {
	e *Engine
	// guarded by e.mu
	read   func() int // free memory reader (tests replace it)
	at     time.Time
	freeMB int
}

// memFresh is how long one free-memory reading answers for.
const memFresh = 100 * time.Millisecond

func (g *memoryGate) Admit(ctx context.Context, a wire.Agent) (bool, string, time.Time) {
	min := g.e.limits.MinFreeMB
	for _, gt := range g.e.ext.load().gates {
		if fp, ok := gt.(FleetPlacer); ok && fp.PlacesFleet() {
			// Machines beyond this one are registered: this machine's memory is one
			// place's among theirs, and the fleet placer weighs them all.
			return fp.AdmitFleet(ctx, a, LocalRoom{FreeMB: g.freeLocked(), MinFreeMB: min})
		}
	}
	if min <= 0 {
		return true, "", time.Time{}
	}
	if free := g.freeLocked(); free >= 0 && free < min {
		return false, fmt.Sprintf("memory guard: %d MB free < min_free_mb %d", free, min), time.Now().Add(memRecheck)
	}
	return true, "", time.Time{}
}

// freeLocked is the current reading, re-read when it is older than memFresh.
func (g *memoryGate) freeLocked() int {
	if now := time.Now(); g.at.IsZero() || now.Sub(g.at) >= memFresh {
		read := g.read
		if read == nil {
			read = FreeMemoryMB
		}
		g.freeMB, g.at = read(), now
	}
	return g.freeMB
}

// gateLocked asks every gate about a, in order; the first refusal wins.
func (e *Engine) gateLocked(ctx context.Context, a wire.Agent) (bool, string, time.Time) {
	for _, g := range e.ext.load().gates {
		if ok, why, at := g.Admit(ctx, a); !ok {
			return false, why, at
		}
	}
	return true, "", time.Time{}
}

// Placer is a Gate that also places what it admits on an account (DESIGN §10): the
// accounts gate. Place is called for each agent admitted, under the engine's lock, in
// admission order and right after every gate said yes, so each placement sees the
// ones before it (parallel admissions fan out across accounts). What it returns is
// stamped on the record (Agent.Account) in the same write that makes it starting.
type Placer interface {
	Gate
	Place(ctx context.Context, a wire.Agent) (account string)
	// AccountEnv is the environment of the account a runs on (a.Account): applied at
	// launch beneath the agent's own --env and shown to its provider (launch and
	// observer), never stored in the record (it may hold an API key). Called without
	// the engine's lock.
	AccountEnv(a wire.Agent) map[string]string
}

// SpawnChecker is a Gate that can refuse a spawn outright when it is asked for, before
// it is queued (an --account label that is not configured). A spawn it would merely
// hold is not an error. It is called without the engine's lock, with p.Path resolved
// (absolute, without the leading "/"), so a gate can do a spawn's slow work there — the
// budgets match the path against their globs — rather than in Admit.
type SpawnChecker interface {
	CheckSpawn(ctx context.Context, p wire.RunParams) error
}

// placeLocked asks the placers about an admitted agent; the first non-empty account wins.
func (e *Engine) placeLocked(ctx context.Context, a wire.Agent) string {
	for _, g := range e.ext.load().gates {
		if p, ok := g.(Placer); ok {
			if acct := p.Place(ctx, a); acct != "" {
				return acct
			}
		}
	}
	return ""
}

// agentEnv is the agent's environment beyond the clean base: its account's, then
// its own --env (which wins), with the values the record only names.
func (e *Engine) agentEnv(a wire.Agent) map[string]string {
	if own, err := envValues(e.opts.Home, e.opts.Secrets, a); err != nil {
		e.log.Warn("agent env values", "id", a.ID, "err", err)
		a.Env = nil
	} else {
		a.Env = own
	}
	var env map[string]string
	for _, g := range e.ext.load().gates {
		if p, ok := g.(Placer); ok && a.Account != "" {
			for k, v := range p.AccountEnv(a) {
				if env == nil {
					env = map[string]string{}
				}
				env[k] = v
			}
		}
	}
	if env == nil {
		return a.Env
	}
	// An account's env may name {{secret.NAME}}s of secrets.toml (DESIGN §16); a
	// reference that does not resolve fails the launch first (accountSecrets).
	if r, err := secretenv.Resolve(env, e.opts.Secrets); err == nil {
		env = r
	} else {
		e.log.Warn("account env secrets", "id", a.ID, "err", err)
	}
	for k, v := range a.Env {
		env[k] = v
	}
	return env
}

// accountSecrets resolves the {{secret.NAME}}s of a's account env, for the error
// that fails its launch: a missing secret, a secrets.toml others may read.
func (x *hooks) accountSecrets(a wire.Agent, secrets string) error {
	if a.Account == "" {
		return nil
	}
	for _, g := range x.gates {
		if p, ok := g.(Placer); ok {
			if _, err := secretenv.Resolve(p.AccountEnv(a), secrets); err != nil {
				return fmt.Errorf("the env of account %s: %w", a.Account, err)
			}
		}
	}
	return nil
}

// checkSpawn asks the gates that check spawns.
func (e *Engine) checkSpawn(ctx context.Context, p wire.RunParams) error {
	for _, g := range e.ext.load().gates {
		if c, ok := g.(SpawnChecker); ok {
			if err := c.CheckSpawn(ctx, p); err != nil {
				return err
			}
		}
	}
	return nil
}

package core

import (
	"context"
	"fmt"
	"os"
	"slices"

	"orcr/core/wire"
)

// Resume and hibernation (DESIGN §12). Both lean on the adapters' launch: a record
// with a SessionID is launched through the provider's own resume of that session
// (claude --resume, codex resume, pi and opencode --session), so the kernel only
// decides when, with which record, and keeps the path.

// resumable says whether a's session can be picked up again.
func resumable(a wire.Agent) error {
	if a.Provider == "shell" {
		return wire.Errorf(wire.CodeNoSession, "%s is a shell agent: the shell provider keeps no session to resume; start it anew with orcr agent run", a.Path)
	}
	if a.SessionID == "" {
		return wire.Errorf(wire.CodeNoSession, "%s has no recorded session id (its %s never reported one); start it anew with orcr agent run", a.Path, a.Provider)
	}
	if a.Transcript != "" {
		if _, err := os.Stat(a.Transcript); err != nil {
			return wire.Errorf(wire.CodeNoSession, "the session file of %s is gone (%s); start it anew with orcr agent run", a.Path, a.Transcript)
		}
	}
	return nil
}

// canResume is resumable plus the provider's own look at the session, when it keeps
// sessions where no file on the record shows them (before a resume or a wake). It
// runs without e.mu.
func (e *Engine) canResume(ctx context.Context, a wire.Agent) error {
	if err := resumable(a); err != nil {
		return err
	}
	if c, ok := e.providers[a.Provider].(SessionChecker); ok {
		return c.CheckSession(ctx, a, e.paneEnv(a))
	}
	return nil
}

// Resume brings an ended agent back as a new record continuing its session, in the
// same folder (its worktree, when it had one) and path; a hibernated one is woken in
// place.
func (e *Engine) Resume(ctx context.Context, p wire.ResumeParams) (wire.Agent, error) {
	rt, err := e.resolve(ctx, p.Target)
	if err != nil {
		return wire.Agent{}, err
	}
	e.mu.Lock()
	old := rt.a
	e.mu.Unlock()
	if err := e.canResume(ctx, old); err != nil {
		return wire.Agent{}, err
	}
	if old.State == wire.StateHibernated {
		if err := e.wake(ctx, rt, p.Prompt); err != nil {
			return wire.Agent{}, err
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		return rt.a, nil
	}
	if !old.State.Terminal() {
		return wire.Agent{}, &wire.Error{Code: wire.CodeInvalidParams,
			Message: fmt.Sprintf("%s is %s, not ended: give it work with orcr agent send %s TEXT", old.Path, old.State, old.Path)}
	}
	if _, err := os.Stat(old.Cwd); err != nil {
		return wire.Agent{}, wire.Errorf(wire.CodeNoSession, "the folder of %s is gone (%s)", old.Path, old.Cwd)
	}
	// The new record keeps the old one's env values apart, as a spawn does.
	oldEnv, err := storedEnv(e.opts.Home, old)
	if err != nil {
		return wire.Agent{}, wire.Errorf(wire.CodeNoSession, "the env of %s: %v", old.Path, err)
	}
	now := e.now()
	a := wire.Agent{
		ID: newID(), Path: old.Path, ParentID: old.ParentID, ParentPath: old.ParentPath,
		Provider: old.Provider, Model: old.Model, Cwd: old.Cwd, Env: old.Env, Prompt: p.Prompt,
		Priority: old.Priority, Keep: old.Keep, Role: old.Role, RoleNotes: old.RoleNotes, SystemPrompt: old.SystemPrompt,
		Limits: wire.AgentLimits{MaxTurns: old.Limits.MaxTurns, SoftTimeoutSeconds: old.Limits.SoftTimeoutSeconds,
			HardTimeoutSeconds: old.Limits.HardTimeoutSeconds, BudgetUSD: old.Limits.BudgetUSD, BudgetAction: old.Limits.BudgetAction},
		SessionID: old.SessionID, Transcript: old.Transcript, ResumedFrom: old.ID,
		Identity: old.Identity, Spawn: old.Spawn,
		Account: old.Account, // the session lives in that account's config dir
		Sandbox: old.Sandbox,
		State:   wire.StateQueued, StateSource: "server", StateReason: "resuming " + old.ID + ": waiting for admission",
		Host: e.host.Name(), CreatedAt: now, StateAt: now,
	}
	// The flags the agent was started with (a role's or a run's --allowedTools, its
	// --mcp-config, the user's own) come with it, as they do when it wakes.
	a.Argv = slices.Clone(givenArgv(old))
	if err := keepEnv(e.opts.Home, &a, oldEnv); err != nil {
		return wire.Agent{}, err
	}
	// The worktree is the old one (Cwd): no new worktree is made for a resume.
	rt2 := &agentRT{a: a}
	e.mu.Lock()
	if other := e.liveByPathLocked(a.Path); other != nil {
		state, otherID := other.a.State, other.a.ID // under the lock: its loop writes them
		e.mu.Unlock()
		dropEnv(e.opts.Home, a.ID)
		return wire.Agent{}, &wire.Error{Code: wire.CodePathTaken,
			Message: fmt.Sprintf("%s is %s again (%s); kill it first: orcr agent kill %s", a.Path, state, otherID, a.Path)}
	}
	e.agents[a.ID] = rt2
	e.mu.Unlock()
	stored, err := e.mutate(ctx, rt2, func(*wire.Agent) {}, &wire.Event{Event: wire.EventAgentSpawned, To: wire.StateQueued})
	if err != nil {
		e.mu.Lock()
		delete(e.agents, a.ID)
		e.mu.Unlock()
		dropEnv(e.opts.Home, a.ID)
		return wire.Agent{}, err
	}
	e.enqueue(rt2)
	return stored, nil
}

// hibernate stops an idle agent's process but keeps its record and session: the
// state becomes hibernated, the path stays held, and a send wakes it. still is
// checked in the same lock hold as the change (GC decided on a snapshot). It reports
// whether the agent was hibernated; an agent whose session cannot be resumed is not.
func (e *Engine) hibernate(ctx context.Context, rt *agentRT, reason string, still func(a wire.Agent) bool) bool {
	e.mu.Lock()
	a := rt.a
	stop, done := rt.stop, rt.done
	e.mu.Unlock()
	// The session is the running program's own, so the provider is not asked (for
	// opencode that is a process start per agent GC hibernates).
	if a.PaneID == "" || resumable(a) != nil {
		return false
	}
	screen := ""
	if scr, err := e.host.Read(ctx, a.PaneID, ReadOpts{Lines: 200}); err == nil {
		screen = scr.Text
	}
	// The loop stops first, so no signal lands between the decision and the close.
	if stop != nil {
		stop()
		<-done
	}
	now := e.now()
	pane := a.PaneID
	_, ok, _ := e.change(ctx, rt, func(cur wire.Agent) (wire.Agent, *wire.Event, bool) {
		if still != nil && !still(cur) {
			return cur, nil, false
		}
		next, ev, moved := MoveTo(cur, wire.StateHibernated, "server", reason, nil, now)
		if !moved {
			return cur, nil, false
		}
		next.LastScreen, next.PaneID, next.PID = screen, "", 0
		return next, &ev, true
	})
	e.mu.Lock()
	rt.done, rt.stop = nil, nil
	rt.obs.Store(nil)
	if ok {
		delete(e.panes, pane)
	}
	e.mu.Unlock()
	if !ok {
		e.startLoop(rt) // not idle any more: keep watching it
		return false
	}
	if err := e.host.Close(ctx, pane); err != nil {
		e.log.Warn("close hibernated pane", "pane", pane, "err", err)
	}
	e.mu.Lock()
	delete(e.earlyExit, pane)
	e.mu.Unlock()
	e.kickAdmission()
	return true
}

// wake queues a hibernated agent for launch through its session's resume; text, when
// given, is its first message (the launch passes it as the prompt, which is how each
// CLI takes a message on resume — faster and surer than typing into a fresh TUI).
func (e *Engine) wake(ctx context.Context, rt *agentRT, text string) error {
	e.mu.Lock()
	a := rt.a
	e.mu.Unlock()
	if err := e.canResume(ctx, a); err != nil { // its session went while it slept
		return err
	}
	e.mu.Lock()
	if rt.a.State != wire.StateHibernated {
		st, path := rt.a.State, rt.a.Path
		e.mu.Unlock()
		return wire.Errorf(wire.CodeInvalidParams, "%s is %s, not hibernated", path, st)
	}
	rt.wake = &text
	ok := e.setStateLocked(ctx, rt, wire.StateQueued, "server", "waking from hibernation", nil)
	e.mu.Unlock()
	if ok {
		e.enqueue(rt)
	}
	return nil
}

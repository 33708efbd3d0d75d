package core

import (
	"context"
	"fmt"

	"orcr/core/wire"
)

// againParams is the spawn that starts a's spec again on path: what the user gave
// its spawn (argv, not the command line the provider built; the role and the fields
// it filled, which win over the role's), with the env values kept apart from the
// record (storedEnv). An agent that got a worktree has it as its cwd by now (the
// record keeps no other): the new agent works in that same directory rather than
// making a second worktree of the same branch, which git refuses.
func againParams(home string, a wire.Agent, path string) (wire.RunParams, error) {
	env, err := storedEnv(home, a)
	if err != nil {
		return wire.RunParams{}, wire.Errorf(wire.CodeInvalidParams, "the env of %s: %v", a.Path, err)
	}
	return wire.RunParams{Path: path, Provider: a.Provider, Model: a.Model, Argv: a.Argv, Cwd: a.Cwd, Env: env,
		Prompt: a.Prompt, Priority: a.Priority, Keep: a.Keep, Role: a.Role,
		SystemPrompt: a.SystemPrompt, MaxTurns: a.Limits.MaxTurns, SoftTimeoutSeconds: a.Limits.SoftTimeoutSeconds,
		HardTimeoutSeconds: a.Limits.HardTimeoutSeconds, BudgetUSD: a.Limits.BudgetUSD, BudgetAction: a.Limits.BudgetAction,
		Account: a.Account, Identity: a.Identity, Spawn: a.Spawn, Sandbox: a.Sandbox}, nil
}

// restartAgent stops the target if it runs and spawns its spec again on its path.
func restartAgent(ctx context.Context, e *Engine, p wire.TargetParams) (wire.AgentResult, error) {
	a, err := e.Get(ctx, p.Target)
	if err != nil {
		return wire.AgentResult{}, err
	}
	rp, err := againParams(e.opts.Home, a, a.Path)
	if err != nil {
		return wire.AgentResult{}, err
	}
	if !a.State.Terminal() {
		if _, err := e.Kill(ctx, wire.KillParams{Glob: a.ID}); err != nil && wire.CodeOf(err) != wire.CodeNotFound {
			return wire.AgentResult{}, fmt.Errorf("restart %s: stop it: %w", a.Path, err)
		}
	}
	n, err := e.Run(ctx, rp)
	return wire.AgentResult{Agent: n}, err
}

// forkAgent spawns the target's spec on a new path; the target is left alone.
func forkAgent(ctx context.Context, e *Engine, p wire.ForkParams) (wire.AgentResult, error) {
	a, err := e.Get(ctx, p.Target)
	if err != nil {
		return wire.AgentResult{}, err
	}
	rp, err := againParams(e.opts.Home, a, p.Path)
	if err != nil {
		return wire.AgentResult{}, err
	}
	n, err := e.Run(ctx, rp)
	return wire.AgentResult{Agent: n}, err
}

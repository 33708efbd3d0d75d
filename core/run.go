package core

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/google/uuid"

	"orcr/core/secretenv"
	"orcr/core/wire"
)

// Run validates a spawn request, records the agent as queued, and lets admission
// start it when the caps allow.
func (e *Engine) Run(ctx context.Context, p wire.RunParams) (wire.Agent, error) {
	parent, err := e.callerAgent(ctx)
	if err != nil {
		return wire.Agent{}, err
	}
	p, notes, err := e.resolveRun(ctx, p)
	if err != nil {
		return wire.Agent{}, err
	}
	if parent != nil && parent.Node != "" && p.Node == "" {
		// A child of an agent on a node runs on that node unless it names another
		// (DESIGN §14), in its parent's directory there unless it names one.
		p.Node = parent.Node
		if p.Cwd == "" {
			p.Cwd = parent.Cwd
		}
	}
	scope := ""
	if parent != nil {
		scope = parent.Path
	}
	path, err := ResolvePath(scope, p.Path)
	if err != nil {
		return wire.Agent{}, err
	}
	prov := p.Provider
	if prov == "" {
		prov = "shell"
	}
	if _, ok := e.providers[prov]; !ok {
		return wire.Agent{}, wire.Errorf(wire.CodeUnknownProvider,
			"unknown provider %q; known: %s", prov, strings.Join(e.providerNames(), ", "))
	}
	if ic, ok := e.host.(IntegrationChecker); ok && prov != "shell" && p.Node == "" {
		if err := ic.RequireIntegration(ctx, prov); err != nil {
			return wire.Agent{}, err
		}
	}
	if p.Node != "" {
		if _, err := remoteOf(e); err != nil {
			return wire.Agent{}, err
		}
	}
	id, err := givenID(e, p.ID)
	if err != nil {
		return wire.Agent{}, err
	}
	if prov == "shell" && len(p.Argv) == 0 {
		return wire.Agent{}, wire.Errorf(wire.CodeInvalidParams,
			"the shell provider needs a command: orcr agent run %s -- CMD [ARGS…]", p.Path)
	}
	checked := p
	checked.Path = path // the checkers see where the agent will live, resolved
	if err := e.checkSpawn(ctx, checked); err != nil {
		return wire.Agent{}, err
	}
	cwd := p.Cwd
	if p.Node != "" {
		// The directory is the node's: it is checked there, and "" is the node's own.
		if cwd != "" && !filepath.IsAbs(cwd) {
			return wire.Agent{}, wire.Errorf(wire.CodeInvalidParams, "cwd %q must be an absolute path", cwd)
		}
	} else {
		if cwd == "" && parent != nil {
			cwd = parent.Cwd
		}
		if cwd == "" {
			cwd, _ = os.Getwd()
		}
		if !filepath.IsAbs(cwd) {
			return wire.Agent{}, wire.Errorf(wire.CodeInvalidParams, "cwd %q must be an absolute path", cwd)
		}
		if st, err := os.Stat(cwd); err != nil || !st.IsDir() {
			return wire.Agent{}, wire.Errorf(wire.CodeInvalidParams, "cwd %q is not a directory", cwd)
		}
	}
	for k := range p.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return wire.Agent{}, wire.Errorf(wire.CodeInvalidParams, "invalid env name %q: use --env KEY=VALUE", k)
		}
	}
	if p.Sandbox != nil && p.Sandbox.Mode != wire.SandboxOn && p.Sandbox.Mode != wire.SandboxOff {
		return wire.Agent{}, wire.Errorf(wire.CodeInvalidParams, "sandbox mode %q: use on or off", p.Sandbox.Mode)
	}
	if p.Worktree != "" {
		if err := checkWorktreeName(p.Worktree); err != nil {
			return wire.Agent{}, err
		}
	}
	// A {{secret.NAME}} the secrets file lacks fails now, naming it; the values are looked
	// up again at each launch and kept nowhere.
	if _, err := secretenv.Resolve(p.Env, e.opts.Secrets); err != nil {
		return wire.Agent{}, wire.Errorf(wire.CodeInvalidParams, "%v", err)
	}
	now := e.now()
	a := wire.Agent{
		ID: id, Path: path, Node: p.Node, Provider: prov, Model: p.Model, Argv: p.Argv, Cwd: cwd,
		Env: p.Env, Prompt: p.Prompt, Priority: p.Priority, Keep: p.Keep, Worktree: p.Worktree,
		Role: p.Role, RoleNotes: notes, SystemPrompt: p.SystemPrompt,
		Limits: wire.AgentLimits{MaxTurns: p.MaxTurns, SoftTimeoutSeconds: p.SoftTimeoutSeconds,
			HardTimeoutSeconds: p.HardTimeoutSeconds, BudgetUSD: p.BudgetUSD, BudgetAction: p.BudgetAction},
		Account: p.Account, Identity: p.Identity, Spawn: p.Spawn, Sandbox: p.Sandbox, State: wire.StateQueued, StateSource: "server", StateReason: "waiting for admission",
		Host: e.host.Name(), CreatedAt: now, StateAt: now,
	}
	if parent != nil {
		a.ParentID, a.ParentPath = parent.ID, parent.Path
	}
	if err := keepEnv(e.opts.Home, &a, p.Env); err != nil {
		return wire.Agent{}, err
	}
	rt := &agentRT{a: a}
	e.mu.Lock()
	if _, dup := e.agents[a.ID]; dup {
		e.mu.Unlock()
		dropEnv(e.opts.Home, a.ID)
		return wire.Agent{}, wire.Errorf(wire.CodeNameTaken, "an agent with id %s exists already", a.ID)
	}
	if other := e.liveByPathLocked(path); other != nil {
		// Read under the lock: the other agent's loop writes its record.
		state, otherID := other.a.State, other.a.ID
		e.mu.Unlock()
		dropEnv(e.opts.Home, a.ID)
		return wire.Agent{}, &wire.Error{Code: wire.CodePathTaken,
			Message: fmt.Sprintf("%s is already %s (%s); pick another path or kill it first: orcr agent kill %s",
				path, state, otherID, path)}
	}
	e.agents[a.ID] = rt
	stored, admitNow, err := spawnLocked(ctx, e, rt)
	e.mu.Unlock()
	if err != nil {
		e.mu.Lock()
		delete(e.agents, a.ID)
		e.mu.Unlock()
		dropEnv(e.opts.Home, a.ID)
		return wire.Agent{}, err
	}
	if admitNow {
		go launchAdmitted(e, rt)
	} else {
		e.enqueue(rt)
	}
	return stored, nil
}

// spawnLocked stores a new agent's record with its agent.spawned event and returns the
// record as that event carries it (queued), which is what agent.run answers. When no
// agent waits in the queue and admission takes this one at once (the same caps, launch
// slots, gates and placers as admit), the record is stored as starting instead, with
// agent.spawned and the agent.state event of its admission, in one transaction: one
// commit where there were two (the spawn's, then admission's), and admission's pass
// and goroutine hop are skipped. A crash after it finds a starting record without a
// pane, as it would after admission's commit (neverLaunched). admitNow is then true:
// the agent is counted launching and in e.wg, and the caller starts launchAdmitted.
// The caller holds e.mu.
func spawnLocked(ctx context.Context, e *Engine, rt *agentRT) (stored wire.Agent, admitNow bool, err error) {
	spawned := wire.Event{Event: wire.EventAgentSpawned, To: wire.StateQueued}
	queueOnly := func() (wire.Agent, bool, error) {
		a, _, err := e.writeLocked(ctx, rt, rt.a, &spawned)
		return a, false, err
	}
	// The engine's context is checked under e.mu: Close cancels it before it takes
	// e.mu and waits for e.wg, so the e.wg.Add below comes before that Wait. Until
	// admission's loop runs (every feature started: see fleet.admitting), a spawn takes
	// the queue's path, launched by that loop's first pass.
	if !e.fl.admitting || !e.fl.loaded || len(e.fl.q.items) > 0 || e.ctx.Err() != nil || !e.broker.batches() {
		return queueOnly()
	}
	lim := e.limits
	running, total := e.runningLocked()
	gate, placed, onNode := admissionGate(e)
	one := admitQueue{items: []qEntry{entryOf(rt)}, aging: lim.Aging}
	if out, _, _, _ := one.pick(lim, running, total, max(0, MaxLaunching-e.fl.launching), gate); len(out) == 0 {
		return queueOnly()
	}
	now := e.now()
	queued := rt.a
	queued.UpdatedAt = now
	next, state, ok := admitted(queued, placed[queued.ID], onNode[queued.ID], now)
	if !ok {
		return queueOnly()
	}
	next.UpdatedAt = now
	// Events carry the record without its last screen (writeLocked's rule).
	qa, na := queued, next
	qa.LastScreen, na.LastScreen = "", ""
	spawned.Agent, state.Agent = &qa, &na
	if _, err := e.broker.publishAgentEvents(ctx, next, []wire.Event{spawned, state}); err != nil {
		e.log.Error("publish", "id", queued.ID, "err", err)
		return wire.Agent{}, false, err
	}
	rt.a = next
	addLiveLocked(e, rt)
	e.fl.launching++
	e.wg.Add(1)
	return queued, true, nil
}

// givenID is the id a spawn asked for (a coordinator placing its agent on this node
// passes its own), checked, or a new one.
func givenID(e *Engine, id string) (string, error) {
	if id == "" {
		return newID(), nil
	}
	u, err := uuid.Parse(id)
	if err != nil || u.String() != id {
		return "", wire.Errorf(wire.CodeInvalidParams, "id %q is not a uuid in its canonical form", id)
	}
	return id, nil
}

func (e *Engine) providerNames() []string {
	var names []string
	for n := range e.providers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// liveByPathLocked returns the non-terminal agent holding path, if any.
func (e *Engine) liveByPathLocked(path string) *agentRT {
	for _, rt := range e.agents {
		if rt.a.Path == path && !rt.a.State.Terminal() {
			return rt
		}
	}
	return nil
}

// givenArgv is the argv a relaunch of a (a wake, a resume) starts with: the flags it
// was given (a role's or a run's, the user's own), or nil when the record holds the
// previous launch's whole command line (launch keeps it when none were given), which
// the adapter builds anew.
func givenArgv(a wire.Agent) []string {
	if a.Provider != "shell" && len(a.Argv) > 0 && filepath.Base(a.Argv[0]) == a.Provider {
		return nil
	}
	return a.Argv
}

// launch prepares the provider's argv and starts the pane.
func (e *Engine) launch(ctx context.Context, rt *agentRT) {
	e.mu.Lock()
	a := rt.a
	rt.launchPrompt = nil
	if rt.wake != nil {
		a.Prompt, rt.wake = *rt.wake, nil
		a.Argv = givenArgv(a)
		rt.launchPrompt = &a.Prompt
	}
	e.mu.Unlock()
	if a.Node != "" {
		launchRemote(ctx, e, rt)
		return
	}
	prov := e.providers[a.Provider]
	stateDir := filepath.Join(e.opts.Home, "agents", a.ID)
	fresh := false
	if a.Worktree != "" {
		_, statErr := os.Stat(filepath.Join(e.opts.Home, "worktrees", a.ID))
		fresh = os.IsNotExist(statErr)
		dir, err := addWorktree(ctx, e.opts.Home, a.Cwd, a.Worktree, a.ID)
		if err != nil {
			e.finishFailed(ctx, rt, err)
			return
		}
		a, _ = e.mutate(ctx, rt, func(x *wire.Agent) { x.Cwd = dir }, nil)
	}
	// From here a carries the env values (secrets resolved) the record only names.
	vals, err := envValues(e.opts.Home, e.opts.Secrets, a)
	if err != nil {
		e.finishFailed(ctx, rt, fmt.Errorf("env of %s: %w", a.Path, err))
		return
	}
	a.Env = vals
	if err := e.ext.load().accountSecrets(a, e.opts.Secrets); err != nil {
		e.finishFailed(ctx, rt, err)
		return
	}
	if err := e.beforeLaunch(ctx, a, fresh); err != nil {
		e.finishFailed(ctx, rt, err)
		return
	}
	base := e.paneEnv(a)
	// The provider sees the account's environment as the agent's own (a config dir
	// or home decides where it writes); the record keeps only what --env gave.
	pa := a
	pa.Env = e.agentEnv(a)
	plan, err := prov.Prepare(ctx, LaunchRequest{Agent: pa, Self: e.opts.Self, Socket: e.opts.Socket, StateDir: stateDir, Env: base})
	if err != nil {
		e.finishFailed(ctx, rt, fmt.Errorf("prepare %s: %w", a.Provider, err))
		return
	}
	cwd := plan.Cwd
	if cwd == "" {
		cwd = a.Cwd
	}
	env := mergeEnv(base, plan.Env)
	spec := LaunchSpec{Name: a.Path, Argv: plan.Argv, Cwd: cwd, Env: env}
	if err := e.ext.load().wrapLaunch(ctx, a, &spec, plan.Confine); err != nil {
		e.finishFailed(ctx, rt, err)
		return
	}
	pane, err := e.host.Launch(ctx, spec)
	if err != nil {
		e.finishFailed(ctx, rt, fmt.Errorf("launch on %s: %w", e.host.Name(), err))
		return
	}
	now := e.now()
	e.mu.Lock()
	if rt.a.State.Terminal() {
		// Killed while the pane was starting: the pane must not outlive the agent.
		e.mu.Unlock()
		if err := e.host.Close(ctx, pane.ID); err != nil {
			e.log.Warn("close pane of an agent killed while starting", "pane", pane.ID, "err", err)
		}
		return
	}
	e.panes[pane.ID] = a.ID
	rt.turns += InitialTurns(a)
	e.mu.Unlock()
	// The pane and the working state are one write and one event.
	ev := &wire.Event{Event: wire.EventAgentState, To: wire.StateWorking}
	e.mutate(ctx, rt, func(x *wire.Agent) {
		x.PaneID, x.PID, x.StartedAt = pane.ID, pane.PID, &now
		if len(x.Argv) == 0 {
			x.Argv = plan.Argv
		}
		if plan.SessionID != "" {
			x.SessionID = plan.SessionID
		}
		if plan.Transcript != "" {
			x.Transcript = plan.Transcript
		}
		if x.State.Terminal() {
			*ev = wire.Event{Event: wire.EventAgentUpdated}
			return
		}
		ev.From = x.State
		if x.State != wire.StateWorking {
			x.StateAt = now
		}
		x.State, x.StateSource, x.StateReason, x.Blocked = wire.StateWorking, "server", "launched", nil
	}, ev)
	e.startLoop(rt)
	e.mu.Lock()
	code, early := e.earlyExit[pane.ID]
	delete(e.earlyExit, pane.ID)
	e.mu.Unlock()
	if pane.Dead || early {
		if pane.Dead {
			code = pane.ExitCode
		}
		select {
		case rt.exit <- paneEnd{code: code}:
		default:
		}
	}
}

func (e *Engine) finishFailed(ctx context.Context, rt *agentRT, err error) {
	e.log.Warn("agent failed to start", "id", rt.a.ID, "err", err)
	e.end(ctx, rt, wire.StateFailed, "server", err.Error(), nil, func(a *wire.Agent) bool {
		a.Error = err.Error()
		return true
	})
}

// paneEnv is the clean environment of a pane: the server's own minus nesting
// variables, plus the agent's account environment, its --env and the orcr lineage
// contract (with ORCR_BIN, the orcr binary agents are told to call).
func (e *Engine) paneEnv(a wire.Agent) []string {
	env := ForeignCredentials(CleanEnv(e.opts.BaseEnv), a.Provider, a.Account)
	var extra []string
	for k, v := range e.agentEnv(a) {
		extra = append(extra, k+"="+v)
	}
	sort.Strings(extra)
	extra = append(extra,
		"ORCR_ID="+a.ID, "ORCR_PATH="+a.Path,
		"ORCR_PARENT_ID="+a.ParentID, "ORCR_PARENT_PATH="+a.ParentPath,
		"ORCR_SOCKET="+e.opts.Socket, "ORCR_PROVIDER="+a.Provider,
	)
	if e.opts.Home != "" {
		extra = append(extra, "ORCR_HOME="+e.opts.Home)
	}
	if e.opts.Self != "" {
		// The absolute path of the running orcr: the briefs orcr gives agents call
		// "$ORCR_BIN", because a CLI's tool shell (a login shell, a sandbox) may not
		// have orcr on its PATH.
		extra = append(extra, "ORCR_BIN="+e.opts.Self)
	}
	return dropGitHubTokens(mergeEnv(env, extra))
}

// githubTokens are the variables gh and orcr read a GitHub token from: no pane gets
// them (DESIGN §16: pull requests are opened by the server), also not through --env.
var githubTokens = []string{"GH_TOKEN", "GITHUB_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN"}

func dropGitHubTokens(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(githubTokens, k) {
			out = append(out, kv)
		}
	}
	return out
}

// providerCredentials are the variables each provider with accounts authenticates by.
var providerCredentials = map[string][]string{
	"claude": {"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"},
	"codex":  {"OPENAI_API_KEY", "CODEX_API_KEY"},
}

// ForeignCredentials drops from the server's environment the credentials that are not
// the agent's account's (DESIGN §16): a claude pane gets no codex key and the reverse,
// a shell pane neither, and an agent on an explicit account (not the implicit
// "default") none of its provider's inherited ones — its account's env gives its own.
// opencode and pi take keys of many providers and keep them.
func ForeignCredentials(env []string, provider, account string) []string {
	if provider == "opencode" || provider == "pi" {
		return env
	}
	var drop []string
	for p, names := range providerCredentials {
		if p != provider || (account != "" && account != "default") {
			drop = append(drop, names...)
		}
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(drop, k) {
			out = append(out, kv)
		}
	}
	return out
}

// CleanEnv drops variables that would make a program think it is nested in another
// agent, terminal multiplexer or orcr pane.
func CleanEnv(env []string) []string {
	out := make([]string, 0, len(env)+8)
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if nestingVar(k) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

func nestingVar(k string) bool {
	switch k {
	case "CLAUDECODE", "TMUX", "TMUX_PANE", "CODEX_THREAD_ID", "CODEX_SANDBOX",
		"CODEX_SANDBOX_NETWORK_DISABLED", "CODEX_CI", "CODEX_MANAGED_BY_NPM":
		return true
	}
	for _, pre := range []string{"CLAUDE_CODE_", "HERDR_", "ORCR_", "CODEX_SESSION"} {
		if strings.HasPrefix(k, pre) {
			return true
		}
	}
	return false
}

// mergeEnv returns base with extra applied (later wins), keeping order stable.
func mergeEnv(base, extra []string) []string {
	idx := map[string]int{}
	out := make([]string, 0, len(base)+len(extra))
	for _, kv := range append(append([]string{}, base...), extra...) {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := idx[k]; ok {
			out[i] = kv
			continue
		}
		idx[k] = len(out)
		out = append(out, kv)
	}
	return out
}

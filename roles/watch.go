package roles

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"orcr/core/wire"
	roleapi "orcr/roles/api"
)

// The watcher: for every agent it sees the state changes of, it counts finished
// turns, runs validate.sh on each (sending a failure's output back, up to
// max_retries), runs after.sh once, and enforces the soft and hard timeouts, the turn
// budget and the cost budget. Timers are re-armed from the record after a restart
// (StartedAt, WrapUpAt), so a restart neither forgets a limit nor repeats a wrap-up.

// maxHookRuns bounds the hook runs a record keeps (the oldest go first).
const maxHookRuns = 50

type watch struct {
	armed      bool
	soft, hard *time.Timer
	last       wire.State
	busy       bool // a turn's validation is running
	pending    bool // a turn finished while busy: handle it when done
	afterDone  bool
	budgetHit  bool
}

func (w *watch) stopTimers() {
	if w.soft != nil {
		w.soft.Stop()
	}
	if w.hard != nil {
		w.hard.Stop()
	}
}

// reported says whether the agent's CLI has reported a state of its own since its
// launch (the kernel records a launch as working, source server, reason "launched").
func reported(a wire.Agent) bool { return a.StateSource != "server" || a.StateReason != "launched" }

// WrapUpMessage is the soft timeout's one message.
func WrapUpMessage(soft, hard time.Duration) string {
	msg := fmt.Sprintf("orcr: your soft time limit of %s is up. Wrap up now: finish or commit what you have, and end with a short summary of what is done and what is left.", soft)
	if hard > 0 {
		msg += fmt.Sprintf(" You will be stopped at %s.", hard)
	}
	return msg
}

func (s *Service) observe(a wire.Agent, ev *wire.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.watched[a.ID]
	if w == nil {
		w = &watch{last: a.State}
		s.watched[a.ID] = w
	}
	if a.State.Terminal() {
		if a.EndedAt != nil {
			s.hist.put(Entry(a))
		}
		w.stopTimers()
		delete(s.watched, a.ID)
		if !w.afterDone && a.StartedAt != nil {
			w.afterDone = true
			s.spawn(func(ctx context.Context) { s.runAfter(ctx, a) })
		}
		return
	}
	if !w.armed && a.StartedAt != nil {
		w.armed = true
		s.armLocked(w, a)
	}
	if l := a.Limits; l.BudgetUSD > 0 && a.Usage.CostUSD != nil && *a.Usage.CostUSD >= l.BudgetUSD && !w.budgetHit {
		w.budgetHit = true
		reason := fmt.Sprintf("role budget $%.2f reached ($%.2f spent)", l.BudgetUSD, *a.Usage.CostUSD)
		s.spawn(func(ctx context.Context) {
			if !s.delegated(ctx, a) { // else the budget on its path acts (budget.go)
				s.stop(ctx, a, "budget", reason)
			}
		})
	}
	if ev != nil && ev.Event == wire.EventAgentState && ev.To == wire.StateDone && w.last != wire.StateDone {
		if w.busy {
			w.pending = true // e.g. the turn the validation feedback started, already over
		} else {
			w.busy = true
			id := a.ID
			s.spawn(func(ctx context.Context) {
				cur := a
				for {
					s.turnDone(ctx, cur)
					s.mu.Lock()
					again := w.pending
					w.pending = false
					if !again {
						w.busy = false
					}
					s.mu.Unlock()
					if !again {
						return
					}
					var err error
					if cur, err = s.k.Get(ctx, id); err != nil || cur.State.Terminal() {
						s.mu.Lock()
						w.busy = false
						s.mu.Unlock()
						return
					}
				}
			})
		}
	}
	w.last = a.State
}

func (s *Service) spawn(fn func(ctx context.Context)) {
	if s.ctx == nil || s.ctx.Err() != nil {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		fn(s.ctx)
	}()
}

func (s *Service) armLocked(w *watch, a wire.Agent) {
	l := a.Limits
	start := *a.StartedAt
	soft := time.Duration(l.SoftTimeoutSeconds) * time.Second
	hard := time.Duration(l.HardTimeoutSeconds) * time.Second
	id := a.ID
	if soft > 0 && l.WrapUpAt == nil {
		w.soft = time.AfterFunc(time.Until(start.Add(soft)), func() {
			s.spawn(func(ctx context.Context) { s.wrapUp(ctx, id, soft, hard) })
		})
	}
	if hard > 0 {
		w.hard = time.AfterFunc(time.Until(start.Add(hard)), func() {
			s.spawn(func(ctx context.Context) {
				cur, err := s.k.Get(ctx, id)
				if err != nil || cur.State.Terminal() {
					return
				}
				s.stop(ctx, cur, "hard_timeout", fmt.Sprintf("hard timeout %s reached", hard))
			})
		})
	}
}

func (s *Service) wrapUp(ctx context.Context, id string, soft, hard time.Duration) {
	a, err := s.k.Get(ctx, id)
	if err != nil || a.State.Terminal() || a.Limits.WrapUpAt != nil {
		return
	}
	// A CLI that has not reported anything yet may still be drawing its TUI, and text
	// typed into it then is lost (opencode 1.18 took 10-13 s to start here): the
	// wrap-up waits for its first report, or for the hard timeout's stop.
	for !reported(a) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
		if a, err = s.k.Get(ctx, id); err != nil || a.State.Terminal() || a.Limits.WrapUpAt != nil {
			return
		}
	}
	now := time.Now().UTC()
	// Recorded first: a restart after this never sends a second wrap-up.
	a, err = s.k.Amend(ctx, id, func(x *wire.Agent) { x.Limits.WrapUpAt = &now })
	if err != nil {
		s.log.Warn("roles: record wrap-up", "id", id, "err", err)
		return
	}
	if err := s.say(ctx, id, WrapUpMessage(soft, hard)); err != nil {
		s.log.Warn("roles: send wrap-up", "id", id, "err", err)
	} else {
		s.log.Info("roles: wrap-up sent", "id", id, "soft", soft)
	}
	s.limitEvent(ctx, a, "soft_timeout", "wrap_up")
}

func (s *Service) stop(ctx context.Context, a wire.Agent, limit, reason string) {
	if err := s.k.StopAgent(ctx, a.ID, reason); err != nil {
		s.log.Warn("roles: stop", "id", a.ID, "err", err)
	}
	s.limitEvent(ctx, a, limit, "stop")
}

func (s *Service) limitEvent(ctx context.Context, a wire.Agent, limit, action string) {
	a.LastScreen = ""
	if _, err := s.k.Publish(ctx, wire.Event{Event: roleapi.EventRoleLimit, Agent: &a,
		Data: map[string]any{"limit": limit, "action": action}}); err != nil {
		s.log.Warn("roles: publish", "err", err)
	}
}

// turnDone handles one finished turn: count it, validate, then the turn budget.
func (s *Service) turnDone(ctx context.Context, a wire.Agent) {
	a, err := s.k.Amend(ctx, a.ID, func(x *wire.Agent) { x.Limits.Turns++ })
	if err != nil {
		return
	}
	turns, max := a.Limits.Turns, a.Limits.MaxTurns
	overTurns := max > 0 && turns >= max
	repo := RepoOf(ctx, a.Cwd)
	if script := HookPath(repo, wire.HookValidate); script != "" {
		cfg, cerr := LoadRepoConfig(repo)
		attempt := 1
		for _, h := range a.Hooks {
			if h.Hook == wire.HookValidate {
				attempt++
			}
		}
		var run wire.HookRun
		if cerr != nil {
			run = wire.HookRun{Hook: wire.HookValidate, Attempt: attempt, StartedAt: time.Now().UTC(),
				Result: wire.HookError, Output: cerr.Error()}
		} else {
			run = RunHook(ctx, script, wire.HookValidate, attempt, a, cfg.Timeout)
		}
		a = s.record(ctx, a.ID, run)
		switch run.Result {
		case wire.HookPassed:
		case wire.HookFailed, wire.HookTimeout:
			if attempt <= cfg.MaxRetries && !overTurns {
				if err := s.say(ctx, a.ID, feedback(run, attempt, cfg.MaxRetries)); err != nil {
					s.log.Warn("roles: send validation feedback", "id", a.ID, "err", err)
				}
				return
			}
		default:
			// A script that cannot run is the repository's problem, not the agent's:
			// the record says so and the agent is not asked to fix it.
		}
	}
	s.mu.Lock()
	w := s.watched[a.ID]
	runAfter := w != nil && !w.afterDone
	if runAfter {
		w.afterDone = true
	}
	s.mu.Unlock()
	if runAfter {
		s.runAfter(ctx, a)
	}
	if overTurns {
		s.stop(ctx, a, "max_turns", fmt.Sprintf("max_turns %d reached", max))
	}
}

// feedback is what a failing validation sends back: one line, since a newline typed
// into a TUI would submit half of it.
func feedback(run wire.HookRun, attempt, max int) string {
	code := "timed out"
	if run.ExitCode != nil {
		code = fmt.Sprintf("exit %d", *run.ExitCode)
	}
	out := strings.Join(strings.Fields(strings.ReplaceAll(strings.TrimSpace(run.Output), "\n", " | ")), " ")
	return fmt.Sprintf("orcr: the repository's check .orcr/hooks/validate.sh failed (%s, attempt %d of %d). Its output: %s -- Fix this, then finish your turn again.",
		code, attempt, max, out)
}

func (s *Service) runAfter(ctx context.Context, a wire.Agent) {
	repo := RepoOf(ctx, a.Cwd)
	script := HookPath(repo, wire.HookAfter)
	if script == "" {
		return
	}
	cfg, _ := LoadRepoConfig(repo)
	s.record(ctx, a.ID, RunHook(ctx, script, wire.HookAfter, 1, a, cfg.Timeout))
}

// record keeps a hook run on the agent's record and announces it.
func (s *Service) record(ctx context.Context, id string, run wire.HookRun) wire.Agent {
	a, err := s.k.Amend(ctx, id, func(x *wire.Agent) {
		x.Hooks = append(x.Hooks, run)
		if len(x.Hooks) > maxHookRuns {
			x.Hooks = x.Hooks[len(x.Hooks)-maxHookRuns:]
		}
	})
	if err != nil {
		s.log.Warn("roles: record hook run", "id", id, "err", err)
		return a
	}
	ea := a
	ea.LastScreen = ""
	data := map[string]any{"hook": run.Hook, "attempt": run.Attempt, "result": run.Result, "output": run.Output}
	if run.ExitCode != nil {
		data["exitCode"] = *run.ExitCode
	}
	if _, err := s.k.Publish(ctx, wire.Event{Event: wire.EventHookRan, Agent: &ea, Data: data}); err != nil {
		s.log.Warn("roles: publish hook run", "err", err)
	}
	return a
}

// BeforeLaunch runs init.sh (for a new worktree) and before.sh; a failure fails the
// launch with the script's output (core.LaunchHook). Start registers it after binding
// the kernel, so no launch reaches it before.
func (s *Service) BeforeLaunch(ctx context.Context, a wire.Agent, newWorktree bool) error {
	repo := RepoOf(ctx, a.Cwd)
	if repo == "" {
		return nil
	}
	cfg, err := LoadRepoConfig(repo)
	if err != nil {
		return err
	}
	hooks := []string{wire.HookBefore}
	if newWorktree {
		hooks = []string{wire.HookInit, wire.HookBefore}
	}
	// validate.sh and after.sh run once the agent has worked: one that cannot run is
	// refused now, before a turn is spent that no check could pass.
	for _, h := range []string{wire.HookValidate, wire.HookAfter} {
		if script := HookPath(repo, h); script != "" {
			if st, err := os.Stat(script); err == nil {
				if why := notExecutable(st, script); why != "" {
					return fmt.Errorf("%s.sh %s", h, strings.TrimPrefix(why, script+" "))
				}
			}
		}
	}
	for _, h := range hooks {
		script := HookPath(repo, h)
		if script == "" {
			continue
		}
		attempt := 1
		for _, r := range a.Hooks {
			if r.Hook == h {
				attempt++
			}
		}
		run := RunHook(ctx, script, h, attempt, a, cfg.Timeout)
		a = s.record(ctx, a.ID, run)
		if run.Result != wire.HookPassed {
			return fmt.Errorf("%s.sh %s: %s", h, describe(run), strings.TrimSpace(run.Output))
		}
	}
	return nil
}

func describe(run wire.HookRun) string {
	switch run.Result {
	case wire.HookFailed:
		return fmt.Sprintf("failed (exit %d)", *run.ExitCode)
	case wire.HookTimeout:
		return "timed out"
	case wire.HookNotExecutable:
		return "is not executable"
	}
	return "could not run"
}

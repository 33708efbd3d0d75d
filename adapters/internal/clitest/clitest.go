// Package clitest runs a real coding-agent CLI for adapter tests before (and beside)
// the engine: the CLI in a real pane of orcr's embedded pty host, talking to the
// scripted model server, with hooks recorded by hookrec and fed, like the engine
// would, into the adapter's Observer together with transcript polls and screens. The
// signals are folded into the agent's record by the engine's own rules (core.Fold),
// so these tests see the states the engine would record.
package clitest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"orcr/testutil/clis"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"orcr/core"
	"orcr/core/wire"
	"orcr/pty"
	"orcr/testutil/testbin"
	"orcr/testutil/wait"
)

// CLI finds a pinned CLI for a test (see testutil/clis).
func CLI(t *testing.T, name, envVar string) string {
	t.Helper()
	return clis.Find(t, name, envVar)
}

// HookRec builds the hook recorder binary that stands in for orcr as LaunchRequest.Self.
func HookRec(t *testing.T) string {
	return testbin.Build(t, "orcr/adapters/internal/clitest/hookrec")
}

// View is the record the engine would hold after the signals an Observer produced
// (folded by core.Fold), plus what the test saw on the way.
type View struct {
	State       wire.State
	Source      string
	Reason      string
	Blocked     *wire.Blocked
	Usage       wire.Usage
	Model       string
	SessionID   string
	Transcript  string
	LastMessage string
	Readings    []wire.LimitReading
	Signals     []core.Signal
	HookErrors  []error
	Hooks       []string // events delivered
	States      []string // "state/source" of each state change the fold made, in order
}

// Run is one CLI in a pane, observed.
type Run struct {
	t      *testing.T
	host   *pty.Host
	pane   string
	obs    core.Observer
	hooks  string
	hookAt int64

	mu    sync.Mutex
	view  View
	agent wire.Agent // the record as the engine would hold it
	turns int        // as the engine counts them: the prompt and each Send
	stop  context.CancelFunc
	done  chan struct{}
}

// Start launches plan in a pty pane with env (complete) and observes it with obs, the
// observer of agent (whose prompt, if any, counts as the first turn). Hook records
// are read from hookFile (the $ORCR_HOOKREC of the pane).
func Start(t *testing.T, plan core.LaunchPlan, env []string, cwd string, agent wire.Agent, obs core.Observer, hookFile string) *Run {
	t.Helper()
	h := pty.New(pty.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := h.Launch(ctx, core.LaunchSpec{Name: "test", Argv: plan.Argv, Cwd: cwd, Env: append(env, plan.Env...), Cols: 160, Rows: 45})
	if err != nil {
		t.Fatalf("launch %q: %v", plan.Argv, err)
	}
	rctx, stop := context.WithCancel(context.Background())
	// The record as the engine has it once the pane is launched.
	now := time.Now().UTC()
	agent.State, agent.StateSource, agent.StateReason, agent.StateAt, agent.StartedAt = wire.StateWorking, "server", "launched", now, &now
	r := &Run{t: t, host: h, pane: info.ID, obs: obs, hooks: hookFile, agent: agent, turns: core.InitialTurns(agent),
		stop: stop, done: make(chan struct{})}
	r.view.State, r.view.Source, r.view.Reason = agent.State, agent.StateSource, agent.StateReason
	go r.loop(rctx)
	t.Cleanup(func() {
		r.stop()
		<-r.done
		sctx, c := context.WithTimeout(context.Background(), 5*time.Second)
		defer c()
		_ = h.Close(sctx, r.pane)
		_ = h.Shutdown(sctx)
		obs.Close()
		if t.Failed() {
			scr, _ := r.Screen()
			t.Logf("last screen:\n%s", scr)
			v := r.View()
			t.Logf("states %v hooks %v", v.States, v.Hooks)
		}
	})
	return r
}

// Screen reads the pane.
func (r *Run) Screen() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := r.host.Read(ctx, r.pane, core.ReadOpts{})
	return s.Text, err
}

// Send types text, waits until it is echoed, then presses enter.
func (r *Run) Send(text string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.host.SendText(ctx, r.pane, text); err != nil {
		r.t.Fatalf("send: %v", err)
	}
	// Wait for the last word only: the embedded host's emulator has been seen to render
	// the blanks of claude's redrawn input line with stale characters.
	words := strings.Fields(text)
	last := text
	if len(words) > 0 {
		last = words[len(words)-1]
	}
	r.WaitScreen(10*time.Second, func(s string) bool { return strings.Contains(s, last) })
	if err := r.host.SendKeys(ctx, r.pane, "enter"); err != nil {
		r.t.Fatalf("enter: %v", err)
	}
	r.mu.Lock()
	r.turns++ // as the engine counts a send ending in enter
	r.mu.Unlock()
}

// PressUntil presses key and polls the screen until cond holds, pressing again every
// few seconds while it does not: a TUI that has drawn a prompt may not yet be reading
// keys for it (seen with codex's approval dialog on a loaded machine), and a user
// whose key went nowhere presses it again.
func (r *Run) PressUntil(key string, d time.Duration, cond func(string) bool) string {
	r.t.Helper()
	deadline := time.Now().Add(d)
	var next time.Time
	for {
		if !next.IsZero() {
			s, _ := r.Screen()
			if cond(s) {
				return s
			}
			if time.Now().After(deadline) {
				r.t.Fatalf("timed out pressing %s; screen:\n%s", key, s)
			}
		}
		if time.Now().After(next) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err := r.host.SendKeys(ctx, r.pane, key)
			cancel()
			if err != nil {
				r.t.Fatalf("press %s: %v", key, err)
			}
			next = time.Now().Add(3 * time.Second)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// View returns a copy of the folded signals.
func (r *Run) View() View {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := r.view
	v.Signals = append([]core.Signal(nil), v.Signals...)
	v.Readings = append([]wire.LimitReading(nil), v.Readings...)
	v.Hooks = append([]string(nil), v.Hooks...)
	v.States = append([]string(nil), v.States...)
	return v
}

// Wait polls the view until cond holds or the deadline (d scaled by
// $ORCR_TEST_WAIT_SCALE, testutil/wait) passes.
func (r *Run) Wait(d time.Duration, what string, cond func(View) bool) View {
	r.t.Helper()
	d = wait.Scale(d)
	deadline := time.Now().Add(d)
	for {
		v := r.View()
		if cond(v) {
			return v
		}
		if time.Now().After(deadline) {
			scr, _ := r.Screen()
			r.t.Fatalf("timed out after %v waiting for %s; view: state=%s/%s reason=%q usage=%+v last=%q states=%v hooks=%v\nscreen:\n%s",
				d, what, v.State, v.Source, v.Reason, v.Usage, v.LastMessage, v.States, v.Hooks, scr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// WaitScreen polls the screen until cond holds, within d scaled like Wait's.
func (r *Run) WaitScreen(d time.Duration, cond func(string) bool) string {
	r.t.Helper()
	d = wait.Scale(d)
	deadline := time.Now().Add(d)
	for {
		s, _ := r.Screen()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("timed out after %v waiting for the screen; screen:\n%s", d, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (r *Run) loop(ctx context.Context) {
	defer close(r.done)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	lastScreen, lastChange := "", time.Now()
	n := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, hp := range r.newHooks() {
			sig, err := r.obs.Hook(hp.Event, hp.Payload)
			r.mu.Lock()
			r.view.Hooks = append(r.view.Hooks, hp.Event)
			if err != nil {
				r.view.HookErrors = append(r.view.HookErrors, err)
			}
			r.mu.Unlock()
			r.apply(sig)
			r.poll(ctx)
		}
		if n++; n%5 == 0 { // ~500 ms transcript timer
			r.poll(ctx)
		}
		if scr, err := r.Screen(); err == nil {
			if scr != lastScreen {
				lastScreen, lastChange = scr, time.Now()
			}
			r.apply(r.obs.Screen(core.Screen{Text: scr}, time.Since(lastChange)))
		}
	}
}

func (r *Run) poll(ctx context.Context) {
	sig, err := r.obs.Poll(ctx)
	if err != nil {
		r.t.Logf("poll: %v", err)
	}
	r.apply(sig)
}

func (r *Run) newHooks() []wire.HookParams {
	f, err := os.Open(r.hooks)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(r.hookAt, 0); err != nil {
		return nil
	}
	var out []wire.HookParams
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		r.hookAt += int64(len(line) + 1)
		var hp wire.HookParams
		if json.Unmarshal(bytes.TrimSpace(line), &hp) == nil {
			out = append(out, hp)
		}
	}
	return out
}

func (r *Run) apply(s *core.Signal) {
	if s == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	v := &r.view
	v.Signals = append(v.Signals, *s)
	if s.Reading != nil {
		v.Readings = append(v.Readings, *s.Reading)
	}
	for _, c := range core.Fold(r.agent, r.turns, s, time.Now().UTC()) {
		prev := r.agent
		r.agent = c.Agent
		if c.Agent.State != prev.State || c.Agent.StateSource != prev.StateSource || c.Agent.StateReason != prev.StateReason {
			v.States = append(v.States, string(c.Agent.State)+"/"+c.Agent.StateSource)
		}
	}
	a := r.agent
	v.State, v.Source, v.Reason, v.Blocked = a.State, a.StateSource, a.StateReason, a.Blocked
	v.Usage, v.Model, v.SessionID, v.Transcript, v.LastMessage = a.Usage, a.Model, a.SessionID, a.Transcript, a.LastMessage
}

// BaseEnv is a clean environment for a CLI under test: this process's PATH, the given
// HOME, a terminal type and locale, plus extra. Nothing of the surrounding agent
// session leaks in.
func BaseEnv(home string, extra ...string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TERM=xterm-256color", "LANG=C.UTF-8", "TZ=UTC"}
	return append(env, extra...)
}

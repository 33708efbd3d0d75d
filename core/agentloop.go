package core

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"orcr/core/wire"
)

// Timing of the per-agent loop. Screens are read only while output is recent, so an
// idle agent costs nothing.
const (
	screenEvery    = 250 * time.Millisecond // at most this often while output flows
	quietAfter     = 1200 * time.Millisecond
	pollEvery      = time.Second
	transientEvery = 200 * time.Millisecond
	// settleMax caps the adaptive quiet time (cadence.settle): a program that pauses
	// longer than this between outputs is idle in between, whatever its rhythm.
	settleMax = 10 * time.Second
	// cadenceKeep is how long a pause between outputs counts as the agent's rhythm.
	cadenceKeep = 30 * time.Second
)

// cadence is the hysteresis of screen-derived states. Output makes an agent working
// at once; it counts as settled (idle, or done after a turn) only once the screen has
// been quiet for longer than its usual pause between outputs. A program that prints a
// line every 2 s is therefore working throughout, not working⇄idle on every line (the
// fleet once saw 1,487 state events in 30 s that way). Pauses shorter than the base
// quiet time never let the agent settle: they are one burst (redraws, a silent host's
// once-a-second reads) and are folded into it.
type cadence struct {
	last time.Time
	gaps [4]struct{ from, to time.Time } // recent pauses: when each began and ended
	next int
}

// output notes output at now, learning the pause since the previous output.
func (c *cadence) output(now time.Time) {
	if !c.last.IsZero() {
		if g := now.Sub(c.last); g >= quietAfter && g <= settleMax {
			c.gaps[c.next] = struct{ from, to time.Time }{c.last, now}
			c.next = (c.next + 1) % len(c.gaps)
		}
	}
	c.last = now
}

// reset forgets the rhythm: a send starts a new turn, whose output owes nothing to
// the pauses between earlier turns.
func (c *cadence) reset() { *c = cadence{} }

// settle is how long the screen must be quiet at now before the agent counts as
// settled: the base quiet time, or twice the longest recent pause, at most settleMax.
func (c *cadence) settle(now time.Time) time.Duration {
	d := quietAfter
	for _, g := range c.gaps {
		if g.to.IsZero() || now.Sub(g.to) > cadenceKeep {
			continue
		}
		d = max(d, 2*g.to.Sub(g.from))
	}
	return min(d, settleMax)
}

func (e *Engine) startLoop(rt *agentRT) {
	e.mu.Lock()
	if rt.done != nil {
		e.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(e.ctx)
	rt.stop = cancel
	rt.events = make(chan func(), 16)
	rt.outputs = make(chan struct{}, 1)
	rt.judge = make(chan struct{}, 1)
	rt.sent = make(chan chan struct{})
	rt.exit = make(chan paneEnd, 1)
	rt.done = make(chan struct{})
	a := rt.a
	if rt.launchPrompt != nil {
		a.Prompt = *rt.launchPrompt
	}
	e.mu.Unlock()
	var obs Observer
	if p := e.providers[a.Provider]; p != nil {
		oa := a
		oa.Env = e.agentEnv(a) // where the account's config dir or home is
		obs = p.Observe(oa)
	}
	rt.obs.Store(&observerBox{obs})
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		defer close(rt.done)
		// An ended loop's context leaves the engine's: otherwise every agent that ever
		// ran stayed registered among its children (a 1,000-item for_each kept 1,000).
		defer cancel()
		e.agentLoop(ctx, rt, obs)
	}()
}

// agentLoop owns one live agent: it turns host output, hooks, transcript polls and
// the exit into state changes.
func (e *Engine) agentLoop(ctx context.Context, rt *agentRT, obs Observer) {
	if obs != nil {
		defer obs.Close()
	}
	var (
		lastOutput    time.Time
		lastScreen    time.Time
		lastTransient time.Time
		rhythm        cadence
		// The first judgement comes once the screen has been still after the start,
		// so a program that prints nothing still settles.
		evaluated = false
	)
	lastOutput = time.Now()
	// The launch counts as the first output: a program's first line may have been
	// printed before this loop could hear it (under load it often is), and the pause
	// from the launch to the next line is its rhythm as much as any later one. Without
	// this a line every 2 s flipped idle twice before the rhythm was known.
	rhythm.output(lastOutput)
	timer := time.NewTimer(quietAfter)
	// due is when timer fires, zero once it has. Output does not move an armed timer
	// that fires no later than the output's settle time: the timer, when it fires,
	// arms itself again for what is left. A Reset per output was a timer moved in the
	// runtime's heap 200 times a second with 20 agents redrawing a status line
	// (bench/pty BenchmarkStatusLine20VsRawTmux).
	due := lastOutput.Add(quietAfter)
	transient := time.NewTimer(time.Hour)
	transient.Stop()
	defer transient.Stop()
	trailing := false
	announce := func() {
		e.mu.Lock()
		a := rt.a
		e.mu.Unlock()
		a.LastScreen = ""
		e.broker.publishTransient(wire.Event{Event: wire.EventAgentScreen, Agent: &a})
	}
	defer timer.Stop()
	// Transcripts are read every pollEvery; an observer with none (Unpolled) and an
	// agent with no observer arm no timer, so an idle pane wakes nothing.
	var polls <-chan time.Time
	if _, unpolled := obs.(Unpolled); obs != nil && !unpolled {
		poll := time.NewTicker(pollEvery)
		defer poll.Stop()
		polls = poll.C
	}
	// Hosts without output events get their screen compared once a second.
	var silent <-chan time.Time
	var lastHash uint64
	if sh, ok := e.host.(SilentHost); ok && sh.SilentOutput() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		silent = t.C
	}
	arm := func(d time.Duration) {
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(d)
		due = time.Now().Add(d)
	}
	judge := func(now time.Time) {
		if obs == nil {
			return
		}
		e.mu.Lock()
		pane := rt.a.PaneID
		e.mu.Unlock()
		scr, err := e.host.Read(ctx, pane, ReadOpts{})
		if err != nil {
			return
		}
		lastScreen = now
		e.apply(ctx, rt, obs.Screen(scr, now.Sub(lastOutput)))
	}
	for {
		select {
		case <-ctx.Done():
			return
		case end := <-rt.exit:
			e.onExit(ctx, rt, obs, end)
			return
		case fn := <-rt.events:
			fn()
			if obs != nil {
				sig, err := obs.Poll(ctx)
				if err == nil {
					e.apply(ctx, rt, sig)
				}
			}
		case <-rt.judge:
			// An answer was just sent: judge the screen now, not at the loop's pace.
			judge(time.Now())
		case ack := <-rt.sent:
			// A turn starts with the send: the screen counts as changed now, so the
			// turn ends only once it has been quiet for quietAfter after it.
			lastOutput, evaluated = time.Now(), false
			rhythm.reset()
			arm(quietAfter)
			e.mu.Lock()
			settled := rt.a.State == wire.StateDone || rt.a.State == wire.StateIdle
			e.mu.Unlock()
			if settled {
				e.apply(ctx, rt, &Signal{State: wire.StateWorking, Source: "send", Reason: "input sent"})
			}
			close(ack)
		case <-rt.outputs:
			now := time.Now()
			if now.Sub(lastOutput) >= quietAfter {
				// Only a pause this long can teach a rhythm, so only then is the state
				// looked at (a flood's outputs take no engine lock here): a pause spent
				// on a question was the user's, not the agent's rhythm.
				e.mu.Lock()
				waited := rt.a.State == wire.StateBlocked
				e.mu.Unlock()
				if waited {
					rhythm.reset()
				}
			}
			lastOutput = now
			rhythm.output(now)
			evaluated = false
			// Screen changes are announced to those who listen (the dashboard, a
			// gateway's watchers); with nobody listening, a redraw arms no timer.
			switch {
			case !e.broker.hearsTransient():
			case now.Sub(lastTransient) >= transientEvery:
				lastTransient = now
				announce()
			case !trailing:
				// The last change of a burst is announced too, once the interval passes.
				trailing = true
				transient.Reset(transientEvery - now.Sub(lastTransient))
			}
			if now.Sub(lastScreen) >= screenEvery || rt.eager.Load() > 0 {
				judge(now)
			}
			if settle := rhythm.settle(now); due.IsZero() || due.After(now.Add(settle)) {
				arm(settle)
			}
		case now := <-transient.C:
			trailing = false
			lastTransient = now
			announce()
		case now := <-timer.C:
			due = time.Time{}
			settle := rhythm.settle(now)
			if !evaluated && now.Sub(lastOutput) >= settle {
				evaluated = true
				judge(now)
			} else if !evaluated {
				arm(settle - now.Sub(lastOutput))
			}
		case <-silent:
			e.mu.Lock()
			pane := rt.a.PaneID
			e.mu.Unlock()
			if scr, err := e.host.Read(ctx, pane, ReadOpts{}); err == nil {
				if h := hashString(scr.Text); h != lastHash {
					lastHash = h
					select {
					case rt.outputs <- struct{}{}:
					default:
					}
				}
			}
		case <-polls:
			sig, err := obs.Poll(ctx)
			if err != nil {
				e.log.Debug("transcript poll", "id", rt.a.ID, "err", err)
			}
			e.apply(ctx, rt, sig)
		}
	}
}

// apply folds a signal into the agent record (Fold's rules), its changes written in
// one lock hold.
func (e *Engine) apply(ctx context.Context, rt *agentRT, s *Signal) {
	if s == nil {
		return
	}
	e.mu.Lock()
	before := rt.a
	for _, c := range Fold(rt.a, rt.turns, s, e.now()) {
		ev := c.Event
		e.writeLocked(ctx, rt, c.Agent, &ev)
	}
	acct := rt.a.Account
	if newPrompt(before, rt.a) {
		rt.promptAt = time.Now()
	}
	e.mu.Unlock()
	if s.Reading != nil {
		r := *s.Reading
		if r.Account == "" {
			r.Account = acct
		}
		e.recordReading(ctx, r)
	}
}

func (e *Engine) onExit(ctx context.Context, rt *agentRT, obs Observer, end paneEnd) {
	if obs != nil {
		if sig, err := obs.Poll(ctx); err == nil {
			e.apply(ctx, rt, sig)
		}
	}
	e.mu.Lock()
	pane := rt.a.PaneID
	e.mu.Unlock()
	// The last screen is kept with the end, in the same write.
	scr, serr := e.host.Read(ctx, pane, ReadOpts{Lines: 200})
	keep := func(a *wire.Agent) bool {
		if serr == nil {
			a.LastScreen = scr.Text
		}
		return true
	}
	if end.gone {
		e.end(ctx, rt, wire.StateLost, "host", "pane vanished from the host (closed outside orcr, or the host restarted)", nil, keep)
		return
	}
	reason := "process ended"
	if end.code != nil {
		reason = "process exited with code " + strconv.Itoa(*end.code)
	}
	e.end(ctx, rt, wire.StateExited, "host", reason, end.code, keep)
}

// hostEventLoop routes pane events to their agents' loops.
func (e *Engine) hostEventLoop() {
	defer e.wg.Done()
	ch := e.host.Events()
	for {
		select {
		case <-e.ctx.Done():
			return
		case ev, ok := <-ch:
			if !ok {
				return
			}
			e.mu.Lock()
			rt := e.agents[e.panes[ev.Pane]]
			running := rt != nil && rt.done != nil
			if !running && (ev.Kind == PaneExited || ev.Kind == PaneGone) {
				// The pane ended before its agent's loop started: launch picks it up.
				e.earlyExit[ev.Pane] = ev.ExitCode
			}
			e.mu.Unlock()
			if !running {
				continue
			}
			switch ev.Kind {
			case PaneOutput:
				select {
				case rt.outputs <- struct{}{}:
				default:
				}
			case PaneExited, PaneGone:
				select {
				case rt.exit <- paneEnd{code: ev.ExitCode, gone: ev.Kind == PaneGone}:
				default:
				}
			}
		}
	}
}

func (e *Engine) recordReading(ctx context.Context, r wire.LimitReading) {
	b, err := json.Marshal(r)
	if err != nil {
		return
	}
	key := r.Provider + "/" + r.Account + "/" + r.Window + "/" + r.Family
	if err := e.store.Put(ctx, "limits", key, b); err != nil {
		e.log.Warn("store limit reading", "err", err)
	}
	// The accounts service and the dashboard learn of it from this event.
	if _, err := e.broker.publish(ctx, wire.Event{Event: wire.EventUsageReading, At: e.now(),
		Data: map[string]any{"reading": r}}); err != nil {
		e.log.Warn("publish limit reading", "err", err)
	}
}

// hashString is FNV-1a, enough to notice that a screen changed.
func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

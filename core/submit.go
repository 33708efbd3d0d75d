package core

import (
	"context"
	"strings"
	"time"

	"orcr/core/wire"
)

// Typist is implemented by providers whose CLI needs care when text is typed and
// submitted with Enter in one send. Claude 2.1.328 takes a long burst of text followed
// at once by Enter as a paste: the Enter becomes a newline in its input box (or is
// dropped) and the message sits unsent. Providers without it get the text and Enter
// as they come.
type Typist interface {
	Typing() Typing
}

// Typing is a provider's rule for submitting typed text.
type Typing struct {
	// Echo: press Enter only once the tail of the text shows on the screen (bounded by
	// echoWait; Enter goes anyway when the CLI draws the text some other way).
	Echo bool
	// Confirm: after Enter, when no turn started within confirmWait and the text is
	// still on the screen, press Enter again (an Enter on an empty input does nothing),
	// at most confirmTries times in all.
	Confirm bool
	// Paste: give the text as a bracketed paste when the host can (Paster) and the
	// program asked for it.
	Paste bool
	// Quiet: type only once the screen has not changed for this long (bounded by
	// quietWait). Claude 2.1.328 garbles keys typed while it redraws after a turn.
	Quiet time.Duration
}

// Bounds of a careful submit. Each wait polls the screen or the state with a short
// backoff and ends as soon as its condition holds.
const (
	quietWait    = 1500 * time.Millisecond
	echoWait     = 2 * time.Second
	confirmWait  = 2 * time.Second
	confirmTries = 3
	tailLen      = 24
)

func (e *Engine) typing(rt *agentRT) Typing {
	e.mu.Lock()
	name := rt.a.Provider
	e.mu.Unlock()
	if t, ok := e.providers[name].(Typist); ok {
		return t.Typing()
	}
	return Typing{}
}

// submit types text, then presses keys (ending in enter) the way the provider's rule
// says: after the text shows, and again while no turn starts.
func (e *Engine) submit(ctx context.Context, rt *agentRT, pane, text string, keys []string, rule Typing) error {
	e.mu.Lock()
	beforeState, beforeAt, id := rt.a.State, rt.a.StateAt, rt.a.ID
	launching := justLaunched(rt.a)
	e.mu.Unlock()
	// A working agent's screen never stills (its spinner), and a message it takes
	// mid-turn is queued without a state change: the quiet wait and, when the text
	// went as a paste, the second Enter only cost time there. A launch is recorded
	// working before its CLI has reported anything, but a CLI still starting is not
	// mid-turn: it may still be drawing (a woken claude redraws its resumed
	// conversation, and under load that takes seconds), and an Enter it gets then is
	// lost with nothing to show for it — so it gets the quiet wait and the Enter again.
	working := beforeState == wire.StateWorking && !launching
	if rule.Quiet > 0 && !working {
		if err := e.waitQuiet(ctx, pane, rule.Quiet); err != nil {
			return err
		}
	}
	// The tail counts as shown when it is on the screen more often than before the
	// text was typed (the same words may be in the conversation already).
	tail := squeezeSpace(text)
	if len(tail) > tailLen {
		tail = tail[len(tail)-tailLen:]
	}
	shown := func() int {
		scr, err := e.host.Read(ctx, pane, ReadOpts{})
		if err != nil || tail == "" {
			return -1
		}
		return strings.Count(squeezeSpace(scr.Text), tail)
	}
	already := shown()
	onScreen := func() bool { return shown() > already }
	ps, pastes := e.host.(Paster)
	pastes = pastes && rule.Paste
	// Right before the first key: a prompt may have come up since the send began.
	if err := refuseIfPrompt(ctx, e, rt, pane); err != nil {
		return err
	}
	if pastes {
		if err := ps.Paste(ctx, pane, text); err != nil {
			return hostErr("paste text", err)
		}
	} else if err := e.host.SendText(ctx, pane, text); err != nil {
		return hostErr("send text", err)
	}
	if rule.Echo && tail != "" {
		if err := pollFor(ctx, echoWait, onScreen); err != nil {
			return err
		}
		if !onScreen() {
			e.log.Info("send: the text did not show on the screen; pressing enter anyway", "agent", id)
		}
	}
	started := func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		return rt.a.State != beforeState || !rt.a.StateAt.Equal(beforeAt) || !rt.a.State.Live()
	}
	tries := 1
	if rule.Confirm && !(working && pastes) {
		tries = confirmTries
	}
	for i := range tries {
		k := keys
		if i > 0 {
			k = []string{"enter"}
		}
		// Enter on a prompt that came up while the text was typed would answer it:
		// the first is refused (the send says why it went no further); a prompt
		// showing before a second one means the first started a turn that asked
		// something, so the message went in and nothing more is pressed.
		if err := refuseIfPrompt(ctx, e, rt, pane); err != nil {
			we, blocked := err.(*wire.Error)
			switch {
			case blocked && we.Code == wire.CodeAgentBlocked && i > 0:
				e.log.Info("send: a prompt showed after enter; not pressing it again", "agent", id)
				return nil
			case blocked && we.Code == wire.CodeAgentBlocked:
				return &wire.Error{Code: we.Code, Data: we.Data,
					Message: strings.Replace(we.Message, "nothing was typed", "the text was typed but Enter was not pressed", 1)}
			}
			return err
		}
		if err := e.host.SendKeys(ctx, pane, k...); err != nil {
			return hostErr("send keys", err)
		}
		if i == tries-1 {
			break
		}
		if err := pollFor(ctx, confirmWait, started); err != nil {
			return err
		}
		if started() || !onScreen() {
			break
		}
		e.log.Info("send: no turn started and the text is still on the screen; pressing enter again",
			"agent", id, "try", i+2)
	}
	return nil
}

// justLaunched reports whether a is in the state its launch recorded (working, from
// the server, "launched"), its CLI not having reported anything since.
func justLaunched(a wire.Agent) bool {
	return a.State == wire.StateWorking && a.StateSource == "server" && a.StateReason == "launched"
}

// waitQuiet waits until two reads of the screen quiet apart are the same, at most
// quietWait; a read error ends the wait (the send will report it).
func (e *Engine) waitQuiet(ctx context.Context, pane string, quiet time.Duration) error {
	deadline := time.Now().Add(quietWait)
	last, err := e.host.Read(ctx, pane, ReadOpts{})
	if err != nil {
		return nil
	}
	since := time.Now()
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(quiet / 4):
		}
		scr, err := e.host.Read(ctx, pane, ReadOpts{})
		if err != nil {
			return nil
		}
		if scr.Text != last.Text || scr.CursorX != last.CursorX || scr.CursorY != last.CursorY {
			last, since = scr, time.Now()
			continue
		}
		if time.Since(since) >= quiet {
			return nil
		}
	}
	return nil
}

// pollFor waits until cond holds or d passes (not an error), or ctx ends (an error).
func pollFor(ctx context.Context, d time.Duration, cond func() bool) error {
	deadline := time.Now().Add(d)
	for delay := 20 * time.Millisecond; !cond() && time.Now().Before(deadline); delay = min(delay*2, 200*time.Millisecond) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
	}
	return nil
}

// squeezeSpace drops all white space, so text wrapped on a screen still matches.
func squeezeSpace(s string) string {
	return strings.Join(strings.Fields(s), "")
}

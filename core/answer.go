package core

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"orcr/core/wire"
)

// Prompter is what an Observer implements when it can read its program's prompts off
// the screen and knows the keys that answer them. agent.answer uses it to re-read the
// prompt right before sending (a wrong answer is worse than none) and to turn the
// chosen option into input.
type Prompter interface {
	// Prompt parses the prompt the screen shows now; nil when it shows none.
	Prompt(s Screen) *wire.Blocked
	// AnswerSteps is the input that picks opt (nil: free text only) with text along.
	// shown is the prompt as Prompt just read it. Both run on the agent's loop.
	AnswerSteps(shown *wire.Blocked, opt *wire.Option, text string) ([]AnswerStep, error)
}

// AnswerStep is one piece of input. Until, when set, must hold on the screen before
// the next step is sent: a TUI that has not yet redrawn for the previous key may take
// the next for something else. Until runs off the agent's loop, so it may look only at
// the text it is given.
type AnswerStep struct {
	Text  string   // typed literally
	Keys  []string // named keys pressed after Text
	Until func(screen string) bool
}

// InputGuard is what a Prompter implements when its program ignores keys for a while
// after it draws a prompt. Claude 2.1.328 drops every key that comes within 150 ms of a
// dialog's first paint (a guard against a keystroke meant for something else landing
// on a prompt that just appeared); a dropped key does not restart it. An answer's
// first key waits until the prompt has been on screen that long, counted from when
// orcr first saw it, which is after the program drew it.
type InputGuard interface {
	InputGuard() time.Duration
}

// Answer bounds.
const (
	answerTimeout = 5 * time.Second // default: the state must leave blocked by then
	promptAppear  = 2 * time.Second // a hook can report a prompt before it is drawn
	stepTimeout   = 3 * time.Second // each step's Until
	// A last key whose screen stayed untouched this long went nowhere (a guard orcr
	// does not know of, a TUI not yet reading keys for its prompt) and is pressed
	// again, each wait longer than the one before (300, 600, 900 ms …): a guard that
	// restarts on every key — claude's 600 ms one after it scrolls a dialog into view
	// — lets a key through once the gap is long enough.
	answerRetry   = 300 * time.Millisecond
	answerRetries = 6
	// While an answer waits, the agent's loop reads the screen on every output; it is
	// also asked to at this pace, for hosts that report no output.
	answerNudge = 50 * time.Millisecond
)

// Answer answers what blocked agents wait for (agent.answer).
func (e *Engine) Answer(ctx context.Context, p wire.AnswerParams) (wire.AnswerResult, error) {
	n := 0
	for _, b := range []bool{p.Allow, p.Always, p.Deny, p.Option != 0} {
		if b {
			n++
		}
	}
	switch {
	case n > 1:
		return wire.AnswerResult{}, wire.Errorf(wire.CodeInvalidParams, "give one of --allow, --always, --deny, --option N")
	case n == 0 && p.Text == "":
		return wire.AnswerResult{}, wire.Errorf(wire.CodeInvalidParams, "nothing to answer: give --allow, --always, --deny, --option N or --text T")
	case p.Option < 0:
		return wire.AnswerResult{}, wire.Errorf(wire.CodeOptionRange, "option numbers start at 1")
	case p.TimeoutSeconds < 0 || p.TimeoutSeconds > 600:
		return wire.AnswerResult{}, wire.Errorf(wire.CodeInvalidParams, "timeoutSeconds must be 0..600")
	}
	targets, err := e.answerTargets(ctx, p)
	if err != nil {
		return wire.AnswerResult{}, err
	}
	var res wire.AnswerResult
	for _, rt := range targets {
		a, err := e.answerOne(ctx, rt, p)
		if err != nil {
			if len(targets) > 1 {
				e.mu.Lock()
				path := rt.a.Path
				e.mu.Unlock()
				if we, ok := err.(*wire.Error); ok {
					return res, &wire.Error{Code: we.Code, Message: path + ": " + we.Message, Data: we.Data}
				}
				return res, fmt.Errorf("%s: %w", path, err)
			}
			return res, err
		}
		res.Answers = append(res.Answers, a)
	}
	return res, nil
}

// answerTargets resolves the target: one agent by id, id prefix or path must be
// blocked; a glob selects its blocked agents and must select one unless All.
func (e *Engine) answerTargets(ctx context.Context, p wire.AnswerParams) ([]*agentRT, error) {
	if !strings.ContainsAny(p.Target, "*?[{") {
		rt, err := e.resolve(ctx, p.Target)
		if err != nil {
			return nil, err
		}
		e.mu.Lock()
		a := rt.a
		e.mu.Unlock()
		if a.State != wire.StateBlocked {
			return nil, &wire.Error{Code: wire.CodeNotBlocked,
				Message: fmt.Sprintf("%s is %s, not blocked: nothing to answer", a.Path, a.State),
				Data:    map[string]any{"agents": []string{a.Path}, "state": string(a.State)}}
		}
		return []*agentRT{rt}, nil
	}
	scope, err := e.scope(ctx)
	if err != nil {
		return nil, err
	}
	g, err := ParseGlob(scope, p.Target)
	if err != nil {
		return nil, err
	}
	var blocked, matched []*agentRT
	e.mu.Lock()
	for _, rt := range e.agents {
		if rt.a.State.Terminal() || !g.Match(rt.a.Path) {
			continue
		}
		matched = append(matched, rt)
		if rt.a.State == wire.StateBlocked {
			blocked = append(blocked, rt)
		}
	}
	sort.Slice(blocked, func(i, j int) bool { return blocked[i].a.Path < blocked[j].a.Path })
	paths := make([]string, len(blocked))
	for i, rt := range blocked {
		paths[i] = rt.a.Path
	}
	e.mu.Unlock()
	switch {
	case len(matched) == 0:
		return nil, wire.Errorf(wire.CodeNotFound, "no running agent matches %q; see orcr agent ls", p.Target)
	case len(blocked) == 0:
		return nil, &wire.Error{Code: wire.CodeNotBlocked,
			Message: fmt.Sprintf("none of the %d agents matching %q is blocked", len(matched), p.Target),
			Data:    map[string]any{"agents": []string{}}}
	case len(blocked) > 1 && !p.All:
		return nil, &wire.Error{Code: wire.CodeSeveralBlocked,
			Message: fmt.Sprintf("%q matches %d blocked agents: %s; name one, or pass --all to answer each the same",
				p.Target, len(blocked), strings.Join(paths, ", ")),
			Data: map[string]any{"agents": paths}}
	}
	return blocked, nil
}

// answerOne checks that the prompt the agent was recorded blocked on is still the one
// on screen, sends the chosen answer, and waits for the state to leave it.
func (e *Engine) answerOne(ctx context.Context, rt *agentRT, p wire.AnswerParams) (wire.Answered, error) {
	t0 := time.Now()
	pane, err := e.livePane(rt)
	if err != nil {
		return wire.Answered{}, err
	}
	e.mu.Lock()
	rec := rt.a.Blocked
	path := rt.a.Path
	e.mu.Unlock()
	if rec != nil && rec.Kind == wire.BlockedLimit {
		msg := path + " is blocked on a usage limit: there is nothing to press"
		if rec.ResetsAt != nil {
			msg += "; it resets at " + rec.ResetsAt.UTC().Format(time.RFC3339)
		}
		return wire.Answered{}, wire.Errorf(wire.CodeNotAnswerable, "%s", msg)
	}
	// Read the prompt as it is now, on the agent's loop (which owns the observer).
	var guard time.Duration
	if g, ok := rt.observer().(InputGuard); ok {
		guard = g.InputGuard()
	}
	var shown *wire.Blocked
	var before string // the screen the answer is sent to
	var firstShown time.Time
	deadline := time.Now().Add(promptAppear)
	for {
		shown, before, err = e.promptNow(ctx, rt, pane)
		if err != nil {
			return wire.Answered{}, err
		}
		if shown != nil {
			if firstShown.IsZero() {
				firstShown = time.Now()
			}
			wait := time.Until(e.promptSeen(rt, rec, firstShown).Add(guard))
			if wait <= 0 {
				break
			}
			// Too fresh for the program to take keys: wait, then read it again.
			if err := sleepCtx(ctx, wait); err != nil {
				return wire.Answered{}, err
			}
			continue
		}
		if rec != nil && len(rec.Options) > 0 || time.Now().After(deadline) {
			break
		}
		// Recorded from a hook before the dialog was drawn: give it a moment.
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return wire.Answered{}, err
		}
	}
	if shown == nil || !SamePrompt(rec, shown) {
		return wire.Answered{}, promptGone(path, rec, shown)
	}
	opt, err := chooseOption(path, shown, p)
	if err != nil {
		return wire.Answered{}, err
	}
	obs, _ := rt.observer().(Prompter)
	var steps []AnswerStep
	if lerr := e.onLoop(ctx, rt, func() { steps, err = obs.AnswerSteps(shown, opt, p.Text) }); lerr != nil {
		return wire.Answered{}, lerr
	}
	if err != nil {
		return wire.Answered{}, &wire.Error{Code: wire.CodeInvalidParams, Message: path + ": " + err.Error(),
			Data: map[string]any{"options": shown.Options}}
	}
	out := wire.Answered{Option: opt, Text: p.Text}
	tRead := time.Since(t0)
	rt.eager.Add(1) // from the first key on, every redraw is judged at once
	defer rt.eager.Add(-1)
	lastBefore, err := e.sendSteps(ctx, pane, steps, before, &out.Keys)
	if err != nil {
		return out, err
	}
	e.log.Debug("answer sent", "agent", path, "keys", out.Keys, "read", tRead, "sent", time.Since(t0))
	timeout := answerTimeout
	if p.TimeoutSeconds > 0 {
		timeout = time.Duration(p.TimeoutSeconds) * time.Second
	}
	// Typed text shows in its option's place (claude: "3. keep the old API"), which
	// is the same prompt being filled in, not another one.
	edited := -1
	if p.Text != "" && opt != nil {
		edited = slices.IndexFunc(shown.Options, func(o wire.Option) bool { return o.Label == opt.Label && o.Key == opt.Key })
	}
	a, left := e.awaitLeave(ctx, rt, pane, shown, edited, lastBefore, steps, timeout, &out.Keys)
	out.Agent = a
	e.log.Debug("answer awaited", "agent", path, "left", left, "took", time.Since(t0), "keys", out.Keys,
		"state", a.State, "source", a.StateSource, "reason", a.StateReason)
	if !left {
		return out, &wire.Error{Code: wire.CodeAnswerNotTaken,
			Message: fmt.Sprintf("%s: sent %s, but after %s it is still blocked on %q; look with: orcr agent read %s",
				path, strings.Join(out.Keys, " "), timeout, shown.Question, path),
			Data: map[string]any{"options": shown.Options}}
	}
	return out, nil
}

// promptNow reads the screen and parses the prompt on the agent's loop goroutine.
func (e *Engine) promptNow(ctx context.Context, rt *agentRT, pane string) (*wire.Blocked, string, error) {
	pr, ok := rt.observer().(Prompter)
	if !ok {
		e.mu.Lock()
		prov := rt.a.Provider
		e.mu.Unlock()
		return nil, "", wire.Errorf(wire.CodeNotAnswerable, "the %s adapter cannot read prompts; answer with: orcr agent send", prov)
	}
	scr, err := e.host.Read(ctx, pane, ReadOpts{})
	if err != nil {
		return nil, "", hostErr("read screen", err)
	}
	var shown *wire.Blocked
	if err := e.onLoop(ctx, rt, func() { shown = pr.Prompt(scr) }); err != nil {
		return nil, "", err
	}
	return shown, scr.Text, nil
}

// onLoop runs fn on the agent's loop goroutine and waits for it.
func (e *Engine) onLoop(ctx context.Context, rt *agentRT, fn func()) error {
	if rt.done == nil || rt.events == nil {
		return wire.Errorf(wire.CodeNotRunning, "agent %s is not running", rt.a.Path)
	}
	ran := make(chan struct{})
	select {
	case rt.events <- func() { fn(); close(ran) }:
	case <-rt.done:
		return wire.Errorf(wire.CodeNotRunning, "agent %s ended", rt.a.Path)
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-ran:
		return nil
	case <-rt.done:
		return wire.Errorf(wire.CodeNotRunning, "agent %s ended", rt.a.Path)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// promptSeen is when the prompt on screen first showed: when the agent's loop recorded
// its options for the current block, else (a hook reported the prompt before the
// screen showed it) when this answer first read it. A record that has had its options
// since before a restart has been on screen long enough.
func (e *Engine) promptSeen(rt *agentRT, rec *wire.Blocked, firstShown time.Time) time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case !rt.promptAt.IsZero() && !rt.promptAt.Before(rt.a.StateAt):
		return rt.promptAt
	case rec != nil && len(rec.Options) > 0:
		return time.Time{}
	}
	return firstShown
}

// newPrompt reports whether a change from before to after records a prompt's options
// anew: a new block, or options that were not there or were others.
func newPrompt(before, after wire.Agent) bool {
	if after.State != wire.StateBlocked || after.Blocked == nil || len(after.Blocked.Options) == 0 {
		return false
	}
	return before.State != wire.StateBlocked || !before.StateAt.Equal(after.StateAt) || before.Blocked == nil ||
		!sameLabels(before.Blocked.Options, after.Blocked.Options, -1)
}

// sendSteps sends the steps, each after the previous one's Until holds. It returns
// the screen as it was right before the last step (before, for a single step), which
// tells a last key that went nowhere.
func (e *Engine) sendSteps(ctx context.Context, pane string, steps []AnswerStep, before string, keys *[]string) (string, error) {
	for i, s := range steps {
		if i == len(steps)-1 && i > 0 {
			if scr, err := e.host.Read(ctx, pane, ReadOpts{}); err == nil {
				before = scr.Text
			}
		}
		if err := e.sendStep(ctx, pane, s, keys); err != nil {
			return before, err
		}
		if s.Until == nil || i == len(steps)-1 {
			continue
		}
		deadline := time.Now().Add(stepTimeout)
		for {
			scr, err := e.host.Read(ctx, pane, ReadOpts{})
			if err == nil && s.Until(scr.Text) {
				break
			}
			if time.Now().After(deadline) {
				return before, &wire.Error{Code: wire.CodeAnswerNotTaken,
					Message: fmt.Sprintf("sent %s, but the screen did not change as expected within %s; nothing more was sent",
						strings.Join(*keys, " "), stepTimeout)}
			}
			if err := sleepCtx(ctx, 10*time.Millisecond); err != nil {
				return before, err
			}
		}
	}
	return before, nil
}

func (e *Engine) sendStep(ctx context.Context, pane string, s AnswerStep, keys *[]string) error {
	// An answer's text is typed as text only, as agent.send's is (cleantext.go).
	if s.Text = CleanText(s.Text); s.Text != "" {
		if err := e.host.SendText(ctx, pane, s.Text); err != nil {
			return hostErr("send text", err)
		}
		*keys = append(*keys, fmt.Sprintf("%q", s.Text))
	}
	if len(s.Keys) > 0 {
		if err := e.host.SendKeys(ctx, pane, s.Keys...); err != nil {
			return hostErr("send keys", err)
		}
		*keys = append(*keys, s.Keys...)
	}
	return nil
}

// awaitLeave waits until the agent is no longer blocked on shown (whose option edited,
// if not -1, shows typed text now), waking on every event and asking its loop to
// judge the screen rather than at its own pace. A last step whose screen (before)
// still stands unchanged after answerRetry went nowhere and is pressed again — only
// when it types no text (a single key, or the enter that ends an answer): the same key
// on the same untouched prompt picks the same option.
func (e *Engine) awaitLeave(ctx context.Context, rt *agentRT, pane string, shown *wire.Blocked, edited int, before string,
	steps []AnswerStep, timeout time.Duration, keys *[]string) (wire.Agent, bool) {
	start := time.Now()
	e.mu.Lock()
	since := rt.a.StateAt
	e.mu.Unlock()
	last := steps[len(steps)-1]
	retries, lastTry := answerRetries, start
	if len(steps) == 1 || last.Text == "" {
		retries = 0
	}
	nudge := time.NewTicker(answerNudge)
	defer nudge.Stop()
	for {
		e.broker.mu.Lock()
		wake := e.broker.wake
		e.broker.mu.Unlock()
		e.mu.Lock()
		a := rt.a
		e.mu.Unlock()
		// Left: another state, or blocked anew since (the next plan looks the same),
		// or blocked on another prompt.
		if a.State != wire.StateBlocked || !a.StateAt.Equal(since) ||
			a.Blocked != nil && len(a.Blocked.Options) > 0 && !samePrompt(a.Blocked, shown, edited) {
			return a, true
		}
		if time.Since(start) > timeout || ctx.Err() != nil {
			return a, false
		}
		if retries < answerRetries && time.Since(lastTry) >= time.Duration(retries+1)*answerRetry {
			retries, lastTry = retries+1, time.Now()
			// Only an untouched screen says the key went nowhere; a redraw in
			// progress may be the key taking effect.
			if scr, err := e.host.Read(ctx, pane, ReadOpts{}); err == nil && scr.Text == before {
				e.log.Debug("answer retry", "agent", a.Path, "after", time.Since(start), "try", retries)
				_ = e.sendStep(ctx, pane, last, keys)
			}
		}
		select {
		case rt.judge <- struct{}{}:
		default:
		}
		select {
		case <-wake:
		case <-nudge.C:
		case <-ctx.Done():
			return a, false
		}
	}
}

// SamePrompt reports whether shown is the prompt rec was recorded for: the same
// question line and the same options (labels in order). A record made before the
// options were on screen (a hook is faster than the redraw) matches any prompt.
func SamePrompt(rec, shown *wire.Blocked) bool { return samePrompt(rec, shown, -1) }

// samePrompt is SamePrompt with the label of option skip (-1: none) left out.
func samePrompt(rec, shown *wire.Blocked, skip int) bool {
	if shown == nil {
		return false
	}
	if rec == nil {
		return true
	}
	if rec.Question != "" && shown.Question != "" && rec.Question != shown.Question {
		return false
	}
	return len(rec.Options) == 0 || sameLabels(rec.Options, shown.Options, skip)
}

func sameLabels(a, b []wire.Option, skip int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if i != skip && a[i].Label != b[i].Label {
			return false
		}
	}
	return true
}

func promptGone(path string, rec, shown *wire.Blocked) error {
	data := map[string]any{}
	msg := path + ": the prompt it was blocked on is no longer on screen; nothing was sent"
	if shown != nil {
		msg = path + ": the screen now shows another prompt; nothing was sent. It offers:\n" + wire.FormatOptions(shown.Options)
		data["options"] = shown.Options
	} else if rec != nil {
		data["options"] = rec.Options
	}
	return &wire.Error{Code: wire.CodePromptGone, Message: msg, Data: data}
}

// chooseOption maps the request onto the prompt's options: by meaning for
// allow/always/deny, by number for --option; nil for free text.
func chooseOption(path string, b *wire.Blocked, p wire.AnswerParams) (*wire.Option, error) {
	list := func() string {
		if len(b.Options) == 0 {
			return " It shows no options; answer with --text."
		}
		return " It offers:\n" + wire.FormatOptions(b.Options)
	}
	data := map[string]any{"options": b.Options}
	if p.Option != 0 {
		if p.Option > len(b.Options) {
			return nil, &wire.Error{Code: wire.CodeOptionRange,
				Message: fmt.Sprintf("%s: option %d is out of range (1..%d).%s", path, p.Option, len(b.Options), list()), Data: data}
		}
		o := b.Options[p.Option-1]
		return &o, nil
	}
	meaning, flag := "", ""
	switch {
	case p.Allow:
		meaning, flag = wire.MeaningAllowOnce, "--allow"
	case p.Always:
		meaning, flag = wire.MeaningAllowAlways, "--always"
	case p.Deny:
		meaning, flag = wire.MeaningDeny, "--deny"
	default:
		return nil, nil
	}
	for _, o := range b.Options {
		if o.Meaning == meaning {
			return &o, nil
		}
	}
	return nil, &wire.Error{Code: wire.CodeNoSuchOption,
		Message: fmt.Sprintf("%s: %s: the prompt has no %s option; pick one with --option N.%s", path, flag, meaning, list()), Data: data}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

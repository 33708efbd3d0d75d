package core

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"orcr/core/wire"
)

// Info describes the server.
func (e *Engine) Info(context.Context) (wire.InfoResult, error) {
	e.mu.Lock()
	n := len(e.agents)
	e.mu.Unlock()
	return wire.InfoResult{Version: wire.Version, PID: os.Getpid(), Home: e.opts.Home, Socket: e.opts.Socket,
		Host: e.host.Name(), HostWhy: e.opts.HostWhy, StartedAt: e.started.Format(time.RFC3339),
		Agents: n, LastSeq: e.store.LastSeq(), Providers: e.providerNames()}, nil
}

// scope returns the caller agent's path ("" for none) for resolving relative paths.
func (e *Engine) scope(ctx context.Context) (string, error) {
	parent, err := e.callerAgent(ctx)
	if err != nil || parent == nil {
		return "", err
	}
	return parent.Path, nil
}

// current returns, for every path, the newest record: what `ls` shows by default.
func (e *Engine) currentLocked(all bool) []wire.Agent {
	out := make([]wire.Agent, 0, len(e.agents))
	if all {
		for _, rt := range e.agents {
			out = append(out, rt.a)
		}
	} else {
		best := map[string]*agentRT{}
		for _, rt := range e.agents {
			b := best[rt.a.Path]
			if b == nil || newer(rt, b) {
				best[rt.a.Path] = rt
			}
		}
		for _, rt := range best {
			out = append(out, rt.a)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].CreatedAt.Before(out[j].CreatedAt)
	})
	return out
}

// newer prefers a live record over a terminal one, then the later one.
func newer(a, b *agentRT) bool {
	if al, bl := !a.a.State.Terminal(), !b.a.State.Terminal(); al != bl {
		return al
	}
	return a.a.CreatedAt.After(b.a.CreatedAt)
}

// List returns agents matching the glob (all when empty).
func (e *Engine) List(ctx context.Context, p wire.ListParams) ([]wire.Agent, error) {
	var g *Glob
	if p.Glob != "" {
		scope, err := e.scope(ctx)
		if err != nil {
			return nil, err
		}
		gl, err := ParseGlob(scope, p.Glob)
		if err != nil {
			return nil, err
		}
		g = &gl
	}
	// A caller gone (its connection closed) is not listed for: thousands of lists
	// nobody would read held the lock and the CPU from every other client.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	e.mu.Lock()
	all := e.currentLocked(p.All)
	e.mu.Unlock()
	out := all[:0]
	for i, a := range all {
		if i%1024 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if g != nil && !g.Match(a.Path) {
			continue
		}
		if p.Node != "" && (p.Node == "local" && a.Node != "" || p.Node != "local" && a.Node != p.Node) {
			continue
		}
		if !p.Full {
			a.LastScreen = ""
		}
		out = append(out, a)
	}
	return out, nil
}

// resolve finds one agent by id, id prefix or path.
func (e *Engine) resolve(ctx context.Context, target string) (*agentRT, error) {
	if target == "" {
		return nil, wire.Errorf(wire.CodeInvalidParams, "a target is required: an id, an id prefix or a path")
	}
	e.mu.Lock()
	if rt, ok := e.agents[target]; ok {
		e.mu.Unlock()
		return rt, nil
	}
	e.mu.Unlock()
	scope, err := e.scope(ctx)
	if err != nil {
		return nil, err
	}
	path, perr := ResolvePath(scope, target)
	e.mu.Lock()
	defer e.mu.Unlock()
	if perr == nil {
		var best *agentRT
		for _, rt := range e.agents {
			if rt.a.Path == path && (best == nil || newer(rt, best)) {
				best = rt
			}
		}
		if best != nil {
			return best, nil
		}
	}
	if len(target) >= 4 && isHexish(target) {
		var hits []*agentRT
		for id, rt := range e.agents {
			if strings.HasPrefix(id, target) {
				hits = append(hits, rt)
			}
		}
		if len(hits) == 1 {
			return hits[0], nil
		}
		if len(hits) > 1 {
			return nil, wire.Errorf(wire.CodeAmbiguous, "id prefix %q matches %d agents; give more characters", target, len(hits))
		}
	}
	return nil, wire.Errorf(wire.CodeNotFound, "no agent matches %q; list them with: orcr agent ls --all", target)
}

func isHexish(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c == '-') {
			return false
		}
	}
	return true
}

// Get returns one agent.
func (e *Engine) Get(ctx context.Context, target string) (wire.Agent, error) {
	rt, err := e.resolve(ctx, target)
	if err != nil {
		return wire.Agent{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return rt.a, nil
}

// livePane returns the pane of a live agent.
func (e *Engine) livePane(rt *agentRT) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !rt.a.State.Live() || rt.a.PaneID == "" {
		return "", &wire.Error{Code: wire.CodeNotRunning,
			Message: fmt.Sprintf("%s is %s and has no live pane", rt.a.Path, rt.a.State)}
	}
	return rt.a.PaneID, nil
}

// Send types text and/or presses keys in an agent's pane. Text followed by Enter is
// submitted by the provider's Typing rule (submit.go).
func (e *Engine) Send(ctx context.Context, p wire.SendParams) error {
	rt, err := e.resolve(ctx, p.Target)
	if err != nil {
		return err
	}
	if a, ok := remoteAgent(e, rt); ok {
		if err := liveRemote(a); err != nil {
			return err
		}
		r, err := remoteOf(e)
		if err != nil {
			return err
		}
		return r.Send(ctx, a, p)
	}
	// Text is typed as text only (cleantext.go): a control byte in it would be a
	// keystroke — Ctrl-C ends the agent, ESC interrupts it.
	raw := p.Text
	if p.Text = CleanText(p.Text); raw != "" && p.Text == "" && !p.Enter && len(p.Keys) == 0 {
		return wire.Errorf(wire.CodeInvalidParams, "nothing to send: the text has only control characters, which are never typed as text; to press keys, name them with --keys (e.g. --keys ctrl-c)")
	}
	e.mu.Lock()
	hibernated, path := rt.a.State == wire.StateHibernated, rt.a.Path
	e.mu.Unlock()
	if hibernated {
		// A send wakes it: its session is resumed with the text as the first message.
		if p.Text == "" {
			return wire.Errorf(wire.CodeNotRunning, "%s is hibernated: send it text to wake it, or orcr agent resume %s", path, path)
		}
		return e.wake(ctx, rt, p.Text)
	}
	pane, err := e.livePane(rt)
	if err != nil {
		return err
	}
	if p.Text == "" && !p.Enter && len(p.Keys) == 0 {
		return wire.Errorf(wire.CodeInvalidParams, "nothing to send: give text or --keys")
	}
	// Text or an Enter into a prompt that waits for a choice would answer it
	// (sendguard.go): refused on the record now, and on the screen right before
	// each keystroke.
	guard := typesIntoPane(p)
	if guard {
		if err := refuseIfBlocked(e, rt); err != nil {
			return err
		}
	}
	keys := p.Keys
	if p.Enter {
		keys = append(append([]string{}, keys...), "enter")
	}
	// Marked before the first keystroke: a collection deciding between the keystroke
	// and the program's answer to it sees the agent given work (gc.go).
	rt.lastInput.Store(e.now().UnixNano())
	if rule := e.typing(rt); p.Text != "" && p.Enter && (rule.Echo || rule.Confirm) {
		if err := e.submit(ctx, rt, pane, p.Text, keys, rule); err != nil {
			return err
		}
		keys = nil
	} else if p.Text != "" {
		if err := refuseIfPrompt(ctx, e, rt, pane); err != nil {
			return err
		}
		if err := e.host.SendText(ctx, pane, p.Text); err != nil {
			return hostErr("send text", err)
		}
	}
	if len(keys) > 0 {
		if guard {
			if err := refuseIfPrompt(ctx, e, rt, pane); err != nil {
				return err
			}
		}
		if err := e.host.SendKeys(ctx, pane, keys...); err != nil {
			return hostErr("send keys", err)
		}
	}
	e.mu.Lock()
	if p.Enter {
		rt.turns++
	}
	e.mu.Unlock()
	if p.Enter {
		e.turnOnSend(ctx, rt)
	}
	return nil
}

// turnOnSend starts a turn of a TurnOnSend provider's agent in its loop and waits
// until the loop has done it, so the state is working when the send returns.
func (e *Engine) turnOnSend(ctx context.Context, rt *agentRT) {
	e.mu.Lock()
	ts, ok := e.providers[rt.a.Provider].(TurnOnSend)
	sent, done := rt.sent, rt.done
	e.mu.Unlock()
	if !ok || !ts.TurnOnSend() || sent == nil {
		return
	}
	ack := make(chan struct{})
	select {
	case sent <- ack:
	case <-done:
		return
	case <-ctx.Done():
		return
	}
	select {
	case <-ack:
	case <-done:
	case <-ctx.Done():
	}
}

func hostErr(what string, err error) error {
	if _, ok := err.(*wire.Error); ok {
		return err
	}
	return &wire.Error{Code: wire.CodeHostError, Message: fmt.Sprintf("%s: %v", what, err)}
}

// Read returns the screen (or the last screen of an ended agent), the last message,
// or the transcript.
func (e *Engine) Read(ctx context.Context, p wire.ReadParams) (wire.ReadResult, error) {
	rt, err := e.resolve(ctx, p.Target)
	if err != nil {
		return wire.ReadResult{}, err
	}
	e.mu.Lock()
	a := rt.a
	e.mu.Unlock()
	if a.Node != "" && !a.State.Terminal() && a.State != wire.StateQueued {
		r, err := remoteOf(e)
		if err != nil {
			return wire.ReadResult{}, err
		}
		res, err := r.Read(ctx, a, p)
		if err == nil || a.LastScreen == "" && a.LastMessage == "" {
			return res, err
		}
	}
	switch {
	case p.LastMessage:
		return wire.ReadResult{Text: a.LastMessage, Live: a.State.Live()}, nil
	case p.Transcript:
		if a.Transcript == "" {
			return wire.ReadResult{}, wire.Errorf(wire.CodeNotFound, "%s has no transcript (provider %s)", a.Path, a.Provider)
		}
		b, err := readTail(a.Transcript, 4<<20)
		if err != nil {
			return wire.ReadResult{}, wire.Errorf(wire.CodeNotFound, "read transcript: %v", err)
		}
		return wire.ReadResult{Text: string(b), Live: a.State.Live()}, nil
	}
	if a.PaneID != "" && !a.State.Terminal() {
		scr, err := e.host.Read(ctx, a.PaneID, ReadOpts{Lines: p.Lines, ANSI: p.ANSI})
		if err == nil {
			return wire.ReadResult{Text: scr.Text, Cols: scr.Cols, Rows: scr.Rows, Live: true}, nil
		}
		if a.LastScreen == "" {
			return wire.ReadResult{}, hostErr("read screen", err)
		}
	}
	if a.PaneID != "" && a.State.Terminal() && a.LastScreen == "" {
		// Ended without a last screen (the read at its end failed or came before the
		// host had drawn its output: a program that exits at once), but its pane is
		// still there (kept, or not yet collected): its screen is the last screen.
		if scr, err := e.host.Read(ctx, a.PaneID, ReadOpts{Lines: p.Lines, ANSI: p.ANSI}); err == nil {
			return wire.ReadResult{Text: scr.Text, Cols: scr.Cols, Rows: scr.Rows, Live: false}, nil
		}
	}
	text := a.LastScreen
	if p.Lines > 0 {
		text = lastLines(text, p.Lines)
	}
	return wire.ReadResult{Text: text, Live: false}, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func readTail(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	off := st.Size() - max
	if off < 0 {
		off = 0
	}
	buf := make([]byte, st.Size()-off)
	_, err = f.ReadAt(buf, off)
	if err == io.EOF {
		err = nil
	}
	return buf, err
}

// waitSets maps a wait target to the states that satisfy it. Terminal states always
// end a wait for that agent, since nothing else can follow.
var waitSets = map[string][]wire.State{
	"done":    {wire.StateDone},
	"idle":    {wire.StateIdle, wire.StateDone},
	"blocked": {wire.StateBlocked},
	"exited":  {},
	"settled": {wire.StateIdle, wire.StateDone, wire.StateBlocked},
}

// Wait blocks until every agent matching the glob reaches the wanted state.
func (e *Engine) Wait(ctx context.Context, p wire.WaitParams) (wire.WaitResult, error) {
	until := p.Until
	if until == "" {
		until = "settled"
	}
	want, ok := waitSets[until]
	if !ok {
		return wire.WaitResult{}, wire.Errorf(wire.CodeInvalidParams, "unknown --until %q; use done, idle, blocked, exited or settled", until)
	}
	if p.TimeoutSeconds < 0 {
		return wire.WaitResult{}, wire.Errorf(wire.CodeInvalidParams, "timeout must not be negative")
	}
	scope, err := e.scope(ctx)
	if err != nil {
		return wire.WaitResult{}, err
	}
	g, err := ParseGlob(scope, p.Glob)
	if err != nil {
		return wire.WaitResult{}, err
	}
	if p.TimeoutSeconds > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(p.TimeoutSeconds)*time.Second)
		defer cancel()
	}
	for {
		e.broker.mu.Lock()
		wake := e.broker.wake
		e.broker.mu.Unlock()
		matched := e.matchCurrent(g)
		if len(matched) == 0 {
			return wire.WaitResult{}, wire.Errorf(wire.CodeNotFound, "no agent matches %q", p.Glob)
		}
		all := true
		for _, a := range matched {
			if !a.State.Terminal() && !stateIn(a.State, want) {
				all = false
				break
			}
		}
		if all {
			return wire.WaitResult{Agents: matched}, nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			if p.TimeoutSeconds > 0 && ctx.Err() == context.DeadlineExceeded {
				return wire.WaitResult{Agents: matched, TimedOut: true}, nil
			}
			return wire.WaitResult{Agents: matched}, ctx.Err()
		}
	}
}

// matchCurrent returns the newest record of every path the glob selects, in path
// order. It filters before sorting, so a wait on a few agents among thousands stays
// cheap on every event.
func (e *Engine) matchCurrent(g Glob) []wire.Agent {
	e.mu.Lock()
	best := map[string]*agentRT{}
	for _, rt := range e.agents {
		if !g.Match(rt.a.Path) {
			continue
		}
		if b := best[rt.a.Path]; b == nil || newer(rt, b) {
			best[rt.a.Path] = rt
		}
	}
	out := make([]wire.Agent, 0, len(best))
	for _, rt := range best {
		out = append(out, rt.a)
	}
	e.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func stateIn(s wire.State, set []wire.State) bool {
	for _, x := range set {
		if s == x {
			return true
		}
	}
	return false
}

// Kill stops every non-terminal agent matching the glob (queued ones leave the queue).
func (e *Engine) Kill(ctx context.Context, p wire.KillParams) (wire.KillResult, error) {
	var targets []*agentRT
	if rt, err := e.resolveExactID(p.Glob); err == nil {
		targets = []*agentRT{rt}
	} else {
		scope, err := e.scope(ctx)
		if err != nil {
			return wire.KillResult{}, err
		}
		g, err := ParseGlob(scope, p.Glob)
		if err != nil {
			return wire.KillResult{}, err
		}
		e.mu.Lock()
		for _, rt := range e.agents {
			if !rt.a.State.Terminal() && g.Match(rt.a.Path) {
				targets = append(targets, rt)
			}
		}
		e.mu.Unlock()
	}
	if len(targets) == 0 {
		return wire.KillResult{}, wire.Errorf(wire.CodeNotFound, "no running agent matches %q; see orcr agent ls", p.Glob)
	}
	// The records are read under the lock (a launch rewrites them), the sort on that copy.
	paths := make(map[*agentRT]string, len(targets))
	e.mu.Lock()
	for _, rt := range targets {
		paths[rt] = rt.a.Path
	}
	e.mu.Unlock()
	sort.Slice(targets, func(i, j int) bool { return paths[targets[i]] < paths[targets[j]] })
	if !p.DryRun {
		killAll(targets, killConcurrency, func(rt *agentRT) { e.killOne(ctx, rt, "killed by request", nil) })
	}
	res := wire.KillResult{DryRun: p.DryRun}
	for _, rt := range targets {
		e.mu.Lock()
		res.Agents = append(res.Agents, rt.a)
		e.mu.Unlock()
	}
	return res, nil
}

// killConcurrency bounds how many agents one Kill stops at once. Closing a pane can wait
// out its program's grace (SIGHUP, then SIGKILL), so a fleet killed one agent after
// another took the sum of those waits (nine shell agents, 36 s under load); eight at a
// time keeps it near the slowest one without a burst of host calls for a large glob.
const killConcurrency = 8

// killAll runs kill for every target, at most limit at a time, and returns when all
// are done. Each target is killed by one call, so an agent's own transitions (its
// screen kept, killed, its pane closed) stay in order; only different agents overlap.
func killAll(targets []*agentRT, limit int, kill func(rt *agentRT)) {
	if len(targets) == 1 {
		kill(targets[0])
		return
	}
	var wg sync.WaitGroup
	slots := make(chan struct{}, max(1, limit))
	for _, rt := range targets {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			kill(rt)
		})
	}
	wg.Wait()
}

func (e *Engine) resolveExactID(s string) (*agentRT, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if rt, ok := e.agents[s]; ok && !rt.a.State.Terminal() {
		return rt, nil
	}
	return nil, wire.ErrNotFound
}

// killOne marks an agent killed, keeping its last screen, and closes its pane. With
// still set, the kill happens only if still holds for the record at the moment of the
// kill (GC stops an idle agent only if it is idle still), and it reports whether it did.
func (e *Engine) killOne(ctx context.Context, rt *agentRT, reason string, still func(a wire.Agent) bool) bool {
	if a, ok := remoteAgent(e, rt); ok {
		return killRemote(ctx, e, rt, a, reason, still)
	}
	e.mu.Lock()
	pane := rt.a.PaneID
	stop := rt.stop
	e.mu.Unlock()
	screen, haveScreen := "", false
	if pane != "" {
		if scr, err := e.host.Read(ctx, pane, ReadOpts{Lines: 200}); err == nil {
			screen, haveScreen = scr.Text, true
		}
	}
	killed := e.end(ctx, rt, wire.StateKilled, "server", reason, nil, func(a *wire.Agent) bool {
		if still != nil && !still(*a) {
			return false
		}
		if haveScreen {
			a.LastScreen = screen
		}
		return true
	})
	if !killed && still != nil {
		return false
	}
	if stop != nil {
		stop()
	}
	if pane != "" {
		if err := e.host.Close(ctx, pane); err != nil {
			e.log.Warn("close pane", "pane", pane, "err", err)
		}
		e.mu.Lock()
		delete(e.panes, pane)
		e.mu.Unlock()
	}
	return killed
}

// Resize resizes an agent's pane.
func (e *Engine) Resize(ctx context.Context, p wire.ResizeParams) error {
	rt, err := e.resolve(ctx, p.Target)
	if err != nil {
		return err
	}
	if a, ok := remoteAgent(e, rt); ok {
		if err := liveRemote(a); err != nil {
			return err
		}
		r, err := remoteOf(e)
		if err != nil {
			return err
		}
		return r.Resize(ctx, a, p.Cols, p.Rows)
	}
	pane, err := e.livePane(rt)
	if err != nil {
		return err
	}
	if p.Cols <= 0 || p.Rows <= 0 || p.Cols > 1000 || p.Rows > 1000 {
		return wire.Errorf(wire.CodeInvalidParams, "size %dx%d out of range", p.Cols, p.Rows)
	}
	if err := e.host.Resize(ctx, pane, p.Cols, p.Rows); err != nil {
		return hostErr("resize", err)
	}
	return nil
}

// Attach says how to attach to an agent's pane.
func (e *Engine) Attach(ctx context.Context, p wire.AttachParams) (wire.AttachResult, error) {
	rt, err := e.resolve(ctx, p.Target)
	if err != nil {
		return wire.AttachResult{}, err
	}
	if a, ok := remoteAgent(e, rt); ok {
		if err := liveRemote(a); err != nil {
			return wire.AttachResult{}, err
		}
		r, err := remoteOf(e)
		if err != nil {
			return wire.AttachResult{}, err
		}
		return r.Attach(ctx, a)
	}
	pane, err := e.livePane(rt)
	if err != nil {
		return wire.AttachResult{}, err
	}
	e.mu.Lock()
	a := rt.a
	e.mu.Unlock()
	if argv := e.host.AttachCommand(pane); len(argv) > 0 {
		return wire.AttachResult{Argv: argv, Agent: a}, nil
	}
	return wire.AttachResult{Stream: true, Agent: a}, nil
}

// AttachStream pipes a terminal to the pane (embedded host).
func (e *Engine) AttachStream(ctx context.Context, p wire.AttachParams, in io.Reader, out io.Writer) error {
	rt, err := e.resolve(ctx, p.Target)
	if err != nil {
		return err
	}
	pane, err := e.livePane(rt)
	if err != nil {
		return err
	}
	if p.Cols > 0 && p.Rows > 0 {
		_ = e.host.Resize(ctx, pane, p.Cols, p.Rows)
	}
	return e.host.Stream(ctx, pane, in, out)
}

// Subscribe streams events.
func (e *Engine) Subscribe(ctx context.Context, p wire.SubscribeParams) (<-chan wire.Event, error) {
	scope, err := e.scope(ctx)
	if err != nil {
		return nil, err
	}
	var globs []Glob
	for _, s := range p.Paths {
		g, err := ParseGlob(scope, s)
		if err != nil {
			return nil, err
		}
		globs = append(globs, g)
	}
	return e.broker.subscribe(ctx, p.After, globs, p.Transient), nil
}

// LastSeq is the seq of the newest stored event.
func (e *Engine) LastSeq() uint64 { return e.store.LastSeq() }

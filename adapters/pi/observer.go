package pi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"orcr/adapters/internal/agentkit"
	"orcr/adapters/internal/jsonl"
	"orcr/core"
	"orcr/core/wire"
)

type observer struct {
	p     *Provider
	agent wire.Agent
	now   func() time.Time

	tail *jsonl.Tail
	s    *Session

	state   wire.State
	blocked *wire.Blocked
	menu    *agentkit.Menu // the list Prompt last read, for AnswerSteps
	reading *wire.LimitReading
	sent    agentkit.Sent // what the engine has been told already
	dialog  string
}

func newObserver(p *Provider, a wire.Agent) *observer {
	o := &observer{p: p, agent: a, now: time.Now, s: NewSession(), sent: agentkit.NewSent(a)}
	if a.Transcript != "" {
		o.tail = &jsonl.Tail{Path: a.Transcript}
	}
	return o
}

func (o *observer) Close() error { return nil }

// Hook implements core.Observer for the reports of orcr's pi extension.
func (o *observer) Hook(event string, payload []byte) (*core.Signal, error) {
	var h struct {
		SessionFile string `json:"sessionFile"`
		Data        struct {
			Reason string `json:"reason"`
		} `json:"data"`
	}
	if err := json.Unmarshal(payload, &h); err != nil {
		return nil, fmt.Errorf("pi hook %s: malformed payload: %w", event, err)
	}
	sig := &core.Signal{Source: "hook"}
	if h.SessionFile != "" && (o.tail == nil || o.tail.Path != h.SessionFile) {
		o.tail = &jsonl.Tail{Path: h.SessionFile}
		o.s = NewSession()
	}
	if o.sent.Transcript(sig, h.SessionFile) {
		o.sent.Session(sig, sessionID(h.SessionFile))
	}
	switch event {
	case "session_start":
		// The hook and the screen race at start-up: a session that starts with no
		// model already read off the screen stays blocked on setup (the screen says it
		// once, so an idle here would stand for good).
		if o.state == wire.StateBlocked && o.blocked != nil && o.blocked.Kind == wire.BlockedSetup {
			break
		}
		if o.agent.Prompt == "" || h.Data.Reason == "new" {
			o.set(sig, wire.StateIdle, "session "+h.Data.Reason, nil)
		}
	case "agent_start":
		o.set(sig, wire.StateWorking, "agent started", nil)
	case "agent_end":
		// The turn's outcome is in the session file: read it now so a provider error
		// (usage limit) is not reported as done.
		o.read(context.Background())
		if l := o.s.Limit; l != nil {
			o.sent.SawLimit(l.At)
			o.limit(sig, l)
		} else {
			o.set(sig, wire.StateDone, "turn finished", nil)
		}
		o.fromSession(sig)
	}
	return o.finish(sig), nil
}

func (o *observer) read(ctx context.Context) error {
	if o.tail == nil {
		return nil
	}
	_, err := o.tail.Read(ctx, o.s.Add)
	if errors.Is(err, jsonl.ErrShrunk) {
		o.s = NewSession()
		_, err = o.tail.Read(ctx, o.s.Add)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// Poll implements core.Observer.
func (o *observer) Poll(ctx context.Context) (*core.Signal, error) {
	sig := &core.Signal{Source: "transcript"}
	err := o.read(ctx)
	o.fromSession(sig)
	if l := o.s.Limit; l != nil && o.sent.NewLimit(l.At) {
		o.limit(sig, l)
	}
	return o.finish(sig), err
}

func (o *observer) fromSession(sig *core.Signal) {
	s := o.s
	if s.Lines == 0 {
		return
	}
	o.sent.Usage(sig, s.Usage(o.p.Prices))
	o.sent.Model(sig, s.Model)
	o.sent.Session(sig, s.ID)
	o.sent.LastMessage(sig, s.LastMessage)
}

func (o *observer) limit(sig *core.Signal, l *LimitHit) {
	detail := "usage limit"
	if l.ResetsAt != nil {
		detail = "resets " + l.ResetsAt.UTC().Format("15:04 UTC")
	}
	o.set(sig, wire.StateBlocked, "usage-limit: "+detail, &wire.Blocked{Kind: wire.BlockedLimit, Detail: l.Text, ResetsAt: l.ResetsAt})
	o.reading = &wire.LimitReading{Provider: Name, Window: "5h", UsedPct: 100, ResetsAt: l.ResetsAt, LimitHit: true, ObservedAt: o.now().UTC()}
}

func (o *observer) set(sig *core.Signal, s wire.State, reason string, b *wire.Blocked) {
	sig.State, sig.Reason, sig.Blocked = s, reason, b
	o.state, o.blocked = s, b
}

func (o *observer) finish(sig *core.Signal) *core.Signal {
	if sig.Reading == nil && o.reading != nil {
		sig.Reading, o.reading = o.reading, nil
	}
	if sig.State == "" && sig.Usage == nil && sig.Model == "" && sig.SessionID == "" &&
		sig.Transcript == "" && sig.LastMessage == "" && sig.Reading == nil {
		return nil
	}
	return sig
}

// noModels is pi's startup warning when no provider is logged in (0.73): it waits at
// its prompt, and a message sent to it goes nowhere.
const noModels = "No models available. Use /login"

// Screen implements core.Observer: pi has no permission prompts; the one startup
// dialog is project trust, and the one setup screen the warning that no provider is
// logged in.
func (o *observer) Screen(sc core.Screen, quiet time.Duration) *core.Signal {
	sig := &core.Signal{Source: "screen"}
	if strings.Contains(sc.Text, noModels) {
		if o.dialog != "" {
			return nil
		}
		o.dialog = "not signed in"
		o.set(sig, wire.StateBlocked, "setup: not signed in", &wire.Blocked{Kind: wire.BlockedSetup, Question: "not signed in",
			Detail: "pi has no model: no provider is logged in; run `pi` and /login (or set a provider's API key, e.g. ANTHROPIC_API_KEY), then orcr agent kill this agent and run it again"})
		return sig
	}
	if strings.Contains(sc.Text, "Trust this project") || strings.Contains(sc.Text, "trust this project") {
		if o.dialog != "" {
			return nil
		}
		o.dialog = "trust project"
		o.set(sig, wire.StateBlocked, "dialog: trust project", &wire.Blocked{Kind: wire.BlockedDialog, Detail: "trust project", Question: "trust project", Options: dialogOptions(sc.Text)})
		return sig
	}
	if o.dialog != "" {
		o.dialog = ""
		if o.state == wire.StateBlocked && o.blocked != nil && (o.blocked.Kind == wire.BlockedDialog || o.blocked.Kind == wire.BlockedSetup) {
			o.set(sig, wire.StateWorking, "dialog dismissed", nil)
			return sig
		}
	}
	return nil
}

// dialogOptions reads a dialog's list, when it has one.
func dialogOptions(text string) []wire.Option {
	if m := agentkit.ParseMenu(text, true); m != nil {
		return m.Options()
	}
	return nil
}

package claude

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

// observer follows one claude agent. All methods run on the engine's goroutine for
// this agent.
type observer struct {
	p     *Provider
	agent wire.Agent
	now   func() time.Time

	tail *jsonl.Tail
	tr   *Transcript

	hooksSeen bool
	state     wire.State // last state this observer reported
	source    string     // the source of that state's signal
	blocked   *wire.Blocked
	readings  agentkit.Readings
	rates     map[string]*wire.LimitReading // latest status-line reading per rate_limits key

	sent      agentkit.Sent // what the engine has been told already
	sentTurns int
	sentOpen  bool
	dialog    string

	// menuSeen: the current prompt's menu has been on screen, so its going away
	// means it was answered. permHook: a PermissionRequest came this turn, which
	// makes the later, vaguer permission Notification redundant.
	menuSeen   bool
	permHook   bool
	promptText string // the screen Prompt last read, for AnswerSteps
	// adoptedWorking is when the turn under way began, for an agent re-adopted
	// while working, until the first read of its transcript.
	adoptedWorking time.Time
}

func newObserver(p *Provider, a wire.Agent) *observer {
	o := &observer{p: p, agent: a, now: time.Now, tr: NewTranscript(), rates: map[string]*wire.LimitReading{},
		sent: agentkit.NewSent(a)}
	path := a.Transcript
	if path == "" && a.SessionID != "" {
		var env []string
		if d := a.Env["CLAUDE_CONFIG_DIR"]; d != "" {
			env = []string{"CLAUDE_CONFIG_DIR=" + d}
		}
		path = TranscriptPath(p.configDir(env), agentkit.RealDir(a.Cwd), a.SessionID)
	}
	if path != "" {
		o.tail = &jsonl.Tail{Path: path}
	}
	// Re-adopted after a restart: carry on from the recorded state, so a prompt still
	// on screen stays blocked rather than read as "working" off the transcript.
	if a.State.Live() {
		o.state, o.blocked, o.source = a.State, a.Blocked, a.StateSource
		o.menuSeen = a.Blocked != nil && len(a.Blocked.Options) > 0
		// orcr launches claude with its hooks: unless the transcript had to decide
		// last (hooks silent), they keep coming after the restart.
		o.hooksSeen = a.StateSource != "transcript"
		if a.State == wire.StateWorking {
			o.adoptedWorking = a.StateAt
		}
	}
	return o
}

// Close implements core.Observer.
func (o *observer) Close() error { return nil }

// hookPayload is the union of the fields orcr reads from claude's hook and status
// line payloads.
type hookPayload struct {
	SessionID        string          `json:"session_id"`
	TranscriptPath   string          `json:"transcript_path"`
	HookEventName    string          `json:"hook_event_name"`
	Source           string          `json:"source"`
	Model            json.RawMessage `json:"model"` // a string in SessionStart, an object in the status line
	Prompt           string          `json:"prompt"`
	LastAssistantMsg string          `json:"last_assistant_message"`
	Error            string          `json:"error"`
	NotificationType string          `json:"notification_type"`
	Message          string          `json:"message"`
	ToolName         string          `json:"tool_name"`
	ToolInput        json.RawMessage `json:"tool_input"`
	RateLimits       map[string]*struct {
		UsedPercentage float64 `json:"used_percentage"`
		ResetsAt       int64   `json:"resets_at"`
	} `json:"rate_limits"`
}

func (h *hookPayload) model() string {
	if len(h.Model) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(h.Model, &s) == nil {
		return s
	}
	var m struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(h.Model, &m)
	return m.ID
}

// Hook implements core.Observer.
func (o *observer) Hook(event string, payload []byte) (*core.Signal, error) {
	var h hookPayload
	if err := json.Unmarshal(payload, &h); err != nil {
		return nil, fmt.Errorf("claude hook %s: malformed payload: %w", event, err)
	}
	sig := &core.Signal{Source: "hook"}
	if strings.EqualFold(event, "statusline") {
		o.statusLine(&h, sig)
		return o.finish(sig), nil
	}
	o.hooksSeen = true
	o.follow(&h, sig)
	switch event {
	case "SessionStart":
		o.sent.Model(sig, h.model())
		if h.Source == "clear" || o.agent.Prompt == "" {
			o.setState(sig, wire.StateIdle, "session "+orDefault(h.Source, "started"), nil)
		}
	case "UserPromptSubmit":
		o.permHook = false
		o.setState(sig, wire.StateWorking, "prompt submitted", nil)
	case "Stop":
		// Read the turn to its end first, so whoever sees "done" sees its usage.
		o.drain(h.LastAssistantMsg)
		o.fromTranscript(sig)
		sig.Source = "hook"
		o.sent.LastMessage(sig, h.LastAssistantMsg)
		o.permHook, o.menuSeen = false, false
		o.setState(sig, wire.StateDone, "turn finished", nil)
	case "StopFailure":
		switch h.Error {
		case "rate_limit":
			o.limitHit(sig, h.LastAssistantMsg)
		case "authentication_failed":
			if strings.Contains(h.LastAssistantMsg, "403") {
				// claude files a 403 (a key or account refused one request: a model or a
				// feature it may not use) under the same category, and still tells the user
				// to /login; the next message can go through, so that turn failed and the
				// agent is not waiting for a sign-in.
				o.setState(sig, wire.StateDone, "turn failed: "+h.Error+" (403)", nil)
				break
			}
			// The API refused the login (401): no turn runs until the user signs in again.
			o.setState(sig, wire.StateBlocked, "setup: not signed in", &wire.Blocked{Kind: wire.BlockedSetup,
				Question: "not signed in", Detail: setupFix(signInAgain, o.configDirSet())})
		default:
			o.setState(sig, wire.StateDone, "turn failed: "+orDefault(h.Error, "unknown error"), nil)
		}
	case "Notification":
		switch h.NotificationType {
		case "permission_prompt":
			if o.state != wire.StateBlocked && !o.permHook {
				o.setState(sig, wire.StateBlocked, "permission prompt", &wire.Blocked{Kind: wire.BlockedPermission, Detail: h.Message})
			}
		case "elicitation_dialog":
			if o.state != wire.StateBlocked {
				o.setState(sig, wire.StateBlocked, "question", &wire.Blocked{Kind: wire.BlockedQuestion, Detail: h.Message})
			}
		}
	case "PermissionRequest":
		o.permHook = true
		b := permissionBlock(h.ToolName, h.ToolInput)
		if o.state == wire.StateBlocked && o.menuSeen && o.blocked != nil {
			// The menu was read off the screen before this hook arrived: keep its
			// options, add what the hook knows.
			m := *o.blocked
			m.Kind, m.Detail = b.Kind, b.Detail
			if b.Text != "" {
				m.Text = b.Text
			}
			b = &m
		}
		o.setState(sig, wire.StateBlocked, b.Kind+": "+b.Detail, b)
	case "PostToolUse", "PostToolUseFailure":
		if o.state == wire.StateBlocked && (o.blocked == nil || o.blocked.Kind != wire.BlockedLimit) {
			o.menuSeen = false
			o.setState(sig, wire.StateWorking, "tool ran", nil)
		}
	}
	return o.finish(sig), nil
}

// follow adopts a new session id / transcript from a hook (e.g. after /clear).
func (o *observer) follow(h *hookPayload, sig *core.Signal) {
	o.sent.Session(sig, h.SessionID)
	o.sent.Transcript(sig, h.TranscriptPath)
	if h.TranscriptPath != "" && (o.tail == nil || o.tail.Path != h.TranscriptPath) {
		o.tail = &jsonl.Tail{Path: h.TranscriptPath}
		o.tr = NewTranscript()
		o.sentTurns, o.sentOpen = 0, false
	}
}

func (o *observer) statusLine(h *hookPayload, sig *core.Signal) {
	o.follow(h, sig)
	o.sent.Model(sig, h.model())
	now := o.now().UTC()
	for key, rl := range h.RateLimits {
		if rl == nil {
			continue
		}
		wf, ok := statusWindows[key]
		if !ok {
			continue
		}
		win, fam := wf[0], wf[1]
		r := &wire.LimitReading{Provider: Name, Window: win, Family: fam, UsedPct: rl.UsedPercentage,
			LimitHit: rl.UsedPercentage >= 100, ObservedAt: now}
		if rl.ResetsAt > 0 {
			t := time.Unix(rl.ResetsAt, 0).UTC()
			r.ResetsAt = &t
		}
		if prev := o.rates[key]; prev != nil && prev.UsedPct == r.UsedPct && eqTime(prev.ResetsAt, r.ResetsAt) {
			continue
		}
		o.rates[key] = r
		o.readings.Add(r)
	}
}

// statusWindows maps the status line's rate_limits keys to window and model family.
var statusWindows = map[string][2]string{
	"five_hour": {"5h", ""}, "seven_day": {"weekly", ""},
	"seven_day_opus": {"weekly", "opus"}, "seven_day_sonnet": {"weekly", "sonnet"},
}

// limitFamily is the model family a limit message names ("your Opus limit"), "".
func limitFamily(text string) string {
	t := strings.ToLower(text)
	for _, f := range []string{"opus", "sonnet"} {
		if strings.Contains(t, f) {
			return f
		}
	}
	return ""
}

// limitHit marks the agent blocked on a usage limit, with the reset time from the
// CLI's text or else the status line's exhausted window.
func (o *observer) limitHit(sig *core.Signal, text string) {
	reset := agentkit.ParseReset(text, o.now(), nil)
	win, fam := "5h", limitFamily(text)
	if reset == nil {
		for _, k := range []string{"five_hour", "seven_day", "seven_day_opus", "seven_day_sonnet"} {
			if r := o.rates[k]; r != nil && r.UsedPct >= 100 && r.ResetsAt != nil {
				reset, win, fam = r.ResetsAt, r.Window, r.Family
				break
			}
		}
	}
	if fam != "" || strings.Contains(strings.ToLower(text), "weekly") {
		win = "weekly" // the model-scoped limits are weekly ones
	}
	detail := "usage limit"
	if reset != nil {
		detail = "resets " + reset.UTC().Format("15:04 UTC")
	}
	o.setState(sig, wire.StateBlocked, "usage-limit: "+detail, &wire.Blocked{Kind: wire.BlockedLimit, Detail: strings.TrimSpace(text), ResetsAt: reset})
	o.readings.Add(&wire.LimitReading{Provider: Name, Window: win, Family: fam, UsedPct: 100, ResetsAt: reset, LimitHit: true, ObservedAt: o.now().UTC()})
}

func (o *observer) setState(sig *core.Signal, s wire.State, reason string, b *wire.Blocked) {
	sig.State, sig.Reason, sig.Blocked = s, reason, b
	o.state, o.blocked, o.source = s, b, sig.Source
}

// finish attaches a queued reading and drops an empty signal.
func (o *observer) finish(sig *core.Signal) *core.Signal {
	if sig.Reading == nil {
		sig.Reading = o.readings.Next()
	}
	if sig.State == "" && sig.Usage == nil && sig.Model == "" && sig.SessionID == "" &&
		sig.Transcript == "" && sig.LastMessage == "" && sig.Reading == nil && sig.Blocked == nil {
		return nil
	}
	return sig
}

// Poll implements core.Observer: it reads new transcript lines.
func (o *observer) Poll(ctx context.Context) (*core.Signal, error) {
	sig := &core.Signal{Source: "transcript"}
	if o.tail != nil {
		_, err := o.tail.Read(ctx, o.tr.Add)
		switch {
		case errors.Is(err, jsonl.ErrShrunk):
			o.tr = NewTranscript()
			o.sentTurns, o.sentOpen = 0, false
			_, err = o.tail.Read(ctx, o.tr.Add)
		case errors.Is(err, fs.ErrNotExist):
			err = nil // claude writes the file after the first exchange
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return o.finish(sig), err
		}
		o.fromTranscript(sig)
	}
	return o.finish(sig), nil
}

func (o *observer) fromTranscript(sig *core.Signal) {
	t := o.tr
	if t.Lines > 0 {
		o.sent.Usage(sig, o.p.Prices.Usage(t.ByModel()))
	}
	o.sent.Model(sig, t.Model)
	o.sent.Session(sig, t.SessionID)
	o.sent.LastMessage(sig, t.LastMessage)
	if t.Limit != nil && o.sent.NewLimit(t.Limit.At) {
		if !(o.state == wire.StateBlocked && o.blocked != nil && o.blocked.Kind == wire.BlockedLimit) {
			o.limitHit(sig, t.Limit.Text)
		}
	}
	// Re-adopted while working: a turn that ended while the server was down fired
	// its Stop hook at no server, so the first read of the transcript decides — a
	// turn end written after the turn began is this turn's.
	if at := o.adoptedWorking; !at.IsZero() {
		o.adoptedWorking = time.Time{}
		if sig.State == "" && o.state == wire.StateWorking && t.TurnEnded > 0 && !t.TurnOpen && t.EndedAt.After(at) {
			o.setState(sig, wire.StateDone, "turn finished while the server was down (transcript)", nil)
		}
	}
	// Without hooks (e.g. a hook command that fails), the transcript tells turns apart.
	if !o.hooksSeen && sig.State == "" {
		if t.TurnEnded > o.sentTurns && !t.TurnOpen {
			o.setState(sig, wire.StateDone, "turn finished (transcript)", nil)
		} else if t.TurnOpen && !o.sentOpen && o.state != wire.StateWorking && o.state != wire.StateBlocked {
			o.setState(sig, wire.StateWorking, "prompt in transcript", nil)
		}
	}
	o.sentTurns, o.sentOpen = t.TurnEnded, t.TurnOpen
}

func eqTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// permissionBlock describes a PermissionRequest: "Bash(rm -rf build)"; for
// ExitPlanMode the plan in full; for AskUserQuestion the question. The options are
// read from the menu on screen, which is what the keys act on.
func permissionBlock(tool string, input json.RawMessage) *wire.Blocked {
	var in map[string]any
	_ = json.Unmarshal(input, &in)
	switch tool {
	case "AskUserQuestion":
		b := &wire.Blocked{Kind: wire.BlockedQuestion}
		qs, _ := in["questions"].([]any)
		if len(qs) > 0 {
			q, _ := qs[0].(map[string]any)
			b.Detail, _ = q["question"].(string)
			b.Text = b.Detail
		}
		return b
	case "ExitPlanMode":
		b := &wire.Blocked{Kind: wire.BlockedPlan, Detail: "plan"}
		b.Text, _ = in["plan"].(string)
		return b
	}
	arg := ""
	for _, k := range []string{"command", "file_path", "path", "url", "pattern", "notebook_path"} {
		if v, ok := in[k].(string); ok && v != "" {
			arg = v
			break
		}
	}
	if len(arg) > 200 {
		arg = arg[:200] + "…"
	}
	return &wire.Blocked{Kind: wire.BlockedPermission, Detail: fmt.Sprintf("%s(%s)", orDefault(tool, "tool"), arg)}
}

// drainBound is how long a Stop hook waits for the turn's last lines to reach the
// transcript: claude can run the hook before it has written them (agent-clis.md §8).
const drainBound = time.Second

// drain reads the transcript until it holds the turn's end (the hook's last message,
// or any ended turn when the hook names none), bounded by drainBound. A transcript
// that does not exist is not waited for: the Stop hook's state is news at once.
func (o *observer) drain(last string) {
	if o.tail == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), drainBound)
	defer cancel()
	turns := o.tr.TurnEnded
	for {
		_, err := o.tail.Read(ctx, o.tr.Add)
		switch {
		case errors.Is(err, jsonl.ErrShrunk):
			o.tr = NewTranscript()
			o.sentTurns, o.sentOpen = 0, false
			continue
		case errors.Is(err, fs.ErrNotExist):
			return // no transcript (yet): nothing to wait for, the hook is the news
		}
		if last != "" && strings.TrimSpace(o.tr.LastMessage) == strings.TrimSpace(last) || o.tr.TurnEnded > turns {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

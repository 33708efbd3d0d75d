package opencode

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"orcr/adapters/internal/agentkit"
	"orcr/adapters/prices"
	"orcr/core"
	"orcr/core/wire"
)

// observer follows one OpenCode agent from its plugin's events.
type observer struct {
	p     *Provider
	agent wire.Agent
	now   func() time.Time

	session  string // the agent's root session
	msgs     map[string]msgInfo
	texts    map[string]map[string]string // message id -> part id -> text
	lastMsg  string                       // newest assistant message id of the root session
	statusID string                       // id of the newest session.status applied

	state   wire.State
	blocked *wire.Blocked
	reading *wire.LimitReading
	sent    agentkit.Sent // what the engine has been told already
}

type msgInfo struct {
	session string
	model   string
	created int64
	cost    float64
	tok     prices.Tokens
}

func newObserver(p *Provider, a wire.Agent) *observer {
	return &observer{p: p, agent: a, now: time.Now, session: a.SessionID, msgs: map[string]msgInfo{},
		texts: map[string]map[string]string{}, sent: agentkit.NewSent(a)}
}

func (o *observer) Close() error { return nil }

type event struct {
	ID         string `json:"id"`
	Type       string `json:"type"`
	Properties struct {
		SessionID string          `json:"sessionID"`
		Info      json.RawMessage `json:"info"`
		Part      json.RawMessage `json:"part"`
		Status    *struct {
			Type    string `json:"type"`
			Attempt int    `json:"attempt"`
			Message string `json:"message"`
			Next    int64  `json:"next"`
		} `json:"status"`
		Error json.RawMessage `json:"error"`
		// permission.asked / question.asked
		Permission string          `json:"permission"`
		Type       string          `json:"type"`
		Title      string          `json:"title"`
		Patterns   []string        `json:"patterns"`
		Pattern    json.RawMessage `json:"pattern"`
		Questions  []struct {
			Question string `json:"question"`
			Options  []struct {
				Label string `json:"label"`
			} `json:"options"`
		} `json:"questions"`
	} `json:"properties"`
}

type assistantInfo struct {
	ID         string  `json:"id"`
	SessionID  string  `json:"sessionID"`
	Role       string  `json:"role"`
	ModelID    string  `json:"modelID"`
	ProviderID string  `json:"providerID"`
	ParentID   string  `json:"parentID"`
	Cost       float64 `json:"cost"`
	Tokens     struct {
		Input     int64 `json:"input"`
		Output    int64 `json:"output"`
		Reasoning int64 `json:"reasoning"`
		Cache     struct {
			Read  int64 `json:"read"`
			Write int64 `json:"write"`
		} `json:"cache"`
	} `json:"tokens"`
	Time struct {
		Created   int64 `json:"created"`
		Completed int64 `json:"completed"`
	} `json:"time"`
	Error *apiError `json:"error"`
}

type apiError struct {
	Name string `json:"name"`
	Data struct {
		Message    string `json:"message"`
		StatusCode int    `json:"statusCode"`
	} `json:"data"`
}

// Hook implements core.Observer.
func (o *observer) Hook(name string, payload []byte) (*core.Signal, error) {
	var e event
	if err := json.Unmarshal(payload, &e); err != nil {
		return nil, fmt.Errorf("opencode hook %s: malformed payload: %w", name, err)
	}
	if e.Type == "" {
		e.Type = name
	}
	sig := &core.Signal{Source: "hook"}
	sid := e.Properties.SessionID
	switch e.Type {
	case "session.created":
		var info struct {
			ID       string `json:"id"`
			ParentID string `json:"parentID"`
		}
		_ = json.Unmarshal(e.Properties.Info, &info)
		if o.session == "" && info.ParentID == "" && info.ID != "" {
			o.session = info.ID
		}
	case "session.status":
		if !o.root(sid) || e.Properties.Status == nil || (o.statusID != "" && e.ID != "" && e.ID < o.statusID) {
			break // a subagent's status, or an older report that arrived late
		}
		o.statusID = e.ID
		switch st := e.Properties.Status; st.Type {
		case "busy":
			if o.state != wire.StateBlocked {
				o.set(sig, wire.StateWorking, "session busy", nil)
			}
		case "idle":
			if !(o.state == wire.StateBlocked && o.blocked != nil && o.blocked.Kind == wire.BlockedLimit) {
				o.set(sig, wire.StateDone, "session idle", nil)
			}
		case "retry":
			if isLimit(st.Message, 0) {
				o.limit(sig, st.Message)
			}
		}
	case "session.error":
		var ae apiError
		if json.Unmarshal(e.Properties.Error, &ae) == nil && o.root(sid) && isLimit(ae.Data.Message, ae.Data.StatusCode) {
			o.limit(sig, ae.Data.Message)
		}
	case "message.updated":
		var info assistantInfo
		if json.Unmarshal(e.Properties.Info, &info) != nil || info.Role != "assistant" || info.ID == "" {
			break
		}
		o.message(&info, sig)
	case "message.part.updated":
		var part struct {
			ID        string `json:"id"`
			MessageID string `json:"messageID"`
			Type      string `json:"type"`
			Text      string `json:"text"`
			Synthetic bool   `json:"synthetic"`
		}
		if json.Unmarshal(e.Properties.Part, &part) != nil || part.Type != "text" || part.Synthetic {
			break
		}
		if o.texts[part.MessageID] == nil {
			o.texts[part.MessageID] = map[string]string{}
		}
		o.texts[part.MessageID][part.ID] = part.Text
		o.lastText(sig)
	case "permission.asked", "permission.updated":
		if !o.root(sid) {
			break
		}
		detail := e.Properties.Title
		if detail == "" {
			perm := e.Properties.Permission
			if perm == "" {
				perm = e.Properties.Type
			}
			detail = perm + "(" + strings.Join(e.Properties.Patterns, " ") + ")"
		}
		o.set(sig, wire.StateBlocked, "permission: "+detail, &wire.Blocked{Kind: wire.BlockedPermission, Detail: detail,
			Question: "Permission required", Options: permissionOptions()})
	case "question.asked":
		if !o.root(sid) {
			break
		}
		b := &wire.Blocked{Kind: wire.BlockedQuestion}
		if len(e.Properties.Questions) > 0 {
			q := e.Properties.Questions[0]
			b.Detail, b.Question, b.Text = q.Question, q.Question, q.Question
			for i, op := range q.Options {
				b.Options = append(b.Options, wire.Option{Label: op.Label, Key: strconv.Itoa(i + 1), Meaning: agentkit.Classify(op.Label)})
			}
		}
		o.set(sig, wire.StateBlocked, "question: "+b.Detail, b)
	case "permission.replied", "question.replied":
		if o.root(sid) && o.state == wire.StateBlocked {
			o.set(sig, wire.StateWorking, "answered", nil)
		}
	}
	o.sent.Session(sig, o.session)
	return o.finish(sig), nil
}

// root reports whether a session id is the agent's own (not a subagent's).
func (o *observer) root(sid string) bool { return sid == "" || o.session == "" || sid == o.session }

func (o *observer) message(info *assistantInfo, sig *core.Signal) {
	if o.session == "" && info.SessionID != "" {
		o.session = info.SessionID
	}
	// Reasoning is billed as output; opencode keeps it out of output.
	o.msgs[info.ID] = msgInfo{session: info.SessionID, model: info.ModelID, created: info.Time.Created, cost: info.Cost,
		tok: prices.Tokens{Input: info.Tokens.Input, Output: info.Tokens.Output + info.Tokens.Reasoning,
			CacheRead: info.Tokens.Cache.Read, CacheWrite5m: info.Tokens.Cache.Write}}
	o.sent.Usage(sig, o.usage())
	if info.SessionID == o.session {
		o.sent.Model(sig, info.ModelID)
		if cur, ok := o.msgs[o.lastMsg]; !ok || info.Time.Created >= cur.created {
			o.lastMsg = info.ID
		}
		if info.Error != nil && isLimit(info.Error.Data.Message, info.Error.Data.StatusCode) {
			o.limit(sig, info.Error.Data.Message)
		}
	}
	o.lastText(sig)
}

func (o *observer) lastText(sig *core.Signal) {
	parts := o.texts[o.lastMsg]
	if len(parts) == 0 {
		return
	}
	ids := make([]string, 0, len(parts))
	for id := range parts {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var texts []string
	for _, id := range ids {
		if t := strings.TrimSpace(parts[id]); t != "" {
			texts = append(texts, t)
		}
	}
	o.sent.LastMessage(sig, strings.Join(texts, "\n"))
}

// usage sums every message once (root and subagent sessions alike): opencode's own
// cost where it priced the message, orcr's table otherwise.
func (o *observer) usage() wire.Usage {
	unpriced := map[string]prices.Tokens{}
	var own float64
	var ownTok prices.Tokens
	for _, m := range o.msgs {
		if m.cost > 0 {
			own += m.cost
			ownTok = ownTok.Add(m.tok)
		} else {
			unpriced[m.model] = unpriced[m.model].Add(m.tok)
		}
	}
	u := o.p.Prices.Usage(unpriced)
	u.InputTokens += ownTok.Input
	u.OutputTokens += ownTok.Output
	u.CacheReadTokens += ownTok.CacheRead
	u.CacheWriteTokens += ownTok.CacheWrite5m
	if u.CostUSD != nil {
		c := *u.CostUSD + own
		u.CostUSD = &c
	}
	return u
}

func (o *observer) limit(sig *core.Signal, text string) {
	reset := agentkit.ParseReset(text, o.now(), nil)
	detail := "usage limit"
	if reset != nil {
		detail = "resets " + reset.UTC().Format("15:04 UTC")
	}
	o.set(sig, wire.StateBlocked, "usage-limit: "+detail, &wire.Blocked{Kind: wire.BlockedLimit, Detail: text, ResetsAt: reset})
	o.reading = &wire.LimitReading{Provider: Name, Window: "5h", UsedPct: 100, ResetsAt: reset, LimitHit: true, ObservedAt: o.now().UTC()}
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
		sig.LastMessage == "" && sig.Reading == nil {
		return nil
	}
	return sig
}

// Poll implements core.Observer. OpenCode's store is SQLite, which orcr does not
// open; everything arrives through the plugin.
func (o *observer) Poll(ctx context.Context) (*core.Signal, error) { return nil, nil }

// Unpolled implements core.Unpolled: with nothing to poll, its agent keeps no poll
// timer.
func (o *observer) Unpolled() {}

// Screen implements core.Observer: the plugin reports permissions and questions; the
// screen only tells "working" before the first event.
func (o *observer) Screen(s core.Screen, quiet time.Duration) *core.Signal {
	if o.state == "" && strings.Contains(s.Text, "esc interrupt") {
		sig := &core.Signal{Source: "screen"}
		o.set(sig, wire.StateWorking, "busy (screen)", nil)
		return sig
	}
	return nil
}

func isLimit(msg string, status int) bool {
	l := strings.ToLower(msg)
	if strings.Contains(l, "overloaded") || strings.Contains(l, "not your usage limit") {
		return false
	}
	return status == 429 || strings.Contains(l, "usage limit") || strings.Contains(l, "usage_limit") ||
		strings.Contains(l, "rate limit") || strings.Contains(l, "rate_limit") || strings.Contains(l, "hit your")
}

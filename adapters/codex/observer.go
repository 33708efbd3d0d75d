package codex

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"orcr/adapters/internal/agentkit"
	"orcr/adapters/internal/jsonl"
	"orcr/core"
	"orcr/core/wire"
)

// observer follows one codex agent.
type observer struct {
	p      *Provider
	agent  wire.Agent
	home   string
	cwd    string
	launch time.Time
	now    func() time.Time

	tail     *jsonl.Tail
	ro       *Rollout
	lastScan time.Time

	state    wire.State
	blocked  *wire.Blocked
	readings agentkit.Readings
	dialog   string

	sent      agentkit.Sent // what the engine has been told already
	sentTurns int
	sentOpen  bool
	sentRates int
	// primed: the rollout has been read since it was adopted (or started over), so
	// turns ended beyond sentTurns are new, not the session's earlier ones.
	primed bool
	// unseen: a whole turn began and ended between two reads and was reported as
	// working; its end is reported at the next read.
	unseen bool
	// known is the record's newest moment when it came with its session's rollout (a
	// resume, a wake, a server restart): turns that ended before it are the session's
	// history, which the record already reflects, not an end of this launch's turn.
	known time.Time
}

func newObserver(p *Provider, a wire.Agent) *observer {
	launch := a.CreatedAt
	if a.StartedAt != nil {
		launch = *a.StartedAt
	}
	if launch.IsZero() {
		launch = time.Now()
	}
	o := &observer{p: p, agent: a, home: p.home(nil, a.Env), cwd: agentkit.RealDir(a.Cwd), launch: launch,
		now: time.Now, ro: NewRollout(), sent: agentkit.NewSent(a)}
	if a.Transcript != "" {
		o.adopt(a.Transcript)
		o.known = a.CreatedAt
		for _, t := range []*time.Time{a.StartedAt, &a.StateAt} {
			if t != nil && t.After(o.known) {
				o.known = *t
			}
		}
	}
	// Re-adopted after a restart: a prompt still on screen stays blocked.
	if a.State.Live() {
		o.state, o.blocked = a.State, a.Blocked
	}
	return o
}

// Close implements core.Observer.
func (o *observer) Close() error {
	o.p.release(o.agent.ID)
	return nil
}

func (o *observer) adopt(path string) bool {
	if !o.p.claim(path, o.agent.ID) {
		return false
	}
	o.tail = &jsonl.Tail{Path: path}
	o.ro = NewRollout()
	o.sentTurns, o.sentOpen, o.sentRates, o.primed = 0, false, 0, false
	return true
}

// Hook implements core.Observer. Codex's notify reports turn completion only.
func (o *observer) Hook(event string, payload []byte) (*core.Signal, error) {
	var n struct {
		Type     string `json:"type"`
		ThreadID string `json:"thread-id"`
		Last     string `json:"last-assistant-message"`
		Cwd      string `json:"cwd"`
	}
	if err := json.Unmarshal(payload, &n); err != nil {
		return nil, fmt.Errorf("codex hook %s: malformed payload: %w", event, err)
	}
	if n.Type != "agent-turn-complete" {
		return nil, nil
	}
	sig := &core.Signal{Source: "hook"}
	if n.ThreadID != o.ro.SessionID || o.tail == nil {
		// Codex also notifies for its own side threads (title generation), which
		// leave no rollout. Only a thread with a rollout is the agent's.
		path := o.findByID(n.ThreadID)
		if path == "" {
			return nil, nil
		}
		if o.tail == nil || o.tail.Path != path {
			if !o.adopt(path) {
				return nil, nil
			}
		}
	}
	o.sent.Session(sig, n.ThreadID)
	// Read the turn to its end first, so whoever sees "done" sees its usage.
	o.drain(n.Last)
	o.fromRollout(sig)
	if o.unseen { // the turn's start is reported now, its end at the next poll
		return o.finish(sig), nil
	}
	o.sent.LastMessage(sig, n.Last)
	o.setState(sig, wire.StateDone, "turn finished", nil)
	return o.finish(sig), nil
}

// drainBound is how long a turn-complete notification waits for the turn's last
// lines (its token count, task_complete) to reach the rollout.
const drainBound = time.Second

// drain reads the rollout until it holds the end of the turn the notification
// reports (its last message, or one more ended turn), bounded by drainBound.
func (o *observer) drain(last string) {
	if o.tail == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), drainBound)
	defer cancel()
	turns := o.ro.TurnsEnded
	for {
		if _, err := o.tail.Read(ctx, o.ro.Add); errors.Is(err, jsonl.ErrShrunk) {
			o.ro = NewRollout()
			o.sentTurns, o.sentOpen, o.sentRates, o.primed = 0, false, 0, false
			continue
		}
		ended := !o.ro.TurnOpen && o.ro.TurnsEnded > 0
		if ended && (o.ro.TurnsEnded > turns || last != "" && strings.TrimSpace(o.ro.LastMessage) == strings.TrimSpace(last)) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Poll implements core.Observer.
func (o *observer) Poll(ctx context.Context) (*core.Signal, error) {
	sig := &core.Signal{Source: "transcript"}
	if o.tail == nil && o.now().Sub(o.lastScan) >= time.Second {
		o.lastScan = o.now()
		if path := o.discover(); path != "" {
			o.adopt(path)
		}
	}
	if o.tail == nil {
		return o.finish(sig), nil
	}
	_, err := o.tail.Read(ctx, o.ro.Add)
	if errors.Is(err, jsonl.ErrShrunk) {
		o.ro = NewRollout()
		o.sentTurns, o.sentOpen, o.sentRates, o.primed = 0, false, 0, false
		_, err = o.tail.Read(ctx, o.ro.Add)
	}
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	o.fromRollout(sig)
	return o.finish(sig), err
}

func (o *observer) fromRollout(sig *core.Signal) {
	r := o.ro
	fresh := !o.primed
	o.primed = true
	o.sent.Transcript(sig, o.tail.Path)
	o.sent.Session(sig, r.SessionID)
	o.sent.Model(sig, r.Model)
	if r.Lines > 0 {
		o.sent.Usage(sig, o.p.Prices.Usage(r.ByModel()))
	}
	o.sent.LastMessage(sig, r.LastMessage)
	if r.RatesSeq != o.sentRates {
		o.sentRates = r.RatesSeq
		keys := make([]string, 0, len(r.Rates))
		for k := range r.Rates {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			rd := r.Rates[k]
			o.readings.Add(&rd)
		}
	}
	o.unseen = false
	switch {
	case r.Limit != nil && o.sent.NewLimit(r.Limit.At):
		o.limitHit(sig, r.Limit.Text, r.Limit.ResetsAt)
	case !fresh && r.TurnsEnded > o.sentTurns && !r.TurnOpen && o.state == wire.StateDone && r.Limit == nil:
		// A short turn (a message answered at once) began and ended between two
		// reads: done → done would be no change at all, and whoever counts turns
		// (a role's validation and max_turns) would miss it. Its start is reported
		// now and its end at the next read (sentTurns stays behind for that).
		o.setState(sig, wire.StateWorking, "turn started (rollout)", nil)
		o.unseen = true
		o.sentOpen = true
		return
	case fresh && !r.TurnOpen && !o.known.IsZero() && !r.LastEnd.IsZero() && r.LastEnd.Before(o.known):
		// The first read of a resumed or woken session's rollout: its ended turns are
		// history (a resumed codex still on "Resuming session…" was taken for done and
		// hibernated by gc before its new turn began).
	case r.TurnsEnded > o.sentTurns && !r.TurnOpen && o.state != wire.StateDone && r.Limit == nil:
		o.setState(sig, wire.StateDone, "turn finished (rollout)", nil)
	case r.TurnOpen && (!o.sentOpen || o.state != wire.StateWorking) && o.dialog == "" &&
		!(o.state == wire.StateBlocked && o.blocked != nil && o.blocked.Kind == "permission"):
		if o.state != wire.StateWorking {
			o.setState(sig, wire.StateWorking, "turn started (rollout)", nil)
		}
	}
	o.sentTurns, o.sentOpen = r.TurnsEnded, r.TurnOpen
}

func (o *observer) limitHit(sig *core.Signal, text string, reset *time.Time) {
	detail := "usage limit"
	if reset != nil {
		detail = "resets " + reset.UTC().Format("15:04 UTC")
	}
	win := "5h"
	if rd, ok := o.ro.Rates["weekly"]; ok && rd.UsedPct >= 100 {
		if p, ok := o.ro.Rates["5h"]; !ok || p.UsedPct < 100 {
			win = "weekly"
		}
	}
	o.setState(sig, wire.StateBlocked, "usage-limit: "+detail, &wire.Blocked{Kind: wire.BlockedLimit, Detail: text, ResetsAt: reset})
	o.readings.Add(&wire.LimitReading{Provider: Name, Window: win, UsedPct: 100, ResetsAt: reset, LimitHit: true, ObservedAt: o.now().UTC()})
}

func (o *observer) setState(sig *core.Signal, s wire.State, reason string, b *wire.Blocked) {
	sig.State, sig.Reason, sig.Blocked = s, reason, b
	o.state, o.blocked = s, b
}

func (o *observer) finish(sig *core.Signal) *core.Signal {
	if sig.Reading == nil {
		sig.Reading = o.readings.Next()
	}
	if sig.State == "" && sig.Usage == nil && sig.Model == "" && sig.SessionID == "" &&
		sig.Transcript == "" && sig.LastMessage == "" && sig.Reading == nil {
		return nil
	}
	return sig
}

// sessionDirs lists the day directories a rollout of this launch can be in.
func (o *observer) sessionDirs() []string {
	var dirs []string
	for d := o.launch.Add(-24 * time.Hour); !d.After(o.now().Add(24 * time.Hour)); d = d.Add(24 * time.Hour) {
		for _, t := range []time.Time{d.Local(), d.UTC()} {
			dir := filepath.Join(o.home, "sessions", t.Format("2006"), t.Format("01"), t.Format("02"))
			if len(dirs) == 0 || dirs[len(dirs)-1] != dir {
				dirs = append(dirs, dir)
			}
		}
	}
	return dirs
}

// discover finds the rollout this agent writes: a file created after launch whose
// session_meta names the agent's cwd and that no other agent follows.
func (o *observer) discover() string {
	type cand struct {
		path string
		at   time.Time
	}
	var cands []cand
	seen := map[string]bool{}
	for _, dir := range o.sessionDirs() {
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			name := e.Name()
			if !strings.HasPrefix(name, "rollout-") || !strings.HasSuffix(name, ".jsonl") {
				continue
			}
			path := filepath.Join(dir, name)
			if seen[path] {
				continue
			}
			seen[path] = true
			info, err := e.Info()
			if err != nil || info.ModTime().Before(o.launch.Add(-2*time.Second)) {
				continue
			}
			meta, ok := readMeta(path)
			if !ok || agentkit.RealDir(meta.Cwd) != o.cwd || meta.Timestamp.Before(o.launch.Add(-5*time.Second)) {
				continue
			}
			cands = append(cands, cand{path, meta.Timestamp})
		}
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].at.Before(cands[j].at) })
	for _, c := range cands {
		o.p.mu.Lock()
		owner, taken := o.p.claimed[c.path]
		o.p.mu.Unlock()
		if !taken || owner == o.agent.ID {
			return c.path
		}
	}
	return ""
}

var idRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-fA-F-]{8,64}$`) })

// findByID finds the rollout of a thread id.
func (o *observer) findByID(id string) string {
	if !idRE().MatchString(id) {
		return ""
	}
	for _, dir := range o.sessionDirs() {
		m, _ := filepath.Glob(filepath.Join(dir, "rollout-*-"+id+".jsonl"))
		if len(m) > 0 {
			return m[0]
		}
	}
	return ""
}

type meta struct {
	ID        string    `json:"id"`
	Cwd       string    `json:"cwd"`
	Timestamp time.Time `json:"timestamp"`
}

// readMeta reads the session_meta of a rollout's first line.
func readMeta(path string) (meta, bool) {
	f, err := os.Open(path)
	if err != nil {
		return meta{}, false
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	line, err := br.ReadSlice('\n')
	if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
		return meta{}, false
	}
	// The cwd and id sit before the (possibly long) base instructions; decode the
	// fields from a prefix when the line is longer than the buffer.
	var e struct {
		Type    string `json:"type"`
		Payload meta   `json:"payload"`
	}
	if json.Unmarshal(line, &e) != nil {
		e.Payload = metaFromPrefix(line)
		if e.Payload.Cwd == "" {
			return meta{}, false
		}
		return e.Payload, true
	}
	return e.Payload, e.Type == "session_meta"
}

var (
	cwdRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`"cwd":("(?:[^"\\]|\\.)*")`) })
	tsRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`"payload":\{[^{}]*?"timestamp":"([^"]+)"`) })
)

func metaFromPrefix(b []byte) meta {
	var m meta
	if !strings.Contains(string(b[:min(len(b), 200)]), `"session_meta"`) {
		return m
	}
	if x := cwdRE().FindSubmatch(b); x != nil {
		_ = json.Unmarshal(x[1], &m.Cwd)
	}
	if x := tsRE().FindSubmatch(b); x != nil {
		m.Timestamp, _ = time.Parse(time.RFC3339Nano, string(x[1]))
	}
	return m
}

package codex

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/adapters/internal/jsonl"
	"orcr/adapters/prices"
	"orcr/core"
	"orcr/core/wire"
)

func parse(t *testing.T, path string) *Rollout {
	t.Helper()
	r := NewRollout()
	if _, err := (&jsonl.Tail{Path: path}).Read(context.Background(), r.Add); err != nil {
		t.Fatal(err)
	}
	return r
}

// testdata/rollout.jsonl was written by codex 0.171.0 against the scripted server
// (three turns: text, a tool call, a 429 usage limit), with bulky lines trimmed.
func TestRolloutFromRealCodex(t *testing.T) {
	r := parse(t, "testdata/rollout.jsonl")
	if r.SessionID != "01a22eaf-55d0-7793-b5c0-f517ced95dac" || r.Cwd != "/w/app" || r.Version != "0.171.0" || r.Model != "gpt-5.3-codex" {
		t.Fatalf("meta: %q %q %q %q", r.SessionID, r.Cwd, r.Version, r.Model)
	}
	got := r.ByModel()["gpt-5.3-codex"]
	if got != (prices.Tokens{Input: 121, CacheRead: 300, Output: 31}) {
		t.Fatalf("tokens %+v", got)
	}
	if r.LastMessage != "wrote it" || r.TurnsEnded != 3 || r.TurnOpen {
		t.Fatalf("last %q ended %d open %v", r.LastMessage, r.TurnsEnded, r.TurnOpen)
	}
	if r.Limit == nil || r.Limit.ResetsAt == nil || r.Limit.ResetsAt.Unix() != 1796086770 {
		t.Fatalf("limit %+v", r.Limit)
	}
	if rd := r.Rates["5h"]; rd.UsedPct != 100 || !rd.LimitHit {
		t.Fatalf("5h reading %+v", rd)
	}
	if rd := r.Rates["weekly"]; rd.UsedPct != 40 || rd.LimitHit {
		t.Fatalf("weekly reading %+v", rd)
	}
}

const tc = `{"timestamp":"2026-11-30T10:00:0%dZ","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":%d,"cached_input_tokens":%d,"output_tokens":%d,"reasoning_output_tokens":0,"total_tokens":%d}},"rate_limits":null}}`

func line(f string, a ...any) string { return strings.ReplaceAll(sprintf(f, a...), "\n", "") }

func TestRolloutCumulativeDeltas(t *testing.T) {
	lines := []string{
		`{"timestamp":"2026-11-30T10:00:00Z","type":"session_meta","payload":{"id":"s","cwd":"/w","cli_version":"0.171.0","base_instructions":{"provenance":{"type":"model","model":"gpt-5-codex"}}}}`,
		line(tc, 1, 1000, 800, 50, 1050),
		line(tc, 2, 1000, 800, 50, 1050), // repeated sample
		line(tc, 3, 1500, 1200, 80, 1580),
		line(tc, 4, 200, 0, 10, 210), // total went down: a restart, counted fresh
		`{"timestamp":"2026-11-30T10:00:05Z","type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":{"primary":{"used_percent":37.0,"window_minutes":300,"resets_in_seconds":600},"secondary":{"used_percent":12.0,"window_minutes":10080,"resets_at":1767900000}}}}`,
		line(tc, 6, 0, 0, 0, 90), // only total_tokens
		`{"timestamp":"2026-11-30T10:00:07Z","type":"event_msg","payload":{"type":"brand_new_event","x":1}}`,
		`{"timestamp":"2026-11-30T10:00:08Z","type":"event_msg","payload":{"type":"agent_message","message":"hi there"}}`,
		`{"timestamp":"2026-11-30T10:00:09Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tok`,
	}
	p := filepath.Join(t.TempDir(), "r.jsonl")
	os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	r := parse(t, p)
	got := r.ByModel()["gpt-5-codex"]
	// 1000/800/50 + 500/400/30 + fresh 200/0/10 + 90 (total only, as input)
	want := prices.Tokens{Input: 200 + 100 + 200 + 90, CacheRead: 1200, Output: 90}
	if got != want || !r.UpperBound {
		t.Fatalf("tokens %+v want %+v (upper bound %v)", got, want, r.UpperBound)
	}
	if r.Bad != 1 || r.LastMessage != "hi there" {
		t.Fatalf("bad %d last %q", r.Bad, r.LastMessage)
	}
	if rd := r.Rates["5h"]; rd.UsedPct != 37 || rd.ResetsAt == nil || !rd.ResetsAt.Equal(time.Date(2026, 11, 30, 10, 10, 5, 0, time.UTC)) {
		t.Fatalf("5h %+v", rd)
	}
	u := prices.Default().Usage(r.ByModel())
	if !u.Priced || u.CostUSD == nil {
		t.Fatalf("gpt-5-codex should be priced: %+v", u)
	}
}

func TestObserverNotifyAndDiscovery(t *testing.T) {
	home := t.TempDir()
	cwd := t.TempDir()
	p := New(Options{Home: home})
	start := time.Now().Add(-time.Second)
	a := wire.Agent{ID: "a1", Provider: Name, Cwd: cwd, Prompt: "go", StartedAt: &start}
	o := p.Observe(a).(*observer)
	defer o.Close()
	if s, err := o.Poll(context.Background()); s != nil || err != nil {
		t.Fatalf("no rollout yet: %+v %v", s, err)
	}
	// A side thread (title generation) notifies but has no rollout: ignored.
	if s, err := o.Hook("notify", []byte(`{"type":"agent-turn-complete","thread-id":"01a22eaf-565e-7143-baad-f2c9a1b14d19","last-assistant-message":"ok"}`)); s != nil || err != nil {
		t.Fatalf("side thread: %+v %v", s, err)
	}
	if _, err := o.Hook("notify", []byte(`not json`)); err == nil {
		t.Fatal("malformed notify accepted")
	}
	day := time.Now()
	dir := filepath.Join(home, "sessions", day.Format("2006"), day.Format("01"), day.Format("02"))
	os.MkdirAll(dir, 0o755)
	id := "01a22eaf-55d0-7793-b5c0-f517ced95dac"
	data, _ := os.ReadFile("testdata/rollout.jsonl")
	// Point the recorded rollout at this test's cwd and launch time; stop before the limit turn.
	s := strings.ReplaceAll(string(data), `"cwd":"/w/app"`, `"cwd":"`+cwd+`"`)
	s = strings.Replace(s, `"timestamp":"2026-11-30T22:59:32.434Z"`, `"timestamp":"`+time.Now().UTC().Format(time.RFC3339Nano)+`"`, 1)
	s = s[:strings.Index(s, `{"timestamp":"2026-11-30T22:59:58.503Z"`)]
	path := filepath.Join(dir, "rollout-2026-11-30T22-59-32-"+id+".jsonl")
	os.WriteFile(path, []byte(s), 0o644)
	o.lastScan = time.Time{}
	sig, err := o.Poll(context.Background())
	if err != nil || sig == nil || sig.Transcript != path || sig.SessionID != id || sig.Usage == nil || sig.State != wire.StateDone {
		t.Fatalf("discovered: %+v %v", sig, err)
	}
	if sig.Usage.InputTokens != 121 || sig.Usage.OutputTokens != 31 || sig.Usage.CacheReadTokens != 300 || !sig.Usage.Priced {
		t.Fatalf("usage %+v", sig.Usage)
	}
	// A second agent in the same cwd does not take the first one's rollout.
	o2 := p.Observe(wire.Agent{ID: "a2", Provider: Name, Cwd: cwd, StartedAt: &start}).(*observer)
	defer o2.Close()
	if got := o2.discover(); got != "" {
		t.Fatalf("second agent claimed %s", got)
	}
	sig, err = o.Hook("notify", []byte(`{"type":"agent-turn-complete","thread-id":"`+id+`","last-assistant-message":"wrote it!"}`))
	if err != nil || sig == nil || sig.LastMessage != "wrote it!" || sig.Source != "hook" {
		t.Fatalf("notify: %+v %v", sig, err)
	}
}

func TestScreenRules(t *testing.T) {
	o := New(Options{Home: t.TempDir()}).Observe(wire.Agent{ID: "x", Cwd: t.TempDir()}).(*observer)
	s := o.Screen(core.Screen{Text: "  Would you like to run the following command?\n\n  $ rm -rf build\n\n› 1. Yes, proceed (y)\n  2. No"}, 0)
	if s == nil || s.Blocked == nil || s.Blocked.Detail != "Bash(rm -rf build)" || s.Reason != "permission: Bash(rm -rf build)" {
		t.Fatalf("approval: %+v", s)
	}
	if s := o.Screen(core.Screen{Text: "• Ran rm -rf build"}, 0); s == nil || s.State != wire.StateWorking {
		t.Fatalf("approval answered: %+v", s)
	}
	lim := "■ You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more credits or try again\nat Dec 1st, 2026 12:59 AM."
	if s := o.Screen(core.Screen{Text: lim}, 0); s != nil {
		t.Fatalf("limit banner reported before it stood: %+v", s)
	}
	s = o.Screen(core.Screen{Text: lim}, 3*time.Second)
	if s == nil || s.Blocked == nil || s.Blocked.Kind != wire.BlockedLimit || s.Blocked.ResetsAt == nil {
		t.Fatalf("limit banner: %+v", s)
	}
	if s.Blocked.ResetsAt.Local().Format("Jan 2 15:04") != "Dec 1 00:59" {
		t.Fatalf("reset %v", s.Blocked.ResetsAt)
	}
}

func TestPrepareArgv(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "codex")
	os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)
	home := t.TempDir()
	plan, err := New(Options{Bin: bin, Home: home}).Prepare(context.Background(), core.LaunchRequest{
		Agent: wire.Agent{Cwd: "/w/my \"app\"", Model: "gpt-5.3-codex", Prompt: "fix it"}, Self: "/opt/orcr"})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(plan.Argv, " | ")
	want := bin + ` | --no-daemon | -c | notify=["/bin/sh","-c","printf '%s' \"$1\" | exec \"$0\" hook codex notify","/opt/orcr"] | -c | disable_paste_burst=true | -c | projects={"/w/my \"app\""={trust_level="trusted"}} | -m | gpt-5.3-codex | fix it`
	if got != want {
		t.Fatalf("argv\n got %s\nwant %s", got, want)
	}
	if len(plan.Env) != 1 || plan.Env[0] != "CODEX_HOME="+home {
		t.Fatalf("env %q", plan.Env)
	}
}

// The turn-complete notification can come before codex has written the turn's last
// lines; done must carry the turn's usage, so the hook reads the rollout to the end of
// the turn first.
func TestNotifyReadsTheTurnToItsEnd(t *testing.T) {
	p := New(Options{Home: t.TempDir()})
	path := filepath.Join(t.TempDir(), "rollout.jsonl")
	head := []string{
		`{"timestamp":"2026-11-30T10:00:00Z","type":"session_meta","payload":{"id":"s1","cwd":"/w","cli_version":"0.171.0","base_instructions":{"provenance":{"type":"model","model":"gpt-5.3-codex"}}}}`,
		`{"timestamp":"2026-11-30T10:00:01Z","type":"event_msg","payload":{"type":"task_started"}}`,
	}
	os.WriteFile(path, []byte(strings.Join(head, "\n")+"\n"), 0o644)
	o := p.Observe(wire.Agent{ID: "a1", Provider: Name, Cwd: "/w", Prompt: "go", Transcript: path}).(*observer)
	defer o.Close()
	if _, err := o.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	tail := []string{
		line(tc, 2, 1500, 1000, 40, 1540),
		`{"timestamp":"2026-11-30T10:00:03Z","type":"event_msg","payload":{"type":"task_complete","last_agent_message":"done it"}}`,
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o644)
		f.WriteString(strings.Join(tail, "\n") + "\n")
		f.Close()
	}()
	sig, err := o.Hook("notify", []byte(`{"type":"agent-turn-complete","thread-id":"s1","last-assistant-message":"done it"}`))
	if err != nil || sig == nil || sig.State != wire.StateDone || sig.Source != "hook" {
		t.Fatalf("notify: %+v %v", sig, err)
	}
	if sig.Usage == nil || sig.Usage.OutputTokens != 40 || sig.Usage.CacheReadTokens != 1000 {
		t.Fatalf("done without the turn's usage: %+v", sig.Usage)
	}
}

// TestShortTurnBetweenReads: a turn that begins and ends between two reads of the
// rollout (a message answered at once) is reported as working and then done, by the
// notify path and the poll path alike, so no turn is lost to a done → done; the
// session's earlier turns, read when the rollout is adopted, are not new ones.
func TestShortTurnBetweenReads(t *testing.T) {
	p := New(Options{Home: t.TempDir()})
	path := filepath.Join(t.TempDir(), "rollout.jsonl")
	turn := func(msg string) string {
		return `{"timestamp":"2026-11-30T10:00:01Z","type":"event_msg","payload":{"type":"task_started"}}` + "\n" +
			`{"timestamp":"2026-11-30T10:00:02Z","type":"event_msg","payload":{"type":"task_complete","last_agent_message":"` + msg + `"}}` + "\n"
	}
	os.WriteFile(path, []byte(`{"timestamp":"2026-11-30T10:00:00Z","type":"session_meta","payload":{"id":"s1","cwd":"/w","cli_version":"0.171.0"}}`+"\n"+turn("one")), 0o644)
	appendTurn := func(msg string) {
		f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o644)
		f.WriteString(turn(msg))
		f.Close()
	}
	o := p.Observe(wire.Agent{ID: "a1", Provider: Name, Cwd: "/w", Transcript: path, State: wire.StateDone}).(*observer)
	defer o.Close()
	if sig, _ := o.Poll(context.Background()); sig != nil && sig.State != "" {
		t.Fatalf("the adopted rollout's earlier turn reported as %s", sig.State)
	}
	appendTurn("two")
	sig, err := o.Hook("notify", []byte(`{"type":"agent-turn-complete","thread-id":"s1","last-assistant-message":"two"}`))
	if err != nil || sig == nil || sig.State != wire.StateWorking {
		t.Fatalf("notify of an unseen turn: %+v %v", sig, err)
	}
	if sig, _ = o.Poll(context.Background()); sig == nil || sig.State != wire.StateDone {
		t.Fatalf("the unseen turn's end: %+v", sig)
	}
	appendTurn("three")
	if sig, _ = o.Poll(context.Background()); sig == nil || sig.State != wire.StateWorking {
		t.Fatalf("poll of an unseen turn: %+v", sig)
	}
	if sig, _ = o.Poll(context.Background()); sig == nil || sig.State != wire.StateDone || sig.LastMessage != "" && sig.LastMessage != "three" {
		t.Fatalf("its end: %+v", sig)
	}
	if sig, _ = o.Poll(context.Background()); sig != nil && sig.State != "" {
		t.Fatalf("a quiet rollout reported %s", sig.State)
	}
}

// TestSignInScreenIsSetup: codex 0.171's sign-in screen (captured from the real CLI
// started with an empty CODEX_HOME and no key) is blocked on setup, saying what to do,
// once; leaving it (signed in from an attached terminal) is working again.
func TestSignInScreenIsSetup(t *testing.T) {
	home := t.TempDir()
	o := New(Options{Home: home}).Observe(wire.Agent{ID: "x", Cwd: t.TempDir(), Prompt: "go"}).(*observer)
	b, err := os.ReadFile(filepath.Join("testdata", "screens", "login.txt"))
	if err != nil {
		t.Fatal(err)
	}
	s := o.Screen(core.Screen{Text: string(b)}, 2*time.Second)
	if s == nil || s.State != wire.StateBlocked || s.Blocked == nil || s.Blocked.Kind != wire.BlockedSetup ||
		!strings.Contains(s.Blocked.Detail, "CODEX_HOME="+home+" codex login") || s.Reason != "setup: not signed in" {
		t.Fatalf("sign-in screen: %+v", s)
	}
	if s := o.Screen(core.Screen{Text: string(b)}, 0); s != nil {
		t.Fatalf("the same screen again: %+v", s)
	}
	if s := o.Screen(core.Screen{Text: "› Explain this codebase"}, 0); s == nil || s.State != wire.StateWorking {
		t.Fatalf("after signing in: %+v", s)
	}
}

// TestResumedRolloutHistoryIsNotDone: a resumed (or woken) codex adopts its session's
// rollout at launch; the turns that ended before the launch are history, so the first
// read does not call the new launch done — a resumed codex still on "Resuming
// session…" was taken for done and hibernated by gc's idle rule before its turn. A
// record re-adopted after a server restart still sees a turn that ended after its
// newest moment.
func TestResumedRolloutHistoryIsNotDone(t *testing.T) {
	p := New(Options{Home: t.TempDir()})
	path := filepath.Join(t.TempDir(), "rollout.jsonl")
	turn := func(start, end time.Time, msg string) string {
		return `{"timestamp":"` + start.UTC().Format(time.RFC3339Nano) + `","type":"event_msg","payload":{"type":"task_started"}}` + "\n" +
			`{"timestamp":"` + end.UTC().Format(time.RFC3339Nano) + `","type":"event_msg","payload":{"type":"task_complete","last_agent_message":"` + msg + `"}}` + "\n"
	}
	t0 := time.Now().Add(-time.Hour)
	os.WriteFile(path, []byte(`{"timestamp":"`+t0.UTC().Format(time.RFC3339Nano)+`","type":"session_meta","payload":{"id":"s1","cwd":"/w","cli_version":"0.171.0"}}`+"\n"+turn(t0, t0.Add(time.Second), "one")), 0o644)

	launched := time.Now()
	o := p.Observe(wire.Agent{ID: "a1", Provider: Name, Cwd: "/w", Transcript: path, State: wire.StateWorking,
		CreatedAt: launched, StartedAt: &launched, StateAt: launched}).(*observer)
	defer o.Close()
	if sig, _ := o.Poll(context.Background()); sig != nil && sig.State == wire.StateDone {
		t.Fatalf("the resumed session's earlier turn made the new launch %s (%s)", sig.State, sig.Reason)
	}
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o644)
	f.WriteString(turn(time.Now(), time.Now().Add(time.Millisecond), "two"))
	f.Close()
	if sig, _ := o.Poll(context.Background()); sig == nil || sig.State != wire.StateDone {
		t.Fatalf("the resumed launch's own turn ended: %+v", sig)
	}

	// Re-adopted after a restart: the record was working since before the turn ended.
	o.Close()
	before := t0.Add(-time.Minute)
	o2 := p.Observe(wire.Agent{ID: "a2", Provider: Name, Cwd: "/w", Transcript: path, State: wire.StateWorking,
		CreatedAt: before, StartedAt: &before, StateAt: before}).(*observer)
	defer o2.Close()
	if sig, _ := o2.Poll(context.Background()); sig == nil || sig.State != wire.StateDone {
		t.Fatalf("a turn that ended while the server was away: %+v", sig)
	}
}

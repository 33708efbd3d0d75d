package pi

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"orcr/adapters/internal/clitest"
	"orcr/adapters/internal/jsonl"
	"orcr/adapters/prices"
	"orcr/core"
	"orcr/core/wire"
	"orcr/testutil/modelserver"
)

// testdata/session.jsonl was written by pi 0.73.1 against the scripted server: a text
// turn, a write tool call, a 429 that pi retried once (the retry got "ok").
func TestSessionFromRealPi(t *testing.T) {
	s := NewSession()
	if _, err := (&jsonl.Tail{Path: "testdata/session.jsonl"}).Read(context.Background(), s.Add); err != nil {
		t.Fatal(err)
	}
	if s.ID != "01a22eb9-9ec0-7778-a77e-10ce39c349a3" || s.Cwd != "/w/app" || s.Version != 3 || s.Model != "claude-sonnet-4-5" {
		t.Fatalf("header %q %q %d %q", s.ID, s.Cwd, s.Version, s.Model)
	}
	if got := s.byModel["claude-sonnet-4-5"]; got != (prices.Tokens{Input: 122, Output: 32, CacheRead: 300, CacheWrite5m: 40}) {
		t.Fatalf("tokens %+v", got)
	}
	if s.LastMessage != "ok" || s.Limit != nil || s.TurnOpen {
		t.Fatalf("last %q limit %+v open %v", s.LastMessage, s.Limit, s.TurnOpen)
	}
	u := s.Usage(prices.Default())
	if !u.Priced || u.CostUSD == nil || u.InputTokens != 122 {
		t.Fatalf("usage %+v", u)
	}
}

func TestSessionPiCostLimitAndBadLines(t *testing.T) {
	lines := []string{
		`{"type":"session","version":3,"id":"s1","cwd":"/w"}`,
		`{"type":"message","id":"m1","message":{"role":"assistant","model":"mystery-1","content":[{"type":"text","text":"a"}],"usage":{"input":10,"output":20,"cacheRead":5,"cacheWrite":2,"cost":{"total":0.0012}},"stopReason":"stop"}}`,
		`{"type":"message","id":"m1","message":{"role":"assistant","model":"mystery-1","usage":{"input":10,"output":20,"cost":{"total":0.0012}},"stopReason":"stop"}}`,
		`{"type":"message","id":"m2","message":{"role":"user","content":[{"type":"text","text":"more"}]}}`,
		`{"type":"future_entry","id":"x"}`,
		`{"type":"message","id":"m3","timestamp":"2026-11-30T10:00:00Z","message":{"role":"assistant","model":"mystery-1","content":[],"usage":{"input":0,"output":0},"stopReason":"error","errorMessage":"429 {\"error\":{\"type\":\"usage_limit_reached\",\"message\":\"You've hit your usage limit · resets 3pm (UTC)\"}}"}}`,
		`{"type":"message","id":"m4","message":{"role":"assis`,
	}
	p := filepath.Join(t.TempDir(), "s.jsonl")
	os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	s := NewSession()
	(&jsonl.Tail{Path: p}).Read(context.Background(), s.Add)
	u := s.Usage(prices.Default())
	// An unknown model is priced by pi itself here, so the total is priced.
	if u.InputTokens != 10 || u.OutputTokens != 20 || u.CostUSD == nil || *u.CostUSD != 0.0012 {
		t.Fatalf("usage %+v", u)
	}
	if s.Limit == nil || s.Limit.ResetsAt == nil || s.Limit.ResetsAt.Hour() != 15 || !s.TurnOpen || s.Bad != 1 {
		t.Fatalf("limit %+v open %v bad %d", s.Limit, s.TurnOpen, s.Bad)
	}
}

func TestHookMalformedAndPrepare(t *testing.T) {
	o := New(Options{}).Observe(wire.Agent{ID: "a"})
	if _, err := o.Hook("agent_end", []byte("{")); err == nil {
		t.Fatal("malformed payload accepted")
	}
	bin := filepath.Join(t.TempDir(), "pi")
	os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)
	state := t.TempDir()
	plan, err := New(Options{Bin: bin}).Prepare(context.Background(), core.LaunchRequest{
		Agent: wire.Agent{Model: "anthropic/claude-sonnet-4-5", Prompt: "-x"}, Self: "/opt/o\"rcr", StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(plan.Argv[3:], " "); got != "--model anthropic/claude-sonnet-4-5  -x" {
		t.Fatalf("argv %q", plan.Argv)
	}
	ext, _ := os.ReadFile(plan.Argv[2])
	if !strings.Contains(string(ext), `spawn("/opt/o\"rcr", ["hook", "pi", event]`) {
		t.Fatalf("extension %s", ext)
	}
}

func TestRealPi(t *testing.T) {
	bin := clitest.CLI(t, "pi", "ORCR_PI_BIN")
	self := clitest.HookRec(t)
	srv, err := modelserver.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	root := t.TempDir()
	cfg, cwd, hooks := filepath.Join(root, "pi"), filepath.Join(root, "work"), filepath.Join(root, "hooks.jsonl")
	os.MkdirAll(cfg, 0o700)
	os.MkdirAll(cwd, 0o755)
	os.WriteFile(filepath.Join(cfg, "models.json"), []byte(fmt.Sprintf(
		`{"providers":{"scripted":{"baseUrl":%q,"api":"anthropic-messages","apiKey":"x","models":[{"id":"claude-sonnet-4-5"}]}}}`, srv.URL)), 0o600)
	target := filepath.Join(cwd, "hello.txt")
	reset := time.Now().Add(3 * time.Hour).UTC().Truncate(time.Minute)
	limitMsg := "You've hit your session limit · resets " + strings.ToLower(reset.Format("3:04pm")) + " (UTC)"
	srv.Push(
		modelserver.Turn{ToolCalls: []modelserver.ToolCall{{Name: "write", Input: map[string]any{"path": target, "content": "hello from orcr\n"}}},
			Usage: modelserver.Usage{Input: 100, Output: 20, CacheRead: 300, CacheWrite: 40}},
		modelserver.Turn{Text: "I wrote hello.txt.", Usage: modelserver.Usage{Input: 11, Output: 6}},
	)
	prov := New(Options{Bin: bin, ConfigDir: cfg})
	a := wire.Agent{ID: "agent-1", Provider: Name, Cwd: cwd, Model: "scripted/claude-sonnet-4-5", Prompt: "write hello.txt"}
	plan, err := prov.Prepare(context.Background(), core.LaunchRequest{Agent: a, Self: self, StateDir: filepath.Join(root, "state")})
	if err != nil {
		t.Fatal(err)
	}
	// A slow agent_start report: the turn's end must still reach orcr after it.
	env := clitest.BaseEnv(root, "ORCR_ID=agent-1", "ORCR_HOOKREC="+hooks, "ORCR_HOOKREC_SLOW=agent_start", "PI_OFFLINE=1")
	run := clitest.Start(t, plan, env, cwd, a, prov.Observe(a), hooks)
	v := run.Wait(60*time.Second, "turn done via extension hooks", func(v clitest.View) bool {
		return v.State == wire.StateDone && v.Source == "hook" && v.LastMessage == "I wrote hello.txt."
	})
	if b, err := os.ReadFile(target); err != nil || string(b) != "hello from orcr\n" {
		t.Fatalf("tool did not write: %q %v", b, err)
	}
	v = run.Wait(10*time.Second, "the slow agent_start report", func(v clitest.View) bool { return slices.Contains(v.Hooks, "agent_start") })
	if i, j := slices.Index(v.Hooks, "agent_start"), slices.Index(v.Hooks, "agent_end"); i > j || v.State != wire.StateDone {
		t.Fatalf("reports %v end in %s", v.Hooks, v.State)
	}
	if v.Usage.InputTokens != 111 || v.Usage.OutputTokens != 26 || v.Usage.CacheReadTokens != 300 || v.Usage.CacheWriteTokens != 40 || !v.Usage.Priced {
		t.Fatalf("usage %+v", v.Usage)
	}
	if !strings.HasPrefix(v.Transcript, filepath.Join(cfg, "sessions")) || v.SessionID == "" {
		t.Fatalf("session %q %q", v.Transcript, v.SessionID)
	}
	// pi retries a 429 a few times; every retry hits the limit too.
	for i := 0; i < 6; i++ {
		srv.Push(modelserver.Turn{Limit: &modelserver.LimitError{ResetsAt: reset, Message: limitMsg}})
	}
	run.Send("and now more")
	v = run.Wait(60*time.Second, "blocked on usage limit", func(v clitest.View) bool {
		return v.State == wire.StateBlocked && v.Blocked != nil && v.Blocked.Kind == wire.BlockedLimit
	})
	if v.Blocked.ResetsAt == nil || !v.Blocked.ResetsAt.Equal(reset) {
		t.Fatalf("reset %v want %v", v.Blocked.ResetsAt, reset)
	}
}

// TestNoModelsScreenIsSetup: pi 0.73's startup warning that no provider is logged in
// (captured from the real CLI with an empty agent dir) is blocked on setup, once.
func TestNoModelsScreenIsSetup(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "screens", "no-models.txt"))
	if err != nil {
		t.Fatal(err)
	}
	o := New(Options{}).Observe(wire.Agent{ID: "a"})
	s := o.Screen(core.Screen{Text: string(b)}, 2*time.Second)
	if s == nil || s.State != wire.StateBlocked || s.Blocked == nil || s.Blocked.Kind != wire.BlockedSetup || !strings.Contains(s.Blocked.Detail, "/login") {
		t.Fatalf("no models: %+v", s)
	}
	if s := o.Screen(core.Screen{Text: string(b)}, 3*time.Second); s != nil {
		t.Fatalf("twice: %+v", s)
	}
}

// TestNoModelsThenSessionStartStaysSetup: the extension's session_start and the screen
// race at start-up; when the screen's "no models" came first, the hook's idle must not
// end the setup block (the screen says it once: the agent stood idle for good, and
// TestNotSignedInIsSetup timed out under load).
func TestNoModelsThenSessionStartStaysSetup(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "screens", "no-models.txt"))
	if err != nil {
		t.Fatal(err)
	}
	o := New(Options{}).Observe(wire.Agent{ID: "a"})
	if s := o.Screen(core.Screen{Text: string(b)}, 2*time.Second); s == nil || s.State != wire.StateBlocked {
		t.Fatalf("no models: %+v", s)
	}
	s, err := o.Hook("session_start", []byte(`{"data":{"reason":"startup"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if s != nil && s.State != "" {
		t.Fatalf("session_start after the setup screen moved the agent: %+v", s)
	}
	// Without the screen first, session_start is the agent going idle.
	o = New(Options{}).Observe(wire.Agent{ID: "b"})
	if s, _ := o.Hook("session_start", []byte(`{"data":{"reason":"startup"}}`)); s == nil || s.State != wire.StateIdle {
		t.Fatalf("session_start alone: %+v", s)
	}
}

package opencode

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/adapters/internal/clitest"
	"orcr/core"
	"orcr/core/wire"
	"orcr/testutil/clis"
	"orcr/testutil/modelserver"
)

type fold struct {
	state   wire.State
	blocked *wire.Blocked
	usage   wire.Usage
	last    string
	session string
	model   string
}

func (f *fold) apply(s *core.Signal) {
	if s == nil {
		return
	}
	if s.State != "" {
		f.state, f.blocked = s.State, s.Blocked
	}
	if s.Usage != nil {
		f.usage = *s.Usage
	}
	if s.LastMessage != "" {
		f.last = s.LastMessage
	}
	if s.SessionID != "" {
		f.session = s.SessionID
	}
	if s.Model != "" {
		f.model = s.Model
	}
}

// testdata/events.jsonl holds the plugin events OpenCode 1.18.33 sent for one turn
// against the scripted server.
func TestReplayRealEvents(t *testing.T) {
	f, err := os.Open("testdata/events.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	o := New(Options{}).Observe(wire.Agent{ID: "a"})
	var st fold
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec struct {
			Event   string          `json:"event"`
			Payload json.RawMessage `json:"payload"`
		}
		json.Unmarshal(sc.Bytes(), &rec)
		s, err := o.Hook(rec.Event, rec.Payload)
		if err != nil {
			t.Fatal(err)
		}
		st.apply(s)
	}
	if st.state != wire.StateDone || st.last != "Hello from script" || st.session != "ses_dd142f074ffen6RyC4Kyt7LtCJ" || st.model != "claude-sonnet-4-5" {
		t.Fatalf("fold %+v", st)
	}
	u := st.usage
	if u.InputTokens != 100 || u.OutputTokens != 20 || u.CacheReadTokens != 300 || u.CacheWriteTokens != 40 || !u.Priced {
		t.Fatalf("usage %+v", u)
	}
}

func ev(id, typ, props string) []byte {
	return []byte(fmt.Sprintf(`{"id":%q,"type":%q,"properties":%s}`, id, typ, props))
}

func TestEventsOrderSubagentsPermissionsLimits(t *testing.T) {
	o := New(Options{}).Observe(wire.Agent{ID: "a"})
	var st fold
	hook := func(b []byte) {
		t.Helper()
		s, err := o.Hook("x", b)
		if err != nil {
			t.Fatal(err)
		}
		st.apply(s)
	}
	hook(ev("evt_01", "session.created", `{"sessionID":"ses_root","info":{"id":"ses_root"}}`))
	hook(ev("evt_02", "session.created", `{"sessionID":"ses_child","info":{"id":"ses_child","parentID":"ses_root"}}`))
	hook(ev("evt_04", "session.status", `{"sessionID":"ses_root","status":{"type":"busy"}}`))
	hook(ev("evt_05", "message.updated", `{"sessionID":"ses_root","info":{"id":"msg_1","sessionID":"ses_root","role":"assistant","modelID":"mystery","cost":0.5,"tokens":{"input":10,"output":5,"reasoning":3,"cache":{"read":1,"write":2}},"time":{"created":1}}}`))
	hook(ev("evt_06", "message.updated", `{"sessionID":"ses_root","info":{"id":"msg_1","sessionID":"ses_root","role":"assistant","modelID":"mystery","cost":0.5,"tokens":{"input":10,"output":5,"reasoning":3,"cache":{"read":1,"write":2}},"time":{"created":1,"completed":2}}}`))
	hook(ev("evt_07", "message.updated", `{"sessionID":"ses_child","info":{"id":"msg_c","sessionID":"ses_child","role":"assistant","modelID":"claude-haiku-4-5","cost":0,"tokens":{"input":1000000,"output":0,"reasoning":0,"cache":{"read":0,"write":0}},"time":{"created":3}}}`))
	hook(ev("evt_08", "message.part.updated", `{"sessionID":"ses_child","part":{"id":"prt_c","messageID":"msg_c","type":"text","text":"child text"}}`))
	hook(ev("evt_09", "message.part.updated", `{"sessionID":"ses_root","part":{"id":"prt_1","messageID":"msg_1","type":"text","text":"root text"}}`))
	if st.usage.InputTokens != 1000010 || st.usage.OutputTokens != 8 || st.usage.CostUSD == nil || *st.usage.CostUSD != 1.5 {
		t.Fatalf("usage (root counted once, child priced by the table): %+v", st.usage)
	}
	if st.last != "root text" {
		t.Fatalf("last message from a subagent: %q", st.last)
	}
	hook(ev("evt_10", "permission.asked", `{"sessionID":"ses_root","permission":"bash","patterns":["rm -rf build"]}`))
	if st.state != wire.StateBlocked || st.blocked.Detail != "bash(rm -rf build)" {
		t.Fatalf("permission: %+v %+v", st.state, st.blocked)
	}
	hook(ev("evt_11", "permission.replied", `{"sessionID":"ses_root"}`))
	hook(ev("evt_13", "session.status", `{"sessionID":"ses_root","status":{"type":"idle"}}`))
	hook(ev("evt_12", "session.status", `{"sessionID":"ses_root","status":{"type":"busy"}}`)) // arrived late
	hook(ev("evt_14", "session.status", `{"sessionID":"ses_child","status":{"type":"busy"}}`))
	if st.state != wire.StateDone {
		t.Fatalf("late or subagent status changed the state: %s", st.state)
	}
	hook(ev("evt_15", "message.updated", `{"sessionID":"ses_root","info":{"id":"msg_2","sessionID":"ses_root","role":"assistant","modelID":"mystery","tokens":{},"time":{"created":5},"error":{"name":"APIError","data":{"message":"You've hit your usage limit · resets 9:50pm (UTC)","statusCode":429}}}}`))
	if st.state != wire.StateBlocked || st.blocked.Kind != wire.BlockedLimit || st.blocked.ResetsAt == nil {
		t.Fatalf("limit: %+v", st.blocked)
	}
	if _, err := o.Hook("x", []byte("{{")); err == nil {
		t.Fatal("malformed payload accepted")
	}
}

func TestPrepareMergesConfig(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "opencode")
	os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)
	plan, err := New(Options{Bin: bin}).Prepare(context.Background(), core.LaunchRequest{
		Agent: wire.Agent{Model: "anthropic/claude-sonnet-4-5", Prompt: "go"}, Self: "/opt/orcr", StateDir: t.TempDir(),
		Env: []string{`OPENCODE_CONFIG_CONTENT={"plugin":["theirs"],"model":"x/y"}`}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(plan.Argv[1:], " "); got != "--model anthropic/claude-sonnet-4-5 --prompt go" {
		t.Fatalf("argv %q", got)
	}
	var cfg struct {
		Plugin []string `json:"plugin"`
		Model  string   `json:"model"`
	}
	json.Unmarshal([]byte(strings.TrimPrefix(plan.Env[0], "OPENCODE_CONFIG_CONTENT=")), &cfg)
	if len(cfg.Plugin) != 2 || cfg.Plugin[0] != "theirs" || !strings.HasSuffix(cfg.Plugin[1], "orcr-opencode-plugin.js") || cfg.Model != "x/y" {
		t.Fatalf("config %+v", cfg)
	}
}

// TestPrepareSystemPromptAndResume: a role's system prompt goes in as an instructions
// file of the config; a resume passes --session with neither --model (the record's
// model lacks the provider prefix) nor --prompt (ignored with --session), the text
// going to the plugin instead (agent-clis.md §3a; checked against 1.18.33 in
// roles.TestOpencodeRole and roles.TestOpencodeHibernateAndResume).
func TestPrepareSystemPromptAndResume(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "opencode")
	os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)
	dir := t.TempDir()
	plan, err := New(Options{Bin: bin}).Prepare(context.Background(), core.LaunchRequest{
		Agent: wire.Agent{Model: "claude-sonnet-4-5", SessionID: "ses_abc", Prompt: "-and once more?", SystemPrompt: "You are ROLE-7."},
		Self:  "/opt/orcr", StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(plan.Argv[1:], " "); got != "--session ses_abc" || plan.SessionID != "ses_abc" {
		t.Fatalf("argv %q session %q", got, plan.SessionID)
	}
	var cfg struct {
		Instructions []string `json:"instructions"`
	}
	json.Unmarshal([]byte(strings.TrimPrefix(plan.Env[0], "OPENCODE_CONFIG_CONTENT=")), &cfg)
	if len(cfg.Instructions) != 1 {
		t.Fatalf("config %s", plan.Env[0])
	}
	if b, err := os.ReadFile(cfg.Instructions[0]); err != nil || string(b) != "You are ROLE-7." {
		t.Fatalf("instructions file %q: %q %v", cfg.Instructions[0], b, err)
	}
	js, _ := os.ReadFile(filepath.Join(dir, "orcr-opencode-plugin.js"))
	if !strings.Contains(string(js), `const RESUME = {"session":"ses_abc","text":"-and once more?"};`) {
		t.Fatalf("plugin lacks the resume prompt:\n%s", js)
	}
	// A fresh launch: --model and --prompt, no resume in the plugin, no instructions.
	plan, err = New(Options{Bin: bin}).Prepare(context.Background(), core.LaunchRequest{
		Agent: wire.Agent{Model: "scripted/claude-sonnet-4-5", Prompt: "go"}, Self: "/opt/orcr", StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	js, _ = os.ReadFile(filepath.Join(dir, "orcr-opencode-plugin.js"))
	if got := strings.Join(plan.Argv[1:], " "); got != "--model scripted/claude-sonnet-4-5 --prompt go" ||
		!strings.Contains(string(js), "const RESUME = null;") || strings.Contains(plan.Env[0], "instructions") {
		t.Fatalf("fresh launch: argv %q env %q", got, plan.Env[0])
	}
}

// TestRealOpenCode runs opencode-ai 1.x against the scripted server. The provider
// SDK it needs (@ai-sdk/anthropic) is bundled in the binary, so a fresh cache dir
// works with nothing downloaded; the @opencode-ai/plugin package opencode installs
// into its config dir comes from install-clis.sh's seed (clis.OpencodeConfigHome).
func TestRealOpenCode(t *testing.T) {
	bin := clitest.CLI(t, "opencode", "ORCR_OPENCODE_BIN")
	self := clitest.HookRec(t)
	srv, err := modelserver.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	root := t.TempDir()
	cwd, hooks := filepath.Join(root, "work"), filepath.Join(root, "hooks.jsonl")
	os.MkdirAll(cwd, 0o755)
	target := filepath.Join(cwd, "hello.txt")
	srv.Push(
		modelserver.Turn{ToolCalls: []modelserver.ToolCall{{Name: "write", Input: map[string]any{"filePath": target, "content": "hello from orcr\n"}}},
			Usage: modelserver.Usage{Input: 100, Output: 20, CacheRead: 300, CacheWrite: 40}},
		modelserver.Turn{Text: "I wrote hello.txt.", Usage: modelserver.Usage{Input: 11, Output: 6}},
	)
	cache := filepath.Join(root, "cache")
	clis.OpencodeConfigHome(t, filepath.Join(root, "config"))
	ocEnv, err := modelserver.WriteOpencodeConfig(filepath.Join(root, "opencode-config"), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	env := clitest.BaseEnv(root, append(ocEnv, "ORCR_ID=agent-1", "ORCR_HOOKREC="+hooks, clis.StalledRegistry(t),
		"XDG_CONFIG_HOME="+filepath.Join(root, "config"), "XDG_DATA_HOME="+filepath.Join(root, "data"),
		"XDG_STATE_HOME="+filepath.Join(root, "state"), "XDG_CACHE_HOME="+cache,
		`OPENCODE_CONFIG_CONTENT={"permission":{"edit":"allow","bash":"allow"}}`)...)
	prov := New(Options{Bin: bin})
	a := wire.Agent{ID: "agent-1", Provider: Name, Cwd: cwd, Model: modelserver.OpencodeModel, Prompt: "write hello.txt"}
	plan, err := prov.Prepare(context.Background(), core.LaunchRequest{Agent: a, Self: self, StateDir: filepath.Join(root, "orcr"), Env: env})
	if err != nil {
		t.Fatal(err)
	}
	run := clitest.Start(t, plan, env, cwd, a, prov.Observe(a), hooks)
	v := run.Wait(150*time.Second, "turn done via plugin events", func(v clitest.View) bool {
		return v.State == wire.StateDone && v.Source == "hook" && v.LastMessage == "I wrote hello.txt."
	})
	if b, err := os.ReadFile(target); err != nil || string(b) != "hello from orcr\n" {
		t.Fatalf("tool did not write: %q %v", b, err)
	}
	if v.Usage.InputTokens != 111 || v.Usage.OutputTokens != 26 || v.Usage.CacheReadTokens != 300 || !v.Usage.Priced || v.SessionID == "" {
		t.Fatalf("usage %+v session %q", v.Usage, v.SessionID)
	}
}

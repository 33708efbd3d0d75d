package tools_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"orcr/core/wire"
	mcpapi "orcr/mcp/api"
	_ "orcr/mcp/tools" // the tools' methods are declared by what it imports
	planapi "orcr/orchestrate/api"
	runapi "orcr/orchestrate/run/api"
	"orcr/testutil/rig"
	"orcr/testutil/wait"
)

// The tools every session lists, whatever its scope.
var toolNames = []string{"agent_answer", "agent_get", "agent_kill", "agent_list", "agent_read", "agent_run", "agent_send",
	"agent_wait", "plan_new", "plan_show", "run_answer", "run_dispatch", "run_ask", "run_done", "run_status"}

// session is a test client's MCP session with one `orcr mcp`.
type session struct {
	t        *testing.T
	cs       *sdk.ClientSession
	mu       sync.Mutex
	progress []string
}

func newClient(s *session) *sdk.Client {
	return sdk.NewClient(&sdk.Implementation{Name: "orcr-test", Version: "1"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
			s.mu.Lock()
			s.progress = append(s.progress, r.Params.Message)
			s.mu.Unlock()
		},
	})
}

// outside starts `orcr mcp args…` as a root caller (no agent's pane).
func outside(t *testing.T, r *rig.Rig, args ...string) *session {
	t.Helper()
	cmd := exec.Command(r.Bin, append([]string{"mcp"}, args...)...)
	cmd.Env, cmd.Dir = r.Vars, r.Work
	s := &session{t: t}
	cs, err := newClient(s).Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect orcr mcp %v: %v", args, err)
	}
	t.Cleanup(func() { cs.Close() })
	s.cs = cs
	return s
}

// inPane starts `orcr mcp args…` as the program of a shell agent at path (so its
// caller is that agent, verified by pane ancestry), talking over two fifos; env are
// extra --env of the agent. It returns the session and the agent.
func inPane(t *testing.T, r *rig.Rig, path string, env []string, args ...string) (*session, wire.Agent) {
	t.Helper()
	dir := t.TempDir()
	in, out, errf := filepath.Join(dir, "in"), filepath.Join(dir, "out"), filepath.Join(dir, "err")
	for _, f := range []string{in, out} {
		if err := syscall.Mkfifo(f, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	run := []string{"agent", "run", path, "--keep"}
	for _, e := range env {
		run = append(run, "--env", e)
	}
	script := "exec " + r.Bin + " mcp " + strings.Join(args, " ") + " <" + in + " >" + out + " 2>" + errf
	r.Must(append(run, "--", "sh", "-c", script)...)
	type opened struct {
		f   *os.File
		err error
	}
	wch, rch := make(chan opened, 1), make(chan opened, 1)
	go func() { f, err := os.OpenFile(in, os.O_WRONLY, 0); wch <- opened{f, err} }()
	go func() { f, err := os.OpenFile(out, os.O_RDONLY, 0); rch <- opened{f, err} }()
	var w, rd opened
	timeout := time.After(wait.Scale(20 * time.Second))
	for i := 0; i < 2; i++ {
		select {
		case w = <-wch:
		case rd = <-rch:
		case <-timeout:
			t.Fatalf("the agent's orcr mcp never opened its fifos; screen:\n%s", r.Run("agent", "read", path).Out)
		}
	}
	if w.err != nil || rd.err != nil {
		t.Fatal(w.err, rd.err)
	}
	s := &session{t: t}
	cs, err := newClient(s).Connect(context.Background(), &sdk.IOTransport{Reader: rd.f, Writer: w.f}, nil)
	if err != nil {
		b, _ := os.ReadFile(errf)
		t.Fatalf("connect orcr mcp in %s: %v; its stderr: %s", path, err, b)
	}
	t.Cleanup(func() { cs.Close() })
	s.cs = cs
	return s, r.Agent(path)
}

// call calls a tool and returns its text and whether it is a tool error; a protocol
// error fails the test.
func (s *session) call(name string, args any) (string, bool) {
	s.t.Helper()
	res, err := s.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		s.t.Fatalf("%s: protocol error %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

// ok calls a tool that must succeed and decodes its answer into out.
func (s *session) ok(name string, args any, out any) {
	s.t.Helper()
	text, isErr := s.call(name, args)
	if isErr {
		s.t.Fatalf("%s %v: %s", name, args, text)
	}
	if out != nil {
		if err := json.Unmarshal([]byte(text), out); err != nil {
			s.t.Fatalf("%s: %v in %s", name, err, text)
		}
	}
}

// refused calls a tool that must answer with a tool error holding every one of want.
func (s *session) refused(name string, args any, want ...string) string {
	s.t.Helper()
	text, isErr := s.call(name, args)
	if !isErr {
		s.t.Fatalf("%s %v: not refused: %s", name, args, text)
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			s.t.Fatalf("%s %v: refusal %q lacks %q", name, args, text, w)
		}
	}
	return text
}

func served(t *testing.T) *rig.Rig {
	t.Helper()
	r := rig.New(t)
	r.Serve()
	return r
}

// TestToolsAndSchemasFromDeclarations: the session lists the fifteen tools, each with
// its method's params schema (the same declaration `orcr api schema` prints) and a
// description.
func TestToolsAndSchemasFromDeclarations(t *testing.T) {
	r := served(t)
	s := outside(t, r)
	res, err := s.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	methods := map[string]string{"agent_run": wire.MethodAgentRun, "agent_list": wire.MethodAgentList, "agent_get": wire.MethodAgentGet,
		"agent_read": wire.MethodAgentRead, "agent_send": wire.MethodAgentSend, "agent_wait": wire.MethodAgentWait,
		"agent_kill": wire.MethodAgentKill, "agent_answer": wire.MethodAgentAnswer, "plan_new": planapi.MethodPlanNew,
		"plan_show": planapi.MethodPlanGet, "run_status": runapi.MethodRunStatus, "run_dispatch": runapi.MethodRunDispatch,
		"run_answer": runapi.MethodRunAnswer, "run_done": runapi.MethodRunDone, "run_ask": runapi.MethodRunAsk}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
		spec, ok := wire.Lookup(methods[tl.Name])
		if !ok {
			t.Fatalf("tool %s has no method", tl.Name)
		}
		want, _ := json.Marshal(wire.ParamsSchema(spec))
		var wantAny any
		json.Unmarshal(want, &wantAny)
		if !reflect.DeepEqual(tl.InputSchema, wantAny) {
			t.Errorf("%s: input schema\n%v\nis not %s's params schema\n%v", tl.Name, tl.InputSchema, spec.Name, wantAny)
		}
		if len(tl.Description) < 80 {
			t.Errorf("%s: description too short for a model: %q", tl.Name, tl.Description)
		}
	}
	slices.Sort(names)
	want := slices.Clone(toolNames)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
	// agent_run's schema requires path, like agent.run.
	for _, tl := range res.Tools {
		if tl.Name == "agent_run" {
			req := tl.InputSchema.(map[string]any)["required"]
			if !reflect.DeepEqual(req, []any{"path"}) {
				t.Fatalf("agent_run required %v", req)
			}
		}
	}
}

// TestReadScopeSeesAndChangesNothing: outside a pane the default scope is read: the
// listing and reads work, every tool that changes something is refused before it
// reaches the server.
func TestReadScopeSeesAndChangesNothing(t *testing.T) {
	r := served(t)
	r.Must("agent", "run", "other", "--keep", "--", "sleep", "300")
	s := outside(t, r)
	var l wire.ListResult
	s.ok("agent_list", map[string]any{}, &l)
	if len(l.Agents) != 1 || l.Agents[0].Path != "other" {
		t.Fatalf("agent_list %+v", l.Agents)
	}
	var g wire.AgentResult
	s.ok("agent_get", map[string]any{"target": "other"}, &g)
	if g.Agent.Path != "other" {
		t.Fatalf("agent_get %+v", g.Agent)
	}
	for name, args := range map[string]map[string]any{
		"agent_run":    {"path": "x", "argv": []string{"true"}},
		"agent_kill":   {"glob": "other"},
		"agent_send":   {"target": "other", "text": "hi"},
		"agent_answer": {"target": "other", "allow": true},
		"plan_new":     {"name": "p", "request": "r", "repo": r.Work},
		"run_dispatch": {"name": "p", "milestones": []string{"M1"}},
		"run_answer":   {"name": "p", "milestone": "M1", "text": "t"},
		"run_done":     {"milestone": "M1"},
		"run_ask":      {"milestone": "M1", "text": "q"},
	} {
		s.refused(name, args, "not_allowed", "scope is read")
	}
	if a := r.Agent("other"); !a.State.Live() {
		t.Fatalf("a refused kill stopped other: %s", a.State)
	}
}

// TestActScopeEveryTool: with --scope act every tool reaches its method: agents are
// run, listed, read, sent to, waited for, answered and killed; plan and run tools get
// the server's own answers (a missing plan, a caller that is no coder).
func TestActScopeEveryTool(t *testing.T) {
	r := served(t)
	s := outside(t, r, "--scope", "act")
	var run wire.AgentResult
	s.ok("agent_run", map[string]any{"path": "w/echo", "argv": []string{"sh", "-c", "echo hello-from-child; sleep 300"}, "keep": true}, &run)
	if run.Agent.Path != "w/echo" {
		t.Fatalf("agent_run %+v", run.Agent)
	}
	var wr wire.WaitResult
	s.ok("agent_wait", map[string]any{"glob": "w/echo", "until": "settled", "timeoutSeconds": 30}, &wr)
	if wr.TimedOut || len(wr.Agents) != 1 {
		t.Fatalf("agent_wait %+v", wr)
	}
	var rd wire.ReadResult
	if !wait.Until(10*time.Second, func() bool {
		s.ok("agent_read", map[string]any{"target": "w/echo"}, &rd)
		return strings.Contains(rd.Text, "hello-from-child")
	}) {
		t.Fatalf("agent_read %q", rd.Text)
	}
	s.ok("agent_send", map[string]any{"target": "w/echo", "text": "typed", "enter": true}, nil)
	s.refused("agent_answer", map[string]any{"target": "w/echo", "allow": true}, "not_blocked")
	var l wire.ListResult
	s.ok("agent_list", map[string]any{"glob": "w/**"}, &l)
	if len(l.Agents) != 1 {
		t.Fatalf("agent_list %+v", l.Agents)
	}
	var k wire.KillResult
	s.ok("agent_kill", map[string]any{"glob": "w/**"}, &k)
	if len(k.Agents) != 1 {
		t.Fatalf("agent_kill %+v", k)
	}
	r.WaitAgent("w/echo", 10*time.Second, "killed", func(a wire.Agent) bool { return !a.State.Live() })
	s.refused("plan_new", map[string]any{"name": "p", "request": "r", "repo": "/nonexistent-dir"}, "not_a_repo")
	s.refused("plan_show", map[string]any{"name": "nope"}, "not_found")
	s.refused("run_status", map[string]any{"name": "nope"}, "not_found")
	s.refused("run_dispatch", map[string]any{"name": "nope", "milestones": []string{"M1"}}, "not_found")
	s.refused("run_answer", map[string]any{"name": "nope", "milestone": "M1", "text": "x"}, "not_found")
	s.refused("run_done", map[string]any{"milestone": "M1"}, "coder")
	s.refused("run_ask", map[string]any{"milestone": "M1", "text": "q"}, "coder")
}

// TestBadArguments: wrong types, unknown fields, missing required ones, a 10 MB
// argument and an unknown tool are each answered, and the session goes on.
func TestBadArguments(t *testing.T) {
	r := served(t)
	s := outside(t, r)
	s.refused("agent_get", map[string]any{"target": 5}, "invalid_params", "agent_get", "target")
	s.refused("agent_get", map[string]any{"target": "x", "bogus": true}, "invalid_params", "bogus")
	s.refused("agent_get", map[string]any{}, "invalid_params", `"target"`)
	s.refused("agent_list", map[string]any{"limit": -1}, "invalid_params")
	s.refused("agent_get", map[string]any{"target": strings.Repeat("a", 10<<20)}, "invalid_params", "limit")
	if _, err := s.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Fatalf("unknown tool: %v", err)
	}
	var l wire.ListResult
	s.ok("agent_list", map[string]any{}, &l)
}

// TestMalformedJSONRPC: lines that are not JSON, not objects or not JSON-RPC are
// answered with JSON-RPC errors and the session still answers afterwards.
func TestMalformedJSONRPC(t *testing.T) {
	r := served(t)
	cmd := exec.Command(r.Bin, "mcp")
	cmd.Env, cmd.Dir = r.Vars, r.Work
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{not json`, `[1,2]`, `{"foo":1}`, `{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"no/such"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":5}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"agent_list","arguments":{}}}`,
	}
	go func() {
		for _, l := range lines {
			stdin.Write([]byte(l + "\n"))
		}
	}()
	dec := json.NewDecoder(stdout)
	var got []map[string]any
	deadline := time.AfterFunc(wait.Scale(20*time.Second), func() { cmd.Process.Kill() })
	defer deadline.Stop()
	for len(got) < 8 {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("after %d answers: %v (%v)", len(got), err, got)
		}
		got = append(got, m)
	}
	codes := map[float64]int{}
	var listed bool
	for _, m := range got {
		if e, ok := m["error"].(map[string]any); ok {
			codes[e["code"].(float64)]++
		}
		if m["id"] == float64(4) && m["result"] != nil {
			listed = true
		}
	}
	if codes[-32700] != 1 || codes[-32600] != 3 || codes[-32601] != 1 || codes[-32602] != 1 || !listed {
		t.Fatalf("answers %v", got)
	}
}

// TestSelfScope: inside an agent's pane the default scope is self: the listing is the
// caller's lineage, a relative agent_run makes a child under the caller (capped to
// self), and acting on or reading an agent outside is refused.
func TestSelfScope(t *testing.T) {
	r := served(t)
	r.Must("agent", "run", "team", "--keep", "--", "sleep", "300")
	r.Must("agent", "run", "stranger", "--keep", "--", "sleep", "300")
	s, me := inPane(t, r, "team/me", nil)
	var l wire.ListResult
	s.ok("agent_list", map[string]any{}, &l)
	var paths []string
	for _, a := range l.Agents {
		paths = append(paths, a.Path)
	}
	if !slices.Equal(paths, []string{"team", "team/me"}) {
		t.Fatalf("self sees %v", paths)
	}
	var child wire.AgentResult
	s.ok("agent_run", map[string]any{"path": "kid", "argv": []string{"sleep", "300"}, "keep": true}, &child)
	if child.Agent.Path != "team/me/kid" || child.Agent.ParentID != me.ID || child.Agent.Env[mcpapi.CapEnv] != "self" {
		t.Fatalf("child %s parent %s env %v", child.Agent.Path, child.Agent.ParentID, child.Agent.Env)
	}
	r.WaitAgent("team/me/kid", 20*time.Second, "kid running", func(a wire.Agent) bool { return a.PID > 0 && a.State.Live() })
	s.ok("agent_send", map[string]any{"target": "kid", "text": "x"}, nil)
	s.ok("agent_get", map[string]any{"target": "/team"}, nil) // an ancestor: readable
	s.refused("agent_send", map[string]any{"target": "/team", "text": "x"}, "not_allowed", "not in your subtree")
	s.refused("agent_get", map[string]any{"target": "/stranger"}, "not_allowed", "lineage")
	s.refused("agent_read", map[string]any{"target": "/stranger"}, "not_allowed", "lineage")
	s.refused("agent_kill", map[string]any{"glob": "/stranger"}, "not_allowed", "subtree")
	s.refused("agent_kill", map[string]any{"glob": "/**"}, "not_allowed", "subtree")
	s.refused("agent_run", map[string]any{"path": "/elsewhere", "argv": []string{"true"}}, "not_allowed", "subtree")
	s.refused("agent_wait", map[string]any{"glob": "/stranger"}, "not_allowed", "lineage")
	s.refused("plan_new", map[string]any{"name": "p", "request": "r", "repo": r.Work, "lead": "claude"}, "not_allowed", "self")
	// A child's own mcp never widens the session's self: act gives way, read is refused.
	var wide wire.AgentResult
	s.ok("agent_run", map[string]any{"path": "wide", "argv": []string{"true"}, "mcp": "act"}, &wide)
	if wide.Agent.Env[mcpapi.CapEnv] != "self" {
		t.Fatalf("a child asking for mcp act is capped at %q", wide.Agent.Env[mcpapi.CapEnv])
	}
	s.refused("agent_run", map[string]any{"path": "reader", "argv": []string{"true"}, "mcp": "read"}, "not_allowed", "neither is inside")
	s.refused("agent_run", map[string]any{"path": "bad", "argv": []string{"true"}, "mcp": "all"}, "invalid_params", "use self")
	var k wire.KillResult
	s.ok("agent_kill", map[string]any{"glob": "kid"}, &k)
	if len(k.Agents) != 1 || k.Agents[0].Path != "team/me/kid" {
		t.Fatalf("kill %+v", k.Agents)
	}
	if a := r.Agent("stranger"); !a.State.Live() {
		t.Fatalf("stranger %s", a.State)
	}
}

// TestScopeWideningRefused: an agent whose record caps MCP at self (its role's mcp,
// here its ORCR_MCP) cannot open a session with scope act or read; nor can a child of
// it, whose own record says nothing.
func TestScopeWideningRefused(t *testing.T) {
	r := served(t)
	for _, c := range []struct{ path, scope string }{{"capped", "act"}, {"capped2", "read"}} {
		res := paneExit(t, r, c.path, []string{mcpapi.CapEnv + "=self"}, "--scope", c.scope)
		if !strings.Contains(res, "wider than this agent may have") || !strings.Contains(res, "caps MCP at self") {
			t.Fatalf("%s --scope %s: %q", c.path, c.scope, res)
		}
	}
	// The cap holds for the capped agent's descendants: boss starts kid, whose own
	// record says nothing.
	r.Must("agent", "run", "boss", "--keep", "--env", mcpapi.CapEnv+"=self", "--", "sh", "-c",
		"orcr agent run kid --keep -- sh -c '"+r.Bin+" mcp --scope act </dev/null; echo EXIT=$?; sleep 300'; sleep 300")
	res := screenWith(t, r, "boss/kid", "EXIT=")
	if !strings.Contains(res, "boss") || !strings.Contains(res, "wider") || strings.Contains(res, "EXIT=0") {
		t.Fatalf("child of a capped agent: %q", res)
	}
	if kid := r.Agent("boss/kid"); kid.ParentPath != "boss" || kid.Env[mcpapi.CapEnv] != "" {
		t.Fatalf("kid's parent %q env %v", kid.ParentPath, kid.Env)
	}
	// Narrowing is fine: self under a self cap.
	s, _ := inPane(t, r, "capped3", []string{mcpapi.CapEnv + "=self"}, "--scope", "self")
	s.ok("agent_list", map[string]any{}, nil)

	// The same from a pane whose role allows only self (mcp = "self" in the role).
	roles := filepath.Join(r.Config, "orcr", "roles")
	if err := os.MkdirAll(roles, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(roles, "selfonly.toml"), []byte("providers = [\"shell\"]\nmcp = \"self\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.Must("agent", "run", "roled", "--keep", "--role", "selfonly", "--", "sh", "-c", r.Bin+" mcp --scope act </dev/null; echo EXIT=$?; sleep 300")
	if res := screenWith(t, r, "roled", "EXIT="); !strings.Contains(res, "wider than this agent may have") || strings.Contains(res, "EXIT=0") {
		t.Fatalf("--scope act under a role of mcp = self: %q", res)
	}
}

// screenWith waits until path's screen shows want and returns it on one line.
func screenWith(t *testing.T, r *rig.Rig, path, want string) string {
	t.Helper()
	var text string
	if !wait.Until(20*time.Second, func() bool {
		text = r.Run("agent", "read", path).Out
		return strings.Contains(text, want)
	}) {
		t.Fatalf("%s never showed %q:\n%s", path, want, text)
	}
	return strings.Join(strings.Fields(text), " ")
}

// paneExit runs `orcr mcp args…` as the program of a shell agent at path and returns
// what it printed when it ended.
func paneExit(t *testing.T, r *rig.Rig, path string, env []string, args ...string) string {
	t.Helper()
	run := []string{"agent", "run", path, "--keep"}
	for _, e := range env {
		run = append(run, "--env", e)
	}
	r.Must(append(run, "--", "sh", "-c", r.Bin+" mcp "+strings.Join(args, " ")+" </dev/null; echo EXIT=$?; sleep 300")...)
	text := screenWith(t, r, path, "EXIT=")
	if strings.Contains(text, "EXIT=0") {
		t.Fatalf("orcr mcp in %s was granted: %s", path, text)
	}
	return text
}

// TestWaitProgressAndCancel: agent_wait reports progress while it waits, a cancelled
// call returns at once, and a client that goes away during a wait ends the server.
func TestWaitProgressAndCancel(t *testing.T) {
	r := served(t)
	r.Must("agent", "run", "slow", "--keep", "--", "sh", "-c", "sleep 300")
	s := outside(t, r)
	ctx, cancel := context.WithCancel(context.Background())
	params := &sdk.CallToolParams{Name: "agent_wait", Arguments: map[string]any{"glob": "slow", "until": "exited"}}
	params.SetProgressToken("w1")
	done := make(chan error, 1)
	start := time.Now()
	go func() { _, err := s.cs.CallTool(ctx, params); done <- err }()
	if !wait.Until(30*time.Second, func() bool { s.mu.Lock(); defer s.mu.Unlock(); return len(s.progress) > 0 }) {
		t.Fatal("no progress while waiting")
	}
	s.mu.Lock()
	msg := s.progress[0]
	s.mu.Unlock()
	if !strings.Contains(msg, "1 of 1 agent(s) matching slow to be exited") {
		t.Fatalf("progress %q", msg)
	}
	start = time.Now()
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a cancelled wait answered")
		}
	case <-time.After(wait.Scale(5 * time.Second)):
		t.Fatal("cancel did not end the call")
	}
	t.Logf("cancelled after %v", time.Since(start))
	// The session still works after the cancelled call.
	s.ok("agent_list", map[string]any{}, nil)

	// A client that disconnects during a wait (its end of stdin closes): the server
	// process ends.
	cmd := exec.Command(r.Bin, "mcp")
	cmd.Env, cmd.Dir = r.Vars, r.Work
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for _, l := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"progressToken":"p"},"name":"agent_wait","arguments":{"glob":"slow","until":"exited"}}}`,
	} {
		stdin.Write([]byte(l + "\n"))
	}
	dec := json.NewDecoder(stdout)
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("before any progress: %v", err)
		}
		if m["method"] == "notifications/progress" {
			break // the wait is under way
		}
	}
	stdin.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("orcr mcp ended with %v", err)
		}
	case <-time.After(wait.Scale(10 * time.Second)):
		t.Fatal("orcr mcp did not end when its client went away during agent_wait")
	}
	if a := r.Agent("slow"); !a.State.Live() {
		t.Fatalf("slow %s", a.State)
	}
}

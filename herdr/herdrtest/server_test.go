package herdrtest

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"orcr/testutil/wait"
)

// shortDir is a temp dir short enough for a socket path (sun_path is ~104 bytes).
func shortDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "hd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

func startServer(t *testing.T, mod func(*Options)) *Server {
	t.Helper()
	dir := shortDir(t)
	opts := Options{SocketPath: SocketPath(dir, "orcr"), Shell: "/bin/sh",
		Env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}, IntegrationDir: filepath.Join(dir, "int")}
	if mod != nil {
		mod(&opts)
	}
	s, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// rawCall writes line and returns everything the server sends before closing.
func rawCall(t *testing.T, s *Server, line string) string {
	t.Helper()
	c, err := net.Dial("unix", s.SocketPath())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, line); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return string(b)
}

type envelope struct {
	ID     *string         `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *apiError       `json:"error"`
}

func call(t *testing.T, s *Server, method string, params any) envelope {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"id": "t1", "method": method, "params": params})
	out := rawCall(t, s, string(b)+"\n")
	var env envelope
	if err := json.Unmarshal([]byte(out), &env); err != nil {
		t.Fatalf("%s: bad reply %q: %v", method, out, err)
	}
	return env
}

func result[T any](t *testing.T, s *Server, method string, params any) T {
	t.Helper()
	env := call(t, s, method, params)
	if env.Error != nil {
		t.Fatalf("%s: %v", method, env.Error)
	}
	var v T
	if err := json.Unmarshal(env.Result, &v); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return v
}

func TestPingAndSocketMode(t *testing.T) {
	s := startServer(t, nil)
	fi, err := os.Stat(s.SocketPath())
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode = %v, %v; want 0600", fi.Mode(), err)
	}
	out := rawCall(t, s, `{"id":"p","method":"ping","params":{}}`+"\n")
	var env struct {
		ID     string `json:"id"`
		Result struct {
			Type         string          `json:"type"`
			Version      string          `json:"version"`
			Protocol     int             `json:"protocol"`
			Capabilities map[string]bool `json:"capabilities"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(out), &env); err != nil {
		t.Fatal(err)
	}
	if env.ID != "p" || env.Result.Type != "pong" || env.Result.Protocol != 20 || env.Result.Version != "0.8.0" ||
		!env.Result.Capabilities["live_handoff"] {
		t.Fatalf("ping = %s", out)
	}
	if !strings.HasSuffix(out, "}\n") || strings.Count(out, "\n") != 1 {
		t.Fatalf("reply is not exactly one line: %q", out)
	}
}

func TestOneRequestPerConnection(t *testing.T) {
	s := startServer(t, nil)
	out := rawCall(t, s, `{"id":"a","method":"ping","params":{}}`+"\n"+`{"id":"b","method":"ping","params":{}}`+"\n")
	if strings.Count(out, "\n") != 1 || !strings.Contains(out, `"id":"a"`) || strings.Contains(out, `"id":"b"`) {
		t.Fatalf("two requests on one connection got %q; want only the first answered", out)
	}
}

func TestInvalidRequestsHaveEmptyID(t *testing.T) {
	s := startServer(t, nil)
	for _, line := range []string{
		`{not json`,
		`{"id":"x","method":"no.such","params":{}}`,
		`{"id":7,"method":"ping","params":{}}`,
		`{"id":"x","method":"pane.get","params":{}}`,
		`{"id":"x","method":"pane.get","params":{"pane_id":5}}`,
		`{"id":"x","params":{}}`,
		`["id","x"]`,
	} {
		out := rawCall(t, s, line+"\n")
		var env envelope
		if err := json.Unmarshal([]byte(out), &env); err != nil {
			t.Fatalf("%s: reply %q: %v", line, out, err)
		}
		if env.ID == nil || *env.ID != "" || env.Error == nil || env.Error.Code != "invalid_request" ||
			!strings.HasPrefix(env.Error.Message, "invalid request") || env.Result != nil {
			t.Errorf("%s: got %s; want empty id and invalid_request", line, out)
		}
	}
}

func TestOversizedRequestDroppedWithoutReply(t *testing.T) {
	s := startServer(t, nil)
	big := `{"id":"x","method":"pane.send_text","params":{"pane_id":"w1:p1","text":"` +
		strings.Repeat("a", maxRequest) + `"}}` + "\n"
	c, err := net.Dial("unix", s.SocketPath())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	go func() { _, _ = io.WriteString(c, big) }()
	b, _ := io.ReadAll(c)
	if len(b) != 0 {
		t.Fatalf("oversized request got a reply: %q", b)
	}
}

func TestLookupErrorKeepsID(t *testing.T) {
	s := startServer(t, nil)
	env := call(t, s, "pane.get", map[string]any{"pane_id": "w1:p9"})
	if env.ID == nil || *env.ID != "t1" || env.Error == nil || env.Error.Code != "pane_not_found" {
		t.Fatalf("got %+v; want id t1 and pane_not_found", env)
	}
	env = call(t, s, "workspace.close", map[string]any{"workspace_id": "w7"})
	if env.Error == nil || env.Error.Code != "workspace_not_found" {
		t.Fatalf("got %+v; want workspace_not_found", env)
	}
}

func TestWorkspaceIDAlphabet(t *testing.T) {
	for n, want := range map[int]string{1: "w1", 9: "w9", 10: "wA", 31: "wZ", 32: "w0", 33: "w11", 64: "w10", 65: "w21"} {
		if got := workspaceID(n); got != want {
			t.Errorf("workspaceID(%d) = %s, want %s", n, got, want)
		}
	}
}

type created struct {
	Type      string        `json:"type"`
	Workspace WorkspaceInfo `json:"workspace"`
	Tab       TabInfo       `json:"tab"`
	RootPane  PaneInfo      `json:"root_pane"`
}

type layoutResult struct {
	Type   string `json:"type"`
	Layout struct {
		WorkspaceID string `json:"workspace_id"`
		TabID       string `json:"tab_id"`
		Root        struct {
			Type   string `json:"type"`
			PaneID string `json:"pane_id"`
		} `json:"root"`
	} `json:"layout"`
}

func TestIDsAndLayout(t *testing.T) {
	s := startServer(t, nil)
	dir := shortDir(t)
	c := result[created](t, s, "workspace.create", map[string]any{"cwd": dir, "label": "orcr"})
	if c.Type != "workspace_created" || c.Workspace.WorkspaceID != "w1" || c.Tab.TabID != "w1:t1" ||
		c.RootPane.PaneID != "w1:p1" || c.RootPane.AgentStatus != "unknown" {
		t.Fatalf("workspace.create = %+v", c)
	}
	if !regexp.MustCompile(`^term_[0-9a-f]+$`).MatchString(c.RootPane.TerminalID) {
		t.Fatalf("terminal id %q", c.RootPane.TerminalID)
	}
	l := result[layoutResult](t, s, "layout.apply", map[string]any{"workspace_id": "w1", "tab_label": "job",
		"root": map[string]any{"type": "pane", "label": "worker", "cwd": dir, "command": []string{"cat"}}})
	if l.Type != "layout_apply" || l.Layout.TabID != "w1:t2" || l.Layout.Root.PaneID != "w1:p2" {
		t.Fatalf("layout.apply = %+v", l)
	}
	c2 := result[created](t, s, "workspace.create", map[string]any{"cwd": dir})
	if c2.Workspace.WorkspaceID != "w2" || c2.RootPane.PaneID != "w2:p1" || c2.Workspace.Number != 2 {
		t.Fatalf("second workspace = %+v", c2)
	}
	// Both ways of naming a layout target at once is invalid_target.
	env := call(t, s, "layout.apply", map[string]any{"workspace_id": "w1", "tab_id": "w1:t1",
		"root": map[string]any{"type": "pane", "command": []string{"cat"}}})
	if env.Error == nil || env.Error.Code != "invalid_target" {
		t.Fatalf("layout.apply with both targets = %+v", env)
	}
	// Pane numbers are never reused.
	if e := call(t, s, "pane.close", map[string]any{"pane_id": "w1:p2"}); e.Error != nil {
		t.Fatal(e.Error)
	}
	l = result[layoutResult](t, s, "layout.apply", map[string]any{"workspace_id": "w1",
		"root": map[string]any{"type": "pane", "command": []string{"cat"}}})
	if l.Layout.Root.PaneID != "w1:p3" || l.Layout.TabID != "w1:t3" {
		t.Fatalf("ids reused: %+v", l)
	}
}

// subscribe opens an events.subscribe connection and returns its line reader.
func subscribe(t *testing.T, s *Server, subs ...map[string]any) (*bufio.Reader, net.Conn) {
	t.Helper()
	c, err := net.Dial("unix", s.SocketPath())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	b, _ := json.Marshal(map[string]any{"id": "sub", "method": "events.subscribe",
		"params": map[string]any{"subscriptions": subs}})
	if _, err := c.Write(append(b, '\n')); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	ack, err := r.ReadString('\n')
	if err != nil || ack != `{"id":"sub","result":{"type":"subscription_started"}}`+"\n" {
		t.Fatalf("ack = %q, %v", ack, err)
	}
	return r, c
}

type pushed struct {
	ID    *string        `json:"id"`
	Event string         `json:"event"`
	Data  map[string]any `json:"data"`
}

func nextEvent(t *testing.T, r *bufio.Reader, c net.Conn) pushed {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("event stream: %v", err)
	}
	var p pushed
	if err := json.Unmarshal([]byte(line), &p); err != nil {
		t.Fatalf("event %q: %v", line, err)
	}
	if p.ID != nil {
		t.Fatalf("pushed line carries an id: %q", line)
	}
	return p
}

func TestArgvExitEmitsOnlyPaneExited(t *testing.T) {
	s := startServer(t, nil)
	dir := shortDir(t)
	result[created](t, s, "workspace.create", map[string]any{"cwd": dir})
	r, c := subscribe(t, s, map[string]any{"type": "pane.exited"}, map[string]any{"type": "pane.closed"},
		map[string]any{"type": "tab.closed"})
	l := result[layoutResult](t, s, "layout.apply", map[string]any{"workspace_id": "w1",
		"root": map[string]any{"type": "pane", "command": []string{"sh", "-c", "exit 3"}}})
	ev := nextEvent(t, r, c)
	if ev.Event != "pane_exited" || ev.Data["type"] != "pane_exited" || ev.Data["pane_id"] != l.Layout.Root.PaneID ||
		ev.Data["workspace_id"] != "w1" {
		t.Fatalf("event = %+v", ev)
	}
	if e := call(t, s, "pane.get", map[string]any{"pane_id": l.Layout.Root.PaneID}); e.Error == nil ||
		e.Error.Code != "pane_not_found" {
		t.Fatalf("exited argv pane still there: %+v", e)
	}
	tabs := result[struct {
		Tabs []TabInfo `json:"tabs"`
	}](t, s, "tab.list", map[string]any{"workspace_id": "w1"})
	if len(tabs.Tabs) != 1 {
		t.Fatalf("emptied tab not removed: %+v", tabs)
	}
	// Now an explicit close: pane_closed, and still no tab_closed for the exit above.
	if e := call(t, s, "pane.close", map[string]any{"pane_id": "w1:p1"}); e.Error != nil {
		t.Fatal(e.Error)
	}
	ev = nextEvent(t, r, c)
	if ev.Event != "pane_closed" || ev.Data["pane_id"] != "w1:p1" {
		t.Fatalf("event = %+v; want pane_closed (and no tab_closed for the exit)", ev)
	}
}

func TestSubscriptionReplaysRing(t *testing.T) {
	s := startServer(t, nil)
	dir := shortDir(t)
	result[created](t, s, "workspace.create", map[string]any{"cwd": dir})
	r, c := subscribe(t, s, map[string]any{"type": "workspace.created"})
	ev := nextEvent(t, r, c)
	if ev.Event != "workspace_created" || ev.Data["workspace"].(map[string]any)["workspace_id"] != "w1" {
		t.Fatalf("replay = %+v", ev)
	}
}

func TestSubscribeUnknownPane(t *testing.T) {
	s := startServer(t, nil)
	b, _ := json.Marshal(map[string]any{"id": "s", "method": "events.subscribe", "params": map[string]any{
		"subscriptions": []any{map[string]any{"type": "pane.agent_status_changed", "pane_id": "w1:p1"}}}})
	out := rawCall(t, s, string(b)+"\n")
	if !strings.Contains(out, `"code":"pane_not_found"`) || strings.Count(out, "\n") != 1 {
		t.Fatalf("got %q; want one pane_not_found line then close", out)
	}
}

func readText(t *testing.T, s *Server, pane, source string) string {
	t.Helper()
	r := result[struct {
		Type string   `json:"type"`
		Read PaneRead `json:"read"`
	}](t, s, "pane.read", map[string]any{"pane_id": pane, "source": source, "format": "text"})
	if r.Type != "pane_read" || r.Read.PaneID != pane {
		t.Fatalf("pane.read = %+v", r)
	}
	return r.Read.Text
}

func waitText(t *testing.T, s *Server, pane, source, want string) string {
	t.Helper()
	var txt string
	if !wait.Until(10*time.Second, func() bool {
		txt = readText(t, s, pane, source)
		return strings.Contains(txt, want)
	}) {
		t.Fatalf("%q never appeared in %s; last:\n%s", want, source, txt)
	}
	return txt
}

func TestInputAndRead(t *testing.T) {
	s := startServer(t, nil)
	dir := shortDir(t)
	result[created](t, s, "workspace.create", map[string]any{"cwd": dir})
	l := result[layoutResult](t, s, "layout.apply", map[string]any{"workspace_id": "w1",
		"root": map[string]any{"type": "pane", "command": []string{"sh"}, "env": map[string]string{"FOO": "bar"}}})
	p := l.Layout.Root.PaneID
	if e := call(t, s, "pane.send_input", map[string]any{"pane_id": p,
		"text": `echo "$FOO-$HERDR_PANE_ID-$PWD"`, "keys": []string{"enter"}}); e.Error != nil {
		t.Fatal(e.Error)
	}
	waitText(t, s, p, "visible", "bar-"+p+"-"+dir)
	// invalid_key: nothing is written when one name is bad.
	e := call(t, s, "pane.send_keys", map[string]any{"pane_id": p, "keys": []string{"x", "nosuchkey"}})
	if e.Error == nil || e.Error.Code != "invalid_key" {
		t.Fatalf("send_keys with a bad name = %+v", e)
	}
	if e := call(t, s, "pane.send_text", map[string]any{"pane_id": p, "text": "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30; do echo line$i; done"}); e.Error != nil {
		t.Fatal(e.Error)
	}
	if e := call(t, s, "pane.send_keys", map[string]any{"pane_id": p, "keys": []string{"Enter"}}); e.Error != nil {
		t.Fatal(e.Error)
	}
	txt := waitText(t, s, p, "recent_unwrapped", "line30")
	if !strings.Contains(txt, "line1\n") {
		t.Fatalf("recent_unwrapped lost scrollback:\n%s", txt)
	}
	if strings.Contains(readText(t, s, p, "visible"), "line1\n") {
		t.Fatal("visible shows scrolled-off rows")
	}
	pi := result[struct {
		ProcessInfo struct {
			PaneID   string `json:"pane_id"`
			ShellPID int    `json:"shell_pid"`
		} `json:"process_info"`
	}](t, s, "pane.process_info", map[string]any{"pane_id": p})
	if pi.ProcessInfo.PaneID != p || pi.ProcessInfo.ShellPID <= 0 {
		t.Fatalf("process_info = %+v", pi)
	}
}

func TestAgentStartAndReportedStatus(t *testing.T) {
	bin := shortDir(t)
	// A fake `pi` on PATH, as herdr's own tests use, that prints Working... then idles.
	script := "#!/bin/sh\necho Working...\nread x\necho done\nexec cat\n"
	if err := os.WriteFile(filepath.Join(bin, "pi"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, func(o *Options) {
		o.Env = []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "HOME=" + bin, "PS1=$ "}
		o.AgentReady = 300 * time.Millisecond
	})
	result[created](t, s, "workspace.create", map[string]any{"cwd": bin})
	waitText(t, s, "w1:p1", "visible", "$")
	st := result[struct {
		Type  string    `json:"type"`
		Agent AgentInfo `json:"agent"`
		Argv  []string  `json:"argv"`
	}](t, s, "agent.start", map[string]any{"name": "worker", "kind": "pi", "pane_id": "w1:p1"})
	if st.Type != "agent_started" || !st.Agent.LaunchPending || st.Argv[0] != "pi" {
		t.Fatalf("agent.start = %+v", st)
	}
	var got AgentInfo
	if !wait.Until(10*time.Second, func() bool {
		got = result[struct {
			Agent AgentInfo `json:"agent"`
		}](t, s, "agent.get", map[string]any{"target": "worker"}).Agent
		return got.InteractiveReady && !got.LaunchPending && got.AgentStatus == "working"
	}) {
		t.Fatalf("agent never became ready and working: %+v", got)
	}
	// A report from an integration takes authority.
	if e := call(t, s, "pane.report_agent", map[string]any{"pane_id": "w1:p1", "source": "herdr:pi",
		"agent": "pi", "state": "blocked"}); e.Error != nil {
		t.Fatal(e.Error)
	}
	w := result[struct {
		Agent AgentInfo `json:"agent"`
	}](t, s, "agent.wait", map[string]any{"target": "w1:p1", "until": []string{"blocked"}, "timeout_ms": 5000})
	if w.Agent.AgentStatus != "blocked" || w.Agent.Name != "worker" {
		t.Fatalf("agent.wait = %+v", w.Agent)
	}
	e := call(t, s, "agent.wait", map[string]any{"target": "worker", "until": []string{"idle"}, "timeout_ms": 200})
	if e.Error == nil || e.Error.Code != "timeout" {
		t.Fatalf("agent.wait past its deadline = %+v", e)
	}
	if e := call(t, s, "agent.get", map[string]any{"target": "nobody"}); e.Error == nil || e.Error.Code != "agent_not_found" {
		t.Fatalf("agent.get unknown = %+v", e)
	}
}

func TestIntegrationInstall(t *testing.T) {
	s := startServer(t, nil)
	res := result[map[string]any](t, s, "integration.install", map[string]any{"target": "claude"})
	if res["type"] != "integration_install" || res["target"] != "claude" {
		t.Fatalf("integration.install = %v", res)
	}
	if IntegrationRecorded(s.opts.IntegrationDir, "claude") != IntegrationVersion {
		t.Fatal("integration not recorded")
	}
}

// A client that does not finish its request line in time is dropped without a reply.
func TestSlowRequestDropped(t *testing.T) {
	s := startServer(t, func(o *Options) { o.RequestTimeout = 200 * time.Millisecond })
	c, err := net.Dial("unix", s.SocketPath())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, `{"id":"x","method":"ping"`); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(c)
	if len(b) != 0 || err != nil {
		t.Fatalf("slow request got %q, %v; want the connection closed without a reply", b, err)
	}
}

package claude

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/core"
	"orcr/core/wire"
)

func testObserver(t *testing.T, transcript string) *observer {
	t.Helper()
	p := New(Options{ConfigDir: t.TempDir()})
	o := p.Observe(wire.Agent{ID: "a1", Provider: Name, Prompt: "go", Cwd: t.TempDir(), Transcript: transcript}).(*observer)
	o.now = func() time.Time { return time.Date(2026, 11, 30, 20, 0, 0, 0, time.UTC) }
	return o
}

func mustHook(t *testing.T, o *observer, ev, payload string) *core.Signal {
	t.Helper()
	s, err := o.Hook(ev, []byte(payload))
	if err != nil {
		t.Fatalf("%s: %v", ev, err)
	}
	return s
}

func TestHookLifecycle(t *testing.T) {
	o := testObserver(t, "")
	s := mustHook(t, o, "SessionStart", `{"session_id":"s1","transcript_path":"/nonexistent/s1.jsonl","source":"startup","model":"claude-opus-5-5"}`)
	if s == nil || s.SessionID != "s1" || s.Transcript != "/nonexistent/s1.jsonl" || s.Model != "claude-opus-5-5" || s.Source != "hook" {
		t.Fatalf("SessionStart: %+v", s)
	}
	if s := mustHook(t, o, "UserPromptSubmit", `{"prompt":"go"}`); s.State != wire.StateWorking {
		t.Fatalf("UserPromptSubmit: %+v", s)
	}
	s = mustHook(t, o, "PermissionRequest", `{"tool_name":"Bash","tool_input":{"command":"rm -rf build","description":"clean"}}`)
	if s.State != wire.StateBlocked || s.Blocked == nil || s.Blocked.Kind != "permission" || s.Blocked.Detail != "Bash(rm -rf build)" {
		t.Fatalf("PermissionRequest: %+v %+v", s, s.Blocked)
	}
	if s.Reason != "permission: Bash(rm -rf build)" {
		t.Fatalf("reason %q", s.Reason)
	}
	if s := mustHook(t, o, "PostToolUse", `{"tool_name":"Bash"}`); s == nil || s.State != wire.StateWorking {
		t.Fatalf("PostToolUse after block: %+v", s)
	}
	if s := mustHook(t, o, "PostToolUse", `{"tool_name":"Bash"}`); s != nil {
		t.Fatalf("PostToolUse while working should say nothing: %+v", s)
	}
	s = mustHook(t, o, "PermissionRequest", `{"tool_name":"AskUserQuestion","tool_input":{"questions":[{"question":"Which DB?","options":[{"label":"Postgres"},{"label":"SQLite"}]}]}}`)
	// The answers' keys are on screen only: the options come from there.
	if s.Blocked.Kind != "question" || s.Blocked.Detail != "Which DB?" || s.Blocked.Text != "Which DB?" || len(s.Blocked.Options) != 0 {
		t.Fatalf("question: %+v", s.Blocked)
	}
	s = mustHook(t, o, "Stop", `{"last_assistant_message":"all done"}`)
	if s.State != wire.StateDone || s.LastMessage != "all done" {
		t.Fatalf("Stop: %+v", s)
	}
}

func TestHookUsageLimit(t *testing.T) {
	o := testObserver(t, "")
	// The status line reported both windows: one reading goes with the hook's signal,
	// the other with the next poll.
	s := mustHook(t, o, "statusline", `{"model":{"id":"claude-opus-5-5"},"rate_limits":{"five_hour":{"used_percentage":100,"resets_at":1796090000},"seven_day":{"used_percentage":41.5,"resets_at":1796500000}}}`)
	if s == nil || s.Reading == nil {
		t.Fatalf("statusline: %+v", s)
	}
	first := s.Reading
	p, err := o.Poll(context.Background())
	if err != nil || p == nil || p.Reading == nil || p.Reading.Window == first.Window {
		t.Fatalf("second reading: %+v %v", p, err)
	}
	// Same numbers again: nothing new.
	if s := mustHook(t, o, "statusline", `{"model":{"id":"claude-opus-5-5"},"rate_limits":{"five_hour":{"used_percentage":100,"resets_at":1796090000}}}`); s != nil {
		t.Fatalf("repeated status line: %+v", s)
	}
	s = mustHook(t, o, "StopFailure", `{"error":"rate_limit","last_assistant_message":"API Error: Request rejected (429) · This request would exceed your account's rate limit."}`)
	if s.State != wire.StateBlocked || s.Blocked.Kind != wire.BlockedLimit || s.Blocked.ResetsAt == nil ||
		s.Blocked.ResetsAt.Unix() != 1796090000 || !strings.HasPrefix(s.Reason, "usage-limit: resets ") {
		t.Fatalf("limit: %+v %+v", s, s.Blocked)
	}
	if s.Reading == nil || !s.Reading.LimitHit {
		t.Fatalf("limit reading: %+v", s.Reading)
	}
	s = mustHook(t, o, "StopFailure", `{"error":"overloaded"}`)
	if s.State != wire.StateDone || !strings.Contains(s.Reason, "overloaded") {
		t.Fatalf("overloaded is not a limit: %+v", s)
	}
	s = mustHook(t, o, "StopFailure", `{"error":"authentication_failed","last_assistant_message":"API Error: 401 · Please run /login"}`)
	if s.State != wire.StateBlocked || s.Blocked == nil || s.Blocked.Kind != wire.BlockedSetup || !strings.Contains(s.Blocked.Detail, "claude /login") {
		t.Fatalf("a refused login is setup: %+v", s)
	}
	s = mustHook(t, o, "StopFailure", `{"error":"authentication_failed","last_assistant_message":"Please run /login · API Error: 403 scripted: the review turn fails"}`)
	if s.State != wire.StateDone || s.Blocked != nil || !strings.Contains(s.Reason, "turn failed") {
		t.Fatalf("a 403 on one request is a failed turn, not a sign-in: %+v", s)
	}
}

func TestHookBadInput(t *testing.T) {
	o := testObserver(t, "")
	if _, err := o.Hook("Stop", []byte(`{nope`)); err == nil {
		t.Fatal("malformed payload accepted")
	}
	if _, err := o.Hook("Stop", []byte(`"a string"`)); err == nil {
		t.Fatal("non-object payload accepted")
	}
	if s := mustHook(t, o, "SomeFutureEvent", `{"x":1}`); s != nil {
		t.Fatalf("unknown event: %+v", s)
	}
}

func TestPollMissingThenGrowingTranscript(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	o := testObserver(t, path)
	if s, err := o.Poll(context.Background()); err != nil || s != nil {
		t.Fatalf("missing transcript: %+v %v", s, err)
	}
	data, _ := os.ReadFile("testdata/session.jsonl")
	os.WriteFile(path, data, 0o644)
	s, err := o.Poll(context.Background())
	if err != nil || s == nil || s.Usage == nil || s.Source != "transcript" {
		t.Fatalf("poll: %+v %v", s, err)
	}
	if s.Usage.InputTokens != 132 || s.Usage.OutputTokens != 85 || !s.Usage.Priced || s.Usage.CostUSD == nil {
		t.Fatalf("usage %+v", s.Usage)
	}
	// The fixture ends with a usage-limit line and no hooks were seen.
	if s.State != wire.StateBlocked || s.Blocked.Kind != wire.BlockedLimit {
		t.Fatalf("limit from transcript: %+v", s)
	}
	if s, _ := o.Poll(context.Background()); s != nil && (s.Usage != nil || s.State != "") {
		t.Fatalf("second poll repeated news: %+v", s)
	}
	// Truncated (rewritten) transcript: start over without error.
	os.WriteFile(path, data[:200], 0o644)
	if _, err := o.Poll(context.Background()); err != nil {
		t.Fatalf("shrunk: %v", err)
	}
}

func TestScreenDialogs(t *testing.T) {
	o := testObserver(t, "")
	trust := "Accessing workspace:\n/tmp/x\nQuick safety check: Is this a project you created or one you trust?\n❯ No, exit\n  Yes, I trust this folder\nEnter to confirm · Esc to cancel"
	s := o.Screen(core.Screen{Text: trust}, time.Second)
	if s == nil || s.State != wire.StateBlocked || s.Blocked.Kind != "dialog" || s.Reason != "dialog: trust folder" || s.Source != "screen" {
		t.Fatalf("trust dialog: %+v", s)
	}
	if s := o.Screen(core.Screen{Text: trust}, 2*time.Second); s != nil {
		t.Fatalf("same dialog twice: %+v", s)
	}
	if s := o.Screen(core.Screen{Text: "❯ go\n● working"}, 0); s == nil || s.State != wire.StateWorking {
		t.Fatalf("dialog dismissed: %+v", s)
	}
	if s := o.Screen(core.Screen{Text: "Do you want to proceed?\n❯ 1. Yes\n  2. No"}, 0); s == nil || s.Blocked == nil || s.Blocked.Kind != "permission" {
		t.Fatalf("permission menu without hooks: %+v", s)
	}
}

func TestPrepare(t *testing.T) {
	cfg := t.TempDir()
	os.WriteFile(filepath.Join(cfg, "settings.json"), []byte(`{"statusLine":{"type":"command","command":"~/bin/mine"}}`), 0o644)
	os.WriteFile(filepath.Join(cfg, ".claude.json"), []byte(`{"theme":"dark","projects":{"/other":{"x":1}}}`), 0o644)
	bin := filepath.Join(t.TempDir(), "claude")
	os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)
	p := New(Options{Bin: bin, ConfigDir: cfg})
	cwd := t.TempDir()
	state := t.TempDir()
	plan, err := p.Prepare(context.Background(), core.LaunchRequest{
		Agent: wire.Agent{ID: "a", Provider: Name, Model: "sonnet", Cwd: cwd, Prompt: "-v is a flag"},
		Self:  "/opt/orcr dir/orcr", StateDir: state,
	})
	if err != nil {
		t.Fatal(err)
	}
	a := plan.Argv
	if a[0] != bin || a[1] != "--session-id" || a[2] != plan.SessionID || a[3] != "--settings" || a[5] != "--model" || a[6] != "sonnet" || a[len(a)-1] != " -v is a flag" {
		t.Fatalf("argv %q", a)
	}
	set, _ := os.ReadFile(a[4])
	if !strings.Contains(string(set), `"'/opt/orcr dir/orcr' hook claude PermissionRequest"`) || !strings.Contains(string(set), "hook claude statusline") {
		t.Fatalf("settings %s", set)
	}
	env := strings.Join(plan.Env, "\n")
	if !strings.Contains(env, EnvStatusLineChain+"=~/bin/mine") || !strings.Contains(env, "CLAUDE_CONFIG_DIR="+cfg) {
		t.Fatalf("env %q", plan.Env)
	}
	if want := filepath.Join(cfg, "projects", ProjectSlug(cwd), plan.SessionID+".jsonl"); plan.Transcript != want {
		t.Fatalf("transcript %q want %q", plan.Transcript, want)
	}
	gc, _ := os.ReadFile(filepath.Join(cfg, ".claude.json"))
	if !strings.Contains(string(gc), `"hasTrustDialogAccepted": true`) || !strings.Contains(string(gc), `"theme": "dark"`) || !strings.Contains(string(gc), `"/other"`) {
		t.Fatalf("global config %s", gc)
	}
	if _, err := New(Options{Bin: "/nonexistent/claude"}).Prepare(context.Background(), core.LaunchRequest{StateDir: state}); err == nil ||
		!strings.Contains(err.Error(), InstallHint) {
		t.Fatalf("missing binary: %v", err)
	}
	if ProjectSlug("/home/u/my_app.v2") != "-home-u-my-app-v2" {
		t.Fatal("slug")
	}
}

// TestSetupScreens: claude's sign-in and first-run screens are blocked on setup with
// what to do, not working. The "not logged in" and "no connection" screens were
// captured from claude 2.1.328 started with a config dir holding no login (and, for
// the latter, no onboarding done and no network); the login-method and theme screens
// need the network to appear, so their lines are claude's known wording.
func TestSetupScreens(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", "screens", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, c := range []struct{ name, screen, question, fix string }{
		{"not logged in", read("not-logged-in.txt"), "not signed in", "claude /login"},
		{"no connection", read("no-connection.txt"), "no connection", "check the network"},
		{"login method", "Select login method:\n\n❯ 1. Claude account with subscription\n  2. Anthropic Console account\n", "not signed in", "claude /login"},
		{"theme", "Let's get started.\n\nChoose the text style that looks best with your terminal\n❯ 1. Dark mode ✔\n  2. Light mode\n", "onboarding", "first-run setup"},
	} {
		o := testObserver(t, "")
		o.hooksSeen = true // setup screens are read whatever the hooks said
		s := o.Screen(core.Screen{Text: c.screen}, 2*time.Second)
		if s == nil || s.State != wire.StateBlocked || s.Blocked == nil || s.Blocked.Kind != wire.BlockedSetup ||
			s.Blocked.Question != c.question || !strings.Contains(s.Blocked.Detail, c.fix) || s.Reason != "setup: "+c.question {
			t.Fatalf("%s: %+v", c.name, s)
		}
		if s := o.Screen(core.Screen{Text: c.screen}, 3*time.Second); s != nil {
			t.Fatalf("%s twice: %+v", c.name, s)
		}
	}
}

// TestReadoptedTurnEndFromTranscript: the server died while claude worked, and the
// turn ended before it came back — its Stop hook reached no server. Re-adopted as
// working (hooks seen), the first read of the transcript finds the turn end written
// after the turn began and reports done. A turn end from before the turn began (the
// previous one's) does not.
func TestReadoptedTurnEndFromTranscript(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// The session up to its turn's end (what follows is a usage limit).
	lines := strings.SplitAfter(string(src), "\n")
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines[:11], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	p := New(Options{ConfigDir: t.TempDir()})
	for _, c := range []struct {
		began time.Time
		want  wire.State
	}{
		{time.Date(2026, 11, 30, 22, 58, 29, 0, time.UTC), wire.StateDone},   // the turn in the file
		{time.Date(2026, 11, 30, 23, 10, 0, 0, time.UTC), wire.StateWorking}, // a later turn, not written yet
	} {
		o := p.Observe(wire.Agent{ID: "a1", Provider: Name, Cwd: t.TempDir(), Transcript: path,
			State: wire.StateWorking, StateSource: "hook", StateAt: c.began}).(*observer)
		s, err := o.Poll(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got := o.state
		if s != nil && s.State != "" {
			got = s.State
		}
		if got != c.want {
			t.Errorf("began %s: state %s, want %s (signal %+v)", c.began.Format(time.TimeOnly), got, c.want, s)
		}
		if c.want == wire.StateDone && (s == nil || !strings.Contains(s.Reason, "while the server was down")) {
			t.Errorf("the turn end's reason: %+v", s)
		}
		// Later reads do not decide again: hooks are back.
		if s, _ := o.Poll(context.Background()); s != nil && s.State != "" {
			t.Errorf("a second read set %s", s.State)
		}
	}
}

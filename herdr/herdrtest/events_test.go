package herdrtest

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The parameterised kinds push dotted names with untagged data; a status filter that
// already matches fires at once; focusing a settled pane turns done into idle.
func TestStatusSubscriptionAndSeen(t *testing.T) {
	bin := shortDir(t)
	script := "#!/bin/sh\necho Working...\nread x\nprintf '\\033[2J\\033[H> '\nwhile read y; do :; done\n"
	if err := os.WriteFile(filepath.Join(bin, "pi"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, func(o *Options) { o.Env = []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "HOME=" + bin} })
	result[created](t, s, "workspace.create", map[string]any{"cwd": bin})
	l := result[layoutResult](t, s, "layout.apply", map[string]any{"workspace_id": "w1",
		"root": map[string]any{"type": "pane", "command": []string{"pi"}}})
	p := l.Layout.Root.PaneID
	w := result[map[string]any](t, s, "events.wait", map[string]any{"timeout_ms": 10000,
		"match_event": map[string]any{"event": "pane_agent_status_changed", "pane_id": p, "agent_status": "working"}})
	if w["type"] != "wait_matched" {
		t.Fatalf("events.wait = %v", w)
	}
	r, c := subscribe(t, s, map[string]any{"type": "pane.agent_status_changed", "pane_id": p, "agent_status": "working"})
	ev := nextEvent(t, r, c)
	if ev.Event != "pane.agent_status_changed" || ev.Data["agent_status"] != "working" || ev.Data["pane_id"] != p ||
		ev.Data["type"] != nil || ev.Data["agent"] != "pi" {
		t.Fatalf("immediate status event = %+v", ev)
	}
	r2, c2 := subscribe(t, s, map[string]any{"type": "pane.agent_status_changed", "pane_id": p})
	call(t, s, "pane.send_text", map[string]any{"pane_id": p, "text": "go\r"})
	ev = nextEvent(t, r2, c2)
	if ev.Data["agent_status"] != "done" {
		t.Fatalf("headless settle = %+v; want done", ev)
	}
	call(t, s, "pane.focus", map[string]any{"pane_id": p})
	ev = nextEvent(t, r2, c2)
	if ev.Data["agent_status"] != "idle" {
		t.Fatalf("after focus = %+v; want idle", ev)
	}
}

func TestOutputMatchedIsEdgeTriggered(t *testing.T) {
	s := startServer(t, nil)
	dir := shortDir(t)
	result[created](t, s, "workspace.create", map[string]any{"cwd": dir})
	l := result[layoutResult](t, s, "layout.apply", map[string]any{"workspace_id": "w1",
		"root": map[string]any{"type": "pane", "command": []string{"cat"}}})
	p := l.Layout.Root.PaneID
	r, c := subscribe(t, s, map[string]any{"type": "pane.output_matched", "pane_id": p, "source": "recent",
		"match": map[string]any{"type": "regex", "value": "PASS|FAIL"}})
	call(t, s, "pane.send_text", map[string]any{"pane_id": p, "text": "all PASS\r"})
	ev := nextEvent(t, r, c)
	if ev.Event != "pane.output_matched" || ev.Data["matched_line"] != "all PASS" {
		t.Fatalf("event = %+v", ev)
	}
	// Still matching: no second event; the next pushed line must come from elsewhere.
	_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	if line, err := r.ReadString('\n'); err == nil {
		t.Fatalf("edge-triggered match fired again: %q", line)
	}
	out := result[map[string]any](t, s, "pane.wait_for_output", map[string]any{"pane_id": p, "source": "recent",
		"match": map[string]any{"type": "substring", "value": "PASS"}, "timeout_ms": 2000})
	if out["type"] != "output_matched" || out["matched_line"] != "all PASS" {
		t.Fatalf("wait_for_output = %v", out)
	}
	if e := call(t, s, "pane.wait_for_output", map[string]any{"pane_id": p, "source": "recent",
		"match": map[string]any{"type": "regex", "value": "("}}); e.Error == nil || e.Error.Code != "invalid_regex" {
		t.Fatalf("bad regex = %+v", e)
	}
	if e := call(t, s, "pane.wait_for_output", map[string]any{"pane_id": p, "source": "recent",
		"match": map[string]any{"type": "substring", "value": "never"}, "timeout_ms": 200}); e.Error == nil ||
		e.Error.Code != "timeout" {
		t.Fatalf("unmatched wait = %+v", e)
	}
}

// The last pane's exit removes the workspace silently: pane_exited only.
func TestLastExitRemovesWorkspaceSilently(t *testing.T) {
	s := startServer(t, nil)
	dir := shortDir(t)
	result[created](t, s, "workspace.create", map[string]any{"cwd": dir})
	l := result[layoutResult](t, s, "layout.apply", map[string]any{"workspace_id": "w1",
		"root": map[string]any{"type": "pane", "command": []string{"sh", "-c", "read x"}}})
	if e := call(t, s, "pane.close", map[string]any{"pane_id": "w1:p1"}); e.Error != nil {
		t.Fatal(e.Error)
	}
	r, c := subscribe(t, s, map[string]any{"type": "pane.exited"}, map[string]any{"type": "workspace.closed"},
		map[string]any{"type": "tab.closed"})
	call(t, s, "pane.send_text", map[string]any{"pane_id": l.Layout.Root.PaneID, "text": "\r"})
	ev := nextEvent(t, r, c)
	if ev.Event != "pane_exited" {
		t.Fatalf("event = %+v", ev)
	}
	if e := call(t, s, "workspace.get", map[string]any{"workspace_id": "w1"}); e.Error == nil ||
		e.Error.Code != "workspace_not_found" {
		t.Fatalf("workspace survived its last pane: %+v", e)
	}
	_ = c.SetReadDeadline(time.Now().Add(400 * time.Millisecond))
	if line, err := r.ReadString('\n'); err == nil {
		t.Fatalf("an exit also emitted %q", line)
	}
}

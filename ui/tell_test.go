package ui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"orcr/core/wire"
	planapi "orcr/orchestrate/api"
	runapi "orcr/orchestrate/run/api"
)

// raws is what running cmd prints through the renderer.
func raws(t *testing.T, cmd tea.Cmd) []string {
	t.Helper()
	var out []string
	for _, msg := range doCmdNoService(t, cmd) {
		if raw, ok := msg.(tea.RawMsg); ok {
			out = append(out, raw.Msg.(string))
		}
	}
	return out
}

func tellEvents(seq uint64) []wire.Event {
	return []wire.Event{
		{Event: planapi.EventPlanState, Seq: seq, At: t0, Data: map[string]any{"name": "csv-import", "state": "drafted", "from": "drafting"}},
		{Event: runapi.EventRun, Seq: seq + 1, At: t0, Data: map[string]any{"run": "csv-import", "type": "fact", "kind": "ask", "m": "M2", "text": "skip bad rows?"}},
		{Event: runapi.EventRunNotify, Seq: seq + 2, At: t0, Data: map[string]any{"run": "csv-import", "text": "run csv-import: the check fails on feature/csv-import after all merges"}},
	}
}

// TestTellKinds: a drafted plan, a run that asks and a run that fails each ring the bell
// and send the terminal's notification, once per event; a kind turned off under
// [notify] tells nothing; replayed history tells nothing.
func TestTellKinds(t *testing.T) {
	for _, c := range []struct {
		ev   wire.Event
		kind string
		want string
	}{
		{tellEvents(100)[0], NotifyPlanDrafted, "\x1b]9;orcr: plan csv-import is drafted: review it: orcr plan show csv-import\a"},
		{tellEvents(100)[1], NotifyRunAsks, "\x1b]9;orcr: run csv-import M2 asks: skip bad rows?\a"},
		{tellEvents(100)[2], NotifyRunFailed, "\x1b]9;orcr: run csv-import: the check fails on feature/csv-import after all merges\a"},
	} {
		m := newTestModel(t, 120, 40, Options{})
		got := raws(t, m.applyEvents([]wire.Event{c.ev}))
		if len(got) != 2 || got[0] != bell || got[1] != c.want {
			t.Errorf("%s: printed %q, want the bell and %q", c.kind, got, c.want)
		}
		// The same event again (a reconnect's re-read) tells nothing.
		if got := raws(t, m.applyEvents([]wire.Event{c.ev})); len(got) != 0 {
			t.Errorf("%s told twice: %q", c.kind, got)
		}
		off := newTestModel(t, 120, 40, Options{Notify: NotifyOptions{Off: map[string]bool{c.kind: true}}})
		if got := raws(t, off.applyEvents([]wire.Event{c.ev})); len(got) != 0 {
			t.Errorf("%s turned off still told: %q", c.kind, got)
		}
	}
	// Replayed history (seq ≤ the server's LastSeq on connect) tells nothing.
	m := newTestModel(t, 120, 40, Options{})
	if got := raws(t, m.applyEvents(tellEvents(1))); len(got) != 0 {
		t.Errorf("the replay told: %q", got)
	}
	// A batch: one bell, one notification naming the first and counting the rest; OSC
	// 777 on terminals that take it, and no bell when it is off.
	m = newTestModel(t, 120, 40, Options{Notify: NotifyOptions{OSC: "777", NoBell: true}})
	got := raws(t, m.applyEvents(tellEvents(100)))
	if len(got) != 1 || got[0] != "\x1b]777;notify;orcr: plan csv-import is drafted;review it: orcr plan show csv-import (and 2 more)\a" {
		t.Errorf("a batch printed %q", got)
	}
	// A blocked agent tells too, with its question.
	m = newTestModel(t, 120, 40, Options{})
	got = raws(t, m.applyEvents([]wire.Event{blockedEvent(fixture()[0], 11)}))
	if len(got) != 2 || !strings.Contains(got[1], "demo/a is blocked: Proceed? [y/N]") {
		t.Errorf("blocked printed %q", got)
	}
}

// TestTellNotifySend: with notify-send found, the notification is its command line;
// when it fails, the dashboard falls back to the terminal's notification.
func TestTellNotifySend(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "args")
	prog := filepath.Join(dir, "notify-send")
	// A stand-in for the desktop's notify-send: it records its arguments.
	if err := os.WriteFile(prog, []byte("#!/bin/sh\nprintf '%s\\n' \"$@\" > "+log+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := newTestModel(t, 120, 40, Options{Notify: NotifyOptions{NotifySend: prog, NoBell: true}})
	if got := raws(t, m.applyEvents(tellEvents(100)[:1])); len(got) != 0 {
		t.Fatalf("printed %q with notify-send", got)
	}
	b, err := os.ReadFile(log)
	if err != nil || string(b) != "--app-name=orcr\norcr: plan csv-import is drafted\nreview it: orcr plan show csv-import\n" {
		t.Fatalf("notify-send got %q (%v)", b, err)
	}
	m.Update(notifyFailedMsg{err: os.ErrNotExist})
	if got := raws(t, m.applyEvents(tellEvents(200)[:1])); len(got) != 1 || !strings.HasPrefix(got[0], "\x1b]9;") {
		t.Fatalf("after notify-send failed: %q", got)
	}
}

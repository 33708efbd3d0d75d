package pty_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"orcr/core"
	"orcr/pty"
)

// TestHandoff exports live panes from one host and adopts them in another, as a
// quitting dashboard and the background server it starts do (here in one process,
// passing the masters directly), with pidfd exit detection and the /proc fallback.
func TestHandoff(t *testing.T) {
	for _, pidfd := range []bool{true, false} {
		t.Run(map[bool]string{true: "pidfd", false: "proc"}[pidfd], func(t *testing.T) {
			defer pty.UsePidfd(pidfd)()
			testHandoff(t)
		})
	}
}

func testHandoff(t *testing.T) {
	ctx := context.Background()
	h1 := pty.New(pty.Options{KillGrace: 200 * time.Millisecond})
	shut1 := false
	t.Cleanup(func() {
		if !shut1 {
			_ = h1.Shutdown(ctx)
		}
	})
	// 60 lines scroll the first ones into history; then bold text and app cursor keys.
	catPane := launch(t, h1, "sh", "-c", "i=0; while [ $i -lt 60 ]; do echo scrolled-$i; i=$((i+1)); done; "+
		"printf '\\033[1mbefore-handoff\\033[0m\\033[?1h\\n'; exec cat")
	sleeper := launch(t, h1, "sh", "-c", `sleep 300 & echo "child=$!"; wait`)
	dead := launch(t, h1, "sh", "-c", "exit 4")
	waitText(t, h1, catPane.ID, 0, "before-handoff")
	s := waitText(t, h1, sleeper.ID, 0, "child=")
	_, after, _ := strings.Cut(s.Text, "child=")
	child, err := strconv.Atoi(strings.Fields(after)[0])
	if err != nil {
		t.Fatal(err)
	}
	if code := nextExit(t, h1, dead.ID); code != 4 {
		t.Fatalf("dead pane exit code %d", code)
	}

	hs, err := h1.Export()
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 2 || hs[0].ID != catPane.ID || hs[1].ID != sleeper.ID {
		t.Fatalf("exported %+v, want the two live panes %s and %s", hs, catPane.ID, sleeper.ID)
	}
	if hs[0].PID != catPane.PID || hs[0].Master == nil || hs[0].Cols != 200 || hs[0].Rows != 50 ||
		!strings.Contains(hs[0].Screen, "before-handoff") {
		t.Fatalf("hand-off of %s: %+v", catPane.ID, hs[0])
	}
	left, _ := h1.List(ctx)
	if len(left) != 1 || left[0].ID != dead.ID {
		t.Fatalf("exporting host still lists %+v, want only the dead pane", left)
	}
	// The exporting host shuts down without killing what it handed off.
	if err := h1.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	shut1 = true
	if !alive(catPane.PID) || !alive(sleeper.PID) || !alive(child) {
		t.Fatal("Shutdown after Export killed a handed-off process")
	}

	if h1.LastID() != 3 {
		t.Fatalf("LastID %d after three launches", h1.LastID())
	}
	h2 := newHost(t, pty.Options{Adopt: hs, IDFloor: h1.LastID(), KillGrace: 200 * time.Millisecond})
	list, err := h2.List(ctx)
	if err != nil || len(list) != 2 || list[0].ID != catPane.ID || list[0].PID != catPane.PID || list[0].Dead {
		t.Fatalf("adopting host lists %+v, %v", list, err)
	}
	// The old screen is there before the program prints anything new.
	scr, err := h2.Read(ctx, catPane.ID, core.ReadOpts{})
	if err != nil || !strings.Contains(scr.Text, "before-handoff") || scr.Cols != 200 || scr.Rows != 50 {
		t.Fatalf("adopted screen %q (%dx%d), %v", scr.Text, scr.Cols, scr.Rows, err)
	}
	if s, _ := h2.Read(ctx, catPane.ID, core.ReadOpts{Lines: 100}); !strings.Contains(s.Text, "scrolled-0\n") {
		t.Fatalf("scrollback lost in the hand-off:\n%s", s.Text)
	}
	// Modes the program set travel too: arrow keys arrive in application mode.
	if err := h2.SendKeys(ctx, catPane.ID, "up", "enter"); err != nil {
		t.Fatal(err)
	}
	waitText(t, h2, catPane.ID, 0, "^[OA")
	// New panes reuse neither adopted ids nor those of the exporting host's dead panes.
	fresh := launch(t, h2, "sh", "-c", "exec cat")
	if n, _ := strconv.Atoi(strings.TrimPrefix(fresh.ID, "p")); n <= 3 {
		t.Fatalf("new pane id %s collides with the adopted range", fresh.ID)
	}
	// Input reaches the program: the tty echoes the line and cat prints it again.
	if err := h2.SendText(ctx, catPane.ID, "after-handoff\n"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "cat to echo through the adopted pane", func() (bool, string) {
		s, _ := h2.Read(ctx, catPane.ID, core.ReadOpts{})
		return strings.Count(s.Text, "after-handoff") >= 2, s.Text
	})
	// The exit of a process that is not our child is detected, its code unknown.
	if err := h2.SendKeys(ctx, catPane.ID, "ctrl-d"); err != nil {
		t.Fatal(err)
	}
	if code, ok := nextExitCode(t, h2, catPane.ID); ok {
		t.Fatalf("adopted pane exit code %d, want unknown", code)
	}
	info := paneInfo(t, h2, catPane.ID)
	if !info.Dead || info.ExitCode != nil {
		t.Fatalf("after exit List says %+v", info)
	}
	if s, _ := h2.Read(ctx, catPane.ID, core.ReadOpts{}); !strings.Contains(s.Text, "after-handoff") {
		t.Fatalf("last screen lost after exit: %q", s.Text)
	}
	// Close kills the adopted process group, background children included.
	if err := h2.Close(ctx, sleeper.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the adopted pane's processes to die", func() (bool, string) {
		return !alive(sleeper.PID) && !alive(child), fmt.Sprintf("leader %d alive %v, child %d alive %v",
			sleeper.PID, alive(sleeper.PID), child, alive(child))
	})
}

// TestHandoffExitBeforeAdopt adopts a pane whose process ended after the export:
// it is listed dead and its exit reported, and Close signals nobody.
func TestHandoffExitBeforeAdopt(t *testing.T) {
	ctx := context.Background()
	h1 := newHost(t, pty.Options{})
	p := launch(t, h1, "sh", "-c", "echo exported; exec cat")
	waitText(t, h1, p.ID, 0, "exported")
	hs, err := h1.Export()
	if err != nil || len(hs) != 1 {
		t.Fatalf("export: %+v, %v", hs, err)
	}
	// End the program through the exported master, as nobody reads it.
	if _, err := hs[0].Master.Write([]byte{4}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the exported process to end", func() (bool, string) {
		return !alive(p.PID), strconv.Itoa(p.PID)
	})
	h2 := newHost(t, pty.Options{Adopt: hs})
	if code, ok := nextExitCode(t, h2, p.ID); ok {
		t.Fatalf("exit code %d, want unknown", code)
	}
	if info := paneInfo(t, h2, p.ID); !info.Dead {
		t.Fatalf("pane not dead: %+v", info)
	}
	if fresh := launch(t, h2, "true"); fresh.ID == p.ID {
		t.Fatalf("new pane reuses adopted id %s", p.ID)
	}
	if err := h2.Close(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
}

// nextExitCode waits for the PaneExited of pane; ok is false when its code is unknown.
func nextExitCode(t *testing.T, h *pty.Host, pane string) (code int, ok bool) {
	t.Helper()
	timeout := time.After(waitTimeout)
	for {
		select {
		case ev, open := <-h.Events():
			if !open {
				t.Fatal("events closed before the exit of " + pane)
			}
			if ev.Pane == pane && ev.Kind == core.PaneExited {
				if ev.ExitCode == nil {
					return 0, false
				}
				return *ev.ExitCode, true
			}
		case <-timeout:
			t.Fatalf("no PaneExited for %s", pane)
		}
	}
}

func paneInfo(t *testing.T, h *pty.Host, id string) core.PaneInfo {
	t.Helper()
	list, err := h.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range list {
		if p.ID == id {
			return p
		}
	}
	t.Fatalf("pane %s not listed: %+v", id, list)
	return core.PaneInfo{}
}

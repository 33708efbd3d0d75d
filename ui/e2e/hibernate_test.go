package e2e

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
	"orcr/testutil/apiclient"
	"orcr/testutil/modelserver"
	"orcr/testutil/wait"
)

// TestDashboardWakesAndResumes runs the real claude CLI against the scripted model
// server under the dashboard with `[gc] idle_action = "hibernate"`: the idle agent is
// drawn hibernated (z), enter wakes it in place (same record, same session, a new
// process), and a steer reaches the model in a request that carries the earlier
// conversation. Then, killed, it is listed in the history view (H), and enter there
// resumes it with a first message as a new record continuing the session.
func TestDashboardWakesAndResumes(t *testing.T) {
	r := newRig(t)
	// idle_after is 5 s, held (wait.Held: up to 10 s under load; the test waits it
	// out, so ×6 cost 30 s in every passing run): GC's sweep (every 30 s) hibernates
	// any agent idle that long, the woken one too. Woken, claude is idle from its
	// session's start until the steer below makes it work; at 1 s a sweep under load
	// fell in that window (the steer typed into a TUI still drawing) and hibernated
	// it again, and the steer's reply never came.
	idleAfter := wait.Held(5 * time.Second)
	_, srv, run := r.claudeSetup(t, fmt.Sprintf("[gc]\nidle_after = %q\nidle_action = \"hibernate\"\n", idleAfter.String()),
		modelserver.Turn{Text: "Noted.", Usage: modelserver.Usage{Input: 10, Output: 2}})
	r.start()
	r.waitText(20*time.Second, "agents 0", "in-process")
	r.mustOrcr(append(append([]string{"agent", "run", "mem/sleeper"}, run...), "--prompt", "remember the word PELICAN-42")...)
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := r.orcr("agent", "ls", "--all")
			t.Logf("agents:\n%s", out)
			out, _ = r.orcr("agent", "read", "mem/sleeper")
			t.Logf("claude's screen:\n%s", out)
		}
	})
	first := r.waitAgent("mem/sleeper", 90*time.Second, "the first turn", func(a wire.Agent) bool {
		return a.State == wire.StateDone && a.LastMessage == "Noted."
	})

	// GC hibernates it once it has been idle for idle_after; orcr gc asks for a sweep
	// now rather than at the next 30 s one.
	r.waitScreen("the agent drawn hibernated", 30*time.Second+idleAfter, func(s string) bool {
		if strings.Contains(treeLine(s, "sleeper"), "z sleeper") {
			return true
		}
		_, _ = r.orcr("gc")
		return false
	})
	// Select it: the tree opens on its folder.
	for i := 0; !strings.Contains(r.screen(), "─ mem/sleeper "); i++ {
		if i == 5 {
			t.Fatalf("could not select mem/sleeper:\n%s", r.screen())
		}
		r.keys("j")
		r.pollScreen(time.Second, func(s string) bool { return strings.Contains(s, "─ mem/sleeper ") })
	}
	r.waitText(10*time.Second, "z hibernated", "asleep: its process stopped, its session kept")

	// Enter wakes it in place: the same record, a new claude on the same session,
	// idle once its session has started (woken without a message, it is not working
	// on the record's first prompt again).
	r.keys("Enter")
	r.waitText(20*time.Second, "woke mem/sleeper")
	woken := r.waitAgent("mem/sleeper", 60*time.Second, "the agent awake and idle", func(a wire.Agent) bool {
		return a.State == wire.StateIdle && a.PID != 0
	})
	if woken.ID != first.ID || woken.SessionID != first.SessionID || woken.PID == first.PID {
		t.Fatalf("woken as id %s session %s pid %d (was %s %s %d)", woken.ID, woken.SessionID, woken.PID, first.ID, first.SessionID, first.PID)
	}
	r.waitScreen("the agent drawn awake", 20*time.Second, func(s string) bool { return live(treeLine(s, "sleeper")) })

	// A steer reaches the model with the earlier conversation: the session resumed.
	srv.Push(modelserver.Turn{Text: "The word was PELICAN-42.", Usage: modelserver.Usage{Input: 10, Output: 4}})
	r.keys("s")
	r.waitText(10*time.Second, "steer", "to mem/sleeper")
	r.typeText("what was the word?")
	r.keys("Enter")
	r.waitText(90*time.Second, "The word was PELICAN-42.")
	if q, ok := scriptedWith(srv, "what was the word?"); !ok || !bytes.Contains(q.Body, []byte("remember the word PELICAN-42")) {
		t.Fatalf("the woken agent's request lacks the earlier conversation (found %v)", ok)
	}

	// Ended, it is in the history view; enter there resumes it with a first message.
	r.mustOrcr("agent", "kill", "mem/sleeper")
	r.waitScreen("the agent drawn killed", 20*time.Second, func(s string) bool { return strings.Contains(treeLine(s, "sleeper"), "✕") })
	srv.Push(modelserver.Turn{Text: "Still PELICAN-42.", Usage: modelserver.Usage{Input: 10, Output: 3}})
	r.keys("H")
	s := r.waitText(20*time.Second, "─ history ", "mem/sleeper", "1/1")
	if row := historyRow(s, "mem/sleeper"); !strings.Contains(row, "↻") || !strings.Contains(row, "killed") {
		t.Fatalf("history row %q:\n%s", row, s)
	}
	r.keys("Enter")
	r.waitText(10*time.Second, "resume mem/sleeper")
	r.typeText("and once more?")
	r.keys("Enter")
	r.waitText(20*time.Second, "resumed mem/sleeper (continues "+first.ID[:13]+")")
	r.waitText(90*time.Second, "Still PELICAN-42.")
	q, ok := scriptedWith(srv, "and once more?")
	if !ok || !bytes.Contains(q.Body, []byte("what was the word?")) {
		t.Fatalf("the resumed request lacks the earlier conversation (found %v)", ok)
	}
	resumed := r.waitAgent("mem/sleeper", 10*time.Second, "the resumed record", func(wire.Agent) bool { return true })
	if resumed.ID == first.ID || resumed.ResumedFrom != first.ID || resumed.SessionID != first.SessionID {
		t.Fatalf("resumed record %s from %q session %s", resumed.ID, resumed.ResumedFrom, resumed.SessionID)
	}
	r.mustOrcr("agent", "kill", "mem/sleeper")
	r.waitScreen("the resumed agent drawn killed", 20*time.Second, func(s string) bool {
		return strings.Contains(treeLine(s, "sleeper"), "✕")
	})
	r.keys("q")
	r.waitScreen("the dashboard to exit", 20*time.Second, func(string) bool { return r.paneDead() })
}

// scriptedWith is the first scripted request whose body holds text.
func scriptedWith(srv *modelserver.Server, text string) (modelserver.Request, bool) {
	for _, q := range srv.Requests() {
		if q.Scripted && bytes.Contains(q.Body, []byte(text)) {
			return q, true
		}
	}
	return modelserver.Request{}, false
}

// historyRow is the history view's line holding text.
func historyRow(screen, text string) string {
	for _, l := range strings.Split(screen, "\n") {
		if strings.Contains(l, text) && strings.Contains(l, " ago ") {
			return l
		}
	}
	return ""
}

// waitAgent polls the record behind target, through the dashboard's socket, until
// cond holds.
func (r *rig) waitAgent(target string, d time.Duration, what string, cond func(wire.Agent) bool) wire.Agent {
	r.t.Helper()
	c, err := apiclient.Dial(context.Background(), filepath.Join(r.home, "orcr.sock"), "")
	if err != nil {
		r.t.Fatal(err)
	}
	defer c.Close()
	var a wire.Agent
	if !wait.Until(d, func() bool {
		var r wire.AgentResult
		r, err = wire.Call(context.Background(), c, wire.AgentGet, wire.TargetParams{Target: target})
		a = r.Agent
		return err == nil && cond(a)
	}) {
		r.t.Fatalf("timed out after %v waiting for %s: %s/%s %q (%v)", d, what, a.State, a.StateSource, a.StateReason, err)
	}
	return a
}

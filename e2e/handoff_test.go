package e2e

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"orcr/core/wire"
	"orcr/testutil/wait"
)

// TestHandoffKeepAgentsRunning quits a dashboard that hosts the server in-process
// with agents on the embedded host, chooses "keep them running", and then drives the
// same programs (same pids) through the background server that adopted them: list,
// read, send, attach, exit detection and kill.
func TestHandoffKeepAgentsRunning(t *testing.T) {
	e := newEnv(t)
	term := newTerm(t, e)
	t.Cleanup(func() { stopBackground(t, e) })

	term.keys("orcr; echo dashboard-exited-$?", "Enter")
	wait.For(t, 20*time.Second, "the in-process dashboard", func() bool {
		return strings.Contains(term.screen(), "in-process")
	})
	e.must("agent", "run", "demo/kept", "--", "sh", "-c", `echo "kept $ORCR_PATH"; exec cat`)
	e.must("agent", "run", "demo/ends", "--", "sh", "-c", `echo "ends soon"; exec cat`)
	wait.For(t, 10*time.Second, "the agents' output", func() bool {
		return strings.Contains(e.orcr("agent", "read", "demo/kept").Out, "kept demo/kept") &&
			strings.Contains(e.orcr("agent", "read", "demo/ends").Out, "ends soon")
	})
	kept, ends := agentJSON(t, e, "demo/kept"), agentJSON(t, e, "demo/ends")
	if kept.PID == 0 || ends.PID == 0 {
		t.Fatalf("no pids: %+v %+v", kept, ends)
	}
	wait.For(t, 10*time.Second, "the dashboard to show both agents", func() bool {
		return strings.Contains(term.screen(), "agents 2")
	})

	term.keys("q")
	wait.For(t, 10*time.Second, "the quit dialog", func() bool {
		s := term.screen()
		return strings.Contains(s, "2 agents on the embedded host") && strings.Contains(s, "keep running in the background")
	})
	term.keys("k")
	wait.For(t, 20*time.Second, "the dashboard to exit", func() bool {
		return strings.Contains(term.screen(), "dashboard-exited-0")
	})
	if s := term.screen(); !strings.Contains(s, "2 agents keep running under a background orcr serve") {
		t.Fatalf("no word on where the agents went:\n%s", s)
	}
	srv := lockPID(t, e)

	// The background server owns the very same programs.
	for _, want := range []wire.Agent{kept, ends} {
		a := agentJSON(t, e, want.Path)
		if !a.State.Live() || a.PID != want.PID || a.PaneID != want.PaneID {
			t.Fatalf("%s after hand-off: state %s pid %d pane %s, want live pid %d pane %s",
				want.Path, a.State, a.PID, a.PaneID, want.PID, want.PaneID)
		}
		if !pidAlive(want.PID) {
			t.Fatalf("%s's process %d died in the hand-off", want.Path, want.PID)
		}
		if ppid := parentOf(want.PID); ppid == srv {
			t.Fatalf("%s's process is a child of the background server; it should have been adopted", want.Path)
		}
	}
	if out := e.must("agent", "ls"); !strings.Contains(out, "demo/kept") || !strings.Contains(out, "demo/ends") {
		t.Fatalf("agent ls after hand-off:\n%s", out)
	}
	if out := e.must("agent", "read", "demo/kept"); !strings.Contains(out, "kept demo/kept") {
		t.Fatalf("the old screen is gone after hand-off:\n%s", out)
	}
	e.must("agent", "send", "demo/kept", "sent-after-handoff")
	wait.For(t, 10*time.Second, "the typed line echoed twice (tty and cat)", func() bool {
		return strings.Count(e.orcr("agent", "read", "demo/kept").Out, "sent-after-handoff") >= 2
	})

	// Attach from the terminal the dashboard left.
	term.keys("orcr agent attach demo/kept", "Enter")
	wait.For(t, 10*time.Second, "attached to the adopted pane", func() bool {
		return strings.Contains(term.screen(), "sent-after-handoff")
	})
	term.keys("typed-in-attach", "Enter")
	wait.For(t, 10*time.Second, "attach input reaching the program", func() bool {
		return strings.Count(e.orcr("agent", "read", "demo/kept").Out, "typed-in-attach") >= 2
	})
	term.keys("C-]")
	wait.For(t, 10*time.Second, "detached", func() bool {
		return strings.Contains(term.screen(), "detached from demo/kept")
	})

	// Exit detection for a process the server did not start (its status is unknown).
	e.must("agent", "send", "demo/ends", "--keys", "ctrl-d")
	wait.For(t, 10*time.Second, "demo/ends to be seen exited", func() bool {
		return agentJSON(t, e, "demo/ends").State == wire.StateExited
	})

	// Kill stops the adopted program.
	e.must("agent", "kill", "demo/kept", "--yes")
	wait.For(t, 10*time.Second, "demo/kept killed", func() bool {
		return agentJSON(t, e, "demo/kept").State == wire.StateKilled && !pidAlive(kept.PID)
	})
}

// lockPID is the pid of the server holding the home's lock.
func lockPID(t *testing.T, e *env) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.home, "orcr.lock"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("orcr.lock: %q", b)
	}
	return pid
}

// stopBackground ends the server the dashboard started, if any, and waits for it.
func stopBackground(t *testing.T, e *env) {
	b, err := os.ReadFile(filepath.Join(e.home, "orcr.lock"))
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 || !pidAlive(pid) {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	if !wait.Until(10*time.Second, func() bool { return !pidAlive(pid) }) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("background server %d ignored SIGTERM", pid)
	}
}

// pidAlive reports whether pid runs (a zombie counts as ended).
func pidAlive(pid int) bool {
	f := procStat(pid)
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// parentOf is pid's parent pid, or -1.
func parentOf(pid int) int {
	f := procStat(pid)
	if len(f) < 2 {
		return -1
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

// procStat returns the fields of /proc/PID/stat after the command name.
func procStat(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(s[i+1:])
}

// TestHandoffKeepsHTTP: `orcr --http ADDR` serves the web gateway from the
// dashboard's in-process server, and the background server a "keep them running"
// hands off to serves it on the same address (the flag goes along; the config has
// no [http]).
func TestHandoffKeepsHTTP(t *testing.T) {
	e := newEnv(t, noCLIs(t), plainShell)
	term := newTerm(t, e)
	t.Cleanup(func() { stopBackground(t, e) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	page := func() int {
		c := http.Client{Timeout: 2 * time.Second}
		resp, err := c.Get("http://" + addr + "/")
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	term.keys("orcr --http "+addr+"; echo dashboard-exited-$?", "Enter")
	wait.For(t, 20*time.Second, "the in-process dashboard", func() bool {
		return strings.Contains(term.screen(), "in-process")
	})
	wait.For(t, 10*time.Second, "the dashboard's server serving the page on "+addr, func() bool { return page() == 200 })
	e.must("agent", "run", "demo/kept", "--", "sh", "-c", `echo kept; exec cat`)
	wait.For(t, 10*time.Second, "the dashboard to show the agent", func() bool {
		return strings.Contains(term.screen(), "agents 1")
	})
	term.keys("q")
	wait.For(t, 10*time.Second, "the quit dialog", func() bool {
		return strings.Contains(term.screen(), "keep running in the background")
	})
	term.keys("k")
	wait.For(t, 20*time.Second, "the dashboard to exit", func() bool {
		return strings.Contains(term.screen(), "dashboard-exited-0")
	})
	// The hand-off waits until the background server's socket answers; its gateway
	// is bound just after the socket (daemon/server.go), so a page asked for at once
	// could find nothing there yet (it did, once, at a load of 34).
	if !wait.Until(10*time.Second, func() bool { return page() == 200 }) {
		t.Fatalf("the background server does not serve the web gateway on %s (log: %s)", addr, filepath.Join(e.home, "orcr.log"))
	}
	if out := e.must("doctor"); !strings.Contains(out, addr) {
		t.Fatalf("doctor does not show the gateway on %s:\n%s", addr, out)
	}
	e.must("agent", "kill", "demo/kept", "--yes")
}

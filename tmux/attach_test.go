package tmux

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"orcr/core"
	"orcr/testutil/wait"
)

// terminals is a tmux server of the test's own whose windows play the user's terminals,
// each running an attach command.
type terminals struct {
	t    *testing.T
	sock string
	n    int
}

func newTerminals(t *testing.T) *terminals {
	t.Helper()
	dir, err := os.MkdirTemp("", "orcr-term-")
	if err != nil {
		t.Fatal(err)
	}
	tt := &terminals{t: t, sock: filepath.Join(dir, "t.sock")}
	t.Cleanup(func() {
		_ = exec.Command("tmux", "-S", tt.sock, "kill-server").Run()
		_ = os.RemoveAll(dir)
	})
	return tt
}

// open starts argv in a new terminal (a window of 100×30) and returns its index. The
// window stays after argv ends, saying how it ended.
func (tt *terminals) open(argv []string) int {
	tt.t.Helper()
	var q []string
	for _, a := range argv {
		q = append(q, "'"+strings.ReplaceAll(a, "'", `'\''`)+"'")
	}
	line := strings.Join(q, " ") + "; echo attach ended: $?; exec sleep 600"
	args := []string{"-S", tt.sock, "-f", "/dev/null"}
	if tt.n == 0 {
		args = append(args, "new-session", "-d", "-x", "100", "-y", "30", "-s", "t", line, ";", "set-option", "-g", "status", "off")
	} else {
		args = append(args, "new-window", "-t", "t:", line)
	}
	cmd := exec.Command("tmux", args...)
	cmd.Env = baseEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		tt.t.Fatalf("open terminal: %v %s", err, out)
	}
	tt.n++
	return tt.n - 1
}

func (tt *terminals) screen(i int) string {
	out, _ := exec.Command("tmux", "-S", tt.sock, "capture-pane", "-p", "-t", "t:"+strconv.Itoa(i)).Output()
	return string(out)
}

func (tt *terminals) keys(i int, keys ...string) {
	tt.t.Helper()
	args := append([]string{"-S", tt.sock, "send-keys", "-t", "t:" + strconv.Itoa(i)}, keys...)
	if out, err := exec.Command("tmux", args...).CombinedOutput(); err != nil {
		tt.t.Fatalf("send-keys: %v %s", err, out)
	}
}

// tmuxOut runs one tmux command on orcr's server and returns its output lines.
func tmuxOut(t *testing.T, sock string, args ...string) []string {
	t.Helper()
	cmd := exec.Command("tmux", append([]string{"-S", sock}, args...)...)
	cmd.Env = clientEnv()
	out, err := cmd.Output()
	if err != nil {
		return nil
	}
	return strings.Fields(strings.TrimSpace(string(out)))
}

// goneEvents collects the PaneGone events of h until the test ends.
func goneEvents(t *testing.T, h *Host) func() []string {
	var mu sync.Mutex
	var gone []string
	done := make(chan struct{})
	stop := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case ev, ok := <-h.Events():
				if !ok {
					return
				}
				if ev.Kind == core.PaneGone {
					mu.Lock()
					gone = append(gone, ev.Pane)
					mu.Unlock()
				}
			case <-stop:
				return
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), gone...)
	}
}

// closeSentinel kills a third pane from outside and waits for its PaneGone: the
// window closes reported before it have been judged by then.
func closeSentinel(t *testing.T, h *Host, sock string, gone func() []string) {
	t.Helper()
	s, err := h.Launch(ctxT(t), core.LaunchSpec{Name: "test/sentinel", Argv: []string{"cat"}, Env: baseEnv()})
	if err != nil {
		t.Fatal(err)
	}
	kill := exec.Command("tmux", "-S", sock, "kill-pane", "-t", s.ID)
	kill.Env = clientEnv()
	if out, err := kill.CombinedOutput(); err != nil {
		t.Fatalf("kill-pane: %v %s", err, out)
	}
	waitFor(t, "the sentinel's PaneGone", func() bool {
		for _, p := range gone() {
			if p == s.ID {
				return true
			}
		}
		return false
	})
}

// TestTwoAttachesEachShowTheirOwn attaches two terminals at once to two agents: each
// shows its own agent with its own status line and no window list, typing reaches the
// right one; detaching one leaves the other's view and loses no pane; killing the
// other's client leaves no session of its behind and loses no pane either.
func TestTwoAttachesEachShowTheirOwn(t *testing.T) {
	sock := testSocket(t)
	h := newTestHost(t, sock)
	defer h.Shutdown(context.Background())
	gone := goneEvents(t, h)
	a, err := h.Launch(ctxT(t), core.LaunchSpec{Name: "demo/alpha", Argv: []string{"sh", "-c", "echo ready-alpha; exec cat"}, Env: baseEnv()})
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.Launch(ctxT(t), core.LaunchSpec{Name: "demo/beta", Argv: []string{"sh", "-c", "echo ready-beta; exec cat"}, Env: baseEnv()})
	if err != nil {
		t.Fatal(err)
	}
	waitText(t, h, a.ID, "ready-alpha")
	waitText(t, h, b.ID, "ready-beta")

	term := newTerminals(t)
	ta := term.open(h.AttachCommand(a.ID))
	tb := term.open(h.AttachCommand(b.ID))
	clients := func() int {
		return len(tmuxOut(t, sock, "list-clients", "-F", "#{client_control_mode}#{client_pid}")) - 1
	}
	waitFor(t, "two attached clients", func() bool { return clients() == 2 })
	for _, c := range []struct {
		term       int
		own, other string
	}{{ta, "alpha", "beta"}, {tb, "beta", "alpha"}} {
		waitFor(t, "terminal "+c.own+" shows its agent", func() bool {
			s := term.screen(c.term)
			return strings.Contains(s, "ready-"+c.own) && strings.Contains(s, "orcr · demo/"+c.own+" · detach: prefix d (C-b d)")
		})
		if s := term.screen(c.term); strings.Contains(s, c.other) || strings.Contains(s, "orcr*") || strings.Contains(s, "sentinel") {
			t.Fatalf("terminal of %s shows another agent or a window list:\n%s", c.own, s)
		}
	}
	term.keys(ta, "to-alpha", "Enter")
	term.keys(tb, "to-beta", "Enter")
	waitText(t, h, a.ID, "to-alpha")
	waitText(t, h, b.ID, "to-beta")
	for pane, not := range map[string]string{a.ID: "to-beta", b.ID: "to-alpha"} {
		if s, _ := h.Read(ctxT(t), pane, core.ReadOpts{}); strings.Contains(s.Text, not) {
			t.Fatalf("%s got the other terminal's typing:\n%s", pane, s.Text)
		}
	}

	// Detach the first: its session goes, the second still shows beta, nothing is gone.
	term.keys(ta, "C-b", "d")
	if !wait.Until(15*time.Second, func() bool { return clients() == 1 }) {
		t.Fatalf("%d clients after a detach; the detached terminal:\n%s\nclients: %q\nsessions: %q", clients(), term.screen(ta),
			tmuxOut(t, sock, "list-clients", "-F", "#{client_session}:#{client_pid}"), tmuxOut(t, sock, "ls", "-F", "#{session_name}:#{session_attached}"))
	}
	sessions := func() []string { return tmuxOut(t, sock, "list-sessions", "-F", "#{session_name}") }
	waitFor(t, "the detached attach's session ended", func() bool { return len(sessions()) == 2 })
	term.keys(tb, "still-beta", "Enter")
	waitText(t, h, b.ID, "still-beta")
	if s := term.screen(tb); !strings.Contains(s, "still-beta") || strings.Contains(s, "alpha") {
		t.Fatalf("the second terminal after the first detached:\n%s", s)
	}
	closeSentinel(t, h, sock, gone)
	if g := gone(); len(g) != 1 {
		t.Fatalf("panes reported gone after a detach: %q", g)
	}

	// Kill the second's client: no session of its left, nothing gone.
	var pid int
	for _, f := range tmuxOut(t, sock, "list-clients", "-F", "#{client_control_mode}:#{client_pid}") {
		if p, ok := strings.CutPrefix(f, "0:"); ok {
			pid, _ = strconv.Atoi(p)
		}
	}
	if pid == 0 {
		t.Fatal("no attached client to kill")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "only orcr's session left", func() bool {
		s := sessions()
		return len(s) == 1 && s[0] == session
	})
	closeSentinel(t, h, sock, gone)
	if g := gone(); len(g) != 2 {
		t.Fatalf("panes reported gone after an attach's client was killed: %q", g)
	}
	list, err := h.List(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	alive := 0
	for _, p := range list {
		if (p.ID == a.ID || p.ID == b.ID) && !p.Dead {
			alive++
		}
	}
	if alive != 2 {
		t.Fatalf("after both attaches ended, %d of the 2 panes are alive: %+v", alive, list)
	}
}

// TestAttachWithoutTerminalLeavesNoSession runs an attach with no terminal: tmux
// refuses it, and the session it made is ended by the host, whose panes stay.
func TestAttachWithoutTerminalLeavesNoSession(t *testing.T) {
	sock := testSocket(t)
	h := newTestHost(t, sock)
	defer h.Shutdown(context.Background())
	gone := goneEvents(t, h)
	a := launch(t, h, "cat")
	argv := h.AttachCommand(a.ID)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = clientEnv()
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("an attach without a terminal succeeded: %s", out)
	}
	waitFor(t, "only orcr's session left", func() bool {
		s := tmuxOut(t, sock, "list-sessions", "-F", "#{session_name}")
		return len(s) == 1 && s[0] == session
	})
	closeSentinel(t, h, sock, gone)
	if g := gone(); len(g) != 1 {
		t.Fatalf("panes reported gone: %q", g)
	}
}

package tmux

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"orcr/core"
	"orcr/core/hosttest"
	"orcr/testutil/wait"
)

// testSocket returns a short socket path of its own (unix socket paths are limited to
// ~100 bytes, t.TempDir paths can be longer) and kills that tmux server at cleanup.
func testSocket(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "orcr-tmux-")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "tmux.sock")
	t.Cleanup(func() {
		cmd := exec.Command("tmux", "-S", sock, "kill-server")
		cmd.Env = clientEnv()
		_ = cmd.Run()
		_ = os.RemoveAll(dir)
	})
	return sock
}

// newTestHost starts a host on a fresh server; the caller shuts it down (or the
// conformance suite does).
func newTestHost(t testing.TB, sock string) *Host {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	h, err := New(c, Options{Socket: sock})
	if err != nil {
		t.Fatalf("new tmux host: %v", err)
	}
	return h
}

func ctxT(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestConformance(t *testing.T) {
	hosttest.Run(t, hosttest.Factory{
		New: func(t *testing.T) core.Host {
			return newTestHost(t, testSocket(t))
		},
		Reopen: func(t *testing.T, old core.Host) core.Host {
			return newTestHost(t, old.(*Host).Socket())
		},
	})
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	wait.For(t, 15*time.Second, what, cond)
}

func baseEnv(extra ...string) []string {
	return append([]string{"PATH=" + os.Getenv("PATH"), "TERM=xterm-256color", "LANG=C.UTF-8"}, extra...)
}

func launch(t testing.TB, h *Host, argv ...string) core.PaneInfo {
	t.Helper()
	info, err := h.Launch(ctxT(t), core.LaunchSpec{Name: "test/" + strings.ToLower(filepath.Base(t.Name())), Argv: argv, Env: baseEnv(), Cwd: os.TempDir()})
	if err != nil {
		t.Fatalf("launch %q: %v", argv, err)
	}
	return info
}

func waitText(t testing.TB, h *Host, pane, want string) core.Screen {
	t.Helper()
	var s core.Screen
	waitFor(t, want+" on "+pane, func() bool {
		var err error
		s, err = h.Read(ctxT(t), pane, core.ReadOpts{})
		return err == nil && strings.Contains(s.Text, want)
	})
	return s
}

// TestEnvExact checks that a pane's environment is its LaunchSpec.Env plus only
// tmux's own TMUX and TMUX_PANE: nothing of the test process or the server leaks.
func TestEnvExact(t *testing.T) {
	t.Setenv("ORCR_LEAK_CHECK", "leaked")
	h := newTestHost(t, testSocket(t))
	defer h.Shutdown(context.Background())
	// One name per line and TERM on its own: a long PATH would wrap at the pane's width.
	info := launch(t, h, "sh", "-c", `env | cut -d= -f1 | sort; echo "term:$TERM"; echo END; exec cat`)
	s := waitText(t, h, info.ID, "END")
	var got []string
	names, _, _ := strings.Cut(s.Text, "term:")
	got = strings.Fields(names)
	allowed := map[string]bool{"PATH": true, "TERM": true, "LANG": true, "TMUX": true, "TMUX_PANE": true,
		"PWD": true, "SHLVL": true, "_": true, "OLDPWD": true}
	for _, n := range got {
		if !allowed[n] {
			t.Errorf("unexpected variable %s in the pane environment:\n%s", n, s.Text)
		}
	}
	if !strings.Contains(s.Text, "term:xterm-256color") {
		t.Errorf("TERM of the spec not kept:\n%s", s.Text)
	}
}

// TestDefaultServerUntouched runs a host with a fake HOME and TMUX_TMPDIR and checks
// that no default tmux socket appears there and that TMUX of the caller is ignored.
func TestDefaultServerUntouched(t *testing.T) {
	home := t.TempDir()
	tmpdir, err := os.MkdirTemp("", "orcr-tmuxtmp-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmpdir)
	t.Setenv("HOME", home)
	t.Setenv("TMUX_TMPDIR", tmpdir)
	t.Setenv("TMUX", filepath.Join(tmpdir, "bogus,1,0"))
	if err := os.WriteFile(filepath.Join(home, ".tmux.conf"), []byte("set -g history-limit 7\nset -g remain-on-exit off\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sock := testSocket(t)
	h := newTestHost(t, sock)
	defer h.Shutdown(context.Background())
	// The pause lets the kernel hand "hi" to tmux before the pty hangs up; output
	// written right before a fast exit can be lost in the pty itself.
	info := launch(t, h, "sh", "-c", "echo hi; sleep 0.2; exit 5")
	waitFor(t, "pane exit", func() bool {
		ps, err := h.List(ctxT(t))
		if err != nil {
			return false
		}
		for _, p := range ps {
			if p.ID == info.ID && p.Dead {
				return true
			}
		}
		return false
	})
	// remain-on-exit stayed on: the user's ~/.tmux.conf was not read.
	if s, err := h.Read(ctxT(t), info.ID, core.ReadOpts{}); err != nil || !strings.Contains(s.Text, "hi") {
		t.Errorf("dead pane not readable: %v %q", err, s.Text)
	}
	entries, _ := os.ReadDir(tmpdir)
	for _, e := range entries {
		t.Errorf("something appeared in TMUX_TMPDIR: %s", e.Name())
	}
	if _, err := os.Stat(sock); err != nil {
		t.Errorf("own socket missing: %v", err)
	}
}

// TestServerKilledRecovers kills the tmux server mid-use: calls fail with a clear error
// (or reconnect), known panes are reported gone, and the host works again after.
func TestServerKilledRecovers(t *testing.T) {
	sock := testSocket(t)
	h := newTestHost(t, sock)
	defer h.Shutdown(context.Background())
	info := launch(t, h, "cat")
	waitFor(t, "pane listed", func() bool {
		ps, err := h.List(ctxT(t))
		return err == nil && len(ps) == 1
	})
	kill := exec.Command("tmux", "-S", sock, "kill-server")
	kill.Env = clientEnv()
	if out, err := kill.CombinedOutput(); err != nil {
		t.Fatalf("kill-server: %v %s", err, out)
	}
	// The pane is reported gone.
	waitFor(t, "PaneGone", func() bool {
		for {
			select {
			case ev := <-h.Events():
				if ev.Pane == info.ID && ev.Kind == core.PaneGone {
					return true
				}
			default:
				return false
			}
		}
	})
	// The old pane id is an error that names the problem, not a hang.
	_, err := h.Read(ctxT(t), info.ID, core.ReadOpts{})
	if err == nil {
		t.Fatal("read of a pane of a killed server succeeded")
	}
	// The host restarts the server and works again.
	info2 := launch(t, h, "sh", "-c", "echo back-again; exec cat")
	waitText(t, h, info2.ID, "back-again")
	ps, err := h.List(ctxT(t))
	if err != nil || len(ps) != 1 || ps[0].ID != info2.ID {
		t.Errorf("after restart List = %+v, %v", ps, err)
	}
}

// TestControlClientDiesMidCall kills only the control client: the pending or next call
// gets ErrServerGone or succeeds after a reconnect, and panes survive.
func TestControlClientDies(t *testing.T) {
	h := newTestHost(t, testSocket(t))
	defer h.Shutdown(context.Background())
	info := launch(t, h, "sh", "-c", "echo alive; exec cat")
	waitText(t, h, info.ID, "alive")
	h.mu.Lock()
	c := h.c
	h.mu.Unlock()
	_ = c.cmd.Process.Kill()
	<-c.done
	if _, err := c.run(ctxT(t), "list-panes"); err == nil {
		t.Fatal("command on a dead control client succeeded")
	}
	// The next call reconnects and the pane is still there.
	waitText(t, h, info.ID, "alive")
	if err := h.SendText(ctxT(t), info.ID, "again\n"); err != nil {
		t.Fatal(err)
	}
	waitText(t, h, info.ID, "again")
}

// TestClosedFromOutside checks PaneGone for a window killed by someone else.
func TestClosedFromOutside(t *testing.T) {
	sock := testSocket(t)
	h := newTestHost(t, sock)
	defer h.Shutdown(context.Background())
	info := launch(t, h, "cat")
	kill := exec.Command("tmux", "-S", sock, "kill-pane", "-t", info.ID)
	kill.Env = clientEnv()
	if out, err := kill.CombinedOutput(); err != nil {
		t.Fatalf("kill-pane: %v %s", err, out)
	}
	deadline := time.After(wait.Scale(15 * time.Second))
	for {
		select {
		case ev := <-h.Events():
			if ev.Pane == info.ID && ev.Kind == core.PaneGone {
				return
			}
		case <-deadline:
			t.Fatal("no PaneGone for a window killed from outside")
		}
	}
}

// TestOutputEventsCoalesced floods a pane and checks PaneOutput events are rate limited.
func TestOutputEventsCoalesced(t *testing.T) {
	h := newTestHost(t, testSocket(t))
	defer h.Shutdown(context.Background())
	start := time.Now()
	info := launch(t, h, "sh", "-c", `yes flood | head -n 200000; echo flood-done; exec cat`)
	n := 0
	waitFor(t, "flood-done and an output event", func() bool {
		for {
			select {
			case ev := <-h.Events():
				if ev.Pane == info.ID && ev.Kind == core.PaneOutput {
					n++
				}
			default:
				s, err := h.Read(ctxT(t), info.ID, core.ReadOpts{})
				return n > 0 && err == nil && strings.Contains(s.Text, "flood-done")
			}
		}
	})
	elapsed := time.Since(start)
	if limit := int(elapsed/coalesceWindow) + 2; n > limit {
		t.Errorf("%d PaneOutput events in %v, want at most %d", n, elapsed, limit)
	}
	t.Logf("%d output events in %v", n, elapsed)
}

func TestQuoteRoundTrip(t *testing.T) {
	h := newTestHost(t, testSocket(t))
	defer h.Shutdown(context.Background())
	for _, s := range []string{`a;b`, `-x`, `$HOME ~ #{pane_id} {x} "q" 'q' \n \\`, "tab\there", "nl\nx", "日本 🎉", `;`, `\`} {
		if _, err := h.call(ctxT(t), "set-buffer -b orcr-test -- "+quote(s)); err != nil {
			t.Errorf("%q: %v", s, err)
			continue
		}
		file := filepath.Join(t.TempDir(), "buf")
		if _, err := h.call(ctxT(t), "save-buffer -b orcr-test "+quote(file)); err != nil {
			t.Errorf("%q: %v", s, err)
			continue
		}
		out, err := os.ReadFile(file)
		if err != nil {
			t.Errorf("%q: %v", s, err)
			continue
		}
		if got := string(out); got != s {
			t.Errorf("round trip of %q gave %q", s, got)
		}
	}
}

func TestAttachCommand(t *testing.T) {
	h := newTestHost(t, testSocket(t))
	defer h.Shutdown(context.Background())
	pane, err := h.Launch(ctxT(t), core.LaunchSpec{Name: "demo/attach", Argv: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	got := h.AttachCommand(pane.ID)
	line := strings.Join(got, " ")
	if len(got) < 6 || got[1] != "-S" || got[2] != h.Socket() ||
		!strings.Contains(line, " new-session -d -t =orcr -s attach-") ||
		!strings.Contains(line, " attach-session -t attach-") {
		t.Errorf("attach command %q", got)
	}
	// Two attaches of one pane are two sessions.
	if again := strings.Join(h.AttachCommand(pane.ID), " "); again == line {
		t.Errorf("two attaches share a session: %q", again)
	}
	if err := h.Stream(ctxT(t), "%3", nil, nil); err != core.ErrNoStream {
		t.Errorf("Stream = %v, want ErrNoStream", err)
	}
}

func TestVersion(t *testing.T) {
	v, err := Version(ctxT(t), "")
	if err != nil || !strings.HasPrefix(v, "tmux ") {
		t.Errorf("Version = %q, %v", v, err)
	}
	if _, err := New(ctxT(t), Options{Socket: testSocket(t), Bin: "/nonexistent/tmux"}); err == nil {
		t.Error("New with a missing binary succeeded")
	}
}

// TestAbandonedCallKeepsOrder abandons calls before their replies arrive and checks
// that the next call still gets its own reply, not an abandoned one's.
func TestAbandonedCallKeepsOrder(t *testing.T) {
	h := newTestHost(t, testSocket(t))
	defer h.Shutdown(context.Background())
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range 5 {
		if _, err := h.call(gone, fmt.Sprintf(`display-message -p "abandoned-%d"`, i)); err == nil {
			t.Fatal("call with a cancelled context succeeded")
		}
	}
	out, err := h.call(ctxT(t), `display-message -p "own-reply"`)
	if err != nil || len(out) != 1 || out[0] != "own-reply" {
		t.Errorf("next call got %q, %v; want own-reply", out, err)
	}
}

// TestDeadSubscriptionParsing feeds subscription lines for a launched pane: no exit
// until the status is known, then exactly one PaneExited with the code (128+signal for
// a signal).
func TestDeadSubscriptionParsing(t *testing.T) {
	h := &Host{events: newEventQueue(core.NoMemoryReport{}), mem: core.NoMemoryReport{}, panes: map[string]*paneState{}, windows: map[string]string{},
		unreaped: map[string]bool{}, reap: make(chan struct{}, 1)}
	defer h.events.close()
	h.panes["%7"] = &paneState{mine: true}
	h.panes["%8"] = &paneState{mine: true}
	h.notify([]byte("%subscription-changed orcr-dead $0 @7 3 %7 : 1  "))
	if h.panes["%7"].dead || !h.unreaped["%7"] {
		t.Fatalf("dead without status: %+v", *h.panes["%7"])
	}
	h.notify([]byte("%subscription-changed orcr-dead $0 @7 3 %7 : 1 3 "))
	h.notify([]byte("%subscription-changed orcr-dead $0 @7 3 %7 : 1 3 "))
	h.notify([]byte("%subscription-changed orcr-dead $0 @8 4 %8 : 1  9"))
	want := map[string]int{"%7": 3, "%8": 137}
	for range 2 {
		select {
		case ev := <-h.events.ch:
			if ev.Kind != core.PaneExited || ev.ExitCode == nil || *ev.ExitCode != want[ev.Pane] {
				t.Errorf("event %+v", ev)
			}
			delete(want, ev.Pane)
		case <-time.After(5 * time.Second):
			t.Fatal("missing PaneExited")
		}
	}
	select {
	case ev := <-h.events.ch:
		t.Errorf("extra event %+v", ev)
	case <-time.After(100 * time.Millisecond):
	}
}

// TestServerKill9Recovers kills the server with SIGKILL, leaving a stale socket file:
// the next call starts a fresh server on the same socket.
func TestServerKill9Recovers(t *testing.T) {
	sock := testSocket(t)
	h := newTestHost(t, sock)
	defer h.Shutdown(context.Background())
	launch(t, h, "cat")
	pid := serverPID(t, sock)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sock); err != nil {
		t.Fatalf("socket should be left behind: %v", err)
	}
	waitFor(t, "a working host again", func() bool {
		info, err := h.Launch(ctxT(t), core.LaunchSpec{Name: "again", Argv: []string{"sh", "-c", "echo again; exec cat"}, Env: baseEnv()})
		if err != nil {
			if !errors.Is(err, ErrServerGone) {
				t.Fatalf("launch after kill -9: %v, want ErrServerGone or success", err)
			}
			return false
		}
		waitText(t, h, info.ID, "again")
		return true
	})
	if newPID := serverPID(t, sock); newPID == pid {
		t.Errorf("server pid unchanged: %d", pid)
	}
}

// serverWritten is how many bytes the tmux server has written (wchar of its
// /proc/PID/io). A control client hands its stdout to the server, so everything orcr's
// control client receives is written by the server itself; nothing else it writes is
// large.
func serverWritten(t *testing.T, sock string) int64 {
	t.Helper()
	pid := serverPID(t, sock)
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if n, ok := strings.CutPrefix(l, "wchar: "); ok {
			v, err := strconv.ParseInt(n, 10, 64)
			if err != nil {
				t.Fatalf("wchar %q: %v", l, err)
			}
			return v
		}
	}
	t.Fatalf("no wchar in /proc/%d/io", pid)
	return 0
}

// TestFloodNotStreamedToControlClient floods a pane with 20 MB and checks that the
// pane's bytes do not cross the control client: the host only needs to know that a
// pane printed, and every byte sent as %output cost CPU twice and slowed the pane.
func TestFloodNotStreamedToControlClient(t *testing.T) {
	sock := testSocket(t)
	h := newTestHost(t, sock)
	defer h.Shutdown(context.Background())
	go func() {
		for range h.Events() {
		}
	}()
	before := serverWritten(t, sock)
	const size = 20 << 20
	info := launch(t, h, "sh", "-c", fmt.Sprintf(`yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c %d; echo flood-''done; exec cat`, size))
	waitText(t, h, info.ID, "flood-done")
	written := serverWritten(t, sock) - before
	t.Logf("the tmux server wrote %d bytes for a %d-byte flood", written, size)
	if written > size/10 {
		t.Errorf("the control client received %d bytes for a %d-byte flood, want at most %d: pane output is streamed to it", written, size, size/10)
	}
}

// TestOutputEventsWhilePrinting checks that a pane printing 40 KB every 100 ms (enough
// to be paused for the control client each time) keeps producing PaneOutput events for
// as long as it prints, not only at its first output.
func TestOutputEventsWhilePrinting(t *testing.T) {
	h := newTestHost(t, testSocket(t))
	defer h.Shutdown(context.Background())
	info := launch(t, h, "sh", "-c", `i=0; while [ $i -lt 30 ]; do yes line $i | head -c 40000; i=$((i+1)); sleep 0.1; done; echo printing-''done; exec cat`)
	var first, last time.Time
	n := 0
	waitFor(t, "printing-done", func() bool {
		for {
			select {
			case ev := <-h.Events():
				if ev.Pane == info.ID && ev.Kind == core.PaneOutput {
					if first.IsZero() {
						first = ev.At
					}
					last = ev.At
					n++
				}
			default:
				s, err := h.Read(ctxT(t), info.ID, core.ReadOpts{})
				return err == nil && strings.Contains(s.Text, "printing-done")
			}
		}
	})
	// The loop prints for about 3 s; the events must span most of it.
	if span := last.Sub(first); n < 5 || span < 2*time.Second {
		t.Errorf("%d PaneOutput events spanning %v while the pane printed for ~3 s, want ≥ 5 spanning ≥ 2 s", n, span)
	}
	t.Logf("%d output events spanning %v", n, last.Sub(first))
}

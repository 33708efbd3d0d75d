package herdr

import (
	"bufio"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"orcr/core"
	"orcr/core/wire"
	"orcr/herdr/herdrtest"
	"orcr/testutil/wait"
)

// recorder drains a host's events for assertions.
type recorder struct {
	mu     sync.Mutex
	events []core.HostEvent
	done   chan struct{}
}

func record(t *testing.T, h *Host) *recorder {
	r := &recorder{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for ev := range h.Events() {
			r.mu.Lock()
			r.events = append(r.events, ev)
			r.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = h.Shutdown(testCtx(t))
		<-r.done
	})
	return r
}

func (r *recorder) of(pane string) []core.HostEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []core.HostEvent
	for _, ev := range r.events {
		if ev.Pane == pane {
			out = append(out, ev)
		}
	}
	return out
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	wait.For(t, 15*time.Second, what, cond)
}

func launch(t *testing.T, h *Host, argv ...string) core.PaneInfo {
	t.Helper()
	info, err := h.Launch(testCtx(t), core.LaunchSpec{Name: "t/" + strings.ToLower(t.Name()), Argv: argv,
		Cwd: shortDir(t), Env: []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8"}})
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func waitScreen(t *testing.T, h *Host, pane, want string) string {
	t.Helper()
	var last string
	waitUntil(t, want+" on "+pane, func() bool {
		s, err := h.Read(testCtx(t), pane, core.ReadOpts{})
		last = s.Text
		return err == nil && strings.Contains(s.Text, want)
	})
	return last
}

func TestUnknownProtocolRefusedByName(t *testing.T) {
	srv, env := fakeServer(t, nil)
	srv.SetProtocol(21)
	_, err := New(testCtx(t), Options{Env: env})
	if !errors.Is(err, ErrProtocol) {
		t.Fatalf("New against protocol 21 = %v; want ErrProtocol", err)
	}
	for _, want := range []string{"herdr 0.8.0", "protocol 21", "[20]"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

func TestProbe(t *testing.T) {
	srv, env := fakeServer(t, nil)
	v, p, err := Probe(testCtx(t), Options{Env: env})
	if err != nil || v != "0.8.0" || p != 20 {
		t.Fatalf("probe = %q %d %v", v, p, err)
	}
	srv.SetProtocol(99)
	if _, p, err := Probe(testCtx(t), Options{Env: env}); !errors.Is(err, ErrProtocol) || p != 99 {
		t.Fatalf("probe of protocol 99 = %d %v", p, err)
	}
	_ = srv.Close()
	if _, _, err := Probe(testCtx(t), Options{Env: env}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("probe with nothing running = %v", err)
	}
}

func TestNoServerIsAClearError(t *testing.T) {
	dir := shortDir(t)
	_, err := New(testCtx(t), Options{Env: []string{"HOME=" + dir}})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("New with no server = %v; want ErrUnavailable naming the socket", err)
	}
}

// A server that reads the request and hangs up without answering (herdr dying
// mid-call) gives ErrUnavailable, not a hang or a decode error.
func TestHangUpMidCall(t *testing.T) {
	sock := shortDir(t) + "/h.sock"
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = bufio.NewReader(c).ReadString('\n')
			_ = c.Close()
		}
	}()
	c := &client{socket: sock}
	err = c.call(testCtx(t), "pane.read", map[string]any{"pane_id": "w1:p1"}, nil)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "hung up") {
		t.Fatalf("call = %v; want ErrUnavailable (hung up)", err)
	}
}

// herdr dies under a running host: calls fail clearly and promptly, and once a
// server is back on the socket the host works again (a fresh server has no
// workspace, so orcr's is recreated) and its event stream reconnects.
func TestServerDiesAndComesBack(t *testing.T) {
	srv, env := fakeServer(t, nil)
	h := newHost(t, env)
	rec := record(t, h)
	old := launch(t, h, "cat")
	_ = srv.Close()

	_, err := h.Read(testCtx(t), old.ID, core.ReadOpts{})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), srv.SocketPath()) {
		t.Fatalf("read with herdr gone = %v; want ErrUnavailable naming the socket", err)
	}
	if _, err := h.Launch(testCtx(t), coreSpec("cat")); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("launch with herdr gone = %v", err)
	}

	srv2, err := herdrtest.Start(herdrtest.Options{SocketPath: srv.SocketPath(), Shell: "/bin/sh", Env: env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv2.Close() })
	// The pane that died with the old server is reported once the stream is back.
	waitUntil(t, "the old pane reported gone", func() bool { return len(rec.of(old.ID)) > 0 })
	if evs := rec.of(old.ID); len(evs) != 1 || evs[0].Kind != core.PaneExited || evs[0].ExitCode != nil {
		t.Fatalf("old pane events %+v; want one PaneExited without a code (killed with herdr)", evs)
	}
	fresh := launch(t, h, "sh", "-c", "echo back-again; exec cat")
	waitScreen(t, h, fresh.ID, "back-again")
	// A fresh server restarts its ids, so the new pane may reuse the old id; it must
	// not inherit the old pane's events.
	if evs := rec.of(fresh.ID); fresh.ID == old.ID && len(evs) != 1 || fresh.ID != old.ID && len(evs) != 0 {
		t.Fatalf("new pane %s (old %s) has events %+v", fresh.ID, old.ID, evs)
	}
	exiting := launch(t, h, "sh", "-c", "exit 4")
	waitUntil(t, "exit of the new pane", func() bool { return len(rec.of(exiting.ID)) > 0 })
	if ev := rec.of(exiting.ID)[0]; ev.Kind != core.PaneExited || ev.ExitCode == nil || *ev.ExitCode != 4 {
		t.Fatalf("event %+v; want PaneExited 4", ev)
	}
}

func coreSpec(argv ...string) core.LaunchSpec {
	return core.LaunchSpec{Name: "x", Argv: argv, Env: []string{"PATH=/usr/bin:/bin"}}
}

// Pane ids that no longer exist are reported at once, as ErrPaneNotFound.
func TestVanishedPaneReported(t *testing.T) {
	_, env := fakeServer(t, nil)
	h := newHost(t, env)
	record(t, h)
	p := launch(t, h, "cat")
	if err := h.Close(testCtx(t), p.ID); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, rerr := h.Read(testCtx(t), p.ID, core.ReadOpts{})
	serr := h.SendText(testCtx(t), p.ID, "x")
	kerr := h.SendKeys(testCtx(t), p.ID, "enter")
	cerr := h.Close(testCtx(t), p.ID)
	for name, err := range map[string]error{"read": rerr, "send text": serr, "send keys": kerr, "close": cerr} {
		if !errors.Is(err, ErrPaneNotFound) || !errors.Is(err, wire.ErrNotFound) || !strings.Contains(err.Error(), p.ID) {
			t.Errorf("%s of a closed pane = %v; want ErrPaneNotFound naming %s", name, err, p.ID)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("reporting a vanished pane took %v (retrying?)", d)
	}
}

// A pane closed from outside orcr (the user in herdr's UI) becomes PaneGone, and a
// new host that gets herdr's replay of that close does not report it again.
func TestExternalCloseAndReplayDedupe(t *testing.T) {
	srv, env := fakeServer(t, nil)
	h := newHost(t, env)
	rec := record(t, h)
	a := launch(t, h, "cat")
	other := &client{socket: srv.SocketPath()}
	if err := other.call(testCtx(t), "pane.close", map[string]any{"pane_id": a.ID}, nil); err != nil {
		t.Fatal(err)
	}
	// Closing kills the program; its wrapper may record that exit just before the close
	// event arrives: then PaneExited with the recorded code comes first, then PaneGone.
	waitUntil(t, "PaneGone for "+a.ID, func() bool {
		evs := rec.of(a.ID)
		return len(evs) > 0 && evs[len(evs)-1].Kind == core.PaneGone
	})
	evs := rec.of(a.ID)
	switch {
	case len(evs) == 1:
	case len(evs) == 2 && evs[0].Kind == core.PaneExited && evs[0].ExitCode != nil:
	default:
		t.Fatalf("events %+v; want PaneGone, or PaneExited with its code then PaneGone", evs)
	}
	b := launch(t, h, "cat")
	_ = h.Shutdown(testCtx(t))

	h2 := newHost(t, env)
	rec2 := record(t, h2)
	if err := other.call(testCtx(t), "pane.close", map[string]any{"pane_id": b.ID}, nil); err != nil {
		t.Fatal(err)
	}
	// herdr replays the ring in order per subscription, so a's replayed close comes
	// before b's; once b's arrived, a's would have too.
	waitUntil(t, "PaneGone for "+b.ID, func() bool { return len(rec2.of(b.ID)) > 0 })
	if evs := rec2.of(a.ID); len(evs) != 0 {
		t.Fatalf("replayed close of %s reported again: %+v", a.ID, evs)
	}
}

// The pane sees exactly LaunchSpec.Env plus herdr's own pane variables.
func TestEnvIsComplete(t *testing.T) {
	_, env := fakeServer(t, nil)
	h := newHost(t, env)
	record(t, h)
	// One name per line and the pane id on its own line: long values would wrap at the pane's width.
	p := launch(t, h, "sh", "-c", "env | cut -d= -f1 | sort; echo \"pane:$HERDR_PANE_ID\"; echo env-done; exec cat")
	txt, err := h.Read(testCtx(t), p.ID, core.ReadOpts{Lines: 100})
	waitUntil(t, "env output", func() bool {
		txt, err = h.Read(testCtx(t), p.ID, core.ReadOpts{Lines: 100})
		return err == nil && strings.Contains(txt.Text, "env-done")
	})
	before, _, _ := strings.Cut(txt.Text, "pane:")
	names := strings.Fields(before)
	want := []string{"HERDR_BIN_PATH", "HERDR_ENV", "HERDR_PANE_ID", "HERDR_SOCKET_PATH", "HERDR_TAB_ID",
		"HERDR_WORKSPACE_ID", "LANG", "PATH", "PWD", "SHLVL"}
	for _, n := range names {
		if !slices.Contains(want, n) && n != "_" {
			t.Errorf("pane environment has %s, which the spec did not give:\n%s", n, txt.Text)
		}
	}
	if !strings.Contains(txt.Text, "pane:"+p.ID) {
		t.Errorf("herdr's pane variables missing:\n%s", txt.Text)
	}
}

func TestReadAfterClearText(t *testing.T) {
	_, env := fakeServer(t, nil)
	h := newHost(t, env)
	record(t, h)
	p := launch(t, h, "sh", "-c", `echo old-text-here; read x; printf '\033[H\033[2J'; echo new-text; exec cat`)
	waitScreen(t, h, p.ID, "old-text-here")
	if err := h.SendKeys(testCtx(t), p.ID, "enter"); err != nil {
		t.Fatal(err)
	}
	if s := waitScreen(t, h, p.ID, "new-text"); strings.Contains(s, "old-text-here") {
		t.Fatalf("old text still on the screen after clear:\n%s", s)
	}
}

func TestKeysWithoutHerdrNames(t *testing.T) {
	_, env := fakeServer(t, nil)
	h := newHost(t, env)
	record(t, h)
	p := launch(t, h, "sh", "-c", "stty -echo; echo ready; exec cat -v")
	waitScreen(t, h, p.ID, "ready")
	if err := h.SendKeys(testCtx(t), p.ID, "home", "ctrl-a", "pgdn", "f1", "enter"); err != nil {
		t.Fatal(err)
	}
	waitScreen(t, h, p.ID, "^[[H^A^[[6~^[OP")
}

// When orcr's workspace was closed from outside, concurrent launches recreate exactly
// one, and the panes it had are reported gone.
func TestWorkspaceRecreatedOnce(t *testing.T) {
	srv, env := fakeServer(t, nil)
	h := newHost(t, env)
	rec := record(t, h)
	old := launch(t, h, "cat")
	ws, _ := h.workspace(testCtx(t), false)
	other := &client{socket: srv.SocketPath()}
	if err := other.call(testCtx(t), "workspace.close", map[string]any{"workspace_id": ws}, nil); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "PaneGone for the closed workspace's pane", func() bool { return len(rec.of(old.ID)) > 0 })
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			if _, err := h.Launch(testCtx(t), coreSpec("cat")); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	var list struct {
		Workspaces []struct {
			Label string `json:"label"`
		} `json:"workspaces"`
	}
	if err := other.call(testCtx(t), "workspace.list", nil, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Workspaces) != 1 || list.Workspaces[0].Label != "orcr" {
		t.Fatalf("workspaces after concurrent launches: %+v", list.Workspaces)
	}
	// Closing the workspace kills the program: the wrapper may record that exit (and the
	// host report PaneExited) just before the workspace_closed event says PaneGone.
	if evs := rec.of(old.ID); evs[0].Kind != core.PaneGone && (evs[0].Kind != core.PaneExited || evs[0].ExitCode == nil) {
		t.Fatalf("closed with its workspace: %+v; want PaneGone, or PaneExited with its code", evs)
	}
}

// TestCtrlCAfterExitKeepsCodeAndScreen: ctrl-c pressed while the program's exit is
// being recorded, and after, reaches the pane's whole foreground process group —
// the wrapper and the mv that records the code too. Neither may die of it: a press
// during a slow mv (a loaded machine) left no code (TestConformance/CtrlCInterrupts
// failed "PaneExited event has no exit code"), and one after it closed the pane with
// its last screen. Here mv takes half a second and ctrl-c comes every 50 ms.
func TestCtrlCAfterExitKeepsCodeAndScreen(t *testing.T) {
	slow := shortDir(t)
	mv, err := exec.LookPath("mv")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(slow, "mv"), []byte("#!/bin/sh\nsleep 0.5\nexec "+mv+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, env := fakeServer(t, func(o *herdrtest.Options) {
		for i, kv := range o.Env {
			if strings.HasPrefix(kv, "PATH=") {
				o.Env[i] = "PATH=" + slow + ":" + strings.TrimPrefix(kv, "PATH=")
			}
		}
	})
	h := newHost(t, env)
	rec := record(t, h)
	// The program ignores ctrl-c itself (and so does its sleep): its code is 3 however
	// the presses fall. It ends by itself: a ctrl-c flushes the terminal's unread
	// input, so an Enter it waited for could be lost under load.
	p := launch(t, h, "sh", "-c", "trap '' INT; echo bye; sleep 1; exit 3")
	waitScreen(t, h, p.ID, "bye")
	exited := func() bool {
		return slices.ContainsFunc(rec.of(p.ID), func(ev core.HostEvent) bool { return ev.Kind == core.PaneExited })
	}
	for end := time.Now().Add(wait.Scale(2 * time.Second)); time.Now().Before(end) || !exited(); {
		if time.Now().After(end.Add(wait.Scale(15 * time.Second))) {
			t.Fatalf("no PaneExited for %s: %+v", p.ID, rec.of(p.ID))
		}
		_ = h.SendKeys(testCtx(t), p.ID, "ctrl-c") // fails once the pane is gone
		time.Sleep(50 * time.Millisecond)
	}
	evs := rec.of(p.ID)
	if evs[0].Kind != core.PaneExited || evs[0].ExitCode == nil || *evs[0].ExitCode != 3 {
		t.Fatalf("events of %s: %+v; want PaneExited with code 3", p.ID, evs)
	}
	if s, err := h.Read(testCtx(t), p.ID, core.ReadOpts{}); err != nil || !strings.Contains(s.Text, "bye") {
		t.Fatalf("the exited pane's last screen: %q, %v", s.Text, err)
	}
}

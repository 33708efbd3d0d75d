package pty_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"orcr/core"
	"orcr/pty"
	"orcr/testutil/testbin"
	"orcr/testutil/wait"
)

const waitTimeout = 20 * time.Second

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	var seen string
	if !wait.Until(waitTimeout, func() bool {
		var ok bool
		ok, seen = cond()
		return ok
	}) {
		t.Fatalf("timed out waiting for %s; last seen:\n%s", what, seen)
	}
}

// newHost returns a host that is shut down when the test ends.
func newHost(t testing.TB, opts pty.Options) *pty.Host {
	h := pty.New(opts)
	t.Cleanup(func() { _ = h.Shutdown(context.Background()) })
	return h
}

func env(extra ...string) []string {
	return append([]string{"PATH=" + os.Getenv("PATH"), "TERM=xterm-256color", "LANG=C.UTF-8"}, extra...)
}

func launch(t testing.TB, h *pty.Host, argv ...string) core.PaneInfo {
	t.Helper()
	info, err := h.Launch(context.Background(), core.LaunchSpec{Argv: argv, Env: env(), Cwd: t.TempDir()})
	if err != nil {
		t.Fatalf("launch %q: %v", argv, err)
	}
	return info
}

// waitText waits until the screen (or the last lines) of pane contains want.
func waitText(t testing.TB, h *pty.Host, pane string, lines int, want string) core.Screen {
	t.Helper()
	var s core.Screen
	waitFor(t, fmt.Sprintf("%q in pane %s", want, pane), func() (bool, string) {
		var err error
		s, err = h.Read(context.Background(), pane, core.ReadOpts{Lines: lines})
		if err != nil {
			return false, err.Error()
		}
		return strings.Contains(s.Text, want), s.Text
	})
	return s
}

// nextExit reads events until the PaneExited of pane and returns its code.
func nextExit(t testing.TB, h *pty.Host, pane string) int {
	t.Helper()
	timeout := time.After(waitTimeout)
	for {
		select {
		case ev, ok := <-h.Events():
			if !ok {
				t.Fatal("events closed before the exit of " + pane)
			}
			if ev.Pane == pane && ev.Kind == core.PaneExited {
				return *ev.ExitCode
			}
		case <-timeout:
			t.Fatalf("no PaneExited for %s", pane)
		}
	}
}

func TestReadableAfterExit(t *testing.T) {
	h := newHost(t, pty.Options{})
	info := launch(t, h, "sh", "-c", "echo last-words; exit 3")
	if code := nextExit(t, h, info.ID); code != 3 {
		t.Errorf("exit code %d, want 3", code)
	}
	s, err := h.Read(context.Background(), info.ID, core.ReadOpts{})
	if err != nil || !strings.Contains(s.Text, "last-words") {
		t.Fatalf("read after exit: %q, %v", s.Text, err)
	}
	if err := h.SendText(context.Background(), info.ID, "x"); err == nil {
		t.Error("send to an exited pane succeeded")
	}
	if err := h.Close(context.Background(), info.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Read(context.Background(), info.ID, core.ReadOpts{}); !errors.Is(err, pty.ErrUnknownPane) {
		t.Errorf("read after close: %v, want ErrUnknownPane", err)
	}
	if err := h.Close(context.Background(), info.ID); !errors.Is(err, pty.ErrUnknownPane) {
		t.Errorf("second close: %v, want ErrUnknownPane", err)
	}
}

func TestSignalExitCode(t *testing.T) {
	h := newHost(t, pty.Options{})
	info := launch(t, h, "sh", "-c", "kill -TERM $$")
	if code := nextExit(t, h, info.ID); code != 128+int(syscall.SIGTERM) {
		t.Errorf("exit code %d, want %d", code, 128+int(syscall.SIGTERM))
	}
}

// TestOutputEventsCoalesced floods a pane and checks that PaneOutput events of one
// pane are at least the coalescing interval apart.
func TestOutputEventsCoalesced(t *testing.T) {
	h := newHost(t, pty.Options{})
	// Bursts with pauses: the host consumes a burst of this size faster than the interval.
	info := launch(t, h, "sh", "-c", `for b in 1 2 3; do i=0; while [ $i -lt 1000 ]; do echo "flood $b $i"; i=$((i+1)); done; sleep 0.1; done; echo flood-done; exec cat`)
	waitText(t, h, info.ID, 0, "flood-done")
	var outputs []time.Time
	for len(outputs) < 2 {
		select {
		case ev := <-h.Events():
			if ev.Pane == info.ID && ev.Kind == core.PaneOutput {
				outputs = append(outputs, ev.At)
			}
		case <-time.After(waitTimeout):
			t.Fatalf("only %d PaneOutput events for a flood", len(outputs))
		}
	}
	// Drain what is queued without waiting for more.
	for drained := false; !drained; {
		select {
		case ev := <-h.Events():
			if ev.Pane == info.ID && ev.Kind == core.PaneOutput {
				outputs = append(outputs, ev.At)
			}
		default:
			drained = true
		}
	}
	for i := 1; i < len(outputs); i++ {
		if gap := outputs[i].Sub(outputs[i-1]); gap < 50*time.Millisecond {
			t.Errorf("PaneOutput events %d and %d only %v apart", i-1, i, gap)
		}
	}
}

// TestOutputEventsBatched runs panes that print at their own pace, out of step with
// each other, and checks that the host scans for output at most once per interval:
// every PaneOutput event, whichever its pane, carries the time of one scan, and two
// scans are at least the interval apart. Panes that print meanwhile get their events
// in one batch, so 20 agents redrawing a status line wake the engine once per
// interval, not once per redraw (bench/pty BenchmarkStatusLine20VsRawTmux).
func TestOutputEventsBatched(t *testing.T) {
	h := newHost(t, pty.Options{})
	const n = 4
	panes := map[string]bool{}
	for i := range n {
		// Each pane prints every 3x+7 ms, so their outputs fall at different moments.
		info := launch(t, h, "sh", "-c", fmt.Sprintf(`while :; do echo tick; sleep 0.0%d; done`, 3*i+7))
		panes[info.ID] = true
	}
	scans := map[time.Time]map[string]bool{}
	var times []time.Time
	deadline := time.After(waitTimeout)
	for len(times) < 20 {
		select {
		case ev := <-h.Events():
			if ev.Kind != core.PaneOutput || !panes[ev.Pane] {
				continue
			}
			if scans[ev.At] == nil {
				scans[ev.At] = map[string]bool{}
				times = append(times, ev.At)
			}
			if scans[ev.At][ev.Pane] {
				t.Errorf("pane %s has two PaneOutput events at %v", ev.Pane, ev.At)
			}
			scans[ev.At][ev.Pane] = true
		case <-deadline:
			t.Fatalf("only %d scans with output from %d printing panes", len(times), n)
		}
	}
	batched := 0
	for i, at := range times {
		if len(scans[at]) > 1 {
			batched++
		}
		if i > 0 {
			if gap := at.Sub(times[i-1]); gap < 50*time.Millisecond {
				t.Errorf("scans %d and %d only %v apart (panes %v and %v)", i-1, i, gap, scans[times[i-1]], scans[at])
			}
		}
	}
	if batched == 0 {
		t.Errorf("no scan carried the output of more than one pane: %v", scans)
	}
}

// TestEventsNeverBlockReader fills a one-slot Events channel nobody reads: output
// must still reach the screen, and the exit must still be delivered once read.
func TestEventsNeverBlockReader(t *testing.T) {
	h := newHost(t, pty.Options{EventBuffer: 1})
	info := launch(t, h, "sh", "-c", `read x; i=0; while [ $i -lt 2000 ]; do echo "line $i"; i=$((i+1)); done; echo all-out; read y; exit 4`)
	if err := h.SendText(context.Background(), info.ID, "go\n"); err != nil {
		t.Fatal(err)
	}
	waitText(t, h, info.ID, 0, "all-out")
	if err := h.SendText(context.Background(), info.ID, "end\n"); err != nil {
		t.Fatal(err)
	}
	if code := nextExit(t, h, info.ID); code != 4 {
		t.Errorf("exit code %d, want 4", code)
	}
}

// TestTerminalQueriesAnswered checks that a program asking the terminal for the
// cursor position and device attributes gets answers (TUIs hang without them).
func TestTerminalQueriesAnswered(t *testing.T) {
	h := newHost(t, pty.Options{})
	script := `stty -icanon -echo min 1
printf '\033[3;5H\033[6n'
cpr=$(dd bs=1 count=6 2>/dev/null | od -An -c | tr -d ' \n')
printf '\033[c'
s=''
while :; do ch=$(dd bs=1 count=1 2>/dev/null); s="$s$ch"; [ "$ch" = c ] && break; done
printf '\033[H\033[2Jcpr:%s\nda:%s\n' "$cpr" "$(printf %s "$s" | od -An -c | tr -d ' \n')"
exec cat`
	info := launch(t, h, "sh", "-c", script)
	s := waitText(t, h, info.ID, 0, "da:")
	if !strings.Contains(s.Text, `cpr:033[3;5R`) {
		t.Errorf("cursor position report wrong:\n%s", s.Text)
	}
	if !strings.Contains(s.Text, `da:033[?`) {
		t.Errorf("device attributes wrong:\n%s", s.Text)
	}
}

// TestSendToHungProgram checks that input to a program that stopped reading fails
// with the caller's deadline instead of hanging.
func TestSendToHungProgram(t *testing.T) {
	bin := testbin.Build(t, "orcr/testutil/fakeagent")
	h := newHost(t, pty.Options{})
	info := launch(t, h, bin, "--name", "hung")
	waitText(t, h, info.ID, 0, "hung>")
	if err := h.SendText(context.Background(), info.ID, "hang\n"); err != nil {
		t.Fatal(err)
	}
	waitText(t, h, info.ID, 0, "hanging")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := h.SendText(ctx, info.ID, strings.Repeat("yyyyyyy\n", 32*1024))
	if err == nil {
		t.Fatal("256 KiB into a program that reads nothing succeeded")
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("send took %v after a 300ms deadline", time.Since(start))
	}
	// The pane still works for everything else.
	if err := h.SendKeys(context.Background(), info.ID, "ctrl-c"); err != nil && !strings.Contains(err.Error(), "not reading") {
		t.Errorf("send after timeout: %v", err)
	}
	if err := h.Close(context.Background(), info.ID); err != nil {
		t.Fatal(err)
	}
}

// TestFakeAgentFloodAndAsk drives the fake agent on a real pty.
func TestFakeAgentFloodAndAsk(t *testing.T) {
	bin := testbin.Build(t, "orcr/testutil/fakeagent")
	h := newHost(t, pty.Options{Scrollback: 500})
	spec := core.LaunchSpec{Argv: []string{bin, "--print-env"}, Env: env("ORCR_PATH=x/y"), Cwd: t.TempDir()}
	info, err := h.Launch(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	waitText(t, h, info.ID, 0, "ORCR_PATH=x/y")
	_ = h.SendText(context.Background(), info.ID, "flood 1500\n")
	waitText(t, h, info.ID, 0, "flood done")
	s, err := h.Read(context.Background(), info.ID, core.ReadOpts{Lines: 100000})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Split(s.Text, "\n")); n > 500+50 || n < 500 {
		t.Errorf("scrollback of 500 returned %d lines", n)
	}
	if !strings.Contains(s.Text, "flood line 1500") || strings.Contains(s.Text, "flood line 500\n") {
		t.Errorf("unexpected tail:\n%s", s.Text[max(0, len(s.Text)-300):])
	}
	_ = h.SendText(context.Background(), info.ID, "ask deploy?\n")
	waitText(t, h, info.ID, 0, "[1] yes  [2] no")
	_ = h.SendText(context.Background(), info.ID, "2\n")
	waitText(t, h, info.ID, 0, "answered: 2")
	_ = h.SendText(context.Background(), info.ID, "crash 9\n")
	if code := nextExit(t, h, info.ID); code != 9 {
		t.Errorf("crash 9 exited %d", code)
	}
}

// TestCloseKillsGroup checks that Close kills background children too.
func TestCloseKillsGroup(t *testing.T) {
	for name, script := range map[string]string{
		"same-group": `sleep 300 & echo "child=$!"; wait`,
		"job-group":  `set -m; sleep 300 & echo "child=$!"; wait`, // job control: own pgid
	} {
		t.Run(name, func(t *testing.T) { testCloseKills(t, script) })
	}
}

func testCloseKills(t *testing.T, script string) {
	h := newHost(t, pty.Options{})
	info := launch(t, h, "sh", "-c", script)
	s := waitText(t, h, info.ID, 0, "child=")
	_, after, _ := strings.Cut(s.Text, "child=")
	child, err := strconv.Atoi(strings.Fields(after)[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Close(context.Background(), info.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the background child to die", func() (bool, string) {
		return !alive(child), fmt.Sprintf("pid %d alive", child)
	})
}

// alive reports whether pid runs (zombies count as dead).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i > 0 && len(stat) > i+2 && stat[i+2] != 'Z'
}

func TestShutdownKillsAll(t *testing.T) {
	h := pty.New(pty.Options{})
	var pids []int
	for range 3 {
		pids = append(pids, launch(t, h, "sleep", "300").PID)
	}
	if err := h.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("pid %d survived Shutdown", pid)
		}
	}
	for range h.Events() { // must be closed
	}
	if err := h.Shutdown(context.Background()); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
	if _, err := h.Launch(context.Background(), core.LaunchSpec{Argv: []string{"true"}}); !errors.Is(err, pty.ErrShutdown) {
		t.Errorf("launch after shutdown: %v", err)
	}
	if _, err := h.List(context.Background()); !errors.Is(err, pty.ErrShutdown) {
		t.Errorf("list after shutdown: %v", err)
	}
}

func TestLaunchErrors(t *testing.T) {
	h := newHost(t, pty.Options{})
	ctx := context.Background()
	if _, err := h.Launch(ctx, core.LaunchSpec{Env: env()}); err == nil {
		t.Error("empty argv launched")
	}
	_, err := h.Launch(ctx, core.LaunchSpec{Argv: []string{"orcr-no-such-program"}, Env: env()})
	if err == nil || !strings.Contains(err.Error(), "orcr-no-such-program") {
		t.Errorf("missing program: %v", err)
	}
	_, err = h.Launch(ctx, core.LaunchSpec{Argv: []string{"true"}, Env: env(), Cwd: "/no/such/dir"})
	if err == nil || !strings.Contains(err.Error(), "/no/such/dir") {
		t.Errorf("missing cwd: %v", err)
	}
}

// TestPathFromSpecEnv checks that argv[0] is found through the PATH of the spec's
// environment, not only the server's.
func TestPathFromSpecEnv(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "orcr-test-prog")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\necho from-spec-path\nexec cat\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	h := newHost(t, pty.Options{})
	spec := core.LaunchSpec{
		Argv: []string{"orcr-test-prog"},
		Env:  []string{"PATH=" + dir + ":" + os.Getenv("PATH")},
		Cwd:  t.TempDir(),
	}
	info, err := h.Launch(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	waitText(t, h, info.ID, 0, "from-spec-path")
}

func TestKeyBytes(t *testing.T) {
	for name, want := range map[string]string{
		"enter": "\r", "ESC": "\x1b", "ctrl-c": "\x03", "ctrl-a": "\x01", "ctrl-z": "\x1a",
		"ctrl-]": "\x1d", "up": "\x1b[A", "f1": "\x1bOP", "f12": "\x1b[24~", "pgdn": "\x1b[6~",
		"backspace": "\x7f", "space": " ", "return": "\r",
	} {
		got, err := pty.KeyBytes(name)
		if err != nil || string(got) != want {
			t.Errorf("KeyBytes(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
	_, err := pty.KeyBytes("hyper-x")
	if err == nil || !strings.Contains(err.Error(), "hyper-x") || !strings.Contains(err.Error(), "ctrl-c") {
		t.Errorf("unknown key error does not name the key and list valid ones: %v", err)
	}
}

// TestIDsUniqueAndListed checks pane ids p1, p2… and List order.
func TestIDsUniqueAndListed(t *testing.T) {
	h := newHost(t, pty.Options{})
	var ids []string
	for range 11 {
		ids = append(ids, launch(t, h, "cat").ID)
	}
	if ids[0] != "p1" || ids[10] != "p11" {
		t.Errorf("ids %v", ids)
	}
	panes, err := h.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range panes {
		if p.ID != ids[i] || p.PID <= 0 || p.Dead {
			t.Errorf("list[%d] = %+v, want id %s alive", i, p, ids[i])
		}
	}
	if err := h.Close(context.Background(), "p1"); err != nil {
		t.Fatal(err)
	}
	if id := launch(t, h, "cat").ID; id != "p12" {
		t.Errorf("id after a close = %s, want p12 (never reused)", id)
	}
}

// TestConcurrentReadsWhileStreaming reads while output streams in (run with -race).
func TestConcurrentReadsWhileStreaming(t *testing.T) {
	h := newHost(t, pty.Options{})
	info := launch(t, h, "sh", "-c", `i=0; while [ $i -lt 1000 ]; do echo "row $i"; i=$((i+1)); done; echo stream-done; exec cat`)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			// Back to back, not backing off: the reads must race the stream.
			var err error
			done := wait.Every(waitTimeout, 0, func() bool {
				var s core.Screen
				s, err = h.Read(context.Background(), info.ID, core.ReadOpts{Lines: 80})
				return err != nil || strings.Contains(s.Text, "stream-done")
			})
			switch {
			case err != nil:
				t.Error(err)
			case !done:
				t.Errorf("stream-done never showed within %s", wait.Scale(waitTimeout))
			}
		})
	}
	wg.Wait()
}

// TestClearScrollback checks that ED 3 (sent by `clear`) erases the scrollback too.
func TestClearScrollback(t *testing.T) {
	h := newHost(t, pty.Options{})
	info := launch(t, h, "sh", "-c", `i=0; while [ $i -lt 120 ]; do echo "old-$i"; i=$((i+1)); done; read x; printf '\033[H\033[2J\033[3J'; echo fresh; exec cat`)
	waitText(t, h, info.ID, 200, "old-0")
	if err := h.SendKeys(context.Background(), info.ID, "enter"); err != nil {
		t.Fatal(err)
	}
	s := waitText(t, h, info.ID, 200, "fresh")
	if strings.Contains(s.Text, "old-") {
		t.Errorf("scrollback survived ED 3:\n%s", s.Text)
	}
}

// TestAppCursorKeys checks that arrows follow the program's cursor key mode (DECCKM).
func TestAppCursorKeys(t *testing.T) {
	h := newHost(t, pty.Options{})
	info := launch(t, h, "sh", "-c", `stty -echo; printf 'normal\n'; read x; printf '\033[?1happ\n'; exec cat -v`)
	waitText(t, h, info.ID, 0, "normal")
	if err := h.SendKeys(context.Background(), info.ID, "enter"); err != nil {
		t.Fatal(err)
	}
	waitText(t, h, info.ID, 0, "app")
	if err := h.SendKeys(context.Background(), info.ID, "up", "left", "pgup", "enter"); err != nil {
		t.Fatal(err)
	}
	waitText(t, h, info.ID, 0, "^[OA^[OD^[[5~")
}

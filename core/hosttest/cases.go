package hosttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"orcr/core"
	"orcr/testutil/wait"
)

// testArgvCwdEnv checks that argv reaches the program word for word, that it runs in
// Cwd, and that Env is its complete environment (nothing leaks from the server's).
func testArgvCwdEnv(t *testing.T, f Factory) {
	h := newHarness(t, f)
	dir := t.TempDir()
	want, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	script := `for a in "$@"; do printf '[%s]' "$a"; done; echo; echo "cwd=$(pwd -P)"; ` +
		`echo "foo=$ORCR_HOSTTEST_FOO"; echo "home=${HOME-unset}"; exec cat`
	info := h.launchSpec(core.LaunchSpec{
		Argv: sh(script, "two words", `q"uote`, "$dollar", ""),
		Cwd:  dir,
		Env:  baseEnv("ORCR_HOSTTEST_FOO=bar baz"),
	})
	if info.PID <= 0 {
		t.Errorf("launch returned pid %d, want > 0", info.PID)
	}
	s := h.waitText(info.ID, "home=")
	for _, line := range []string{
		`[two words][q"uote][$dollar][]`,
		"cwd=" + want,
		"foo=bar baz",
		"home=unset",
	} {
		if !hasLine(s.Text, line) {
			t.Errorf("screen lacks line %q:\n%s", line, s.Text)
		}
	}
	got, ok, err := h.listed(info.ID)
	if err != nil || !ok {
		t.Fatalf("List does not show %s (err %v)", info.ID, err)
	}
	if got.PID != info.PID || got.Dead {
		t.Errorf("List shows %+v, launch said %+v", got, info)
	}
}

// testUnicodeAndLongLine checks wide characters and a line longer than the screen.
func testUnicodeAndLongLine(t *testing.T, f Factory) {
	h := newHarness(t, f)
	long := strings.Repeat("x", 499) + "Z"
	info := h.launch(sh(`printf '%s\n' "$1" "$2" "$3" "end-mark"; exec cat`,
		"日本語テキスト 中文", "emoji 🎉 ok ✅", long)...)
	s := h.waitText(info.ID, "end-mark")
	for _, want := range []string{"日本語テキスト 中文", "emoji 🎉 ok ✅"} {
		if !strings.Contains(s.Text, want) {
			t.Errorf("screen lacks %q:\n%s", want, s.Text)
		}
	}
	if n := strings.Count(s.Text, "x"); n != 499 || !strings.Contains(s.Text, "xZ") {
		t.Errorf("long line: %d x's on screen (want 499) ending in xZ:\n%s", n, s.Text)
	}
	for i, line := range strings.Split(s.Text, "\n") {
		if line != strings.TrimRight(line, " ") {
			t.Errorf("line %d has trailing spaces: %q", i, line)
		}
	}
}

// testSendTextLiteral checks that text with shell and tmux metacharacters arrives as is.
func testSendTextLiteral(t *testing.T, f Factory) {
	h := newHarness(t, f)
	info := h.launch(sh(`stty -echo; echo ready; exec cat`)...)
	h.waitText(info.ID, "ready")
	text := `it's "q" $HOME \back; ls {a} ~ & | > % #x ;`
	h.sendText(info.ID, text)
	h.sendKeys(info.ID, "enter")
	s := h.waitScreen(info.ID, 0, "the literal text echoed by cat", func(s string) bool {
		return hasLine(s, text)
	})
	if strings.Count(s.Text, "$HOME") != 1 {
		t.Errorf("text arrived more or less than once:\n%s", s.Text)
	}
}

// testNamedKeysReachReader checks that backspace, tab, arrows and enter arrive as the
// bytes a terminal sends (cat -vT makes the control characters visible).
func testNamedKeysReachReader(t *testing.T, f Factory) {
	h := newHarness(t, f)
	info := h.launch(sh(`stty -echo; echo ready; exec cat -vT`)...)
	h.waitText(info.ID, "ready")
	h.sendText(info.ID, "abX")
	h.sendKeys(info.ID, "backspace")
	h.sendText(info.ID, "c")
	h.sendKeys(info.ID, "tab", "up", "left")
	h.sendText(info.ID, "z")
	h.sendKeys(info.ID, "space", "esc", "enter")
	h.waitScreen(info.ID, 0, "keys echoed by cat -vT", func(s string) bool {
		return hasLine(s, "abc^I^[[A^[[Dz ^[") || hasLine(s, "abc^I^[OA^[ODz ^[")
	})
}

// testCtrlCInterrupts checks that ctrl-c reaches the foreground process as SIGINT.
func testCtrlCInterrupts(t *testing.T, f Factory) {
	h := newHarness(t, f)
	info := h.launch(sh(`echo sleeping; exec sleep 60`)...)
	h.waitText(info.ID, "sleeping")
	// The program may not have reached sleep yet when the text shows; press until it dies.
	// Later presses may race with the exit, so only the first must succeed.
	h.sendKeys(info.ID, "ctrl-c")
	for deadline := time.Now().Add(wait.Scale(shortWait)); time.Now().Before(deadline); {
		if _, ok := h.exitEvent(info.ID); ok {
			break
		}
		time.Sleep(50 * time.Millisecond)
		_ = h.host.SendKeys(ctx(t), info.ID, "ctrl-c")
	}
	if code := h.waitExit(info.ID); code != 130 {
		t.Errorf("exit code after ctrl-c = %d, want 130 (128+SIGINT)", code)
	}
}

// testUnknownKeyRejected checks that a key name the host does not know is an error.
func testUnknownKeyRejected(t *testing.T, f Factory) {
	h := newHarness(t, f)
	info := h.launch("cat")
	err := h.host.SendKeys(ctx(t), info.ID, "enter", "no-such-key")
	if err == nil {
		t.Fatal("SendKeys with an unknown key name succeeded")
	}
	if !strings.Contains(err.Error(), "no-such-key") {
		t.Errorf("error does not name the key: %v", err)
	}
}

// testReadAfterClear checks that a cleared screen no longer shows the old text.
func testReadAfterClear(t *testing.T, f Factory) {
	h := newHarness(t, f)
	info := h.launch(sh(`echo old-text-here; read x; printf '\033[H\033[2J'; echo new-text; exec cat`)...)
	h.waitText(info.ID, "old-text-here")
	h.sendKeys(info.ID, "enter")
	s := h.waitText(info.ID, "new-text")
	if strings.Contains(s.Text, "old-text-here") {
		t.Errorf("old text still on the screen after clear:\n%s", s.Text)
	}
	if s.CursorY != 1 || s.CursorX != 0 {
		t.Errorf("cursor at %d,%d after clear and one line, want 0,1", s.CursorX, s.CursorY)
	}
}

// testExitCode checks the exit code and the PaneExited event.
func testExitCode(t *testing.T, f Factory) {
	h := newHarness(t, f)
	info := h.launch(sh(`exit 7`)...)
	if code := h.waitExit(info.ID); code != 7 {
		t.Errorf("exit code = %d, want 7", code)
	}
}

// testCloseDeadPane checks that closing a pane whose process ended is fine and removes it.
func testCloseDeadPane(t *testing.T, f Factory) {
	h := newHarness(t, f)
	info := h.launch("true")
	if code := h.waitExit(info.ID); code != 0 {
		t.Errorf("exit code of true = %d", code)
	}
	if err := h.host.Close(ctx(t), info.ID); err != nil {
		t.Fatalf("close of a dead pane: %v", err)
	}
	if _, ok, err := h.listed(info.ID); err != nil || ok {
		t.Errorf("closed pane still listed (err %v)", err)
	}
}

// testCloseLivePane checks that Close kills a running program and its children.
func testCloseLivePane(t *testing.T, f Factory) {
	h := newHarness(t, f)
	info := h.launch(sh(`sleep 60 & echo started; wait`)...)
	h.waitText(info.ID, "started")
	if err := h.host.Close(ctx(t), info.ID); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, ok, err := h.listed(info.ID); err != nil || ok {
		t.Errorf("closed pane still listed (err %v)", err)
	}
	if _, err := h.read(info.ID, 0); err == nil {
		t.Errorf("read of a closed pane succeeded")
	}
}

// testCloseUnknownPane checks that an unknown pane id is an error, promptly.
func testCloseUnknownPane(t *testing.T, f Factory) {
	h := newHarness(t, f)
	h.launch("cat") // the host has a pane, just not this one
	c, cancel := context.WithTimeout(context.Background(), shortWait)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- h.host.Close(c, "no-such-pane-4711") }()
	select {
	case err := <-errc:
		if err == nil {
			t.Error("close of an unknown pane succeeded")
		}
	case <-time.After(shortWait + time.Second):
		t.Fatal("close of an unknown pane hangs")
	}
	if _, err := h.read("no-such-pane-4711", 0); err == nil {
		t.Error("read of an unknown pane succeeded")
	}
	if err := h.host.SendText(ctx(t), "no-such-pane-4711", "x"); err == nil {
		t.Error("send to an unknown pane succeeded")
	}
}

// testResize checks that the program sees the new size and Read reports it.
func testResize(t *testing.T, f Factory) {
	h := newHarness(t, f)
	info := h.launch(sh(`stty size; read x; stty size; exec cat`)...)
	h.waitText(info.ID, "50 200")
	if err := h.host.Resize(ctx(t), info.ID, 100, 30); err != nil {
		t.Fatalf("resize: %v", err)
	}
	h.sendKeys(info.ID, "enter")
	s := h.waitText(info.ID, "30 100")
	if s.Cols != 100 || s.Rows != 30 {
		t.Errorf("Read reports %dx%d after resize, want 100x30", s.Cols, s.Rows)
	}
}

// testScrollbackLines checks that Lines > 0 returns the tail of scrollback plus screen.
func testScrollbackLines(t *testing.T, f Factory) {
	h := newHarness(t, f)
	info := h.launch(sh(`i=1; while [ $i -le 300 ]; do echo "line-$i"; i=$((i+1)); done; exec cat`)...)
	h.waitText(info.ID, "line-300")
	screen, err := h.read(info.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if hasLine(screen.Text, "line-240") {
		t.Errorf("a 50-row screen shows line-240 (61 lines up) without Lines:\n%s", screen.Text)
	}
	s := h.waitScreen(info.ID, 100, "line-220 in the last 100 lines", func(s string) bool {
		return hasLine(s, "line-220") && hasLine(s, "line-300")
	})
	if n := len(strings.Split(s.Text, "\n")); n > 100 {
		t.Errorf("Lines=100 returned %d lines", n)
	}
	if hasLine(s.Text, "line-150") {
		t.Errorf("Lines=100 reaches back to line-150:\n%s", s.Text)
	}
}

// testReadANSI checks that ANSI reads keep the screen's colours as SGR sequences and
// plain reads carry none.
func testReadANSI(t *testing.T, f Factory) {
	h := newHarness(t, f)
	info := h.launch(sh(`printf '\033[31mred-word\033[0m plain-word\n'; exec cat`)...)
	plain := h.waitText(info.ID, "plain-word")
	if strings.Contains(plain.Text, "\x1b") {
		t.Errorf("a plain read carries escape sequences: %q", plain.Text)
	}
	s, err := h.host.Read(ctx(t), info.ID, core.ReadOpts{ANSI: true})
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(s.Text, "\n") {
		if strings.Contains(l, "red-word") {
			line = l
		}
	}
	red := strings.Index(line, "red-word")
	if red < 0 || !strings.Contains(line[:red], "\x1b[31m") && !strings.Contains(line[:red], ";31m") {
		t.Errorf("an ANSI read does not colour red-word red (want ESC[31m before it): %q", s.Text)
	}
	if !strings.Contains(line, "plain-word") {
		t.Errorf("an ANSI read lost the text: %q", line)
	}
	// With Lines the tail of scrollback plus screen keeps its colours too.
	s, err = h.host.Read(ctx(t), info.ID, core.ReadOpts{ANSI: true, Lines: 20})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.Text, "31m") || !strings.Contains(s.Text, "red-word") {
		t.Errorf("an ANSI read with Lines lost the colour: %q", s.Text)
	}
}

// testFiftyPanes checks 50 panes at once, each readable with its own content.
func testFiftyPanes(t *testing.T, f Factory) {
	h := newHarness(t, f)
	const n = 50
	ids := make([]string, n)
	for i := range n {
		ids[i] = h.launch(sh(`echo "pane-$1-up"; exec cat`, fmt.Sprint(i))...).ID
	}
	seen := map[string]bool{}
	for i, id := range ids {
		if seen[id] {
			t.Fatalf("pane id %s given twice", id)
		}
		seen[id] = true
		h.waitText(id, fmt.Sprintf("pane-%d-up", i))
	}
	panes, err := h.host.List(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	live := 0
	for _, p := range panes {
		if seen[p.ID] && !p.Dead {
			live++
		}
	}
	if live != n {
		t.Errorf("List shows %d of %d live panes", live, n)
	}
	// Send to all of them concurrently; every pane gets its own text back.
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			if err := h.host.SendText(ctx(t), id, fmt.Sprintf("reply-%d\n", i)); err != nil {
				t.Errorf("send to %s: %v", id, err)
			}
		})
	}
	wg.Wait()
	for i, id := range ids {
		h.waitText(id, fmt.Sprintf("reply-%d", i))
	}
}

// testAttachOrStream checks the attach contract: a host either names a native attach
// command (and Stream says ErrNoStream) or serves Stream, which starts with a redraw
// of the current screen and passes input through.
func testAttachOrStream(t *testing.T, f Factory) {
	h := newHarness(t, f)
	info := h.launch(sh(`echo attach-me; exec cat`)...)
	h.waitText(info.ID, "attach-me")
	c, cancel := context.WithTimeout(context.Background(), shortWait)
	defer cancel()
	if argv := h.host.AttachCommand(info.ID); len(argv) > 0 {
		if err := h.host.Stream(c, info.ID, strings.NewReader(""), io.Discard); !errors.Is(err, core.ErrNoStream) {
			t.Errorf("host with attach command %q: Stream = %v, want ErrNoStream", argv, err)
		}
		return
	}
	in, feed := io.Pipe()
	defer feed.Close()
	out := &lockedBuffer{}
	done := make(chan error, 1)
	go func() { done <- h.host.Stream(c, info.ID, in, out) }()
	waitFor(t, shortWait, "the redraw on the stream", func() (bool, string) {
		return strings.Contains(out.String(), "attach-me"), out.String()
	})
	if _, err := feed.Write([]byte("typed-in-stream\r")); err != nil {
		t.Fatal(err)
	}
	h.waitText(info.ID, "typed-in-stream")
	cancel()
	select {
	case <-done:
	case <-time.After(shortWait):
		t.Fatal("Stream did not end when its context did")
	}
}

// lockedBuffer is a bytes.Buffer safe for one writer and one poller.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// testAdoptAfterRestart checks that a host reopened after a restart lists the pane
// with its pid and can still read and drive it.
func testAdoptAfterRestart(t *testing.T, f Factory) {
	if f.Reopen == nil {
		t.Skip("panes of this host end with the server; no adoption")
	}
	old := attach(t, f.New(t))
	t.Cleanup(old.shutdown)
	info := old.launch(sh(`echo adopt-me; exec cat`)...)
	old.waitText(info.ID, "adopt-me")
	old.shutdown()

	h := attach(t, f.Reopen(t, old.host))
	t.Cleanup(func() {
		_ = h.host.Close(context.Background(), info.ID)
		h.shutdown()
	})
	got, ok, err := h.listed(info.ID)
	if err != nil || !ok {
		t.Fatalf("reopened host does not list %s (err %v)", info.ID, err)
	}
	if got.PID != info.PID || got.Dead {
		t.Errorf("reopened host lists %+v, launch said %+v", got, info)
	}
	h.waitText(info.ID, "adopt-me")
	h.sendText(info.ID, "still-here\n")
	h.waitText(info.ID, "still-here")
}

// hasLine reports whether text has a line equal to want.
func hasLine(text, want string) bool {
	for line := range strings.SplitSeq(text, "\n") {
		if line == want {
			return true
		}
	}
	return false
}

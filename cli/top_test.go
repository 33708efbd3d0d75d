package cli_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"orcr/testutil/wait"
)

// TestTopRedrawsInPlace runs `orcr top 'proj/**'` on a real terminal (tmux) shorter
// than the tree: every redraw overwrites the same lines (nothing scrolls into the
// scrollback), the frame fits the window, the columns are aligned, the paths are in
// natural order (a2 before a10), the GLOB leaves other agents out, a blocked agent's
// state is coloured, ended agents are counted instead of shown, and piped the output
// has no escape sequences.
func TestTopRedrawsInPlace(t *testing.T) {
	e := newBinEnv(t)
	e.serve()
	e.must("agent", "run", "proj/a0", "--", "sh", "-c", "printf 'Ship it? [y/N] '; read x; sleep 300")
	for i := 1; i <= 20; i++ {
		e.must("agent", "run", fmt.Sprintf("proj/a%d", i), "--", "sleep", "300")
	}
	e.must("agent", "run", "other/x", "--", "sleep", "300")
	wait.For(t, 30*time.Second, "proj/a0 blocked", func() bool {
		return strings.Contains(e.must("agent", "ls", "--state", "blocked"), "proj/a0")
	})

	const rows = 16
	tt := e.term(100, rows)
	tt.keys("clear; orcr top 'proj/**'", "Enter")
	wait.For(t, 20*time.Second, "top's first frame", func() bool { return strings.Contains(tt.screen(), "more lines") })
	h0 := tt.history()
	for k, p := range []string{"proj/a3", "proj/a4", "proj/a5"} {
		e.must("agent", "kill", p)
		want := fmt.Sprintf("%d ended not shown", k+1)
		wait.For(t, 20*time.Second, "top counts "+want, func() bool { return strings.Contains(tt.screen(), want) })
	}
	if h := tt.history(); h != h0 {
		t.Errorf("three redraws pushed %d lines into the scrollback (want none):\n%s", h-h0, tt.screen())
	}
	scr := tt.screen()
	lines := strings.Split(strings.TrimRight(scr, "\n"), "\n")
	if len(lines) > rows {
		t.Fatalf("the frame is taller than the window:\n%s", scr)
	}
	if strings.Contains(scr, "other") || strings.Contains(scr, "  a3 ") {
		t.Errorf("top shows an agent outside its GLOB or an ended one:\n%s", scr)
	}
	if i2, i10 := strings.Index(scr, "  a2 "), strings.Index(scr, "  a10 "); i2 < 0 || i10 < 0 || i2 > i10 {
		t.Errorf("want a2 before a10 (natural order):\n%s", scr)
	}
	// Every agent row's state starts in the header's STATE column.
	head := -1
	row := regexp.MustCompile(`^  a\d+ +(\S)`)
	for _, l := range lines {
		if strings.HasPrefix(l, "PATH ") {
			head = strings.Index(l, "STATE")
			continue
		}
		if m := row.FindStringSubmatchIndex(l); m != nil && m[2] != head {
			t.Errorf("state at column %d, STATE at %d: %q\n%s", m[2], head, l, scr)
		}
	}
	if head < 0 {
		t.Fatalf("no header:\n%s", scr)
	}
	if c := tt.colored(); !regexp.MustCompile(`\x1b\[[0-9;]*33m[^\n]*blocked`).MatchString(c) {
		t.Errorf("the blocked state is not coloured:\n%q", c)
	}
	if once := e.must("top", "--once", "proj/**"); strings.Contains(once, "\x1b") || !strings.Contains(once, "a20") {
		t.Errorf("piped top --once: %q", once)
	}
	tt.keys("C-c")
}

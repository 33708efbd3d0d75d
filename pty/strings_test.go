package pty_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"orcr/pty"
	"orcr/testutil/wait"
)

// stringCases are escape strings whose payload holds UTF-8 with a byte an 8-bit parser
// reads as a control: "✳" is E2 9C B3 (0x9C is ST), "é" C3 A9, "—" E2 80 94 (0x80).
// Each is framed by text that must end up side by side on the screen.
var stringCases = []string{
	"ab\x1b]0;✳ Claude Code\x07cd",                     // claude's idle title, ended by BEL
	"ab\x1b]2;✳ Claude Code\x1b\\cd",                   // ended by ST (ESC \)
	"ab\x1b]8;;https://x.test/✳\x07link\x1b]8;;\x07cd", // a hyperlink's URI
	"ab\x1b_✳ apc — é\x1b\\cd",                         // APC
	"ab\x1b^pm é—✳\x1b\\cd",                            // PM
	"ab\x1bXsos ✳\x1b\\cd",                             // SOS
	"ab\x1bP1$q✳\x1b\\cd",                              // DCS
}

// TestUTF8InsideStringsStaysInside: what a program writes inside an OSC, DCS, APC, PM or
// SOS string never reaches the screen, whichever UTF-8 it holds — the pane's screen is
// tmux's for the same bytes. (The emulator alone printed " Claude Code" from claude's
// title over its input line.)
func TestUTF8InsideStringsStaysInside(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("tmux: %v", err)
	}
	dir := t.TempDir()
	var all strings.Builder
	for _, c := range stringCases {
		all.WriteString(c)
		all.WriteString("\r\n")
		// Each case also over text already on a line: what leaks would overwrite it.
		all.WriteString("0123456789012345678901234567890123456789\r")
		all.WriteString(c)
		all.WriteString("\r\n")
	}
	all.WriteString("END\r\n")
	file := filepath.Join(dir, "out")
	if err := os.WriteFile(file, []byte(all.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	// The same bytes in a pane of the pty host and in a tmux pane of its size.
	h := newHost(t, pty.Options{Cols: 80, Rows: 30})
	info := launch(t, h, "sh", "-c", "stty raw -echo; cat "+file+"; exec sleep 600")
	got := waitText(t, h, info.ID, 0, "END").Text

	sock := filepath.Join(dir, "tmux.sock")
	tmux := func(args ...string) string {
		out, err := exec.Command("tmux", append([]string{"-S", sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %q: %v\n%s", args, err, out)
		}
		return string(out)
	}
	tmux("new-session", "-d", "-x", "80", "-y", "30", "sh -c 'stty raw -echo; cat "+file+"; exec sleep 600'")
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", sock, "kill-server").Run() })
	var want string
	if !wait.Until(wait.Scale(10e9), func() bool {
		want = tmux("capture-pane", "-p")
		return strings.Contains(want, "END")
	}) {
		t.Fatalf("tmux never showed END:\n%s", want)
	}
	norm := func(s string) string {
		var lines []string
		for _, l := range strings.Split(s, "\n") {
			if l = strings.TrimRight(l, " "); l != "" {
				lines = append(lines, l)
			}
		}
		return strings.Join(lines, "\n")
	}
	if norm(got) != norm(want) {
		t.Fatalf("the pane's screen is not tmux's\n--- pane\n%s\n--- tmux\n%s", norm(got), norm(want))
	}
	for _, leak := range []string{"Claude", "x.test", "apc", "pm", "sos", "1$q"} {
		if strings.Contains(got, leak) {
			t.Fatalf("a string's payload (%q) on the screen:\n%s", leak, got)
		}
	}
}

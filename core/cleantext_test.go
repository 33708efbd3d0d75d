package core_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"orcr/core"
	"orcr/core/wire"
)

func TestCleanText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain text, ünïcödé ✓ 日本", "plain text, ünïcödé ✓ 日本"},
		{"line one\nline two", "line one\nline two"},
		{"a\x03b", "ab"},
		{"\x1b[31mred\x1b[0m done", "red done"},
		{"\x1b[38;5;196mbold\x1b[1;2H", "bold"},
		{"\x1b]0;title\x07after", "after"},
		{"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"},
		{"\x1b]0;never ends\nnext line", "\nnext line"},
		{"\x1b(Bcharset \x1b7saved\x1b8", "charset saved"},
		{"tab\there", "tab here"},
		{"progress 10%\rprogress 100%\r\ndone\r\n", "progress 10%\nprogress 100%\ndone\n"},
		{"del\x7f bell\x07 eof\x04 suspend\x1a", "del bell eof suspend"},
		{"c1 \u009b31mcsi \u009d0;t\u009cosc \u0085nel", "c1 csi osc nel"},
		{"bad \xff\xfe\xfd bytes \x80", "bad \uFFFD bytes \uFFFD"},
		{"trailing escape \x1b", "trailing escape "},
		{"\x1b\x1b[0mx", "x"},
	} {
		if got := core.CleanText(c.in); got != c.want {
			t.Errorf("CleanText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzCleanText: whatever goes in, what comes out can be typed as text — no control
// byte but a line feed, no DEL, no C1 control, valid UTF-8 — and cleaning it again
// changes nothing.
func FuzzCleanText(f *testing.F) {
	for _, s := range []string{"", "ok", "\x03", "\x1b[31mred\x1b[0m", "\x1b]0;t\x07", "\xff\xfe", "\u009b1m", "a\r\nb\tc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := core.CleanText(in)
		if !utf8.ValidString(out) {
			t.Fatalf("CleanText(%q) = %q: not valid UTF-8", in, out)
		}
		for _, r := range out {
			if (r < 0x20 && r != '\n') || (r >= 0x7f && r <= 0x9f) {
				t.Fatalf("CleanText(%q) = %q: keeps control %U", in, out, r)
			}
		}
		if strings.ContainsRune(out, 0x1b) {
			t.Fatalf("CleanText(%q) = %q: keeps ESC", in, out)
		}
		if again := core.CleanText(out); again != out {
			t.Fatalf("CleanText is not idempotent on %q: %q then %q", in, out, again)
		}
	})
}

// TestSendTypesOnlyText: agent.send's text with control bytes in it reaches a program
// in a real pty as the readable text, not as keystrokes — the shell's line discipline
// would make \003 a SIGINT (exit 130) and \032 a SIGTSTP. Text of nothing but
// controls is refused and says how to press keys.
func TestSendTypesOnlyText(t *testing.T) {
	r := newRig(t, "", nil, core.Limits{}, core.GCRules{})
	ctx := context.Background()
	got := filepath.Join(t.TempDir(), "got")
	a, err := r.eng.Run(ctx, wire.RunParams{Path: "relay/sh", Cwd: t.TempDir(),
		Argv: []string{"sh", "-c", `while read -r l; do printf '%s\n' "$l" >> '` + got + `'; done`}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the shell to run", 20*time.Second, func() bool {
		g, _ := r.eng.Get(ctx, a.ID)
		return g.State.Live() && g.PID > 0
	})
	err = r.eng.Send(ctx, wire.SendParams{Target: a.ID, Text: "stop \x03 \x1b[31mred\x1b[0m \x1a\x04\x7f\xff end", Enter: true})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the line to arrive, or the program to end", 20*time.Second, func() bool {
		b, _ := os.ReadFile(got)
		g, _ := r.eng.Get(ctx, a.ID)
		return strings.Contains(string(b), "end") || g.State.Terminal()
	})
	if g, _ := r.eng.Get(ctx, a.ID); g.State.Terminal() {
		code := -1
		if g.ExitCode != nil {
			code = *g.ExitCode
		}
		t.Fatalf("the program ended (%s, exit %d): the text was typed as keystrokes", g.State, code)
	}
	b, _ := os.ReadFile(got)
	if want := "stop  red \uFFFD end\n"; string(b) != want {
		t.Fatalf("the program read %q, want %q", b, want)
	}
	err = r.eng.Send(ctx, wire.SendParams{Target: a.ID, Text: "\x03"})
	if wire.CodeOf(err) != wire.CodeInvalidParams || !strings.Contains(err.Error(), "--keys") {
		t.Fatalf("send of only a control: %v, want %s pointing at --keys", err, wire.CodeInvalidParams)
	}
}

package ui

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/golden"

	"orcr/core/wire"
	"orcr/themes"
)

// hostile is agent output that would move the dashboard's cursor, clear it, switch its
// screen, retitle its window, ring, or hide a link, were it drawn as it came.
const hostile = "\x1b[2J\x1b[H\x1b[10;10H\x1b[5A\x1b[?1049h\x1b[?25l\x1b]0;pwned\x07\x1b]2;pwned2\x1b\\" +
	"\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\\x1bPdcs\x1b\\\x1b_apc\x1b\\\x1bc\x1b7\x1b8\x1b(0\r\x08\x07" +
	"\xc2\x9b2J\x9b2J\x1b[>0c\x1b[6n\x1b[38;2;1;2;3;4;5;6;7;8;9;10;11;12;13;14;15;16;17;18;19;20;21;22;23;24;25;26;27;28m"

// colourScreen is a screen of styled lines, with the hostile line in the middle.
func colourScreen(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "\x1b[1;32m✔\x1b[m line %03d \x1b[38;5;208morange\x1b[39m \x1b[48;2;40;40;90mon blue\x1b[0m tail\n", i)
		if i == n/2 {
			b.WriteString(hostile + "after\n")
		}
	}
	return b.String()
}

// TestPreviewKeepsAgentColoursSafely: the preview draws the agent's colours (they were
// stripped), and nothing else the agent printed reaches the terminal: no cursor move,
// erase, mode, title, link or C1 control, and no style outlives its line.
func TestPreviewKeepsAgentColoursSafely(t *testing.T) {
	m := newTestModel(t, 160, 48, Options{})
	selectPath(t, m, "demo/a")
	m.Update(readMsg{id: "0001", res: wire.ReadResult{Text: colourScreen(20), Live: true}})
	v := pv(m)
	for _, want := range []string{"\x1b[1;32m✔", "\x1b[38;5;208morange", "\x1b[48;2;40;40;90mon blue"} {
		if !strings.Contains(v, want) {
			t.Errorf("the preview lost the agent's colour %q:\n%q", want, v)
		}
	}
	if !strings.Contains(plain(v), "link2J\uFFFD2Jafter") {
		t.Errorf("the hostile line's text is gone:\n%s", plain(v))
	}
	checkOnlySGR(t, v)
	for _, l := range strings.Split(v, "\n") {
		if strings.Contains(l, "on blue") && !strings.Contains(l, "tail\x1b[m") {
			t.Errorf("a styled line is not reset before the frame: %q", l)
		}
	}
	screen(t, m) // the whole frame is still exactly w×h
}

// checkOnlySGR fails when s holds any escape sequence but SGR, any C0 control but the
// newline, a C1 control, or bytes that are not UTF-8.
func checkOnlySGR(t *testing.T, s string) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Fatalf("not UTF-8: %q", s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == 0x1b:
			j := i + 1
			if j >= len(s) || s[j] != '[' {
				t.Fatalf("a non-CSI escape at %d: %q", i, s[i:min(len(s), i+12)])
			}
			j++
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == ';' || s[j] == ':') {
				j++
			}
			if j >= len(s) || s[j] != 'm' {
				t.Fatalf("a CSI that is not SGR at %d: %q", i, s[i:min(len(s), j+1)])
			}
			i = j
		case c < 0x20 && c != '\n', c == 0x7f:
			t.Fatalf("control 0x%02x at %d: %q", c, i, s[max(0, i-10):min(len(s), i+10)])
		}
	}
	for _, r := range s {
		if r >= 0x80 && r <= 0x9f {
			t.Fatalf("C1 control U+%04X in %q", r, s)
		}
	}
}

// FuzzSanitizeSGR: whatever an agent prints, what is left is text and SGR only; plain
// text passes unchanged; sanitising twice changes nothing more; and the text the
// terminal would show is what sanitize (which strips all styles) leaves.
func FuzzSanitizeSGR(f *testing.F) {
	for _, s := range []string{hostile, colourScreen(3), "plain", "\x1b", "\x1b[", "\x1b[31", "\x1b]0;t", "a\x1b[31;1mb\x1b[mc",
		"\x1b[38:2::1:2:3m", "\xff\xfe", "\x1bP\n\x1b[31mx", "é\x1b[1m漢\tz\r\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := sanitizeSGR(in)
		checkOnlySGR(t, out)
		if again := sanitizeSGR(out); again != out {
			t.Fatalf("not idempotent: %q → %q → %q", in, out, again)
		}
		if !strings.ContainsAny(in, "\x1b\t\r\x7f") && utf8.ValidString(in) && !hasControl(in) && out != in {
			t.Fatalf("plain text changed: %q → %q", in, out)
		}
		lines := carrySGR(lastLines(out, 1<<20))
		for _, l := range lines {
			checkOnlySGR(t, styledFit(l, 40))
		}
	})
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 && r != '\n' || r >= 0x7f && r <= 0x9f {
			return true
		}
	}
	return false
}

// TestCarrySGR: a style left open at the end of a line (tmux carries its pen across
// lines) is set again at the start of the next, until a reset.
func TestCarrySGR(t *testing.T) {
	got := carrySGR([]string{"\x1b[31mred", "still", "\x1b[mplain", "plain"})
	want := []string{"\x1b[31mred", "\x1b[31mstill", "\x1b[31m\x1b[mplain", "plain"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("carrySGR = %q, want %q", got, want)
	}
}

// TestPreviewScrollbackPages: with the preview focused, pgup scrolls a page up; near
// the top of what was read it asks for deeper scrollback (a read with more lines), and
// the deeper answer shows the page asked for; pgdn back to the bottom asks for the
// screen only again; an agent with no more scrollback is not asked again.
func TestPreviewScrollbackPages(t *testing.T) {
	m := newTestModel(t, 100, 30, Options{})
	selectPath(t, m, "demo/a")
	m.readInFlight = false
	numbered := func(from, to int) string {
		var b strings.Builder
		for i := from; i <= to; i++ {
			fmt.Fprintf(&b, "row-%04d\n", i)
		}
		return b.String()
	}
	small := m.preview.screenLines()
	m.Update(readMsg{id: "0001", res: wire.ReadResult{Text: numbered(300-small+1, 300), Live: true}})
	press(m, "tab") // focus the preview
	if m.focus != focusPreview {
		t.Fatal("tab did not focus the preview")
	}
	press(m, "pgup")
	if !m.readInFlight || m.preview.screenLines() <= small {
		t.Fatalf("pgup at the top of the screen read no scrollback (in flight %v, lines %d, screen %d)",
			m.readInFlight, m.preview.screenLines(), small)
	}
	deep := m.preview.screenLines()
	// A late answer to the shallower read asked before the key is not the end of the
	// scrollback: the preview still asks for more.
	m.Update(readMsg{id: "0001", res: wire.ReadResult{Text: numbered(300-small+1, 300), Live: true}, lines: small})
	if m.preview.exhausted || m.preview.screenLines() != deep {
		t.Fatalf("a late shallow answer ended the scrollback (exhausted %v, asks %d lines, want %d)",
			m.preview.exhausted, m.preview.screenLines(), deep)
	}
	m.Update(readMsg{id: "0001", res: wire.ReadResult{Text: numbered(300-deep+1, 300), Live: true}, lines: deep})
	if m.preview.scroll != m.preview.page() {
		t.Fatalf("after the deeper read the scroll is %d, want a page (%d)", m.preview.scroll, m.preview.page())
	}
	v := plain(pv(m))
	if strings.Contains(v, "row-0300") || !strings.Contains(v, fmt.Sprintf("row-%04d", 300-m.preview.page())) {
		t.Fatalf("a page up shows:\n%s", v)
	}
	if !strings.Contains(v, fmt.Sprintf("↑%d", m.preview.page())) {
		t.Fatalf("the title does not say how far it is scrolled:\n%s", v)
	}
	// A screen event while scrolled up reads as deep as before, so the page stays.
	m.readInFlight = false
	if got := m.preview.screenLines(); got != deep {
		t.Fatalf("a re-read while scrolled asks for %d lines, want %d", got, deep)
	}
	// Only 40 lines exist: the preview stops asking for more.
	m.Update(readMsg{id: "0001", res: wire.ReadResult{Text: numbered(261, 300), Live: true}})
	press(m, "pgup", "pgup", "pgup")
	if m.readInFlight {
		t.Fatal("the preview asked for more scrollback than the agent has")
	}
	if v := plain(pv(m)); !strings.Contains(v, "row-0261") {
		t.Fatalf("pgup to the top does not show the first line:\n%s", v)
	}
	for range 10 {
		press(m, "pgdown")
	}
	if m.preview.scroll != 0 || m.preview.screenLines() != small {
		t.Fatalf("back at the bottom: scroll %d, asks %d lines (want 0, %d)", m.preview.scroll, m.preview.screenLines(), small)
	}
	if v := plain(pv(m)); !strings.Contains(v, "row-0300") {
		t.Fatalf("pgdown to the bottom does not show the last line:\n%s", v)
	}
}

// sampleDiff is an agent.diff answer with every kind of line the view colours.
func sampleDiff() wire.DiffResult {
	var b strings.Builder
	b.WriteString("diff --git a/auth.go b/auth.go\nindex 1111111..2222222 100644\n--- a/auth.go\n+++ b/auth.go\n")
	for h := range 6 {
		fmt.Fprintf(&b, "@@ -%d,6 +%d,7 @@ func check()\n", h*20+1, h*20+1)
		b.WriteString(" \tctx := context.Background()\n-\tif token == \"\" {\n+\tif token == \"\" || expired(token) {\n+\t\tlog.Warn(\"\x1b]0;evil\x07stale\")\n \t\treturn errNoToken\n \t}\n")
	}
	return wire.DiffResult{Dir: "/repo/wt", Base: "0123456789abcdef", BaseName: "main", Text: b.String(),
		Untracked: []string{"notes.md"}}
}

// TestDiffViewKeys: D opens the diff of the selected agent and asks the server for it;
// its answer is drawn coloured, made safe; the arrows, pgup/pgdn and home/end scroll;
// esc closes.
func TestDiffViewKeys(t *testing.T) {
	m := newTestModel(t, 100, 30, Options{})
	selectPath(t, m, "demo/a")
	if cmd := press(m, "D"); cmd == nil {
		t.Fatal("D asked nothing of the server")
	}
	d, ok := m.dialogs[len(m.dialogs)-1].(*diffDialog)
	if !ok || d.id != "0001" {
		t.Fatalf("D opened %T", m.dialogs[len(m.dialogs)-1])
	}
	if !strings.Contains(plain(screen(t, m)), "diffing demo/a") {
		t.Fatal("no word while the diff is computed")
	}
	m.Update(diffMsg{d: d, seq: d.seq, res: sampleDiff()})
	f := screen(t, m)
	if !strings.Contains(plain(f), "diff demo/a against main 0123456789ab") || !strings.Contains(plain(f), "+\tif token") &&
		!strings.Contains(plain(f), "+ if token") {
		t.Fatalf("the diff is not shown:\n%s", plain(f))
	}
	if strings.Contains(f, "evil") && strings.Contains(f, "\x1b]0;") {
		t.Fatal("an escape sequence inside the diff reached the terminal")
	}
	if !strings.Contains(f, d.c.paints[&d.c.styles.GaugeOK].pre+"+") {
		t.Fatal("additions are not coloured")
	}
	press(m, "down")
	if d.scroll != 1 {
		t.Fatalf("down: scroll %d", d.scroll)
	}
	press(m, "pgdown")
	if d.scroll != 1+d.room()-1 {
		t.Fatalf("pgdown: scroll %d, room %d", d.scroll, d.room())
	}
	press(m, "end")
	if d.scroll != len(d.lines)-d.room() || !strings.Contains(plain(screen(t, m)), "?? notes.md") {
		t.Fatalf("end: scroll %d of %d lines:\n%s", d.scroll, len(d.lines), plain(screen(t, m)))
	}
	press(m, "home")
	if d.scroll != 0 {
		t.Fatalf("home: scroll %d", d.scroll)
	}
	press(m, "pgup", "up")
	if d.scroll != 0 {
		t.Fatalf("scrolled above the top: %d", d.scroll)
	}
	// A late answer of an older request changes nothing; an error says what failed.
	m.Update(diffMsg{d: d, seq: d.seq - 1, res: wire.DiffResult{}})
	if len(d.lines) == 0 {
		t.Fatal("a stale answer replaced the diff")
	}
	m.Update(diffMsg{d: d, seq: d.seq, err: &wire.Error{Code: wire.CodeNotARepo, Message: "demo/a works in /tmp, which is not in a git repository; nothing to diff"}})
	if !strings.Contains(plain(screen(t, m)), "not in a git repository") {
		t.Fatal("the error is not shown")
	}
	press(m, "esc")
	if len(m.dialogs) != 0 {
		t.Fatal("esc did not close the diff")
	}
}

// TestGoldenSeeTheAgent: the coloured preview, a page into its scrollback, and the
// diff view, in every theme at 80×24 and 200×50.
func TestGoldenSeeTheAgent(t *testing.T) {
	for _, theme := range themes.BuiltinNames {
		for _, sz := range [][2]int{{80, 24}, {200, 50}} {
			name := fmt.Sprintf("%s_%dx%d", theme, sz[0], sz[1])
			t.Run("colour_"+name, func(t *testing.T) {
				m := newTestModel(t, sz[0], sz[1], Options{Theme: theme})
				selectPath(t, m, "demo/a")
				m.Update(readMsg{id: "0001", res: wire.ReadResult{Text: colourScreen(60), Live: true}})
				press(m, "tab", "pgup")
				golden.RequireEqual(t, screen(t, m))
			})
			t.Run("diff_"+name, func(t *testing.T) {
				m := newTestModel(t, sz[0], sz[1], Options{Theme: theme})
				selectPath(t, m, "demo/a")
				press(m, "D")
				d := m.dialogs[len(m.dialogs)-1].(*diffDialog)
				m.Update(diffMsg{d: d, seq: d.seq, res: sampleDiff()})
				press(m, "down")
				golden.RequireEqual(t, screen(t, m))
			})
		}
	}
}

// BenchmarkPreviewColour200x50 is one frame of the preview over a 200×50 screen with
// colours on every line: the read's answer made safe and split (Update), then drawn
// (View). The bound is 2 ms a frame.
func BenchmarkPreviewColour200x50(b *testing.B) {
	m := benchModel(b, 100)
	m.Update(tea.WindowSizeMsg{Width: 200, Height: 50})
	id := m.selectedID()
	var sb strings.Builder
	for i := range 50 {
		for j := range 11 { // 11 runs of 18 cells: a full 200-column row
			fmt.Fprintf(&sb, "\x1b[38;5;%dm%s\x1b[48;2;%d;20;30m%s\x1b[m", (i+j)%256, strings.Repeat("x", 12), j*20, "      ")
		}
		sb.WriteString("\n")
	}
	text := sb.String()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.preview.setScreen(id, wire.ReadResult{Text: text, Live: true}, nil, 0)
		_ = m.preview.View()
	}
}

// BenchmarkFrameColour200x50 is the whole dashboard's frame at 200×50 around that
// preview: the read's answer through Update, then View.
func BenchmarkFrameColour200x50(b *testing.B) {
	m := benchModel(b, 100)
	m.Update(tea.WindowSizeMsg{Width: 200, Height: 50})
	id := m.selectedID()
	text := strings.Repeat(strings.Repeat("\x1b[38;5;208mxxxxxxxxxxxx\x1b[48;2;60;20;30m      \x1b[m", 11)+"\n", 50)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.Update(readMsg{id: id, res: wire.ReadResult{Text: text, Live: true}})
		_ = m.View()
	}
}

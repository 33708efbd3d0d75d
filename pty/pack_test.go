package pty

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/vt"
)

// styledScreens draws on both screens of a fresh emulator what agents' TUIs draw:
// colours of every kind, attributes, underline styles, a hyperlink, wide and combined
// characters, box drawing and styled blanks; the main screen is left current, with the
// alternate one holding a drawn frame from before.
func styledScreens() *vt.Emulator {
	emu := vt.NewEmulator(80, 24)
	shrinkParser(emu, parserDataSize)
	draw := "plain text, then \x1b[1;31mbold red\x1b[0m \x1b[38;5;208mindexed\x1b[0m \x1b[38;2;1;2;3;48;2;250;240;230mtruecolor\x1b[0m\r\n" +
		"\x1b[4:3mcurly\x1b[0m \x1b[58;5;9;4munderline colour\x1b[0m \x1b[7mreverse\x1b[0m \x1b[3;9mitalic struck\x1b[0m\r\n" +
		"\x1b]8;;https://example.com/x\x1b\\a link\x1b]8;;\x1b\\ wide: 漢字かな 😀 combined: e\u0301 a\u0308\r\n" +
		"╭──────────╮\r\n│ \x1b[42m   \x1b[0m box │\r\n╰──────────╯\r\n" +
		"\x1b[10;5H\x1b[44m" + strings.Repeat(" ", 30) + "\x1b[0m\x1b[12;70Hright edge text\r\n> "
	_, _ = emu.Write([]byte("\x1b[?1049h" + draw + "\x1b[20;1Halt screen footer\x1b[?1049l"))
	_, _ = emu.Write([]byte(draw))
	return emu
}

// TestPackRoundTrip packs both screens of an emulator and unpacks them: every cell
// comes back as it was (content, width, style with the same colour types, link), the
// buffers are empty while packed, reads of the packed screens give what reads of the
// cells gave, and the emulator draws on as before.
func TestPackRoundTrip(t *testing.T) {
	emu := styledScreens()
	bufs, ok := screenBuffers(emu)
	if !ok {
		t.Fatal("the emulator's screen buffers are out of reach (a vt upgrade renamed them?); panes would never pack")
	}
	var want [2][]uv.Line
	for i, b := range bufs {
		for _, l := range b.Lines {
			want[i] = append(want[i], slices.Clone(l))
		}
	}
	wantText := screenLines(emu)
	wantRender := emu.Render()

	pk := pack(emu, nil)
	if pk == nil {
		t.Fatal("pack refused a screen of text")
	}
	for i, b := range bufs {
		if b.Lines != nil {
			t.Errorf("screen %d still holds %d rows of cells while packed", i, len(b.Lines))
		}
	}
	if got := pk.lines(0); !slices.Equal(got, wantText) {
		t.Errorf("packed screen reads\n%q\nwant\n%q", got, wantText)
	}
	pk.unpack(0)
	pk.unpack(1)
	for i, b := range bufs {
		if !reflect.DeepEqual(b.Lines, want[i]) {
			for y := range want[i] {
				if y >= len(b.Lines) || !reflect.DeepEqual(b.Lines[y], want[i][y]) {
					t.Errorf("screen %d row %d changed in the round trip", i, y)
				}
			}
		}
	}
	if got := emu.Render(); got != wantRender {
		t.Errorf("render changed in the round trip:\n%q\nwant\n%q", got, wantRender)
	}
	// The emulator goes on from the same state as a twin that was never packed: the
	// cursor, pen and modes were left alone.
	twin := styledScreens()
	more := "typed\x1b[1mbold on\r\n\x1b[?1049hon the alternate screen\x1b[?1049l after"
	_, _ = emu.Write([]byte(more))
	_, _ = twin.Write([]byte(more))
	if got, want := emu.Render(), twin.Render(); got != want {
		t.Errorf("after the round trip the emulator draws\n%q\nwhere one never packed draws\n%q", got, want)
	}
}

// TestPackSizeIsWhatTheScreenShows: an idle prompt packs into a few hundred bytes,
// and a screen where every cell has its own colour is left unpacked (its runs would
// cost more than its cells).
func TestPackSizeIsWhatTheScreenShows(t *testing.T) {
	emu := vt.NewEmulator(200, 50)
	_, _ = emu.Write([]byte("idle\r\n$ "))
	pk := pack(emu, nil)
	if pk == nil {
		t.Fatal("pack refused an idle prompt")
	}
	runs := 0
	for _, rows := range pk.rows {
		for _, r := range rows {
			runs += len(r)
		}
	}
	if runs > 4 {
		t.Errorf("an idle prompt packed into %d runs, want at most 4", runs)
	}

	noisy := vt.NewEmulator(40, 10)
	var b strings.Builder
	for i := range 400 {
		b.WriteString("\x1b[38;5;" + string(rune('0'+i%10)) + "mx")
	}
	_, _ = noisy.Write([]byte(b.String()))
	if pack(noisy, nil) != nil {
		t.Error("a screen of cells each in its own colour was packed")
	}
}

// A pane's emulator made blank (newEmulator: 1×1, resized over one shared blank row,
// packed at once) draws exactly what vt.NewEmulator's of the same size draws: the
// size, scroll regions, tab stops and cursor follow the resize, and every row gets
// cells of its own, unpacked or where packing was refused (ownRows).
func TestBlankEmulatorIsANewOne(t *testing.T) {
	const cols, rows = 97, 31
	h := New(Options{})
	defer h.Shutdown(t.Context())
	for _, packs := range []bool{true, false} {
		p := &pane{h: h}
		p.emu, _ = newEmulator(cols, rows, true)
		p.mu.Lock()
		if packs {
			p.packAtStart(true)
			if p.packed == nil {
				t.Fatal("a blank pane was not packed at start")
			}
			p.unpackScreens()
			p.unhide()
		} else {
			ownRows(p.emu)
		}
		p.mu.Unlock()
		want := vt.NewEmulator(cols, rows)
		draw := "a\tb\tc\x1b[31mred\x1b[0m\r\n\x1b[5;20r\x1b[20;1H" + strings.Repeat("scroll line\r\n", 30) +
			"\x1b[r\x1b[31;97HX\x1b[1;1Hfirst\x1b[?1049h\x1b[2;3Halt\x1b[?1049l" + strings.Repeat("more\r\n", 40) + "\x1b[3;3H\tT"
		for _, e := range []*vt.Emulator{p.emu, want} {
			if _, err := e.Write([]byte(draw)); err != nil {
				t.Fatal(err)
			}
		}
		if p.emu.Width() != cols || p.emu.Height() != rows {
			t.Fatalf("blank emulator is %dx%d, want %dx%d", p.emu.Width(), p.emu.Height(), cols, rows)
		}
		if got, w := p.emu.Render(), want.Render(); got != w {
			t.Fatalf("packed at start %v: blank emulator draws\n%s\nvt.NewEmulator's\n%s", packs, got, w)
		}
		if got, w := p.emu.CursorPosition(), want.CursorPosition(); got != w {
			t.Fatalf("packed at start %v: cursor at %v, want %v", packs, got, w)
		}
	}
}

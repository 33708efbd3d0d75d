package pty

import (
	"runtime"
	"strings"
	"testing"

	"github.com/charmbracelet/x/vt"
)

// BenchmarkEmulatorLines feeds 100-line chunks to an emulator the way the reader does
// (write, then move scrolled-off lines into a full 5000-line history): the reader
// goroutine's cost per chunk of a flood.
func BenchmarkEmulatorLines(b *testing.B) {
	emu := vt.NewEmulator(200, 50)
	emu.SetScrollbackSize(16 * 1024)
	hist := newHistory(5000)
	chunk := []byte(strings.Repeat(strings.Repeat("z", 120)+"\r\n", 100))
	for range 60 {
		_, _ = emu.Write(chunk)
		hist.drain(emu)
	}
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		_, _ = emu.Write(chunk)
		hist.drain(emu)
	}
}

// TestHistoryMemory checks that a full 5000-line scrollback of 100-column lines costs
// text, not cells (the emulator alone needs ~66 MB for it). The budget covers the
// emulator's fixed cost: two 200x50 cell screens (2.2 MB) and its parser's 4 MB
// escape-sequence buffer (allocated, mostly never touched, so not resident).
func TestHistoryMemory(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	emu := vt.NewEmulator(200, 50)
	emu.SetScrollbackSize(16 * 1024)
	hist := newHistory(5000)
	chunk := []byte(strings.Repeat(strings.Repeat("a", 100)+"\r\n", 100))
	for range 60 {
		_, _ = emu.Write(chunk)
		hist.drain(emu)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if got := len(hist.tail(10000)); got != 5000 {
		t.Errorf("history holds %d lines, want 5000", got)
	}
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 12<<20 {
		t.Errorf("heap grew %d MB for 5000 lines of scrollback", grew>>20)
	}
	runtime.KeepAlive(emu)
}

func TestHistoryRing(t *testing.T) {
	h := newHistory(3)
	for _, l := range []string{"a", "b", "c", "d", "e"} {
		h.push(l)
	}
	if got := strings.Join(h.tail(10), ","); got != "c,d,e" {
		t.Errorf("tail(10) = %s", got)
	}
	if got := strings.Join(h.tail(2), ","); got != "d,e" {
		t.Errorf("tail(2) = %s", got)
	}
	if got := newHistory(5).tail(3); len(got) != 0 {
		t.Errorf("empty tail = %v", got)
	}
}

// TestScreenLinesMatchesEmulator checks the fast screen reader against the emulator's
// own String on wide characters, emoji, styles, styled blanks and cursor moves.
func TestScreenLinesMatchesEmulator(t *testing.T) {
	emu := vt.NewEmulator(40, 8)
	_, _ = emu.Write([]byte("plain text   \r\n日本語 wide 中文\r\n\x1b[1;31mred bold\x1b[0m and \x1b[44m   \x1b[0m\r\n" +
		"emoji 🎉 ✅ ok\r\n\ttab\x1b[5;30Hplaced\r\n" + strings.Repeat("w", 45)))
	want := strings.Split(emu.String(), "\n")
	got := screenLines(emu)
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d", len(got), len(want))
	}
	for i := range want {
		if w := strings.TrimRight(want[i], " "); got[i] != w {
			t.Errorf("line %d = %q, want %q", i, got[i], w)
		}
	}
}

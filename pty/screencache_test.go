package pty

import (
	"fmt"
	"io"
	"slices"
	"testing"

	"github.com/charmbracelet/x/vt"
)

// screenTokens are what FuzzScreenCache's input picks from: output that changes rows
// in every way the emulator knows (printing, wide characters, line feeds that scroll,
// erasing, inserting and deleting lines and cells, scroll regions, the alternate
// screen, a full reset), so that short inputs reach them.
var screenTokens = []string{
	"a", "hello world", "世界", "é", "\r", "\n", "\r\n", "\b", "\t",
	"\x1b[2J", "\x1b[J", "\x1b[1J", "\x1b[K", "\x1b[1K", "\x1b[2K", "\x1b[3J",
	"\x1b[H", "\x1b[5;3H", "\x1b[A", "\x1b[B", "\x1b[10C", "\x1b[D",
	"\x1b[L", "\x1b[3L", "\x1b[M", "\x1b[2M", "\x1b[@", "\x1b[4@", "\x1b[P", "\x1b[3P", "\x1b[X", "\x1b[5X",
	"\x1b[S", "\x1b[2T", "\x1b[2;5r", "\x1b[r", "\x1bM", "\x1bD", "\x1bE",
	"\x1b[?1049h", "\x1b[?1049l", "\x1b[?47h", "\x1b[?47l", "\x1bc",
	"\x1b[1;31mred\x1b[0m", "\x1b[?7l", "\x1b[?7h", "\x1b7", "\x1b8",
	"\x1b[4h", "\x1b[4l", "\x1b[?6h", "\x1b[?6l", "\x1b[3;10r\x1b[?6h\x1b[H",
}

// FuzzScreenCache holds a pane's screen text cache (lineCache) to screenLines, the
// whole screen read anew, after any output, resize, and pack and unpack of the
// screens: a row the cache failed to make again would be a stale screen the kernel
// judges an agent's state by.
func FuzzScreenCache(f *testing.F) {
	f.Add([]byte{0, 1, 200, 5, 200, 41, 0, 200, 44, 200, 2, 3, 200})
	f.Add([]byte{1, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 200, 1, 200, 24, 200, 33, 200})
	f.Add([]byte{1, 201, 20, 7, 200, 39, 1, 200, 40, 200, 44, 200})
	f.Add([]byte{0, 202, 200, 0, 200, 28, 5, 200, 30, 200, 36, 6, 6, 6, 6, 200})
	f.Add([]byte{1, 5, 1, 200, 43, 0, 200}) // a full reset drops the touched list: rows it cleared are stale unless noticed
	f.Fuzz(func(t *testing.T, ops []byte) {
		emu := vt.NewEmulator(20, 6)
		guardMargins(emu, func(int, bool) {}) // as newPane: the emulator panics on margins past the screen
		defer drainReplies(emu)()
		var c lineCache
		check := func(step int) {
			got, want := c.screen(emu), screenLines(emu)
			if !slices.Equal(got, want) {
				t.Fatalf("after op %d of %v: cached screen\n%q\nwant\n%q", step, ops, got, want)
			}
		}
		for i := 0; i < len(ops); i++ {
			switch op := int(ops[i]); {
			case op < len(screenTokens):
				_, _ = emu.Write([]byte(screenTokens[op]))
			case op == 200:
				check(i)
			case op == 201 && i+2 < len(ops):
				emu.Resize(1+int(ops[i+1])%40, 1+int(ops[i+2])%12)
				i += 2
			case op == 202:
				if pk := pack(emu, nil); pk != nil {
					c.drop()
					pk.unpack(0)
					pk.unpack(1)
				}
			default:
				_, _ = emu.Write([]byte{byte(op)})
			}
		}
		check(len(ops))
	})
}

// drainReplies reads the emulator's answers to terminal queries (a write of one
// blocks until they are read) until the returned stop closes their pipe, as a pane's
// close does.
func drainReplies(emu *vt.Emulator) (stop func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(io.Discard, emu)
	}()
	return func() {
		if w, ok := emu.InputPipe().(*io.PipeWriter); ok {
			_ = w.CloseWithError(io.EOF)
		}
		<-done
	}
}

// The cache makes again only the rows output touched: one redrawn status line of a
// 50-row screen is one row's work, not fifty.
func TestScreenCacheMakesOnlyTouchedRows(t *testing.T) {
	emu := vt.NewEmulator(80, 50)
	defer drainReplies(emu)()
	var c lineCache
	for y := range 50 {
		fmt.Fprintf(emu, "\x1b[%d;1Hrow %d", y+1, y)
	}
	c.screen(emu)
	_, _ = emu.Write([]byte("\x1b[50;1H\x1b[2K⠋ Working (3s) · 111 tokens"))
	touched := 0
	for _, l := range emu.Touched() {
		if l != nil {
			touched++
		}
	}
	if touched != 1 {
		t.Fatalf("%d rows touched by one status line; want 1", touched)
	}
	if got := c.screen(emu); got[49] != "⠋ Working (3s) · 111 tokens" || got[0] != "row 0" {
		t.Fatalf("cached screen rows 0 and 49: %q, %q", got[0], got[49])
	}
	for _, l := range emu.Touched() {
		if l != nil {
			t.Fatal("a read left rows marked touched: the next read would make them again")
		}
	}
}

package pty

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"

	"orcr/core"
)

// refTerm is the emulator alone, fed as the pane fed it before the fast path: 8 KiB writes,
// history drained after each.
type refTerm struct {
	emu  *vt.Emulator
	hist *history
}

func newRef(cols, rows int) *refTerm {
	emu := vt.NewEmulator(cols, rows)
	emu.SetScrollbackSize(16 * 1024)
	r := &refTerm{emu: emu, hist: newHistory(1 << 20)}
	emu.RegisterCsiHandler('J', func(params ansi.Params) bool { // as newPane does
		if n, _, _ := params.Param(0, 0); n == 3 {
			emu.ClearScrollback()
			r.hist.clear()
		}
		return false
	})
	return r
}

func (r *refTerm) write(b []byte) {
	for len(b) > 0 {
		n := min(len(b), slowPiece)
		_, _ = r.emu.Write(b[:n])
		r.hist.drain(r.emu)
		b = b[n:]
	}
}

func testPane(cols, rows int) *pane {
	// Never packed: the tests read the emulator's cells directly, however long they run.
	return newPane(&Host{opts: Options{Scrollback: 1 << 20, PackAfter: -1}, mem: core.NoMemoryReport{}}, "t", "t", 0, nil, cols, rows)
}

// floodInput builds output a program might write: plain lines of every length around the
// width (some wrap, some end exactly at the last column), bare CRs and LFs, and now and then
// escape sequences, controls and UTF-8 that must go through the emulator.
func floodInput(rng *rand.Rand, cols, size int) []byte {
	specials := []string{
		"\x1b[31m", "\x1b[0m", "\x1b[1;44m", "\x1b[2J", "\x1b[H", "\x1b[3;5H", "\x1b[K", "\x1b[2A",
		"\x1b[2;4r", "\x1b[r", "\x1b[?1049h", "\x1b[?1049l", "\x1b[?7l", "\x1b[?7h", "\x1b(0", "\x1b(B",
		"\x1b]0;title with plain text\r\nand lines\x07", "\x1bP1$qm\x1b\\", "\t", "\b", "héllo wörld", "字字",
		"\x1b[4h", "\x1b[4l", "\x0e", "\x0f", "\x1b[5S", "\x1bM", "\x1b7", "\x1b8", "\x1b[3J",
	}
	var b strings.Builder
	for b.Len() < size {
		switch r := rng.Intn(100); {
		case r < 3:
			b.WriteString(specials[rng.Intn(len(specials))])
		case r < 6:
			b.WriteString("\r")
		case r < 9:
			b.WriteString("\n")
		default:
			n := []int{0, 1, cols - 1, cols, cols + 1, 2 * cols, rng.Intn(3 * cols)}[rng.Intn(7)]
			for range n {
				b.WriteByte(byte(' ' + rng.Intn(95)))
			}
			b.WriteString("\r\n")
		}
	}
	return []byte(b.String())
}

func compareTerms(t *testing.T, what string, p *pane, r *refTerm) {
	t.Helper()
	got, want := strings.Join(screenLines(p.emu), "\n"), strings.Join(screenLines(r.emu), "\n")
	if got != want {
		t.Fatalf("%s: screen differs\n--- fast\n%s\n--- emulator\n%s", what, got, want)
	}
	if gc, wc := p.emu.CursorPosition(), r.emu.CursorPosition(); gc != wc {
		t.Fatalf("%s: cursor %v, emulator %v", what, gc, wc)
	}
	gh, wh := p.hist.tail(1<<20), r.hist.tail(1<<20)
	if strings.Join(gh, "\n") != strings.Join(wh, "\n") {
		for i := range min(len(gh), len(wh)) {
			if gh[i] != wh[i] {
				t.Fatalf("%s: history line %d of %d/%d: %q, emulator %q", what, i, len(gh), len(wh), gh[i], wh[i])
			}
		}
		t.Fatalf("%s: history has %d lines, emulator %d", what, len(gh), len(wh))
	}
}

// TestFeedMatchesEmulator is the fast path's contract: whatever the bytes and however they are
// split into reads, what can be read back (screen text, cursor, scrollback) is what the
// emulator alone makes of them.
func TestFeedMatchesEmulator(t *testing.T) {
	rng := rand.New(rand.NewSource(12))
	fastRuns := 0
	for iter := range 200 {
		cols, rows := 8+rng.Intn(30), 4+rng.Intn(8) // ≥ 4: the reference has no guard for ESC[2;4r
		in := floodInput(rng, cols, 2000+rng.Intn(30000))
		p, r := testPane(cols, rows), newRef(cols, rows)
		for off := 0; off < len(in); {
			n := min(len(in)-off, 1+rng.Intn(4096))
			p.mu.Lock()
			p.feed(in[off : off+n])
			p.mu.Unlock()
			r.write(in[off : off+n])
			off += n
			// The emulator may still hold back the last character; both flush the same way.
			_, _ = p.emu.Write([]byte{0})
			_, _ = r.emu.Write([]byte{0})
			p.hist.drain(p.emu)
			r.hist.drain(r.emu)
			step := in[off-n : off]
			compareTerms(t, fmt.Sprintf("case %d (%dx%d) after %d bytes, the last %d of them %q", iter, cols, rows, off, n, step[max(0, len(step)-600):]), p, r)
		}
		fastRuns += p.fast.runs
	}
	t.Logf("%d fast-path runs", fastRuns)
	if fastRuns == 0 {
		t.Fatal("the fast path never ran")
	}
}

// A plain flood takes the fast path: it scrolls a screenful per line feed through the model,
// not the emulator.
func TestFeedPlainFloodTakesFastPath(t *testing.T) {
	var b strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&b, "line %d of the flood, a little text to fill it\r\n", i)
	}
	p := testPane(200, 50)
	p.mu.Lock()
	p.feed([]byte(b.String()))
	p.mu.Unlock()
	r := newRef(200, 50)
	r.write([]byte(b.String()))
	compareTerms(t, "plain flood", p, r)
	if p.fast.runs == 0 {
		t.Fatal("a plain flood did not take the fast path")
	}
}

// Scroll margins past the screen made the emulator index past its buffer on the next scroll
// and panic in the pane's reader, taking the server down; they are ignored.
func TestMarginsPastTheScreenAreIgnored(t *testing.T) {
	p := testPane(20, 5)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.feed([]byte("\x1b[2;999rline\r\n\x1b[50;60r\x1b[5;1H\n\n\n\nend"))
	if s := strings.Join(screenLines(p.emu), "\n"); !strings.Contains(s, "end") {
		t.Fatalf("screen %q", s)
	}
}

// A string's payload split across reads (a byte at a time) is read as one: the pane's
// screen is the same as when the whole came in one read.
func TestStringPayloadSplitAcrossReads(t *testing.T) {
	in := []byte("ab\x1b]0;✳ Claude Code\x07cd\r\nab\x1b_✳ apc — é\x1b\\cd\r\nab\x1bP1$q✳\x1b\\cd\r\n")
	whole, split := testPane(40, 6), testPane(40, 6)
	whole.mu.Lock()
	whole.feed(in)
	whole.mu.Unlock()
	for i := range in {
		split.mu.Lock()
		split.feed(in[i : i+1])
		split.mu.Unlock()
	}
	got, want := strings.Join(screenLines(split.emu), "\n"), strings.Join(screenLines(whole.emu), "\n")
	if got != want || !strings.HasPrefix(want, "abcd\nabcd\nabcd") {
		t.Fatalf("byte at a time:\n%s\nwhole:\n%s", got, want)
	}
}

package pty

import (
	"strings"

	"github.com/charmbracelet/x/vt"
)

// history is a pane's scrollback as plain text lines in a ring. The emulator keeps
// scrolled-off lines as cells (112 bytes each, ~66 MB for 5000 lines of 100 columns)
// and drops the oldest with an O(n) shift per line; the pane instead moves new lines
// out of the emulator after every write, so its own scrollback stays a chunk long.
type history struct {
	lines []string // ring storage, len ≤ max
	head  int      // index of the oldest line once the ring is full
	max   int
}

func newHistory(max int) *history {
	return &history{max: max}
}

// push appends a line, dropping the oldest when full.
func (h *history) push(line string) {
	if len(h.lines) < h.max {
		h.lines = append(h.lines, line)
		return
	}
	h.lines[h.head] = line
	h.head = (h.head + 1) % h.max
}

// clear forgets every line.
func (h *history) clear() {
	h.lines, h.head = h.lines[:0], 0
}

// tail returns the last n lines, oldest first.
func (h *history) tail(n int) []string {
	n = min(n, len(h.lines))
	out := make([]string, 0, n)
	for i := len(h.lines) - n; i < len(h.lines); i++ {
		out = append(out, h.lines[(h.head+i)%len(h.lines)])
	}
	return out
}

// drain moves the lines the emulator scrolled off into h. The caller holds the lock
// that guards emu.
func (h *history) drain(emu *vt.Emulator) {
	sb := emu.Scrollback()
	if sb == nil || sb.Len() == 0 {
		return
	}
	for _, l := range sb.Lines() {
		h.push(strings.TrimRight(l.String(), " "))
	}
	sb.Clear()
}

package fast

import (
	"io"
	"unicode/utf8"
)

// table aligns tab-separated cells into columns exactly as text/tabwriter does with
// NewWriter(w, 0, 0, 2, ' ', 0), the writer orcr's tables use: cells end at a tab (or
// a vertical tab), lines at a newline (a form feed also ends the column blocks
// above it), and each column block is as wide as its widest cell plus two spaces.
// The fast path cannot import text/tabwriter: its import path sorts after every
// library's, so waiting for it would let those libraries' inits run first
// (doc.go). table_test.go checks the output against text/tabwriter's.
//
// Text is buffered until Flush. It never holds tabwriter's escape byte 0xff: it is
// made of strings decoded from JSON, which are valid UTF-8.
type table struct {
	w   io.Writer
	buf []byte
}

func (t *table) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	return len(p), nil
}

// Flush writes the aligned text.
func (t *table) Flush() error {
	_, err := t.w.Write(align(t.buf))
	t.buf = t.buf[:0]
	return err
}

// cell is one cell's text and its width in runes.
type cell struct {
	text  []byte
	width int
}

// align is text laid out as tabwriter lays it out.
func align(text []byte) []byte {
	var out []byte
	var lines [][]cell
	var line []cell
	start := 0
	for i, ch := range text {
		switch ch {
		case '\t', '\v', '\n', '\f':
			line = append(line, cell{text[start:i], utf8.RuneCount(text[start:i])})
			start = i + 1
			if ch == '\n' || ch == '\f' {
				lines = append(lines, line)
				line = nil
				if ch == '\f' {
					// A form feed ends the blocks: what is above is laid out alone.
					lines = append(lines, nil)
					out = layout(out, lines)
					lines = nil
				}
			}
		}
	}
	if start < len(text) {
		line = append(line, cell{text[start:], utf8.RuneCount(text[start:])})
	}
	lines = append(lines, line)
	return layout(out, lines)
}

// layout writes lines (the last one has no newline after it) in column blocks.
func layout(out []byte, lines [][]cell) []byte {
	f := formatter{lines: lines, out: out}
	f.format(0, len(lines))
	return f.out
}

type formatter struct {
	lines  [][]cell
	widths []int
	out    []byte
}

// format lays out lines [line0, line1) for the columns after those in widths: a
// column block is a run of lines that have a cell in the column (not counting a
// line's last cell, which no tab ends).
func (f *formatter) format(line0, line1 int) {
	column := len(f.widths)
	for this := line0; this < line1; this++ {
		if column >= len(f.lines[this])-1 {
			continue
		}
		f.writeLines(line0, this)
		line0 = this
		width := 0
		for ; this < line1; this++ {
			line := f.lines[this]
			if column >= len(line)-1 {
				break
			}
			width = max(width, line[column].width+2)
		}
		f.widths = append(f.widths, width)
		f.format(line0, this)
		f.widths = f.widths[:len(f.widths)-1]
		line0 = this
	}
	f.writeLines(line0, line1)
}

func (f *formatter) writeLines(line0, line1 int) {
	for i := line0; i < line1; i++ {
		for j, c := range f.lines[i] {
			f.out = append(f.out, c.text...)
			if j < len(f.widths) {
				for n := c.width; n < f.widths[j]; n++ {
					f.out = append(f.out, ' ')
				}
			}
		}
		if i+1 < len(f.lines) {
			f.out = append(f.out, '\n')
		}
	}
}

package ui

import (
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// fit makes s exactly w cells wide: truncated with an ellipsis or padded with spaces.
// Every line the dashboard draws goes through fit or frame, which is why nothing wraps.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	sw := width(s)
	if sw > w {
		s = ansi.Truncate(s, w, "…")
		sw = ansi.StringWidth(s)
	}
	if sw < w {
		s += strings.Repeat(" ", w-sw)
	}
	return s
}

// fitRight right-aligns s in w cells.
func fitRight(s string, w int) string {
	sw := width(s)
	if sw >= w {
		return fit(s, w)
	}
	return strings.Repeat(" ", w-sw) + s
}

// frame draws a rounded box of exactly w×h cells around body lines (clipped and padded),
// with title on the top edge.
func (c *common) frame(st, titleSt *lipgloss.Style, title string, body []string, w, h int) string {
	if w < 2 || h < 2 {
		return blank(w, h)
	}
	inner := w - 2
	var b strings.Builder
	b.Grow((w + 16) * h)
	if title != "" && inner > 4 {
		t := ansi.Truncate(" "+title+" ", inner-2, "…")
		b.WriteString(c.p(st, "╭─") + c.p(titleSt, t) + c.p(st, strings.Repeat("─", max(0, inner-1-width(t)))+"╮"))
	} else {
		b.WriteString(c.p(st, "╭"+strings.Repeat("─", inner)+"╮"))
	}
	side := c.p(st, "│")
	for i := 0; i < h-2; i++ {
		b.WriteByte('\n')
		line := ""
		if i < len(body) {
			line = body[i]
		}
		b.WriteString(side)
		b.WriteString(fit(line, inner))
		b.WriteString(side)
	}
	b.WriteByte('\n')
	b.WriteString(c.p(st, "╰"+strings.Repeat("─", inner)+"╯"))
	return b.String()
}

// width is ansi.StringWidth with a fast path for plain ASCII, which most of what the
// dashboard draws is.
func width(s string) int {
	for i := 0; i < len(s); i++ {
		if b := s[i]; b >= 0x80 || b < 0x20 {
			return ansi.StringWidth(s)
		}
	}
	return len(s)
}

// blank is a w×h block of spaces.
func blank(w, h int) string {
	if w <= 0 || h <= 0 {
		return ""
	}
	line := strings.Repeat(" ", w)
	lines := make([]string, h)
	for i := range lines {
		lines[i] = line
	}
	return strings.Join(lines, "\n")
}

// hjoin puts blocks of equal height side by side, line by line (cheaper than lipgloss
// joins and exact, because every block is already fitted).
func hjoin(blocks ...string) string {
	split := make([][]string, len(blocks))
	n := 0
	for i, bl := range blocks {
		split[i] = strings.Split(bl, "\n")
		n = max(n, len(split[i]))
	}
	var b strings.Builder
	for row := 0; row < n; row++ {
		if row > 0 {
			b.WriteByte('\n')
		}
		for _, s := range split {
			if row < len(s) {
				b.WriteString(s[row])
			}
		}
	}
	return b.String()
}

// overlay draws box centred over base, both made of fitted lines of width w.
func overlay(base, box string, w int) string {
	bl := strings.Split(base, "\n")
	ol := strings.Split(box, "\n")
	// A dialog's box is a frame: every line is as wide as its first, so one is
	// measured (measuring them all was half of a frame under a full-size dialog).
	bw := 0
	if len(ol) > 0 {
		bw = ansi.StringWidth(ol[0])
	}
	top := max(0, (len(bl)-len(ol))/2)
	left := max(0, (w-bw)/2)
	for i, l := range ol {
		r := top + i
		if r >= len(bl) {
			break
		}
		row := bl[r]
		bl[r] = ansi.Truncate(row, left, "") + l + ansi.TruncateLeft(row, left+bw, "")
	}
	return strings.Join(bl, "\n")
}

// lines splits text into at most the last n lines, dropping trailing blank ones.
func lastLines(text string, n int) []string {
	if n <= 0 || text == "" {
		return nil
	}
	ls := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	for len(ls) > 0 && strings.TrimSpace(ls[len(ls)-1]) == "" {
		ls = ls[:len(ls)-1]
	}
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return ls
}

// sanitize strips escape sequences and control characters from text that comes from a
// pane, so a program's output can never move our cursor or change our colours.
func sanitize(s string) string {
	s = ansi.Strip(s)
	return strings.Map(func(r rune) rune {
		if r == '\t' {
			return ' '
		}
		if r < 0x20 && r != '\n' || r == 0x7f {
			return -1
		}
		return r
	}, s)
}

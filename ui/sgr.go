package ui

import (
	"strings"
	"unicode/utf8"
)

// maxSGR bounds the parameters of one kept SGR sequence; a longer one is dropped (a
// real style is a few numbers, even with 24-bit colours and underline colours).
const maxSGR = 64

// sanitizeSGR makes an agent's styled screen text safe to draw inside the dashboard:
// it keeps SGR sequences (ESC [ digits ; : m — colours and attributes) and drops every
// other escape sequence (cursor moves, erases, modes, OSC titles and hyperlinks, DCS,
// APC, PM, SOS, charset switches), every control character but the newline (a tab
// becomes a space), the C1 controls and DEL; bytes that are not UTF-8 become U+FFFD. So
// whatever the agent printed can only colour its own lines: it cannot move the
// dashboard's cursor, clear it, change its title or its modes. A kept SGR cannot
// outlive its line: the preview resets the style at the end of every line it draws.
func sanitizeSGR(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == 0x1b:
			i = escape(&b, s, i)
			continue
		case c == '\n':
			b.WriteByte('\n')
		case c == '\t':
			b.WriteByte(' ')
		case c < 0x20 || c == 0x7f:
			// Other C0 controls (CR, BS, BEL, SI/SO …) are dropped.
		case c < utf8.RuneSelf:
			b.WriteByte(c)
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && n <= 1:
				b.WriteRune(utf8.RuneError)
			case r >= 0x80 && r <= 0x9f:
				// C1 controls (U+009B is CSI to some terminals) are dropped.
			default:
				b.WriteString(s[i : i+n])
			}
			i += n
			continue
		}
		i++
	}
	return b.String()
}

// escape handles the escape sequence at s[i] (an ESC), writing it to b only when it is
// an SGR, and returns the index after it. An unfinished sequence ends where a byte
// that cannot belong to it appears (that byte is then read as text), so a stray ESC
// costs the text after it nothing but the ESC.
func escape(b *strings.Builder, s string, i int) int {
	j := i + 1
	if j >= len(s) {
		return j
	}
	switch s[j] {
	case '[':
		// CSI: parameter bytes 0x30–0x3f, intermediates 0x20–0x2f, one final 0x40–0x7e.
		k := j + 1
		sgrOnly := true
		for k < len(s) && s[k] >= 0x30 && s[k] <= 0x3f {
			if !(s[k] >= '0' && s[k] <= '9' || s[k] == ';' || s[k] == ':') {
				sgrOnly = false // private markers (? < = >) are never SGR
			}
			k++
		}
		params := k - (j + 1)
		for k < len(s) && s[k] >= 0x20 && s[k] <= 0x2f {
			sgrOnly = false
			k++
		}
		if k >= len(s) || s[k] < 0x40 || s[k] > 0x7e {
			return k // unfinished: drop what was read, go on from the odd byte
		}
		if s[k] == 'm' && sgrOnly && params <= maxSGR {
			b.WriteString(s[i : k+1])
		}
		return k + 1
	case ']', 'P', 'X', '^', '_':
		// OSC, DCS, SOS, PM, APC: a string up to BEL or ST (ESC \). A newline ends an
		// unterminated one, so the lines after it still show.
		k := j + 1
		for k < len(s) {
			switch s[k] {
			case 0x07:
				return k + 1
			case '\n':
				return k
			case 0x1b:
				if k+1 < len(s) && s[k+1] == '\\' {
					return k + 2
				}
				return k
			}
			k++
		}
		return k
	}
	// Two-byte escapes (ESC 7, ESC c, ESC M …) and nF escapes (ESC ( B …): any
	// intermediates, then one final byte.
	k := j
	for k < len(s) && s[k] >= 0x20 && s[k] <= 0x2f {
		k++
	}
	if k < len(s) && s[k] >= 0x30 && s[k] <= 0x7e {
		return k + 1
	}
	return k
}

// styledFit fits a line that may carry SGR sequences into exactly w cells: truncated
// with an ellipsis, its style reset at the end so it cannot colour what follows, then
// padded with unstyled spaces.
func styledFit(s string, w int) string {
	if strings.IndexByte(s, 0x1b) < 0 {
		return fit(s, w)
	}
	if w <= 0 {
		return ""
	}
	t := fit(s, w)
	// fit padded after the line's last sequence: put the reset before the padding so
	// a background colour left open does not paint it.
	pad := len(t) - len(strings.TrimRight(t, " "))
	return t[:len(t)-pad] + "\x1b[m" + t[len(t)-pad:]
}

// carrySGR makes every line stand on its own: a style set on one line and not reset
// by its end (tmux's capture carries its pen across lines) is set again at the start
// of the next, since the preview resets the style at the end of every line it draws
// and may show any line first.
func carrySGR(lines []string) []string {
	var open []string // SGR sequences since the last reset
	for i, l := range lines {
		if len(open) > 0 {
			lines[i] = strings.Join(open, "") + l
		}
		for k := 0; k < len(l); {
			e := strings.IndexByte(l[k:], 0x1b)
			if e < 0 {
				break
			}
			k += e
			m := strings.IndexByte(l[k:], 'm')
			if m < 0 {
				break
			}
			seq := l[k : k+m+1]
			if seq == "\x1b[m" || seq == "\x1b[0m" {
				open = open[:0]
			} else if len(open) < 8 {
				open = append(open, seq)
			}
			k += m + 1
		}
	}
	return lines
}

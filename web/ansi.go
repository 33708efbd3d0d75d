package web

import (
	"fmt"
	"html"
	"strconv"
	"strings"
	"unicode/utf8"
)

// style is one cell's look as SGR sets it.
type style struct {
	fg, bg                            string // "" default, "cN" the palette's colour N
	bold, dim, italic, underline, inv bool
}

// span opens a span for st, or "" for the default look.
func (st style) span() string {
	fg, bg := st.fg, st.bg
	if st.inv {
		fg, bg = bg, fg
		if fg == "" {
			fg = "bg" // the default background as a foreground
		}
		if bg == "" {
			bg = "fg"
		}
	}
	var cls []string
	if fg != "" {
		cls = append(cls, "f"+fg)
	}
	if bg != "" {
		cls = append(cls, "b"+bg)
	}
	if st.bold {
		cls = append(cls, "sb")
	}
	if st.dim {
		cls = append(cls, "sd")
	}
	if st.italic {
		cls = append(cls, "si")
	}
	if st.underline {
		cls = append(cls, "su")
	}
	if len(cls) == 0 {
		return ""
	}
	return `<span class="` + strings.Join(cls, " ") + `">`
}

// ANSIToHTML renders a screen's text with SGR sequences as HTML: the text escaped,
// each run of one style in a span with classes for the 256 palette colours and the
// attributes (true colours are snapped to the 256 palette, so the page's strict
// content policy needs no inline style). Every other control sequence is dropped. The
// input is an agent's output and trusted for nothing.
func ANSIToHTML(s string) string {
	var b strings.Builder
	b.Grow(len(s) + len(s)/4)
	var cur style
	open := ""
	var text strings.Builder
	flush := func() {
		if text.Len() == 0 {
			return
		}
		b.WriteString(html.EscapeString(text.String()))
		text.Reset()
	}
	setStyle := func(st style) {
		sp := st.span()
		if sp == open {
			cur = st
			return
		}
		flush()
		if open != "" {
			b.WriteString("</span>")
		}
		b.WriteString(sp)
		open, cur = sp, st
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == 0x1b:
			n, params, final := escape(s[i:])
			if final == 'm' {
				setStyle(applySGR(cur, params))
			}
			i += n
		case c == '\n':
			text.WriteByte('\n')
			i++
		case c == '\t':
			text.WriteString("    ")
			i++
		case c < 0x20 || c == 0x7f:
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size <= 1 {
				text.WriteRune('\uFFFD')
				i++
				continue
			}
			if r >= 0x80 && r < 0xa0 { // C1 controls
				i += size
				continue
			}
			text.WriteString(s[i : i+size])
			i += size
		}
	}
	flush()
	if open != "" {
		b.WriteString("</span>")
	}
	return b.String()
}

// escape measures the escape sequence at the start of s: its length, a CSI's
// parameters and its final byte (0 for anything but CSI).
func escape(s string) (n int, params string, final byte) {
	if len(s) < 2 {
		return len(s), "", 0
	}
	switch s[1] {
	case '[': // CSI: parameters and intermediates, then a final byte 0x40–0x7e
		for j := 2; j < len(s); j++ {
			c := s[j]
			if c >= 0x40 && c <= 0x7e {
				return j + 1, s[2:j], c
			}
			if c < 0x20 || c > 0x3f && c < 0x40 {
				return j, "", 0
			}
		}
		return len(s), "", 0
	case ']', 'P', '_', '^': // OSC, DCS, APC, PM: to BEL or ST
		for j := 2; j < len(s); j++ {
			if s[j] == 0x07 {
				return j + 1, "", 0
			}
			if s[j] == 0x1b && j+1 < len(s) && s[j+1] == '\\' {
				return j + 2, "", 0
			}
		}
		return len(s), "", 0
	}
	if strings.IndexByte("()*+-./#%", s[1]) >= 0 && len(s) >= 3 {
		return 3, "", 0 // a charset designation: ESC ( B
	}
	return 2, "", 0 // ESC and one byte (keypad modes, save cursor)
}

// applySGR applies one SGR sequence's parameters to st.
func applySGR(st style, params string) style {
	if params == "" {
		return style{}
	}
	ps := strings.FieldsFunc(params, func(r rune) bool { return r == ';' || r == ':' })
	num := func(i int) int {
		if i >= len(ps) {
			return -1
		}
		n, err := strconv.Atoi(ps[i])
		if err != nil || n > 1<<16 {
			return -1
		}
		return n
	}
	for i := 0; i < len(ps); i++ {
		p := num(i)
		switch {
		case p == 0:
			st = style{}
		case p == 1:
			st.bold = true
		case p == 2:
			st.dim = true
		case p == 3:
			st.italic = true
		case p == 4:
			st.underline = true
		case p == 7:
			st.inv = true
		case p == 22:
			st.bold, st.dim = false, false
		case p == 23:
			st.italic = false
		case p == 24:
			st.underline = false
		case p == 27:
			st.inv = false
		case p >= 30 && p <= 37:
			st.fg = "c" + strconv.Itoa(p-30)
		case p >= 90 && p <= 97:
			st.fg = "c" + strconv.Itoa(p-90+8)
		case p == 39:
			st.fg = ""
		case p >= 40 && p <= 47:
			st.bg = "c" + strconv.Itoa(p-40)
		case p >= 100 && p <= 107:
			st.bg = "c" + strconv.Itoa(p-100+8)
		case p == 49:
			st.bg = ""
		case p == 38 || p == 48:
			var col string
			switch num(i + 1) {
			case 5:
				if n := num(i + 2); n >= 0 && n < 256 {
					col = "c" + strconv.Itoa(n)
				}
				i += 2
			case 2:
				r, g, bl := num(i+2), num(i+3), num(i+4)
				if r >= 0 && r < 256 && g >= 0 && g < 256 && bl >= 0 && bl < 256 {
					col = "c" + strconv.Itoa(cube(r, g, bl))
				}
				i += 4
			default:
				i = len(ps)
			}
			if p == 38 {
				st.fg = col
			} else {
				st.bg = col
			}
		}
	}
	return st
}

// cube snaps a true colour to the 256 palette: the 6×6×6 cube or the grey ramp,
// whichever is nearer.
func cube(r, g, b int) int {
	level := func(v int) int {
		if v < 48 {
			return 0
		}
		if v < 115 {
			return 1
		}
		return (v - 35) / 40
	}
	lv := []int{0, 95, 135, 175, 215, 255}
	cr, cg, cb := level(r), level(g), level(b)
	cd := sq(lv[cr]-r) + sq(lv[cg]-g) + sq(lv[cb]-b)
	avg := (r + g + b) / 3
	gi := 23
	if avg < 238 {
		gi = max(0, (avg-3)/10)
	}
	gv := 8 + gi*10
	gd := sq(gv-r) + sq(gv-g) + sq(gv-b)
	if gd < cd {
		return 232 + gi
	}
	return 16 + 36*cr + 6*cg + cb
}

func sq(x int) int { return x * x }

// paletteCSS is the 256 colours as classes: fcN (foreground) and bcN (background).
func paletteCSS() string {
	base := []string{"#1e1e1e", "#cd3131", "#0dbc79", "#e5e510", "#2472c8", "#bc3fbc", "#11a8cd", "#e5e5e5",
		"#666666", "#f14c4c", "#23d18b", "#f5f543", "#3b8eea", "#d670d6", "#29b8db", "#ffffff"}
	var b strings.Builder
	for n := 0; n < 256; n++ {
		var col string
		switch {
		case n < 16:
			col = base[n]
		case n < 232:
			v := []int{0, 95, 135, 175, 215, 255}
			k := n - 16
			col = fmt.Sprintf("#%02x%02x%02x", v[k/36], v[(k/6)%6], v[k%6])
		default:
			g := 8 + (n-232)*10
			col = fmt.Sprintf("#%02x%02x%02x", g, g, g)
		}
		fmt.Fprintf(&b, ".fc%d{color:%s}.bc%d{background:%s}", n, col, n, col)
	}
	return b.String()
}

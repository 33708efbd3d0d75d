package pty

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// A flood of text (a build log, `cat` of a big file) made the embedded host crawl: every line
// feed at the bottom of the screen scrolls it, and the emulator scrolls by copying every cell
// of the screen (200×50 cells of ~100 bytes) up one row, so 50 MB of text took minutes at full
// CPU. Most of that work is for rows nobody will see: in a run of plain text long enough to
// scroll the whole screen away, only the last screenful stays visible, and everything else
// only becomes scrollback — which this package keeps as text anyway (history.go).
//
// So the pane reads its pty in large chunks and feeds them through feed: runs of plain text
// (printable ASCII, CR, LF) that scroll at least a screenful are applied to a byte model of
// the screen, their scrolled-off lines go straight into the history, and the emulator only
// gets the final screen, drawn with cursor moves that never scroll. Everything else — escape
// sequences, controls, UTF-8, or a run that leaves part of the old screen visible — goes
// through the emulator as before. The run's effect on what can be read (screen text, cursor,
// scrollback lines) is exactly the emulator's; what is lost is style detail only the emulator
// tracks, such as blank cells a line feed scrolled in being drawn as printed spaces.

// slowPiece bounds one emulator write, so one write's scroll-off always fits the emulator's
// own scrollback (history.drain empties it after each piece).
const slowPiece = 8 << 10

// scanner states: a small copy of the DEC parser, enough to know when the emulator's parser
// is in its ground state, where a plain byte is printed and not part of a sequence.
const (
	sGround = iota
	sEsc
	sEscInter // ESC followed by intermediates; inter holds the first
	sCSI
	sOSC
	sString // DCS, SOS, PM, APC: until ST
)

// fastState is what feed knows about the emulator beyond its public API. Its judgements err
// one way: when unsure it sends bytes through the emulator.
type fastState struct {
	st     int
	inter  byte
	unsure bool    // the parser may not be where st says (a C1 or odd byte); cleared by the next ESC
	region [2]bool // a scroll region narrower than the screen is set, main and alternate screen
	g      [4]byte // designated character sets, 'B' is ASCII
	gl     int     // character set shifted into GL
	runs   int     // runs that took the fast path; tests read it
}

func (f *fastState) reset() {
	f.st, f.unsure, f.region, f.gl = sGround, false, [2]bool{}, 0
	f.g = [4]byte{'B', 'B', 'B', 'B'}
}

// step advances the scanner over one byte the emulator is given.
func (f *fastState) step(c byte) {
	if c == 0x18 || c == 0x1a { // CAN, SUB abort any sequence
		f.st = sGround
		return
	}
	if c == 0x1b {
		f.st, f.unsure = sEsc, false
		return
	}
	switch f.st {
	case sGround:
		switch {
		case c == 0x0e: // SO
			f.gl = 1
		case c == 0x0f: // SI
			f.gl = 0
		case c >= 0x80 && c < 0xc0, c == 0xc2, c > 0xf4:
			// A C1 control, or UTF-8 that may decode to one (U+0080–U+009F start with 0xC2):
			// the emulator's parser may now be in a sequence this scanner cannot see.
			f.unsure = true
		}
	case sEsc:
		switch {
		case c == '[':
			f.st = sCSI
		case c == ']':
			f.st = sOSC
		case c == 'P' || c == 'X' || c == '^' || c == '_':
			f.st = sString
		case c >= 0x20 && c <= 0x2f:
			f.st, f.inter = sEscInter, c
		case c >= 0x30 && c <= 0x7e:
			f.st = sGround
			switch c {
			case 'c': // RIS
				f.reset()
			case 'n':
				f.gl = 2
			case 'o':
				f.gl = 3
			case 'N', 'O': // single shifts: the next character only
				f.unsure = true
			}
		}
	case sEscInter:
		if c >= 0x30 && c <= 0x7e {
			f.st = sGround
			switch f.inter {
			case '(', ')', '*', '+':
				f.g[f.inter-'('] = c
			}
		}
	case sCSI:
		if c >= 0x40 && c <= 0x7e {
			f.st = sGround
		}
	case sOSC:
		if c == 0x07 {
			f.st = sGround
		}
	}
}

func plainByte(c byte) bool { return c >= 0x20 && c < 0x7f || c == '\r' || c == '\n' }

// feed gives b to the emulator, taking the fast path for long plain runs, and copies it to the
// attached streams. The caller holds p.mu, which feed may release and take again between
// pieces; the history is drained when it returns.
//
// The emulator's parser reads a string's payload a byte at a time, as 8-bit controls: a
// 0x9C ends an OSC (and a DCS) as ST would, and in an APC, PM or SOS any byte from 0x80
// leaves the string. In UTF-8 those bytes are parts of characters — "✳" is E2 9C B3 — so
// claude's title "\x1b]0;✳ Claude Code\x07" printed " Claude Code" over its input line, where
// the next keys it echoed then read "probedtextde" (xterm and tmux, UTF-8 first, keep the
// string whole). So the emulator gets such bytes as '?', inside the string: nothing it
// draws changes, only a title or link text it keeps and orcr does not read. The attached
// streams get b as the program wrote it.
func (p *pane) feed(b []byte) {
	p.unpackScreens()
	p.armPack()
	f := &p.fast
	rows := p.emu.Height()
	start := 0
	var fixed []byte // b with the string bytes the parser would misread replaced; nil: none
	emuBytes := func(i, j int) []byte {
		if fixed != nil {
			return fixed[i:j]
		}
		return b[i:j]
	}
	for i := 0; i < len(b); {
		if f.st != sGround || f.unsure || !plainByte(b[i]) {
			if f.misread(b[i]) {
				if fixed == nil {
					fixed = bytes.Clone(b)
				}
				fixed[i] = '?'
			}
			f.step(b[i])
			i++
			continue
		}
		j, lfs := i, 0
		for j < len(b) && plainByte(b[j]) {
			if b[j] == '\n' {
				lfs++
			}
			j++
		}
		if lfs >= 2*rows { // enough to scroll a screenful wherever the cursor is
			p.slowWrite(emuBytes(start, i), b[start:i])
			p.plainRun(b[i:j])
			start = j
		}
		i = j // plain bytes in the ground state leave the scanner where it is
	}
	p.slowWrite(emuBytes(start, len(b)), b[start:])
}

// misread reports whether the emulator's parser, in the string the scanner is in, would
// take c as an 8-bit control that ends the string, where in UTF-8 it is part of a
// character (feed).
func (f *fastState) misread(c byte) bool {
	switch f.st {
	case sOSC:
		return c == 0x9c
	case sString:
		return c >= 0x80
	}
	return false
}

// plainRun applies a run of plain bytes, through the fast path where it can. When the screen is
// in a state the model does not cover (the cursor at the last column, a wide character on
// screen), the emulator takes the run's first line and the fast path is tried on the rest:
// a line or two usually puts the cursor at column 0 of an ASCII screen.
func (p *pane) plainRun(run []byte) {
	for try := 0; try < 3; try++ {
		if lfsIn(run) < 2*p.emu.Height() {
			break
		}
		if p.fastPlain(run) {
			return
		}
		lf := bytes.IndexByte(run, '\n')
		p.slowWrite(run[:lf+1], run[:lf+1])
		run = run[lf+1:]
	}
	p.slowWrite(run, run)
}

// slowWrite gives b to the emulator in pieces, draining the history after each, and lets
// screen reads in between: under a flood the fast path cannot take (every line coloured) the
// emulator needs ~10 ms a piece on a busy machine. Attached streams get each piece of out (b
// as the program wrote it, which feed may have changed for the emulator; as long) once the
// emulator has it, so one attaching in between is drawn that state and sent only what follows.
func (p *pane) slowWrite(b, out []byte) {
	for len(b) > 0 {
		n := min(len(b), slowPiece)
		_, _ = p.emu.Write(b[:n])
		p.hist.drain(p.emu)
		p.emit(out[:n])
		b, out = b[n:], out[n:]
		if len(b) > 0 {
			p.mu.Unlock() // a reader that waited over 1 ms is handed the lock (sync.Mutex starvation mode)
			p.mu.Lock()
		}
	}
}

// emit copies output the emulator has taken to the attached streams.
func (p *pane) emit(b []byte) {
	if len(p.streams) == 0 || len(b) == 0 {
		return
	}
	chunk := append([]byte(nil), b...)
	for s := range p.streams {
		s.deliver(chunk)
	}
}

// fastPlain applies a run of plain bytes that holds at least two screenfuls of line feeds, or
// reports false (having changed nothing visible) when the emulator is in a state the model
// does not cover.
func (p *pane) fastPlain(run []byte) bool {
	emu, f := p.emu, &p.fast
	m := p.modes.on // nil reads as "never changed": the emulator's defaults
	if emu.IsAltScreen() || f.region[0] || f.g[0] != 'B' || f.gl != 0 ||
		wasSet(m, ansi.ModeAutoWrap, false) || wasSet(m, ansi.ModeInsertReplace, true) ||
		wasSet(m, ansi.ModeLineFeedNewLine, true) || wasSet(m, ansi.ModeLeftRightMargin, true) {
		return false
	}
	// The emulator holds back the last printed character until it knows no combining mark
	// follows; a NUL (ignored otherwise) makes it place it, so the cells are current.
	_, _ = emu.Write([]byte{0})
	p.hist.drain(emu)
	cols, rows := emu.Width(), emu.Height()
	cur := emu.CursorPosition()
	if cur.X >= cols-1 || cur.Y < 0 || cur.Y >= rows {
		return false // at the last column a pending wrap would be invisible to us
	}
	scr := make([][]byte, rows)
	for y := range rows {
		row := make([]byte, cols)
		for x := range cols {
			c := emu.CellAt(x, y)
			switch {
			case c == nil || c.Content == "" && c.Width <= 1 || c.Content == " ":
				row[x] = ' '
			case len(c.Content) == 1 && c.Width == 1 && c.Content[0] > 0x20 && c.Content[0] < 0x7f:
				row[x] = c.Content[0]
			default:
				return false // wide or non-ASCII cells: the byte model does not hold them
			}
		}
		scr[y] = row
	}
	// Every old row must scroll off, so the final screen is the run's alone.
	if lfsIn(run) < rows+(rows-1-cur.Y) {
		return false
	}
	head, x, y, phantom := 0, cur.X, cur.Y, false
	row := func(i int) []byte { return scr[(head+i)%rows] }
	index := func() {
		if y == rows-1 {
			p.hist.push(trimRight(scr[head]))
			blank(scr[head])
			head = (head + 1) % rows
		} else {
			y++
		}
		phantom = false
	}
	for _, c := range run {
		switch c {
		case '\r':
			x, phantom = 0, false
		case '\n':
			index()
		default:
			if phantom {
				index()
				x = 0
			}
			row(y)[x] = c
			if x == cols-1 {
				phantom = true
			} else {
				x++
			}
		}
	}
	// Draw the final screen with cursor moves and erases only: nothing scrolls, so nothing
	// reaches the emulator's scrollback. The cursor row goes last so a pending wrap is left
	// exactly as printing it would leave it.
	var out []byte
	drawRow := func(i int, full bool) {
		out = append(out, "\x1b["...)
		out = strconv.AppendInt(out, int64(i+1), 10)
		out = append(out, ";1H"...)
		r := row(i)
		if full {
			out = append(out, r...)
			return
		}
		t := trimRight(r)
		out = append(out, t...)
		if len(t) < cols {
			out = append(out, "\x1b[K"...)
		}
	}
	for i := range rows {
		if i != y {
			drawRow(i, false)
		}
	}
	drawRow(y, phantom)
	if !phantom {
		out = append(out, "\x1b["...)
		out = strconv.AppendInt(out, int64(y+1), 10)
		out = append(out, ';')
		out = strconv.AppendInt(out, int64(x+1), 10)
		out = append(out, 'H')
	}
	_, _ = emu.Write(out)
	f.runs++
	p.emit(run)
	return true
}

// wasSet reports whether the program last set mode to on (a mode never touched keeps the
// emulator's default: autowrap on, the others off).
func wasSet(m map[ansi.Mode]bool, mode ansi.Mode, on bool) bool {
	v, ok := m[mode]
	return ok && v == on
}

func lfsIn(b []byte) int {
	n := 0
	for _, c := range b {
		if c == '\n' {
			n++
		}
	}
	return n
}

func trimRight(b []byte) string {
	n := len(b)
	for n > 0 && b[n-1] == ' ' {
		n--
	}
	return string(b[:n])
}

func blank(b []byte) {
	for i := range b {
		b[i] = ' '
	}
}

// Reading: the kernel hands a pty's output over in pieces of at most 4 KiB, which is too
// little for the fast path (a run must scroll a screenful). A read that comes back large is
// taken as a flood, and more is gathered for up to gatherFor before feeding, so the
// emulator sees whole screenfuls; a small read (an echo, a prompt) is fed at once.
const (
	gatherFrom = 2 << 10
	gatherFor  = 16 * time.Millisecond // a flood's screen is brought up to date at least this often
)

// readSmall is the buffer a pane's reader waits with; a read that fills gatherFrom of
// it is a flood, gathered into a 64 KiB buffer from floodBufs. The reader of an idle
// pane held a 64 KiB buffer on its stack (6.4 MB for 100 idle agents); the kernel hands
// a pty's output over in pieces of at most 4 KiB, so a small buffer loses nothing.
const readSmall = 4 << 10

var floodBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// readOut reads the pty master (masterReader).
func (p *pane) readOut(b []byte) (int, error) {
	if p.rd == nil {
		return p.ptmx.Read(b)
	}
	return p.rd.read(b)
}

// readChunk reads the next output into small and returns it; output that comes in
// large reads is gathered into a pooled buffer, which done gives back once the output
// has been fed.
func (p *pane) readChunk(small []byte) (out []byte, done func(), err error) {
	n, err := p.readOut(small)
	if err != nil || n < gatherFrom {
		return small[:n], func() {}, err
	}
	bp := floodBufs.Get().(*[]byte)
	buf := *bp
	n = copy(buf, small[:n])
	done = func() { floodBufs.Put(bp) }
	_ = p.ptmx.SetReadDeadline(time.Now().Add(gatherFor))
	defer p.ptmx.SetReadDeadline(time.Time{})
	for n < len(buf) {
		m, err := p.readOut(buf[n:])
		n += m
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return buf[:n], done, nil
		}
		if err != nil {
			return buf[:n], done, err
		}
	}
	return buf[:n], done, nil
}

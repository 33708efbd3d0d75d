package pty

import (
	"image/color"
	"reflect"
	"strings"
	"time"
	"unsafe"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"
)

// A pane's emulator keeps two screens (main and alternate) as arrays of cells, 112
// bytes each whatever they show: a 200x50 pane holds 2.2 MB even when it shows one
// line and waits for a key, so 100 idle agents held 220 MB of the server. A pane whose
// output has been quiet for a while has its screens packed instead: each row as runs
// of cells that share a style (one byte per cell for plain ASCII text), a blank row as
// nothing. Everything else the emulator knows (cursor, modes, scroll region, saved
// cursor, charsets) stays in it untouched, so unpacking gives back the very same cells
// and the emulator carries on as if nothing happened. Reads of a packed pane are
// answered from the runs; output, a resize or an attach unpacks it first.

// defaultPackAfter is how long a pane's output must be quiet before its screens are
// packed (Options.PackAfter). Agents waiting for input are quiet for minutes; one that
// works prints at least every few seconds (a spinner, a timer), so working panes stay
// unpacked and pay no packing churn.
const defaultPackAfter = 5 * time.Second

// cellRun is a stretch of one row's cells: a text run (text != "") is one cell per
// byte of text, each an ASCII character of width 1 with cell's style and link; a
// repeat run is n copies of cell.
type cellRun struct {
	cell uv.Cell
	text string
	n    int
}

// packed is a pane's two screens while packed.
type packed struct {
	bufs  [2]*uv.Buffer  // the emptied buffers, refilled by unpack
	rows  [2][][]cellRun // per screen, per row; a nil row is blank (all uv.EmptyCell)
	cols  int
	freed int // bytes of cells packing let go, less what the runs take
}

// screens finds emu's main and alternate screens. vt keeps them unexported, so they
// are reached by field name (as shrinkParser reaches the parser); if a later vt renames
// or retypes them, it reports nil and panes are simply never packed
// (TestIdlePaneIsPacked then fails).
func screens(emu *vt.Emulator) *[2]vt.Screen {
	f := reflect.ValueOf(emu).Elem().FieldByName("scrs")
	if !f.IsValid() || f.Type() != reflect.TypeFor[[2]vt.Screen]() {
		return nil
	}
	return (*[2]vt.Screen)(unsafe.Pointer(f.UnsafeAddr()))
}

// screenBuffers finds the cell buffers of emu's main and alternate screens, reached
// by field name like the screens.
func screenBuffers(emu *vt.Emulator) ([2]*uv.Buffer, bool) {
	var out [2]*uv.Buffer
	scrs := screens(emu)
	if scrs == nil {
		return out, false
	}
	for i := range scrs {
		bf := reflect.ValueOf(&scrs[i]).Elem().FieldByName("buf")
		if !bf.IsValid() || bf.Type() != reflect.TypeFor[*uv.RenderBuffer]() {
			return out, false
		}
		rb := *(**uv.RenderBuffer)(unsafe.Pointer(bf.UnsafeAddr()))
		if rb == nil || rb.Buffer == nil {
			return out, false
		}
		out[i] = rb.Buffer
	}
	return out, true
}

// emulatorScrollback is the size of the emulator's own scrollback: it only holds what
// one write scrolls off (the history drains it after every piece of at most slowPiece,
// 8 KiB, so at most 8 Ki lines); history keeps the real scrollback as text.
const emulatorScrollback = 16 * 1024

// trimScrollback gives emu's main screen an empty scrollback that grows only as lines
// scroll off, and the alternate screen none. vt's own starts with room for 1,000 lines
// on each screen (48 KiB a pane) and keeps the room of its busiest write (and the
// cells of the lines it held) after the history drains it; the alternate screen's is
// never read (vt.Emulator.Scrollback is the main screen's). The caller has drained it.
func trimScrollback(emu *vt.Emulator) {
	scrs := screens(emu)
	if scrs == nil {
		emu.SetScrollbackSize(emulatorScrollback)
		return
	}
	sb := vt.NewScrollback(1)
	sb.SetMaxLines(emulatorScrollback)
	scrs[0].SetScrollback(sb)
	scrs[1].SetScrollback(nil)
}

// pack packs emu's screens and empties its cell buffers, or returns nil (having
// changed nothing) when they cannot be reached or would not pack smaller than a
// quarter of their cells (a screen of every cell in its own colour stays as it is).
// hidden, when not nil, is the screen not shown, still packed (unpackScreens): its
// runs are taken as they are.
func pack(emu *vt.Emulator, hidden *hiddenScreen) *packed {
	bufs, ok := screenBuffers(emu)
	if !ok {
		return nil
	}
	shown := 0
	if emu.IsAltScreen() {
		shown = 1
	}
	pk := &packed{bufs: bufs, cols: bufs[shown].Width()}
	if hidden != nil && (hidden.scr == shown || hidden.cols != pk.cols) {
		return nil
	}
	cells, cost := 0, 0
	for i, b := range bufs {
		if hidden != nil && i == hidden.scr {
			pk.rows[i] = hidden.rows
			continue
		}
		if b.Width() != pk.cols {
			return nil
		}
		rows := make([][]cellRun, len(b.Lines))
		for y, line := range b.Lines {
			if len(line) != pk.cols {
				return nil
			}
			rows[y] = packLine(line)
			for _, r := range rows[y] {
				cost += int(unsafe.Sizeof(r)) + len(r.text)
			}
		}
		cells += len(b.Lines) * pk.cols
		pk.rows[i] = rows
	}
	size := cells * int(unsafe.Sizeof(uv.Cell{}))
	if cost > size/4 {
		return nil
	}
	pk.freed = size - cost
	for _, b := range bufs {
		b.Lines = nil
	}
	if sb := emu.Scrollback(); sb != nil && sb.Len() == 0 {
		trimScrollback(emu)
	}
	return pk
}

// unpack refills the buffer of screen scr (0 main, 1 alternate) with the cells it held.
func (pk *packed) unpack(scr int) { refill(pk.bufs[scr], pk.rows[scr], pk.cols) }

// hidden is screen scr, left packed while the other is shown (unpackScreens).
func (pk *packed) hidden(scr int) *hiddenScreen {
	return &hiddenScreen{buf: pk.bufs[scr], rows: pk.rows[scr], cols: pk.cols, scr: scr}
}

// hiddenScreen is the screen a pane does not show, kept packed while the shown one
// has its cells back: an agent draws on one screen at a time (claude on the main one,
// full-screen programs on the alternate), so a pane that prints holds one screen's
// cells, not both (1.1 MB at 200x50). Nothing in the emulator reads or writes the
// screen it does not show but a switch of screens (DEC modes 47, 1047, 1049), a full
// reset (RIS) and a resize, and the pane gives it its cells back before each
// (unhide).
type hiddenScreen struct {
	buf  *uv.Buffer
	rows [][]cellRun
	cols int
	scr  int
}

// refill gives the hidden screen its cells back.
func (h *hiddenScreen) refill() { refill(h.buf, h.rows, h.cols) }

// refill fills b with rows of runs, cols cells each.
func refill(b *uv.Buffer, rows [][]cellRun, cols int) {
	lines := make([]uv.Line, len(rows))
	for y, runs := range rows {
		line := make(uv.Line, cols)
		fillLine(line, runs)
		lines[y] = line
	}
	b.Lines = lines
}

// fillLine sets line's cells to what runs hold, blank past them.
func fillLine(line uv.Line, runs []cellRun) {
	x := 0
	for _, r := range runs {
		if r.text != "" {
			for k := range len(r.text) {
				line[x] = r.cell
				line[x].Content = r.text[k : k+1]
				x++
			}
			continue
		}
		for range r.n {
			line[x] = r.cell
			x++
		}
	}
	for ; x < len(line); x++ {
		line[x] = uv.EmptyCell
	}
}

// packLine packs one row; a row of nothing but blank cells packs to nil.
func packLine(line uv.Line) []cellRun {
	end := len(line)
	for end > 0 && line[end-1] == uv.EmptyCell {
		end--
	}
	if end == 0 {
		return nil
	}
	var runs []cellRun
	for x := 0; x < end; {
		c := &line[x]
		j := x + 1
		if asciiCell(c) {
			for j < end && asciiCell(&line[j]) && sameAttrs(c, &line[j]) {
				j++
			}
			var b strings.Builder
			b.Grow(j - x)
			for k := x; k < j; k++ {
				b.WriteString(line[k].Content)
			}
			runs = append(runs, cellRun{cell: *c, text: b.String()})
		} else {
			for j < end && line[j].Content == c.Content && sameAttrs(c, &line[j]) {
				j++
			}
			runs = append(runs, cellRun{cell: *c, n: j - x})
		}
		x = j
	}
	return runs
}

// asciiCell reports whether c is one printable ASCII character of width 1.
func asciiCell(c *uv.Cell) bool {
	return len(c.Content) == 1 && c.Width == 1 && c.Content[0] >= 0x20 && c.Content[0] < 0x7f
}

// sameAttrs reports whether a and b differ at most in their content.
func sameAttrs(a, b *uv.Cell) bool {
	return a.Width == b.Width && a.Link == b.Link && a.Style.Attrs == b.Style.Attrs &&
		a.Style.Underline == b.Style.Underline && sameColor(a.Style.Fg, b.Style.Fg) &&
		sameColor(a.Style.Bg, b.Style.Bg) && sameColor(a.Style.UnderlineColor, b.Style.UnderlineColor)
}

// sameColor reports whether a and b are the same colour value, of the same type (so
// the redraw of a packed pane writes the same sequences as before).
func sameColor(a, b color.Color) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	t := reflect.TypeOf(a)
	return t == reflect.TypeOf(b) && t.Comparable() && a == b
}

// lines returns the text of every row of screen scr, as screenLines does for an
// unpacked emulator.
func (pk *packed) lines(scr int) []string {
	rows := pk.rows[scr]
	out := make([]string, len(rows))
	var b strings.Builder
	for y, runs := range rows {
		b.Reset()
		end := 0
		for _, r := range runs {
			if r.text != "" {
				b.WriteString(r.text)
				if t := strings.TrimRight(r.text, " "); t != "" {
					end = b.Len() - (len(r.text) - len(t))
				}
				continue
			}
			c := &r.cell
			if c.Width == 0 && c.Content == "" {
				continue // the second column of a wide character
			}
			for range r.n {
				switch c.Content {
				case "", " ":
					b.WriteByte(' ')
				default:
					b.WriteString(c.Content)
					end = b.Len()
				}
			}
		}
		out[y] = b.String()[:end]
	}
	return out
}

// styledLines returns every row of screen scr with its styles, as styledScreenLines
// does for an unpacked emulator.
func (pk *packed) styledLines(scr int) []string {
	rows := pk.rows[scr]
	out := make([]string, len(rows))
	line := make(uv.Line, pk.cols)
	for y, runs := range rows {
		if runs == nil {
			continue
		}
		fillLine(line, runs)
		out[y] = strings.TrimRight(line.Render(), " ")
	}
	return out
}

// armPack notes output (or an unpack) now and makes sure the pane's quiet timer is
// armed. An armed timer is left alone: it fires PackAfter after it was armed, and
// packQuiet arms it again for what is left when output came meanwhile. Resetting it
// on every output moved a timer in the runtime's heap 200 times a second with 20
// agents redrawing a status line (bench/pty BenchmarkStatusLine20VsRawTmux); now it
// fires once per PackAfter while output flows. The caller holds p.mu.
func (p *pane) armPack() {
	d := p.h.opts.PackAfter
	if d < 0 {
		return
	}
	if d == 0 {
		d = defaultPackAfter
	}
	p.lastOut = time.Now()
	if p.packArmed {
		return
	}
	p.packArmed = true
	if p.packTimer == nil {
		p.packTimer = time.AfterFunc(d, p.packQuiet)
		return
	}
	p.packTimer.Reset(d)
}

// packQuiet packs the pane's screens once its output has been quiet for PackAfter.
func (p *pane) packQuiet() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.gone:
		p.packArmed = false
		return
	default:
	}
	d := p.h.opts.PackAfter
	if d == 0 {
		d = defaultPackAfter
	}
	if p.packed != nil {
		p.packArmed = false
		return
	}
	// Output since the timer was armed: the pane is not quiet yet.
	if left := d - time.Since(p.lastOut); left > 0 {
		p.packTimer.Reset(left)
		return
	}
	p.packArmed = false
	if p.repack() {
		p.text.drop()
	}
}

// Memory that packing lets go is garbage only until the next collection, and an idle
// server allocates next to nothing, so that collection came from the runtime's
// two-minute timer: 100 freshly idle agents kept ~180 MB of dead cells and the RSS
// they had for up to two minutes. The host reports every byte it lets go
// (Options.Memory, core.MemoryReport) and the server's one memory policy decides when
// the process collects and hands it back to the OS; the host itself never does.

// unpackScreens gives the emulator the cells of the screen it shows back before
// anything that needs them (output, a redraw); the other stays packed (hiddenScreen)
// until a switch, a reset or a resize needs it (unhide). The caller holds p.mu.
func (p *pane) unpackScreens() {
	if p.packed == nil {
		return
	}
	shown := 0
	if p.emu.IsAltScreen() {
		shown = 1
	}
	p.packed.unpack(shown)
	p.hidden = p.packed.hidden(1 - shown)
	p.packed = nil
	p.armPack()
}

// unhide gives the screen not shown its cells back: before the emulator switches
// screens, resets or resizes. The caller holds p.mu.
func (p *pane) unhide() {
	if p.hidden == nil {
		return
	}
	p.hidden.refill()
	p.hidden = nil
}

// unhideOnSwitch makes the emulator give a pane's hidden screen its cells back (unhide)
// before it handles what touches the screen not shown: a switch of screens (DEC
// private modes 47, 1047, 1049, set or reset) and a full reset (RIS). The handlers
// run inside feed, under p.mu, ahead of the emulator's own (they return false).
func (p *pane) unhideOnSwitch(emu *vt.Emulator) {
	modes := func(params ansi.Params) bool {
		params.ForEach(-1, func(_, m int, _ bool) {
			switch m {
			case 47, 1047, 1049:
				p.unhide()
			}
		})
		return false
	}
	emu.RegisterCsiHandler(ansi.Command('?', 0, 'h'), modes)
	emu.RegisterCsiHandler(ansi.Command('?', 0, 'l'), modes)
	emu.RegisterEscHandler('c', func() bool { p.unhide(); return false })
}

// repack packs the pane's screens (pack), the hidden one as it is: true when it did.
// The caller holds p.mu.
func (p *pane) repack() bool {
	pk := pack(p.emu, p.hidden)
	if pk == nil {
		return false
	}
	p.packed, p.hidden = pk, nil
	p.h.mem.Freed(int64(pk.freed))
	return true
}

package pty

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"
	cpty "github.com/creack/pty"

	"orcr/core"
)

// errExited is returned when input is sent to a pane whose process has ended.
var errExited = errors.New("pane process has exited")

// Write limits: a program that stops reading its input fills the tty buffer, and a
// write must not then hang forever.
const (
	defaultWriteTimeout = 30 * time.Second
	drainTimeout        = 500 * time.Millisecond // output still in flight after exit
	reapTimeout         = 5 * time.Second        // after SIGKILL
)

// pane is one program on one pty with its emulator.
type pane struct {
	h    *Host
	id   string
	name string
	pid  int
	cmd  *exec.Cmd
	ptmx *os.File
	rd   *masterReader // reads ptmx for readLoop; nil where it could not be made

	mu      sync.Mutex // guards emu, hist, streams and modes
	emu     *vt.Emulator
	hist    *history
	streams map[*stream]struct{}
	modes   modeTracker
	fast    fastState // what feed knows of the emulator (flood.go)
	// packed holds the screens' cells while the pane is quiet (pack.go); the emulator's
	// own buffers are empty then. packTimer fires PackAfter after lastOut (it is
	// armed while packArmed, and re-arms itself while output goes on).
	packed *packed
	// hidden is the screen not shown while the shown one has its cells (pack.go).
	hidden    *hiddenScreen
	packTimer *time.Timer
	packArmed bool
	lastOut   time.Time
	// text is the screen's rows as read last; a read makes again only the rows the
	// emulator marked touched since (screenText).
	text lineCache

	writeMu sync.Mutex     // serializes writes to ptmx and their deadlines
	replies chan []byte    // the emulator's answers to terminal queries, to the pty
	replyW  *io.PipeWriter // closing it ends the reply pump

	dirty atomic.Bool // output since the coalescer's last scan

	closing   atomic.Bool
	closeOnce sync.Once
	known     []int         // descendants seen by signal; only close touches it
	exitCode  *int          // set before waitDone closes; nil when unknown (adopted)
	waitDone  chan struct{} // the process has been reaped
	readDone  chan struct{} // the reader saw the end of the pty
	replyDone chan struct{} // the reply writer has finished
	gone      chan struct{} // the pane was closed; streams end

	// waitRelease releases the waiter's count in h.wg exactly once: when the waiter
	// ends, or when Export hands the process on while cmd.Wait still blocks.
	waitRelease sync.Once
	// watch detects the exit of an adopted process (not our child); nil for launched.
	watch *exitWatch
}

// startPane starts spec on a new pty and the pane's goroutines.
func startPane(h *Host, id string, spec core.LaunchSpec) (*pane, error) {
	env := spec.Env
	if env == nil {
		env = []string{} // nil would make exec inherit the server's environment
	}
	argv := spec.Argv
	if spec.Confine != nil && len(spec.Confine.Argv) > 0 {
		// Confined without the launcher: the program itself, from a confined thread.
		argv = spec.Confine.Argv
	}
	path, err := lookPath(argv[0], env, spec.Cwd)
	if err != nil {
		return nil, err
	}
	if spec.Cwd != "" {
		if st, err := os.Stat(spec.Cwd); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("working directory %q is not a directory", spec.Cwd)
		}
	}
	cmd := &exec.Cmd{Path: path, Args: argv, Dir: spec.Cwd, Env: env}
	size := &cpty.Winsize{Rows: uint16(spec.Rows), Cols: uint16(spec.Cols)}
	var ptmx *os.File
	if spec.Confine != nil && len(spec.Confine.Argv) > 0 {
		ptmx, err = startConfined(cmd, size, spec.Confine)
	} else {
		// StartWithSize makes the child a session leader with the pty as its controlling
		// terminal, so its process group is the pane and Close can kill it whole.
		ptmx, err = cpty.StartWithSize(cmd, size)
	}
	if err != nil {
		return nil, err
	}
	if spec.Confine != nil && spec.Confine.Started != nil && len(spec.Confine.Argv) > 0 {
		spec.Confine.Started(cmd.Process.Pid)
	}
	if ptmx, err = pollable(ptmx); err != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		return nil, err
	}
	p := newPane(h, id, spec.Name, cmd.Process.Pid, ptmx, spec.Cols, spec.Rows)
	p.cmd = cmd
	h.wg.Add(4)
	go p.readLoop()
	go p.replyPump()
	go p.replyWriter()
	go p.waitLoop()
	return p, nil
}

// maxNotice bounds what a confinement shows on the pane before its program starts:
// the pty's buffer takes it whole, so the write never waits for a reader.
const maxNotice = 2048

// startConfined starts cmd on a pty as StartWithSize does, but forked from an OS
// thread that c confined (the sandbox without a launcher process, §16): the pty is
// opened here, and c.Run forks the program from its confined thread, so the child
// inherits the confinement and the rest of the server never has it.
func startConfined(cmd *exec.Cmd, size *cpty.Winsize, c *core.ThreadConfine) (*os.File, error) {
	ptmx, tty, err := cpty.Open()
	if err != nil {
		return nil, err
	}
	defer tty.Close()
	if err := cpty.Setsize(ptmx, size); err != nil {
		ptmx.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	err = c.Run(func(notice string) error {
		if notice != "" {
			if len(notice) > maxNotice {
				notice = notice[:maxNotice]
			}
			_, _ = tty.WriteString(notice)
		}
		return cmd.Start()
	})
	if err != nil {
		ptmx.Close()
		return nil, err
	}
	return ptmx, nil
}

// newPane builds a pane around a running process's pty master with a fresh emulator
// of cols×rows; the caller starts its goroutines.
func newPane(h *Host, id, name string, pid int, ptmx *os.File, cols, rows int) *pane {
	// vt.NewEmulator allocates a 4 MiB parser buffer (and, where panes are not
	// packed, both screens' cells: newEmulator), garbage a moment later
	// (shrinkParser). Ten launches at once (a for_each's max_parallel) held ten of
	// them live together:
	// the live heap swung by up to 60 MB, the GC's goal with it, and the server's
	// RSS followed the goal. Built one at a time, at most one is live.
	h.building.Lock()
	defer h.building.Unlock()
	emu, blank := newEmulator(cols, rows, h.opts.PackAfter >= 0)
	trimScrollback(emu) // pack.go
	if shrinkParser(emu, parserDataSize) {
		// vt.NewEmulator's 4 MiB parser buffer is garbage now: a burst of short-lived
		// panes (a for_each of instant programs) makes 4 MiB of it per pane, so it
		// counts towards a return of memory to the OS as packing's cells do.
		h.mem.Freed(vtParserDataSize)
	}
	replyW, _ := emu.InputPipe().(*io.PipeWriter)
	rd, _ := newMasterReader(ptmx) // only a nil or closed file fails: its reads fail too
	p := &pane{
		h:         h,
		id:        id,
		name:      name,
		pid:       pid,
		ptmx:      ptmx,
		rd:        rd,
		emu:       emu,
		hist:      newHistory(h.opts.Scrollback),
		streams:   map[*stream]struct{}{},
		replies:   make(chan []byte, 64),
		replyW:    replyW,
		waitDone:  make(chan struct{}),
		readDone:  make(chan struct{}),
		replyDone: make(chan struct{}),
		gone:      make(chan struct{}),
	}
	emu.SetCallbacks(vt.Callbacks{
		EnableMode:  func(m ansi.Mode) { p.modes.set(m, true) },
		DisableMode: func(m ansi.Mode) { p.modes.set(m, false) },
	})
	// ED 3 (what `clear` sends to erase the scrollback) must reach the history too;
	// returning false lets the emulator's own handler run as well.
	emu.RegisterCsiHandler('J', func(params ansi.Params) bool {
		if n, _, _ := params.Param(0, 0); n == 3 {
			// Lines scrolled off earlier in this write are still in the emulator's
			// scrollback, not yet drained: they go too.
			emu.ClearScrollback()
			p.hist.clear()
		}
		return false
	})
	// Track DECSTBM for feed: its fast path needs the whole screen to scroll.
	guardMargins(emu, func(scr int, region bool) { p.fast.region[scr] = region })
	p.unhideOnSwitch(emu)
	p.fast.reset()
	p.mu.Lock()
	p.packAtStart(blank)
	p.mu.Unlock()
	return p
}

// newEmulator makes a pane's emulator of cols×rows. vt.NewEmulator allocates both
// screens' cells at that size (2.2 MB at 200x50), which packAtStart lets go a moment
// later: on a machine where a page fault costs ~11 µs (this project's CI VMs) those
// fresh megabytes were most of the server's CPU per spawn. With blank (the pane is
// packed at once), the emulator is made at 1×1 and resized with both screens already
// cols×rows of one shared blank row, so the resize allocates no cells and sets what
// follows the size (scroll regions, tab stops, cursor); packAtStart packs those rows
// to nothing and the first output unpacks real ones. The shared row must never be
// written: packAtStart packs it at once, or gives each row a cell array of its own.
func newEmulator(cols, rows int, blank bool) (*vt.Emulator, bool) {
	if !blank {
		return vt.NewEmulator(cols, rows), false
	}
	emu := vt.NewEmulator(1, 1)
	bufs, ok := screenBuffers(emu)
	if !ok {
		return vt.NewEmulator(cols, rows), false
	}
	row := make(uv.Line, cols)
	for i := range row {
		row[i] = uv.EmptyCell
	}
	for _, b := range bufs {
		b.Lines = make([]uv.Line, rows)
		for y := range b.Lines {
			b.Lines[y] = row
		}
	}
	emu.Resize(cols, rows)
	return emu, true
}

// guardMargins registers the emulator's DECSTBM handler. Margins past the screen are
// ignored (returning true): the emulator takes them as given and its next scroll
// indexes past its buffer and panics, which any program could trigger with ESC[1;999r.
// Otherwise track hears which screen (0 main, 1 alternate: each has its own margins)
// now has a scroll region narrower than the screen, and returning false lets the
// emulator's own handler run.
func guardMargins(emu *vt.Emulator, track func(scr int, region bool)) {
	emu.RegisterCsiHandler('r', func(params ansi.Params) bool {
		top, _, _ := params.Param(0, 1)
		bottom, _, _ := params.Param(1, 0)
		if top > emu.Height() || bottom > emu.Height() {
			return true
		}
		scr := 0
		if emu.IsAltScreen() {
			scr = 1
		}
		track(scr, top > 1 || bottom > 0 && bottom < emu.Height())
		return false
	})
}

// packAtStart packs a new pane's blank screens at once: vt.NewEmulator allocates both
// screens' cells (2.2 MB at 200x50) up front, and a program that has printed nothing
// needs none of them, so they are garbage from the start instead of live for the
// quiet period. The first output unpacks (feed), as after any quiet spell. A
// 1,000-item for_each of silent shell programs (`echo … > $ORCR_OUTPUT`) then never
// holds a screen at all; a program that prints holds its cells from its first byte,
// as before. Where packing is off (PackAfter < 0) or impossible, the quiet timer is
// armed as before, so a pane that never prints still packs. With blank the screens
// are newEmulator's shared blank row: packed at once, they were never memory to let
// go; unpacked, each row gets cells of its own. The caller holds p.mu.
func (p *pane) packAtStart(blank bool) {
	if blank {
		if p.packed = pack(p.emu, nil); p.packed != nil {
			return
		}
		ownRows(p.emu)
	} else if p.h.opts.PackAfter >= 0 && p.repack() {
		return
	}
	p.armPack()
}

// ownRows gives every row of emu's screens blank cells of its own (newEmulator's
// share one).
func ownRows(emu *vt.Emulator) {
	bufs, _ := screenBuffers(emu) // newEmulator reached them
	for _, b := range bufs {
		refill(b, make([][]cellRun, b.Height()), b.Width())
	}
}

// readLoop feeds pty output to the emulator and the attached streams until the pty
// ends (EIO once every holder of the terminal is gone, or Close).
func (p *pane) readLoop() {
	defer p.h.wg.Done()
	defer close(p.readDone)
	// Large reads: a flood costs one lock and one fast-path check per 64 KiB (flood.go);
	// feed lets readers in between the pieces it hands the emulator.
	var small [readSmall]byte
	for {
		out, done, err := p.readChunk(small[:])
		if len(out) > 0 {
			p.mu.Lock()
			p.feed(out)
			p.mu.Unlock()
			p.h.activity(p)
		}
		done()
		if err != nil {
			return
		}
	}
}

// replyPump moves the emulator's answers (device attributes, cursor reports) into
// replies without ever blocking the emulator on the pty: TUIs that query the terminal
// hang until they get an answer, and a full tty must not stall the reader.
func (p *pane) replyPump() {
	defer p.h.wg.Done()
	defer close(p.replies)
	buf := make([]byte, 1024)
	for {
		n, err := p.emu.Read(buf)
		if n > 0 {
			select {
			case p.replies <- append([]byte(nil), buf[:n]...):
			default:
				p.h.log.Debug("dropped terminal reply", "pane", p.id, "bytes", n)
			}
		}
		if err != nil {
			return
		}
	}
}

// replyWriter writes the emulator's answers to the pty.
func (p *pane) replyWriter() {
	defer p.h.wg.Done()
	defer close(p.replyDone)
	for b := range p.replies {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = p.write(ctx, b)
		cancel()
	}
}

// waitLoop reaps the process, lets its last output reach the emulator, and reports
// the exit.
func (p *pane) waitLoop() {
	defer p.waitRelease.Do(p.h.wg.Done)
	_ = p.cmd.Wait()
	code := exitCode(p.cmd.ProcessState)
	p.exitCode = &code
	select {
	case <-p.readDone:
	case <-time.After(drainTimeout): // a background child still holds the terminal
	}
	close(p.waitDone)
	p.h.log.Debug("exited", "pane", p.id, "code", code)
	p.h.exited(p, p.exitCode)
}

// exitCode is the shell convention: the status, or 128+signal for a signal death.
func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// dead reports whether the process has ended.
func (p *pane) dead() bool {
	select {
	case <-p.waitDone:
		return true
	default:
		return false
	}
}

// info describes the pane.
func (p *pane) info() core.PaneInfo {
	info := core.PaneInfo{ID: p.id, Name: p.name, PID: p.pid}
	if p.dead() {
		info.Dead = true
		if p.exitCode != nil {
			code := *p.exitCode
			info.ExitCode = &code
		}
	}
	return info
}

// write sends b to the program's input, bounded by ctx (or defaultWriteTimeout).
func (p *pane) write(ctx context.Context, b []byte) error {
	if p.dead() {
		return fmt.Errorf("pane %s: %w", p.id, errExited)
	}
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(defaultWriteTimeout)
	}
	_ = p.ptmx.SetWriteDeadline(deadline)
	hookDone := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		_ = p.ptmx.SetWriteDeadline(time.Now())
		close(hookDone)
	})
	_, err := p.ptmx.Write(b)
	if !stop() {
		// The cancel hook ran; let it finish so it cannot cut the next writer short.
		<-hookDone
		err = cmpErr(err, ctx.Err())
	}
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return fmt.Errorf("pane %s is not reading its input: %w", p.id, err)
		}
		return fmt.Errorf("write to pane %s: %w", p.id, err)
	}
	return nil
}

// cmpErr returns err, or alt when err is nil.
func cmpErr(err, alt error) error {
	if err != nil {
		return err
	}
	return alt
}

// read renders the screen, or the last lines of scrollback plus screen.
func (p *pane) read(lines int, styled bool) core.Screen {
	var history []string
	p.mu.Lock()
	cur := p.emu.CursorPosition()
	cols, rows := p.emu.Width(), p.emu.Height()
	if lines > 0 && !p.emu.IsAltScreen() {
		history = p.hist.tail(lines)
	}
	var screen []string
	if pk := p.packed; pk != nil {
		scr := 0
		if p.emu.IsAltScreen() {
			scr = 1
		}
		if styled {
			screen = pk.styledLines(scr)
		} else {
			screen = pk.lines(scr)
		}
		cols, rows = pk.cols, len(screen)
	} else if styled {
		screen = styledScreenLines(p.emu)
	} else {
		screen = p.text.screen(p.emu)
	}
	out := append(history, screen...)
	p.mu.Unlock()

	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	if lines > 0 && len(out) > lines {
		out = out[len(out)-lines:]
	}
	return core.Screen{
		Text:    strings.Join(out, "\n"),
		Cols:    cols,
		Rows:    rows,
		CursorX: cur.X,
		CursorY: cur.Y,
	}
}

// screenLines returns the text of every row of the screen, trailing spaces trimmed.
// Reading cells directly is several times faster than the emulator's String, which
// compares every cell's style and splits and joins the text twice.
func screenLines(emu *vt.Emulator) []string {
	cols, rows := emu.Width(), emu.Height()
	out := make([]string, rows)
	var b strings.Builder
	for y := range rows {
		out[y] = screenLine(emu, &b, y, cols)
	}
	return out
}

// screenLine is row y of screenLines; b is scratch space.
func screenLine(emu *vt.Emulator, b *strings.Builder, y, cols int) string {
	b.Reset()
	b.Grow(cols)
	end := 0 // length of b up to the last non-space
	for x := 0; x < cols; x++ {
		c := emu.CellAt(x, y)
		if c == nil || (c.Width == 0 && c.Content == "") {
			continue // the second column of a wide character
		}
		switch c.Content {
		case "", " ":
			b.WriteByte(' ')
		default:
			b.WriteString(c.Content)
			end = b.Len()
		}
	}
	return b.String()[:end]
}

// lineCache keeps a pane's screen text between reads. The kernel reads a working
// agent's screen up to four times a second to judge its state, and making every
// row's text again each time was a fifth of the server's CPU with 20 agents
// redrawing a status line (bench/pty BenchmarkStatusLine20VsRawTmux), where one row
// changes. The emulator's screen buffer marks each row a change touches (its
// Touched list, kept for renderers; nothing else here reads it): a read makes again
// only those rows and clears the marks. Everything that changes rows without marking
// them replaces the list instead (a reset, a resize, entering the alternate screen
// all set it to nil, and the next mark makes a new one), so a list that is not the
// one the cache cleared, another emulator, the other screen or another size makes
// every row again. FuzzScreenCache holds it to screenLines after any output.
type lineCache struct {
	emu     *vt.Emulator
	alt     bool
	cols    int
	touched **uv.LineData // the Touched list's first entry when the rows were made
	lines   []string
	b       strings.Builder
}

// screen returns the text of every row of emu's screen, as screenLines does; the
// caller must not change the slice (the cache keeps it).
func (c *lineCache) screen(emu *vt.Emulator) []string {
	cols, rows := emu.Width(), emu.Height()
	alt := emu.IsAltScreen()
	t := emu.Touched()
	if c.emu != emu || c.alt != alt || c.cols != cols || len(c.lines) != rows || len(t) < rows || &t[0] != c.touched {
		c.lines = make([]string, rows)
		for y := range rows {
			c.lines[y] = screenLine(emu, &c.b, y, cols)
		}
	} else {
		for y := range rows {
			if t[y] != nil {
				c.lines[y] = screenLine(emu, &c.b, y, cols)
			}
		}
	}
	clear(t)
	c.emu, c.alt, c.cols, c.touched = emu, alt, cols, nil
	if len(t) > 0 {
		c.touched = &t[0]
	}
	return c.lines
}

// drop forgets the rows (a pane that packs its screens keeps no copy of them).
func (c *lineCache) drop() { *c = lineCache{} }

// styledScreenLines returns every row of the screen with SGR sequences for its cells'
// styles (and OSC 8 for their links), trailing spaces trimmed.
func styledScreenLines(emu *vt.Emulator) []string {
	cols, rows := emu.Width(), emu.Height()
	out := make([]string, rows)
	line := make(uv.Line, cols)
	for y := range rows {
		for x := range cols {
			if c := emu.CellAt(x, y); c != nil {
				line[x] = *c
			} else {
				line[x] = uv.EmptyCell
			}
		}
		out[y] = strings.TrimRight(line.Render(), " ")
	}
	return out
}

// resize resizes the emulator, then the pty (which signals SIGWINCH), so output drawn
// for the new size lands on a screen of that size.
func (p *pane) resize(cols, rows int) error {
	p.mu.Lock()
	p.unpackScreens()
	p.unhide() // the emulator resizes both screens
	p.emu.Resize(cols, rows)
	p.fast.region = [2]bool{} // a resize resets the scroll regions
	p.hist.drain(p.emu)
	p.mu.Unlock()
	if err := setSize(p.ptmx, cols, rows); err != nil {
		return fmt.Errorf("resize pane %s: %w", p.id, err)
	}
	return nil
}

// close kills the process group (SIGHUP, then SIGKILL after grace), releases the pty
// and waits for the pane's goroutines to finish their work. Only the first call acts.
func (p *pane) close(ctx context.Context, grace time.Duration) {
	p.closeOnce.Do(func() {
		p.closing.Store(true)
		if !p.dead() {
			p.signal(syscall.SIGHUP)
			timer := time.NewTimer(grace)
			select {
			case <-p.waitDone:
			case <-timer.C:
			case <-ctx.Done():
			}
			timer.Stop()
			if !p.dead() {
				p.signal(syscall.SIGKILL)
				select {
				case <-p.waitDone:
				case <-time.After(reapTimeout):
					p.h.log.Warn("process survived SIGKILL", "pane", p.id, "pid", p.pid)
				}
			}
		} else {
			// Background children of a dead pane may still hold the terminal.
			p.signal(syscall.SIGKILL)
		}
		if p.watch != nil {
			p.watch.halt() // a process that survived SIGKILL must not hold up Shutdown
		}
		_ = p.ptmx.Close()
		<-p.readDone
		if p.replyW != nil {
			_ = p.replyW.CloseWithError(io.EOF)
		}
		close(p.gone)
		p.letGo()
	})
}

// letGo gives back a closed pane's screens at once. The pane itself may outlive its
// close for a while: its quiet timer (armPack) holds it until it fires, PackAfter
// after the last output, and an attach that raced the close may still hold it. With
// its 2.2 MB of cells still in it, a 1,000-item for_each of instant programs (20 panes
// a second) kept the last ~100 closed panes' cells alive, 214 MB of the server's live
// heap when the run ended. Its screens are packed (so anything still reading the pane
// sees what it showed) and what that frees is counted towards a return of memory to
// the OS, as a quiet pane's is: a burst of closed panes is a burst of garbage.
func (p *pane) letGo() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.packTimer != nil {
		p.packTimer.Stop()
		p.packArmed = false
	}
	if p.packed != nil {
		return
	}
	if p.repack() {
		p.text.drop()
	}
}

// parserDataSize is the room the emulator's parser keeps for the payload of one OSC,
// DCS, APC, PM or SOS string. vt.NewEmulator sets 4 MiB, which every pane held for
// good (100 idle panes: ~400 MB of live heap) although what panes use (titles, OSC 8
// hyperlinks, colour queries) fits in a few hundred bytes. A longer string is cut at
// this size: its handler sees the first 4 KiB (a title or URL truncated; an OSC 52
// clipboard or image payload, which the host does not act on, incomplete) and the
// bytes after the terminator are parsed as usual.
const parserDataSize = 4 << 10

// vtParserDataSize is the parser buffer vt.NewEmulator allocates (see parserDataSize).
const vtParserDataSize = 4 << 20

// shrinkParser sets the data buffer of emu's parser to size bytes and reports whether
// it could. vt offers no option for it and keeps the parser unexported, so the field
// is reached by name; if a later vt renames or retypes it, nothing is changed (the pane
// works as before, with the big buffer) and TestIdlePaneHeap fails.
func shrinkParser(emu *vt.Emulator, size int) bool {
	f := reflect.ValueOf(emu).Elem().FieldByName("parser")
	if !f.IsValid() || f.Type() != reflect.TypeFor[*ansi.Parser]() {
		return false
	}
	// The field is unexported, so reflect cannot read it; its address can.
	parser := *(**ansi.Parser)(unsafe.Pointer(f.UnsafeAddr()))
	if parser == nil {
		return false
	}
	parser.SetDataSize(size)
	return true
}

package pty

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// streamBuffer is how many output chunks a stream may fall behind before it is cut
// off; the reader never waits for a slow client.
const streamBuffer = 1024

// ErrStreamLagged ends a stream whose client could not keep up with the output.
var ErrStreamLagged = errors.New("attach stream fell too far behind the pane's output")

// stream is one attached client of a pane.
type stream struct {
	ch      chan []byte
	lagged  chan struct{}
	lagOnce sync.Once
}

// deliver queues a chunk of output, cutting the stream off when it is full. It is
// called with the pane's lock held and never blocks.
func (s *stream) deliver(b []byte) {
	select {
	case s.ch <- b:
	default:
		s.lagOnce.Do(func() { close(s.lagged) })
	}
}

// modeTracker remembers the terminal modes the program set (cursor keys, bracketed
// paste, mouse, alternate screen…), so an attaching terminal can be put in the same
// state. It is fed from emulator callbacks, which run under the pane's lock.
type modeTracker struct {
	order []ansi.Mode
	on    map[ansi.Mode]bool
}

func (m *modeTracker) set(mode ansi.Mode, on bool) {
	if m.on == nil {
		m.on = map[ansi.Mode]bool{}
	}
	if _, seen := m.on[mode]; !seen {
		m.order = append(m.order, mode)
	}
	m.on[mode] = on
}

// sequence returns the escape sequences that restore the tracked modes.
func (m *modeTracker) sequence() string {
	var b strings.Builder
	for _, mode := range m.order {
		if m.on[mode] {
			b.WriteString(ansi.SetMode(mode))
		} else {
			b.WriteString(ansi.ResetMode(mode))
		}
	}
	return b.String()
}

// Stream attaches a raw byte stream to the pane: it first writes a redraw of the
// current screen (modes, content with styles, cursor), then copies every new chunk of
// pty output to w and everything read from r to the pty, until ctx ends (ctx.Err()),
// the pane's process exits (nil, after its last output), the pane is closed, or r ends
// (nil on EOF). A nil r makes an output-only stream; a nil w discards output. Several
// streams may attach to one pane at once. Detach keys are the
// client's business: every byte from r goes to the program.
//
// The input copier blocks in r.Read; when r has SetReadDeadline (net.Conn, os.File on
// a pollable descriptor) Stream interrupts it and waits for it before returning,
// otherwise it ends at its next read after Stream returned, which the caller triggers
// by closing r.
func (h *Host) Stream(ctx context.Context, pane string, r io.Reader, w io.Writer) error {
	p, err := h.pane(pane)
	if err != nil {
		return err
	}
	if w == nil {
		w = io.Discard
	}
	s := &stream{ch: make(chan []byte, streamBuffer), lagged: make(chan struct{})}
	p.mu.Lock()
	redraw := p.redraw()
	p.streams[s] = struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.streams, s)
		p.mu.Unlock()
	}()
	if _, err := io.WriteString(w, redraw); err != nil {
		return fmt.Errorf("attach %s: write redraw: %w", pane, err)
	}

	var inDone chan error // stays nil (never ready) for an output-only stream
	if r != nil {
		inCtx, cancelIn := context.WithCancel(ctx)
		inDone = make(chan error, 1)
		go func() { inDone <- p.copyInput(inCtx, r) }()
		defer func() {
			cancelIn()
			if d, ok := r.(interface{ SetReadDeadline(time.Time) error }); ok {
				if d.SetReadDeadline(time.Now()) == nil {
					<-inDone
					_ = d.SetReadDeadline(time.Time{})
				}
			}
		}()
	}

	for {
		select {
		case b := <-s.ch:
			if _, err := w.Write(b); err != nil {
				return fmt.Errorf("attach %s: write: %w", pane, err)
			}
		case <-s.lagged:
			return fmt.Errorf("attach %s: %w", pane, ErrStreamLagged)
		case <-ctx.Done():
			return ctx.Err()
		case <-p.gone:
			return fmt.Errorf("attach %s: pane closed", pane)
		case err := <-inDone:
			inDone <- err // for the deferred wait
			if err != nil && !errors.Is(err, io.EOF) {
				return fmt.Errorf("attach %s: %w", pane, err)
			}
			return nil
		case <-p.waitDone:
			// waitDone closes after the reader delivered the last output; flush it.
			for {
				select {
				case b := <-s.ch:
					if _, err := w.Write(b); err != nil {
						return fmt.Errorf("attach %s: write: %w", pane, err)
					}
				default:
					return nil
				}
			}
		}
	}
}

// copyInput copies r to the program until r ends, ctx ends or a write fails.
func (p *pane) copyInput(ctx context.Context, r io.Reader) error {
	buf := make([]byte, 4096)
	for {
		n, err := r.Read(buf)
		if n > 0 && ctx.Err() == nil {
			if werr := p.write(ctx, buf[:n]); werr != nil {
				return werr
			}
		}
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// redraw renders the current screen as bytes that put a real terminal in the pane's
// state: tracked modes, alternate screen, cleared screen, each row with its styles at
// its own position (so no autowrap or scrolling can shift it), then the cursor. The
// caller holds p.mu.
func (p *pane) redraw() string {
	p.unpackScreens()
	var b strings.Builder
	b.WriteString(p.modes.sequence())
	b.WriteString("\x1b[0m\x1b[H\x1b[2J")
	for i, line := range strings.Split(p.emu.Render(), "\n") {
		b.WriteString("\x1b[" + strconv.Itoa(i+1) + ";1H")
		b.WriteString(line)
		b.WriteString("\x1b[0m")
	}
	cur := p.emu.CursorPosition()
	b.WriteString("\x1b[" + strconv.Itoa(cur.Y+1) + ";" + strconv.Itoa(cur.X+1) + "H")
	if p.emu.CursorHidden() {
		b.WriteString("\x1b[?25l")
	} else {
		b.WriteString("\x1b[?25h")
	}
	return b.String()
}

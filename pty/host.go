// Package pty is the embedded terminal host: it runs each pane's program on its own
// pseudo-terminal (creack/pty) and feeds the output to a VT emulator
// (charmbracelet/x/vt), so Read returns the rendered screen rather than raw bytes. It
// needs no external program; its panes end with the server.
//
// Thread model: every pane has a reader goroutine (pty → emulator, scrollback,
// attached streams, activity), a waiter goroutine (process exit), and a pair that
// carries the emulator's answers to terminal queries (cursor position, device
// attributes) back to the pty, so programs that ask never hang. The host has one
// coalescer goroutine that turns pane activity into PaneOutput events: it scans the
// panes at most once per 50 ms, so the events of every pane that printed meanwhile
// come in one batch. Close and Shutdown stop a pane's goroutines before they return;
// Shutdown closes the Events channel last.
//
// State: each pane's screen lives in its emulator (packed into runs of cells while its
// output is quiet, pack.go) and its scrollback in a ring of text lines (history.go),
// all behind the pane's mutex; nothing is persisted, and a pane's
// last screen stays readable after its program exits until the pane is closed. The
// pty master is switched to non-blocking mode (proc.go) so writes honour deadlines
// and Close interrupts a blocked read.
package pty

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/charmbracelet/x/ansi"

	"orcr/core"
	"orcr/internal/panesig"
)

// ErrUnknownPane is returned for a pane id this host never gave out or already closed.
var ErrUnknownPane = errors.New("no such pane")

// ErrShutdown is returned by calls made after Shutdown.
var ErrShutdown = errors.New("pty host is shut down")

// Options configure a Host. Zero values take the defaults.
type Options struct {
	Logger     *slog.Logger // nil discards
	Cols, Rows int          // default pane size, 200x50
	Scrollback int          // lines kept per pane, default 5000
	// KillGrace is how long Close waits after SIGHUP before SIGKILL, default 500 ms.
	KillGrace time.Duration
	// EventBuffer is the capacity of the Events channel, default 1024.
	EventBuffer int
	// Adopt are panes exported by another host (Export), usually in the process this
	// one replaces; New registers them under their ids (see handoff.go).
	Adopt []Handoff
	// IDFloor makes new pane ids start above it (pass the exporting host's LastID, so
	// the ids of its ended panes, still on agent records, are not given out again).
	IDFloor int64
	// PackAfter is how long a pane's output must be quiet before its screens are
	// packed (pack.go), default 5 s; negative never packs.
	PackAfter time.Duration
	// Memory hears what the host lets go (packed screens, the emulators'
	// construction garbage) and of every program's end, before that end is
	// reported; the server's memory policy decides from it when memory goes back to
	// the OS. Nil reports nowhere.
	Memory core.MemoryReport
}

// outputInterval is the shortest gap between two scans of the coalescer, so between
// two PaneOutput events of one pane.
const outputInterval = 50 * time.Millisecond

// Host is the embedded pty host. It implements core.Host.
type Host struct {
	opts Options
	log  *slog.Logger

	events chan core.HostEvent
	done   chan struct{} // closed when Shutdown starts
	kick   chan struct{} // wakes the coalescer; capacity 1
	// pending is set from the first output after a scan until the coalescer's next
	// scan starts: output meanwhile only marks its pane dirty and wakes nobody.
	pending atomic.Bool
	wg      sync.WaitGroup
	nextID  atomic.Int64

	life sync.RWMutex // held shared by Launch, exclusively by Shutdown to wait for it

	mem core.MemoryReport // Options.Memory, never nil
	// building is held while a new pane's emulator is made and packed (newPane):
	// one at a time, so a burst of launches has one emulator's 6 MB of construction
	// garbage live at once, not one per concurrent launch.
	building sync.Mutex

	mu       sync.Mutex
	panes    map[string]*pane
	shutdown bool
	stopped  chan struct{} // closed when Shutdown has finished
}

var _ core.Host = (*Host)(nil)

// New returns a host with no panes.
func New(opts Options) *Host {
	if opts.Cols <= 0 || opts.Rows <= 0 {
		opts.Cols, opts.Rows = 200, 50
	}
	if opts.Scrollback <= 0 {
		opts.Scrollback = 5000
	}
	if opts.EventBuffer <= 0 {
		opts.EventBuffer = 1024
	}
	if opts.KillGrace <= 0 {
		opts.KillGrace = 500 * time.Millisecond
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	mem := opts.Memory
	if mem == nil {
		mem = core.NoMemoryReport{}
	}
	h := &Host{
		opts:    opts,
		mem:     mem,
		log:     log.With("host", "pty"),
		events:  make(chan core.HostEvent, opts.EventBuffer),
		done:    make(chan struct{}),
		kick:    make(chan struct{}, 1),
		panes:   map[string]*pane{},
		stopped: make(chan struct{}),
	}
	panesig.RestoreIgnored() // ctrl-c and hangups reach the panes
	h.nextID.Store(max(opts.IDFloor, h.adopt(opts.Adopt)))
	h.opts.Adopt = nil // the masters now belong to the panes
	h.wg.Add(1)
	go h.coalesce()
	return h
}

// LastID is the number of the last pane id this host gave out or adopted.
func (h *Host) LastID() int64 { return h.nextID.Load() }

// Name is "pty".
func (h *Host) Name() string { return "pty" }

// Events delivers PaneOutput (coalesced, dropped when the channel is full) and
// PaneExited (never dropped while the host runs). Panes removed by Close get no
// PaneExited. The channel is closed by Shutdown.
func (h *Host) Events() <-chan core.HostEvent { return h.events }

// AttachCommand returns nil: the embedded host serves Stream instead.
func (h *Host) AttachCommand(string) []string { return nil }

// Launch starts spec.Argv on a new pty. argv[0] is looked up in the PATH of spec.Env,
// then the server's PATH.
func (h *Host) Launch(ctx context.Context, spec core.LaunchSpec) (core.PaneInfo, error) {
	if err := ctx.Err(); err != nil {
		return core.PaneInfo{}, err
	}
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return core.PaneInfo{}, errors.New("pty launch: empty argv")
	}
	if spec.Cols <= 0 || spec.Rows <= 0 {
		spec.Cols, spec.Rows = h.opts.Cols, h.opts.Rows
	}
	h.life.RLock()
	defer h.life.RUnlock()
	h.mu.Lock()
	if h.shutdown {
		h.mu.Unlock()
		return core.PaneInfo{}, ErrShutdown
	}
	id := "p" + strconv.FormatInt(h.nextID.Add(1), 10)
	h.mu.Unlock()

	p, err := startPane(h, id, spec)
	if err != nil {
		return core.PaneInfo{}, fmt.Errorf("pty launch %q: %w", spec.Argv[0], err)
	}
	h.mu.Lock()
	if h.shutdown {
		h.mu.Unlock()
		p.close(context.Background(), h.opts.KillGrace)
		return core.PaneInfo{}, ErrShutdown
	}
	h.panes[id] = p
	h.mu.Unlock()
	h.log.Debug("launched", "pane", id, "pid", p.pid, "argv", spec.Argv)
	return p.info(), nil
}

// pane returns the live pane with id.
func (h *Host) pane(id string) (*pane, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.shutdown {
		return nil, ErrShutdown
	}
	p, ok := h.panes[id]
	if !ok {
		return nil, fmt.Errorf("pane %q: %w", id, ErrUnknownPane)
	}
	return p, nil
}

// SendText types text literally.
func (h *Host) SendText(ctx context.Context, pane, text string) error {
	p, err := h.pane(pane)
	if err != nil {
		return err
	}
	return p.write(ctx, []byte(text))
}

// Paste gives the pane text as a bracketed paste when its program asked for one (see
// core.Paster), else types it. An end marker inside the text is dropped, so the text
// cannot end the paste early.
func (h *Host) Paste(ctx context.Context, pane, text string) error {
	p, err := h.pane(pane)
	if err != nil {
		return err
	}
	p.mu.Lock()
	bracketed := p.modes.on[ansi.ModeBracketedPaste]
	p.mu.Unlock()
	if !bracketed {
		return p.write(ctx, []byte(text))
	}
	text = strings.ReplaceAll(text, ansi.BracketedPasteEnd, "")
	return p.write(ctx, []byte(ansi.BracketedPasteStart+text+ansi.BracketedPasteEnd))
}

// SendKeys presses the named keys in order (see KeyBytes). Nothing is sent when a name
// is unknown.
func (h *Host) SendKeys(ctx context.Context, pane string, keys ...string) error {
	if _, err := keysBytes(keys, false); err != nil {
		return err // unknown names fail before the pane is even looked up
	}
	p, err := h.pane(pane)
	if err != nil {
		return err
	}
	p.mu.Lock()
	appCursor := p.modes.on[ansi.ModeCursorKeys]
	p.mu.Unlock()
	b, _ := keysBytes(keys, appCursor)
	return p.write(ctx, b)
}

// Read returns the rendered screen, or with opts.Lines > 0 the last Lines lines of
// scrollback plus screen. A pane whose process ended still shows its last screen.
// With opts.ANSI the screen's rows carry their styles; scrollback stays plain text
// (the history keeps it as text, see history).
func (h *Host) Read(ctx context.Context, pane string, opts core.ReadOpts) (core.Screen, error) {
	if err := ctx.Err(); err != nil {
		return core.Screen{}, err
	}
	p, err := h.pane(pane)
	if err != nil {
		return core.Screen{}, err
	}
	return p.read(opts.Lines, opts.ANSI), nil
}

// Resize sets the pty window size (the program gets SIGWINCH) and the emulator's.
func (h *Host) Resize(ctx context.Context, pane string, cols, rows int) error {
	if cols <= 0 || rows <= 0 {
		return fmt.Errorf("pty resize: invalid size %dx%d", cols, rows)
	}
	p, err := h.pane(pane)
	if err != nil {
		return err
	}
	return p.resize(cols, rows)
}

// Close kills the pane's process group (SIGHUP, then SIGKILL after the grace period)
// and removes the pane. Closing a pane whose process already ended is fine.
func (h *Host) Close(ctx context.Context, pane string) error {
	h.mu.Lock()
	if h.shutdown {
		h.mu.Unlock()
		return ErrShutdown
	}
	p, ok := h.panes[pane]
	delete(h.panes, pane)
	h.mu.Unlock()
	if !ok {
		return fmt.Errorf("pty close: pane %q: %w", pane, ErrUnknownPane)
	}
	p.close(ctx, h.opts.KillGrace)
	h.log.Debug("closed", "pane", pane)
	return nil
}

// List returns every pane not yet closed, live or dead, ordered by id.
func (h *Host) List(ctx context.Context) ([]core.PaneInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	h.mu.Lock()
	if h.shutdown {
		h.mu.Unlock()
		return nil, ErrShutdown
	}
	panes := make([]*pane, 0, len(h.panes))
	for _, p := range h.panes {
		panes = append(panes, p)
	}
	h.mu.Unlock()
	out := make([]core.PaneInfo, 0, len(panes))
	for _, p := range panes {
		out = append(out, p.info())
	}
	slices.SortFunc(out, func(a, b core.PaneInfo) int {
		return cmp.Or(cmp.Compare(len(a.ID), len(b.ID)), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

// Shutdown kills every pane, stops the host's goroutines and closes Events. It is
// idempotent; later calls wait for the first to finish.
func (h *Host) Shutdown(ctx context.Context) error {
	h.mu.Lock()
	if h.shutdown {
		h.mu.Unlock()
		select {
		case <-h.stopped:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	h.shutdown = true
	h.mu.Unlock()
	h.life.Lock() // launches in flight finish (and close their pane themselves)
	h.mu.Lock()
	panes := h.panes
	h.panes = map[string]*pane{}
	h.mu.Unlock()
	h.life.Unlock()

	close(h.done)
	var wg sync.WaitGroup
	for _, p := range panes {
		wg.Go(func() { p.close(ctx, h.opts.KillGrace) })
	}
	wg.Wait()
	h.wg.Wait()
	close(h.events)
	close(h.stopped)
	h.log.Debug("shut down", "panes", len(panes))
	return nil
}

// activity marks pane p as changed and, when no scan is pending yet, wakes the
// coalescer; it never blocks. Output while a scan is pending wakes nobody: with 20
// panes redrawing a status line 10 times a second, each output woke the coalescer,
// which woke the engine's event loop, which woke the agent's: a chain of goroutine
// hand-offs per output, each a thread wake-up in the Go scheduler, made most of the
// server's CPU (bench/pty BenchmarkStatusLine20VsRawTmux). Now those panes' outputs
// reach the engine as one batch per outputInterval.
func (h *Host) activity(p *pane) {
	p.dirty.Store(true)
	if h.pending.Load() || h.pending.Swap(true) {
		return
	}
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// coalesce turns pane activity into PaneOutput events: once woken, it scans every
// pane at once, at most once per outputInterval (the first output after a quiet spell
// longer than that is scanned at once), and sends an event for each pane that printed
// since the last scan. It sleeps while nothing happens.
func (h *Host) coalesce() {
	defer h.wg.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var last time.Time // the last scan
	for {
		select {
		case <-h.done:
			timer.Stop()
			return
		case <-h.kick:
			if wait := outputInterval - time.Since(last); wait > 0 {
				timer.Reset(wait)
				continue
			}
		case <-timer.C:
		}
		// Cleared before the scan: output that comes after its pane was looked at
		// finds no scan pending and wakes the next one.
		h.pending.Store(false)
		last = time.Now()
		h.mu.Lock()
		for id, p := range h.panes {
			if !p.dirty.Load() || !p.dirty.Swap(false) {
				continue
			}
			select {
			case h.events <- core.HostEvent{Pane: id, Kind: core.PaneOutput, At: last}:
			default: // a slow consumer loses activity hints, never exits
			}
		}
		h.mu.Unlock()
	}
}

// running counts the panes other than ended (whose program has just ended) that
// still run their program.
func (h *Host) running(ended *pane) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, p := range h.panes {
		if p != ended && !p.dead() {
			n++
		}
	}
	return n
}

// exited delivers the PaneExited event of p unless the pane was closed (or exported)
// on purpose; code is nil when the exit status is unknown (adopted panes).
// It blocks until the consumer takes it or the host shuts down.
func (h *Host) exited(p *pane, code *int) {
	if p.closing.Load() {
		return
	}
	// Before anyone hears of the end: the server's memory policy may return a
	// burst's garbage to the OS when its last program ends (daemon's memPolicy).
	h.mem.Ended(h.running(p))
	ev := core.HostEvent{Pane: p.id, Kind: core.PaneExited, ExitCode: code, At: time.Now()}
	select {
	case h.events <- ev:
	case <-h.done:
	}
}

package tmux

import (
	"sync"
	"time"
)

// resumeAfter is how long a pane's output stays paused for the control client after
// its first %output. It bounds how late the host notices that a busy pane is still
// printing; the kernel reads screens at most every 250 ms and settles after 1.2 s of
// quiet, so one sample per resumeAfter loses nothing it uses.
const resumeAfter = 200 * time.Millisecond

// pauseBytes is how much output a pane may send the control client within resumeAfter
// before it is paused. Below it (a spinner, a status line, a few lines of log) a pause
// and a continue cost more than the bytes they save: 50 panes redrawing a line every
// 20 ms took 2.85 % of a core with every pane paused against 2.10 % without.
const pauseBytes = 16 << 10

// pacer keeps pane output from crossing the control client. The host only needs to
// know that a pane printed, never what (reads go through capture-pane), yet a client
// in control mode receives every byte as an escaped %output line, and tmux stops
// reading a pane while the client has a backlog: a 50 MB flood took 3.4× as long and
// 3.9× the CPU of raw tmux. So a pane that sent pauseBytes within resumeAfter is paused
// for this client (`refresh-client -A %P:pause`, which tmux treats as "not listening",
// so the pane is read at full speed) and continued resumeAfter later; output after
// that sends more %output, which marks the pane again. An idle pane is never paused,
// so its first output is seen at once. The reader goroutine never calls tmux: it hands
// the pane to the pacer's goroutine, which writes the commands.
type pacer struct {
	mu      sync.Mutex
	panes   map[string]*paced // panes with recent output
	pending []string          // panes to pause
	wake    chan struct{}
}

// paced is one pane's recent output.
type paced struct {
	since  time.Time // start of the window bytes counts, or when the pane was paused
	bytes  int
	paused bool // paused, or queued to be
}

func newPacer() *pacer {
	return &pacer{panes: map[string]*paced{}, wake: make(chan struct{}, 1)}
}

// output notes an %output line of n bytes from pane; it runs on the reader goroutine
// and never blocks.
func (p *pacer) output(pane string, n int) {
	now := time.Now()
	p.mu.Lock()
	r := p.panes[pane]
	if r == nil {
		if len(p.panes) >= 256 {
			p.sweepLocked(now)
		}
		r = &paced{since: now}
		p.panes[pane] = r
	}
	if r.paused {
		p.mu.Unlock()
		return
	}
	if now.Sub(r.since) > resumeAfter {
		r.since, r.bytes = now, 0
	}
	r.bytes += n
	if r.bytes < pauseBytes {
		p.mu.Unlock()
		return
	}
	r.since, r.paused = now, true
	p.pending = append(p.pending, pane)
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// reset forgets every pause: a new control client starts with every pane unpaused.
func (p *pacer) reset() {
	p.mu.Lock()
	p.panes = map[string]*paced{}
	p.pending = nil
	p.mu.Unlock()
}

// due takes the panes to pause now and the panes whose pause is over, and says when
// the next pause ends (zero when none is paused).
func (p *pacer) due(now time.Time) (pause, resume []string, next time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pause, p.pending = p.pending, nil
	p.sweepLocked(now)
	for pane, r := range p.panes {
		end := r.since.Add(resumeAfter)
		if !r.paused {
			continue
		}
		if !end.After(now) {
			resume = append(resume, pane)
			delete(p.panes, pane)
			continue
		}
		if next.IsZero() || end.Before(next) {
			next = end
		}
	}
	return pause, resume, next
}

// sweepLocked forgets panes that are not paused and printed nothing for a second
// (closed panes among them), so the table holds only panes printing now.
func (p *pacer) sweepLocked(now time.Time) {
	for pane, r := range p.panes {
		if !r.paused && now.Sub(r.since) > time.Second {
			delete(p.panes, pane)
		}
	}
}

// pace owns the pacer's goroutine: it sends the pauses and continues on the current
// control client until the host stops. Replies are not waited for: a pane that is
// gone answers an error nobody needs, and requests never block the reader.
func (h *Host) pace() {
	defer h.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-h.pacer.wake:
		case <-timer.C:
		}
		pause, resume, next := h.pacer.due(time.Now())
		if len(pause)+len(resume) > 0 {
			lines := make([]string, 0, len(pause)+len(resume))
			for _, pane := range pause {
				lines = append(lines, "refresh-client -A "+quote(pane+":pause"))
			}
			for _, pane := range resume {
				lines = append(lines, "refresh-client -A "+quote(pane+":continue"))
			}
			h.mu.Lock()
			c := h.c
			h.mu.Unlock()
			if c != nil {
				_, _ = c.send(lines...)
			}
		}
		timer.Stop()
		if !next.IsZero() {
			timer.Reset(time.Until(next))
		}
	}
}

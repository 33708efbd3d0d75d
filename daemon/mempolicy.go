package daemon

import (
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// memPolicy is the server's one policy for handing free memory back to the OS, beside
// its soft memory limit (memLimit). The hosts only report (core.MemoryReport): bytes
// they let go (the pty host's packed screens and its emulators' construction garbage)
// and every program's end, with how many still run. The policy returns memory
// (debug.FreeOSMemory: one collection and a scavenge, a few milliseconds for the
// server's live heap) in two cases:
//
//   - The end of a burst: when the host's last running program ends after at least
//     burstEnds ends, or burstFreed bytes let go, since the last return, at once, inside
//     the report, which the host makes before it reports the end. A 1,000-item
//     for_each of instant programs ends with the heap at what the burst grew it to and
//     up to ~20 MB (pty) or ~7 MB (tmux) of it free, which the runtime's scavenger
//     hands back only over the next seconds; so whoever hears of the burst's last
//     result hears of it with that memory already returned. Only when nothing else
//     runs (a server with long-lived agents keeps the runtime's pacing and the rule
//     below), and at most once per burst (the counts start again at each return).
//     Its tail too: burstQuiet after the burst's last end, what ended or was let go
//     since its last return (armTail). And a feature's word that the work of a burst
//     settled (Settled: a workflow run's end) returns at once what the work left,
//     its records included. A 1,000-item for_each on pty ended +19 to +36 MB above
//     where it began (11 runs, 4 over +30) when its last item's end came a few ms
//     after a return and so returned nothing; with both, +20 to +23 MB (10 runs; see
//     docs/architecture.md).
//   - A lot let go while things run: once returnFreed bytes were reported since the
//     last return, after returnBatch (panes that went quiet together pack within
//     moments of each other) and at most once per returnEvery. An idle server
//     allocates next to nothing, so without it the dead cells of 100 freshly idle pty
//     agents (~180 MB) stayed resident until the runtime's two-minute collection.
//   - What was let go, once the letting go stops: freedQuiet after the last report,
//     when at least freedSettle bytes were reported since the last return. Since
//     panes hold no cells until they print and pack small, 100 agents started at once
//     let go ~50 MB as they pack, under returnFreed: the idle server never collected
//     it, and 100 idle pty agents cost +34 to +71 MB of RSS a minute later (issue 27's
//     goal is 20 MB) instead of +17 MB. Spaced like the rule above (returnEvery).
//
// Before this the two hosts each called debug.FreeOSMemory on rules of their own (pty
// on bytes, tmux on ends); now they only say what happened.
type memPolicy struct {
	freed   atomic.Int64 // bytes reported let go since the last return
	ends    atomic.Int64 // programs ended since the last return
	pending atomic.Bool  // a return for returnFreed is scheduled
	last    atomic.Int64 // unix nanoseconds of the last return
	returns atomic.Int64 // returns made (tests, the log)

	// The rule's numbers: the constants below (tests shorten them).
	burstEnds, burstFreed, returnFreed int64
	returnBatch, returnEvery           time.Duration

	mu       sync.Mutex // held by a return
	stop     chan struct{}
	stopOnce sync.Once

	// The tail of a burst (see Ended): after a burst's return, a return once no
	// program has ended for burstQuiet, if anything ended or was let go since.
	burstQuiet time.Duration
	tailMu     sync.Mutex
	tail       *time.Timer // armed while a burst's tail is pending

	// The settle rule (see memPolicy): a return freedQuiet after the last Freed.
	freedSettle int64
	freedQuiet  time.Duration
	settle      *time.Timer // armed while bytes let go wait for the letting go to stop; under tailMu
}

const (
	burstEnds   = 64       // ends that make a burst (not one agent coming and going)
	burstFreed  = 16 << 20 // or bytes let go (about three pty panes' construction garbage)
	returnFreed = 64 << 20
	returnBatch = time.Second
	returnEvery = 5 * time.Second
	// burstQuiet is how long after a burst's last end its tail is returned: longer
	// than the gap between two of a for_each's instant items (a few ms), shorter than
	// anyone's look at the RSS after the burst.
	burstQuiet = 250 * time.Millisecond
	// freedSettle and freedQuiet are the settle rule's: a pane's construction garbage
	// (~4 MiB of parser buffer) or a few dozen packed panes, and longer than the gaps
	// between the packings of panes started together.
	freedSettle = 4 << 20
	freedQuiet  = 2 * time.Second
)

func newMemPolicy() *memPolicy {
	return &memPolicy{stop: make(chan struct{}),
		burstEnds: burstEnds, burstFreed: burstFreed, returnFreed: returnFreed,
		returnBatch: returnBatch, returnEvery: returnEvery, burstQuiet: burstQuiet,
		freedSettle: freedSettle, freedQuiet: freedQuiet}
}

// Freed counts n bytes a host let go and schedules a return once returnFreed have
// been, or once the letting go stops (holdSettle).
func (m *memPolicy) Freed(n int64) {
	freed := m.freed.Add(n)
	m.holdSettle()
	if freed < m.returnFreed || !m.pending.CompareAndSwap(false, true) {
		return
	}
	go m.returnSoon()
}

// holdSettle arms the settle rule's return freedQuiet from now, or puts an armed one
// off: each report means the letting go goes on.
func (m *memPolicy) holdSettle() { m.arm(&m.settle, m.freedQuiet, m.returnSettled) }

// returnSettled is the settle rule's return: only if freedSettle bytes or more were
// let go since the last return, and not within returnEvery of it (then once that has
// passed: returnSoon's spacing).
func (m *memPolicy) returnSettled() {
	if !m.fired(&m.settle) {
		return
	}
	if m.freed.Load() < m.freedSettle || !m.pending.CompareAndSwap(false, true) {
		return // too little, or a return is scheduled already
	}
	go m.returnSoon()
}

// Ended counts a program's end; the end of the last one running returns a burst's
// memory at once (see memPolicy).
func (m *memPolicy) Ended(running int) {
	ends := m.ends.Add(1)
	m.holdTail()
	if running > 0 || (ends < m.burstEnds && m.freed.Load() < m.burstFreed) {
		return
	}
	m.release()
	m.armTail()
}

// armTail arms the return of a burst's tail: the count of what a burst left starts
// again at each return, and a for_each of instant programs has nothing running
// between most of its items, so its returns come every few ends and the last end
// finds too little counted since the one before to make its own. Without the tail
// the garbage of the burst's last programs (up to burstFreed, three pty panes'
// construction garbage) stayed resident.
func (m *memPolicy) armTail() { m.arm(&m.tail, m.burstQuiet, m.returnTail) }

// arm starts *t to run f after d, or puts an armed *t off to d from now: the timers
// of the tail and of the settle rule, both under tailMu.
func (m *memPolicy) arm(t **time.Timer, d time.Duration, f func()) {
	m.tailMu.Lock()
	defer m.tailMu.Unlock()
	if *t == nil {
		*t = time.AfterFunc(d, f)
		return
	}
	(*t).Reset(d)
}

// fired is a timer's run of arm's f: it forgets *t and reports whether the policy
// still runs.
func (m *memPolicy) fired(t **time.Timer) bool {
	m.tailMu.Lock()
	*t = nil
	m.tailMu.Unlock()
	select {
	case <-m.stop:
		return false
	default:
		return true
	}
}

// holdTail puts a pending tail off by burstQuiet: an end means the burst goes on.
func (m *memPolicy) holdTail() {
	m.tailMu.Lock()
	defer m.tailMu.Unlock()
	if m.tail != nil {
		m.tail.Reset(m.burstQuiet)
	}
}

// returnTail is the tail's return: only if something ended or was let go since the
// burst's last return.
func (m *memPolicy) returnTail() {
	if !m.fired(&m.tail) {
		return
	}
	if m.ends.Load() == 0 && m.freed.Load() == 0 {
		return
	}
	m.release()
}

// Settled is a feature's word that work it ran has finished (a workflow run's end,
// which comes after its last program's end and the run's own records): what the
// work left is returned now, before anyone hears of the end.
func (m *memPolicy) Settled() {
	m.release()
}

// returnSoon is Freed's scheduled return.
func (m *memPolicy) returnSoon() {
	defer m.pending.Store(false)
	wait := max(m.returnBatch, m.returnEvery-time.Since(time.Unix(0, m.last.Load())))
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-m.stop:
		return
	}
	if time.Since(time.Unix(0, m.last.Load())) < m.returnBatch {
		return // the end of a burst returned it just now
	}
	m.release()
}

// release has the runtime collect and return free memory to the OS, one at a time.
func (m *memPolicy) release() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.freed.Store(0)
	m.ends.Store(0)
	debug.FreeOSMemory()
	m.last.Store(time.Now().UnixNano())
	m.returns.Add(1)
}

// close drops a scheduled return (the server is going).
func (m *memPolicy) close() {
	m.stopOnce.Do(func() { close(m.stop) })
	m.tailMu.Lock()
	defer m.tailMu.Unlock()
	if m.tail != nil {
		m.tail.Stop()
	}
	if m.settle != nil {
		m.settle.Stop()
	}
}

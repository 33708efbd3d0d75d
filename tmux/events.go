package tmux

import (
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"orcr/core"
)

// coalesceWindow is the shortest gap between two PaneOutput events of one pane.
const coalesceWindow = 50 * time.Millisecond

// settleMemory is a queued marker, never delivered: the delivery goroutine returns
// the process's free memory to the OS when it reaches it (Host.maybeExitedLocked
// queues one before the exit that ends a burst of panes).
const settleMemory core.HostEventKind = -1

// settleEnds is how many panes must have ended since the last return for the end of
// the last running one to return memory (a burst, not one agent coming and going).
var settleEnds = 64

// releases counts the returns made (tests).
var releases atomic.Int64

// eventQueue delivers host events in order without ever blocking the control reader:
// events wait in an unbounded queue that one goroutine drains into the channel.
// PaneOutput events are coalesced: a pane with output is marked dirty and the marks
// are flushed at most once per coalesceWindow, and a pane already waiting in the queue
// with an output event is not queued twice.
type eventQueue struct {
	ch chan core.HostEvent

	mu       sync.Mutex
	queue    []core.HostEvent
	queued   map[string]bool // panes with an undelivered PaneOutput in queue
	dirty    map[string]bool // panes with output since the last flush
	timer    *time.Timer     // armed while dirty is non-empty
	stopping bool

	wake chan struct{}
	stop chan struct{}
	done chan struct{}
}

func newEventQueue() *eventQueue {
	q := &eventQueue{
		ch:     make(chan core.HostEvent, 256),
		queued: map[string]bool{},
		dirty:  map[string]bool{},
		wake:   make(chan struct{}, 1),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	go q.run()
	return q
}

// push queues a pane exit or disappearance.
func (q *eventQueue) push(ev core.HostEvent) {
	q.mu.Lock()
	if q.stopping {
		q.mu.Unlock()
		return
	}
	q.queue = append(q.queue, ev)
	q.mu.Unlock()
	q.signal()
}

// output marks pane as having new output.
func (q *eventQueue) output(pane string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.stopping {
		return
	}
	q.dirty[pane] = true
	if q.timer == nil {
		q.timer = time.AfterFunc(coalesceWindow, q.flush)
	}
}

// flush turns the dirty marks into PaneOutput events.
func (q *eventQueue) flush() {
	q.mu.Lock()
	now := time.Now()
	for p := range q.dirty {
		if !q.queued[p] {
			q.queued[p] = true
			q.queue = append(q.queue, core.HostEvent{Pane: p, Kind: core.PaneOutput, At: now})
		}
		delete(q.dirty, p)
	}
	q.timer = nil
	q.mu.Unlock()
	q.signal()
}

func (q *eventQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// run owns the delivery goroutine; it closes the channel when stopped.
func (q *eventQueue) run() {
	defer close(q.done)
	defer close(q.ch)
	for {
		q.mu.Lock()
		if len(q.queue) == 0 {
			q.mu.Unlock()
			select {
			case <-q.wake:
				continue
			case <-q.stop:
				return
			}
		}
		ev := q.queue[0]
		q.queue[0] = core.HostEvent{}
		q.queue = q.queue[1:]
		if ev.Kind == core.PaneOutput {
			delete(q.queued, ev.Pane)
		}
		q.mu.Unlock()
		if ev.Kind == settleMemory {
			// Here, not under the host's lock: the control reader goes on; the
			// events behind it (the burst's last exit first) wait the few
			// milliseconds of one collection and scavenge.
			debug.FreeOSMemory()
			releases.Add(1)
			continue
		}
		select {
		case q.ch <- ev:
		case <-q.stop:
			return
		}
	}
}

// close stops delivery and closes the channel; undelivered events are dropped.
func (q *eventQueue) close() {
	q.mu.Lock()
	if q.stopping {
		q.mu.Unlock()
		<-q.done
		return
	}
	q.stopping = true
	if q.timer != nil {
		q.timer.Stop()
		q.timer = nil
	}
	q.mu.Unlock()
	close(q.stop)
	<-q.done
}

package tmux

import (
	"sync"
	"time"

	"orcr/core"
)

// coalesceWindow is the shortest gap between two PaneOutput events of one pane.
const coalesceWindow = 50 * time.Millisecond

// lastEnded is a queued marker, never delivered: the delivery goroutine reports to
// the memory policy that the host's last running program has ended (Ended(0)) when it
// reaches it, before the exit behind it (Host.maybeExitedLocked queues it). The policy
// may collect and scavenge then, which takes a few milliseconds: here, not under the
// host's lock, so the control reader goes on meanwhile.
const lastEnded core.HostEventKind = -1

// eventQueue delivers host events in order without ever blocking the control reader:
// events wait in an unbounded queue that one goroutine drains into the channel.
// PaneOutput events are coalesced: a pane with output is marked dirty and the marks
// are flushed at most once per coalesceWindow, and a pane already waiting in the queue
// with an output event is not queued twice.
type eventQueue struct {
	ch  chan core.HostEvent
	mem core.MemoryReport // hears lastEnded markers

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

func newEventQueue(mem core.MemoryReport) *eventQueue {
	q := &eventQueue{
		ch:     make(chan core.HostEvent, 256),
		mem:    mem,
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
		if ev.Kind == lastEnded {
			q.mem.Ended(0)
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

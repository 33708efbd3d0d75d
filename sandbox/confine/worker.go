package confine

import (
	"fmt"
	"runtime"
	"time"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// worker is one OS thread of the server confined to a ruleset as it was when the
// thread restricted itself, kept to start the agents of that policy: a confined
// thread can fork any number of children, each inheriting its domain, so a second
// agent of the same policy costs neither a new thread nor a restriction nor the
// capability drop. The thread runs nothing but its goroutine (locked to it, never
// unlocked), which runs the starts it is handed; when it is stopped the goroutine
// returns locked and the Go runtime ends the thread with its domain. It is never the
// process's main thread (the kernel answers /proc/PID, ptrace and signals of the
// process as its main thread: a confined main thread would put the server in the
// agents' domain).
type worker struct {
	jobs chan func()
	stop chan struct{}
	// tid is the thread's id (tests: the same thread started two agents).
	tid int
	// flags are the landlock_restrict_self flags it restricted itself with.
	flags uint32
	// last is when it last started an agent; idle stops it after workerIdle.
	last time.Time
	idle *time.Timer
}

// workerIdle is how long a confined thread waits for another agent of its policy
// before it ends.
var workerIdle = 2 * time.Minute

// maxWorkers bounds the confined threads kept at once (the least recently used is
// stopped beyond it): a fleet has a few policies, one per folder.
const maxWorkers = 4

// startWorker starts a thread confined with the ruleset at fd (copied into the
// thread's new domain: rules added to fd later do not reach it).
func startWorker(fd int, flags uint32) (*worker, error) {
	w := &worker{jobs: make(chan func()), stop: make(chan struct{}), flags: flags}
	ready := make(chan error, 1)
	go w.run(fd, flags, ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return w, nil
}

func (w *worker) run(fd int, flags uint32, ready chan<- error) {
	runtime.LockOSThread() // never unlocked, but on the main thread: the thread ends with its domain
	if unix.Gettid() == unix.Getpid() {
		// The main thread is never confined, and the runtime never ends it (a
		// goroutine that exits locked to it parks it for good). Keep it locked, so the
		// goroutine started here runs on another thread, until that one holds its own.
		inner := make(chan error, 1)
		go w.run(fd, flags, inner)
		err := <-inner
		runtime.UnlockOSThread()
		ready <- err
		return
	}
	if err := restrictSelf(fd, flags); err != nil {
		ready <- err
		return // locked: a thread confined half way ends here
	}
	w.tid = unix.Gettid()
	ready <- nil
	for {
		select {
		case fn := <-w.jobs:
			fn()
		case <-w.stop:
			return
		}
	}
}

// do runs fn on the worker's thread and waits for it.
func (w *worker) do(fn func() error) error {
	res := make(chan error, 1)
	w.jobs <- func() { res <- fn() }
	return <-res
}

// end stops the worker's thread (it ends with its domain).
func (w *worker) end() {
	if w.idle != nil {
		w.idle.Stop()
	}
	close(w.stop)
}

// restrictSelf confines the calling thread for good: no new privileges, the
// ruleset's domain, every capability dropped.
func restrictSelf(fd int, flags uint32) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	return dropCapabilities()
}

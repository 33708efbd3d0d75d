package confine

import (
	"errors"
	"fmt"
	"runtime"
	"time"
	"unsafe"

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
	// restrict takes the one restriction of a thread started unconfined (newThread).
	restrict chan restriction
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

// newThread starts a worker's thread, locked to its goroutine and not confined yet:
// it waits for confine (or end). Starting one costs a thread's creation and its first
// scheduling (0.3–1.4 ms under load), which Rulesets keeps off the spawn's path by
// making the next one ahead (Rulesets.ready).
func newThread() (*worker, error) {
	w := &worker{jobs: make(chan func()), stop: make(chan struct{}), restrict: make(chan restriction)}
	ready := make(chan error, 1)
	go w.run(ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return w, nil
}

// restriction is what confine hands the waiting thread.
type restriction struct {
	fd    int
	flags uint32
	// mask is the affinity the thread takes back once it runs (worker.hand).
	mask *unix.CPUSet
	done chan error
}

// confine restricts w's thread to the ruleset at fd, once: a thread is never
// confined twice, nor handed to another policy (its caller holds Rulesets' lock).
func (w *worker) confine(fd int, flags uint32) error {
	if w.restrict == nil {
		return errors.New("landlock: a thread confined already")
	}
	done := make(chan error, 1)
	mask := w.hand()
	w.restrict <- restriction{fd: fd, flags: flags, done: done, mask: mask}
	w.restrict = nil
	if err := <-done; err != nil {
		return err
	}
	w.flags = flags
	return nil
}

func (w *worker) run(ready chan<- error) {
	runtime.LockOSThread() // never unlocked, but on the main thread: the thread ends with its domain
	if unix.Gettid() == unix.Getpid() {
		// The main thread is never confined, and the runtime never ends it (a
		// goroutine that exits locked to it parks it for good). Keep it locked, so the
		// goroutine started here runs on another thread, until that one holds its own.
		inner := make(chan error, 1)
		go w.run(inner)
		err := <-inner
		runtime.UnlockOSThread()
		ready <- err
		return
	}
	w.tid = unix.Gettid()
	// Everything of the restriction but Landlock's own call is done now, before the
	// thread is handed out: no new privileges and every capability dropped (as root,
	// 44 syscalls, ~130 µs of a new policy's spawn). The thread runs nothing else.
	if err := unprivileged(); err != nil {
		ready <- err
		return // locked: the thread ends
	}
	ready <- nil
	var r restriction
	select {
	case r = <-w.restrict:
	case <-w.stop:
		return // locked: the thread ends, never confined
	}
	unpin(r.mask)
	if err := ll.LandlockRestrictSelf(r.fd, r.flags); err != nil {
		r.done <- fmt.Errorf("landlock_restrict_self: %w", err)
		return // locked: the thread ends here
	}
	r.done <- nil
	for {
		select {
		case fn := <-w.jobs:
			fn()
		case <-w.stop:
			return
		}
	}
}

// do runs fn on the worker's thread and waits for it; ran is false when the thread
// was stopped first (fn did not run).
func (w *worker) do(fn func() error) (ran bool, err error) {
	res := make(chan error, 1)
	mask := w.hand()
	select {
	case w.jobs <- func() {
		unpin(mask)
		res <- fn()
	}:
	case <-w.stop:
		return false, nil
	}
	return true, <-res
}

// hand readies the handoff of a start to w's thread, parked: it is pinned to the CPU
// the caller runs on, so waking it does not wake the other CPU, idle — on this
// machine's VM a wakeup across CPUs took ~100 µs, most of a kept thread's start
// (BenchmarkConfinedStartOverhead one-folder run-us 132–153 → 82–92) — and runs there
// once the caller parks. It returns the caller's affinity, which the thread takes back
// as soon as it runs (unpin), before it forks: an agent inherits its thread's
// affinity and must get the server's, not one CPU. Nil (nothing pinned) when the
// affinity cannot be read or set.
func (w *worker) hand() *unix.CPUSet {
	var mask unix.CPUSet
	if unix.SchedGetaffinity(0, &mask) != nil || mask.Count() < 2 {
		return nil
	}
	var cpu uint32
	if _, _, e := unix.RawSyscall(unix.SYS_GETCPU, uintptr(unsafe.Pointer(&cpu)), 0, 0); e != 0 {
		return nil
	}
	var one unix.CPUSet
	one.Set(int(cpu))
	if unix.SchedSetaffinity(w.tid, &one) != nil {
		return nil
	}
	return &mask
}

// unpin gives the calling thread the affinity hand took from its caller.
func unpin(mask *unix.CPUSet) {
	if mask != nil {
		_ = unix.SchedSetaffinity(0, mask)
	}
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
	if err := unprivileged(); err != nil {
		return err
	}
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	return nil
}

// unprivileged sets no_new_privs on the calling thread and drops its capabilities:
// what Landlock's restriction needs first (no_new_privs, or CAP_SYS_ADMIN), and what
// keeps a root server's agents without capabilities.
func unprivileged() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	return dropCapabilities()
}

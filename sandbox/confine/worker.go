package confine

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
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
	jobs chan job
	stop chan struct{}
	// gone is closed when the thread's loop has ended: stopped, or its restriction
	// failed (no start is taken after it).
	gone chan struct{}
	once sync.Once
	// mu guards pend and confined.
	mu sync.Mutex
	// pend is the thread's one restriction (confine), which the thread applies itself
	// before the first start it runs, in the same handoff: no start runs on it
	// unconfined, and a new policy's spawn hands its thread one start, not a
	// restriction and then a start (a round trip between threads, ~0.1 ms of the
	// spawn on this machine's VM). Its descriptor is a copy of the ruleset's, the
	// worker's own: the cache may close the ruleset's before the start comes.
	pend     *restriction
	confined bool
	// tid is the thread's id (tests: the same thread started two agents).
	tid int
	// flags are the landlock_restrict_self flags it restricts itself with.
	flags uint32
	// last is when it last started an agent; idle stops it after workerIdle.
	last time.Time
	idle *time.Timer
}

// job is one start handed to the thread: fn's error comes back on res, or the
// restriction's when it failed (fn is not run then).
type job struct {
	fn  func() error
	res chan error
	// mask is the affinity the thread takes back once it runs (worker.hand).
	mask *unix.CPUSet
}

// workerIdle is how long a confined thread waits for another agent of its policy
// before it ends.
var workerIdle = 2 * time.Minute

// maxWorkers bounds the confined threads kept at once (the least recently used is
// stopped beyond it): a fleet has a few policies, one per folder.
const maxWorkers = 4

// newThread starts a worker's thread, locked to its goroutine and not confined yet:
// it waits for its first start (or end). Starting one costs a thread's creation and
// its first scheduling (0.3–1.4 ms under load), which Rulesets keeps off the spawn's
// path by making the next one ahead (Rulesets.ready).
func newThread() (*worker, error) {
	w := newWorker()
	ready := make(chan error, 1)
	go w.run(ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return w, nil
}

func newWorker() *worker {
	return &worker{jobs: make(chan job), stop: make(chan struct{}), gone: make(chan struct{})}
}

// restriction is the thread's one restriction: a ruleset (the worker's copy of its
// descriptor) and landlock_restrict_self's flags.
type restriction struct {
	fd    int
	flags uint32
}

// confine gives w's thread its restriction to the ruleset at fd, once: a thread is
// never confined twice, nor handed to another policy (its caller holds Rulesets'
// lock). The thread applies it before the first start it runs (do).
func (w *worker) confine(fd int, flags uint32) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.confined {
		return errors.New("landlock: a thread confined already")
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("landlock: the ruleset's descriptor: %w", err)
	}
	w.pend = &restriction{fd: dup, flags: flags}
	w.confined = true
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
	defer w.release()
	w.tid = unix.Gettid()
	// Everything of the restriction but Landlock's own call is done now, before the
	// thread is handed out: no new privileges and every capability dropped (as root,
	// 44 syscalls, ~130 µs of a new policy's spawn). The thread runs nothing else.
	if err := unprivileged(); err != nil {
		ready <- err
		return // locked: the thread ends
	}
	ready <- nil
	restricted := false
	for {
		select {
		case j := <-w.jobs:
			unpin(j.mask)
			if !restricted {
				if err := w.restrictNow(); err != nil {
					j.res <- err
					return // locked: the thread ends, never having run a start
				}
				restricted = true
			}
			j.res <- j.fn()
		case <-w.stop:
			return // locked: the thread ends (with its domain, if it has one)
		}
	}
}

// restrictNow applies the restriction confine gave, on the calling thread (w's).
func (w *worker) restrictNow() error {
	w.mu.Lock()
	r := w.pend
	w.pend = nil
	w.mu.Unlock()
	if r == nil {
		return errors.New("landlock: a start handed to a thread not confined")
	}
	defer unix.Close(r.fd)
	if err := ll.LandlockRestrictSelf(r.fd, r.flags); err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	return nil
}

// release is the end of the thread's loop: no start is taken after it, and a
// restriction never applied lets its descriptor go.
func (w *worker) release() {
	close(w.gone)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pend != nil {
		unix.Close(w.pend.fd)
		w.pend = nil
	}
}

// ended says w's thread takes no more starts.
func (w *worker) ended() bool {
	select {
	case <-w.gone:
		return true
	case <-w.stop:
		return true
	default:
		return false
	}
}

// do runs fn on the worker's thread, confined first if it was not yet, and waits for
// it; ran is false when the thread was stopped first (fn did not run). A restriction
// that failed is err, with ran true: fn did not run, and the thread has ended.
func (w *worker) do(fn func() error) (ran bool, err error) {
	res := make(chan error, 1)
	mask := w.hand()
	select {
	case w.jobs <- job{fn: fn, res: res, mask: mask}:
	case <-w.stop:
		return false, nil
	case <-w.gone:
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

// end stops the worker's thread (it ends with its domain); again is nothing.
func (w *worker) end() {
	if w.idle != nil {
		w.idle.Stop()
	}
	w.once.Do(func() { close(w.stop) })
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

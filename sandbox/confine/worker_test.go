package confine

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"orcr/testutil/clis"
	"orcr/testutil/wait"
)

// tidOf runs Run for p and returns the id of the thread start ran on.
func tidOf(t *testing.T, c *Rulesets, p Policy) int {
	t.Helper()
	tid := 0
	if _, err := c.Ready(p, 0).Run(func(Report) error { tid = unix.Gettid(); return nil }); err != nil {
		t.Fatal(err)
	}
	if tid == unix.Getpid() {
		t.Fatal("started from the process's main thread")
	}
	return tid
}

func threadGone(t *testing.T, tid int, why string) {
	t.Helper()
	wait.For(t, 10*time.Second, why, func() bool {
		_, err := os.Stat(fmt.Sprintf("/proc/self/task/%d", tid))
		return os.IsNotExist(err)
	})
}

// The thread confined for a policy is kept and starts the next agent of that policy
// (no new thread, no new restriction); a path of the policy made again gets a new
// thread and the old one ends with its domain; an entry made since in a folder
// granted entry by entry gets a new thread too (its rule is not in the old thread's
// domain: TestRulesetsFollowEntries sees it writable); at most maxWorkers threads are
// kept, an idle one ends, and Close ends them all.
func TestConfinedThreadKept(t *testing.T) {
	if _, err := KernelABI(); err != nil {
		clis.Missingf(t, "no Landlock here: %v", err)
	}
	root := t.TempDir()
	work, many := filepath.Join(root, "work"), filepath.Join(root, "many")
	for _, d := range []string{work, filepath.Join(many, "e0")} {
		os.MkdirAll(d, 0o700)
	}
	p := Policy{RW: []string{work}, ROX: []string{"/usr", "/bin"}, Entries: &Entries{Dir: many}}
	var c Rulesets
	defer c.Close()
	first := tidOf(t, &c, p)
	if again := tidOf(t, &c, p); again != first || c.Threads != 1 {
		t.Fatalf("second start on thread %d (first %d), %d threads confined", again, first, c.Threads)
	}
	os.MkdirAll(filepath.Join(many, "e1"), 0o700)
	second := tidOf(t, &c, p)
	if second == first || c.Threads != 2 || c.Builds != 1 {
		t.Fatalf("after a new entry: thread %d (was %d), %d threads, %d builds", second, first, c.Threads, c.Builds)
	}
	threadGone(t, first, "the stale thread's end")
	os.RemoveAll(work)
	os.MkdirAll(work, 0o700)
	third := tidOf(t, &c, p)
	if third == second || c.Threads != 3 || c.Builds != 2 {
		t.Fatalf("after the folder made again: thread %d (was %d), %d threads, %d builds", third, second, c.Threads, c.Builds)
	}
	threadGone(t, second, "the rebuilt ruleset's old thread's end")

	var tids []int
	for i := range maxWorkers + 2 {
		d := filepath.Join(root, fmt.Sprint("d", i))
		os.MkdirAll(d, 0o700)
		tids = append(tids, tidOf(t, &c, Policy{RW: []string{d}}))
	}
	if c.Live() != maxWorkers {
		t.Fatalf("%d confined threads kept, want %d", c.Live(), maxWorkers)
	}
	threadGone(t, third, "the least recently used thread's end")

	old := workerIdle
	workerIdle = 50 * time.Millisecond
	defer func() { workerIdle = old }()
	d := filepath.Join(root, "idle")
	os.MkdirAll(d, 0o700)
	idle := tidOf(t, &c, Policy{RW: []string{d}})
	threadGone(t, idle, "the idle thread's end")

	c.Close()
	for _, tid := range tids {
		threadGone(t, tid, "every thread's end at Close")
	}
}

// init keeps the main goroutine on the process's main thread when the test binary
// is run as TestNeverConfinesMainThread's child.
func init() {
	if os.Getenv("CONFINE_TEST") == "mainthread" {
		runtime.LockOSThread()
	}
}

// MainThreadWorker starts a worker for p from the process's main thread (the
// child's TestMain: the main goroutine is locked to it) and says which thread the
// worker runs on and whether the main thread can still write outside p.
func MainThreadWorker(p Policy, outside string) (tid int, outsideErr error, err error) {
	if unix.Gettid() != unix.Getpid() {
		return 0, nil, fmt.Errorf("not on the main thread")
	}
	pl, err := Build(p)
	if err != nil {
		return 0, nil, err
	}
	fd, fl, err := pl.Config.NewRulesetFD(pl.Rules...)
	if err != nil {
		return 0, nil, err
	}
	defer unix.Close(fd)
	w := newWorker()
	ready := make(chan error, 1)
	w.run(ready) // on the main thread: it must hand the thread on, and return
	if err := <-ready; err != nil {
		return 0, nil, err
	}
	defer w.end()
	if err := w.confine(fd, fl); err != nil {
		return 0, nil, err
	}
	if ran, err := w.do(func() error { tid = unix.Gettid(); return nil }); err != nil || !ran {
		return 0, nil, fmt.Errorf("ran %v: %v", ran, err)
	}
	return tid, os.WriteFile(filepath.Join(outside, "main"), []byte("x"), 0o600), nil
}

// readyTid is the id of the thread kept ahead (0: none yet).
func readyTid(c *Rulesets) int {
	c.readyMu.Lock()
	defer c.readyMu.Unlock()
	if c.ready == nil {
		return 0
	}
	return c.ready.tid
}

// A new policy's confined thread is the one made ahead of it, not one made on the
// spawn's path: it exists before the spawn, the spawn runs on it, and the next one is
// made after (another thread, never one already used); Close ends the one waiting.
func TestReadyThread(t *testing.T) {
	if _, err := KernelABI(); err != nil {
		clis.Missingf(t, "no Landlock here: %v", err)
	}
	root := t.TempDir()
	var c Rulesets
	defer c.Close()
	policy := func(i int) Policy {
		d := filepath.Join(root, fmt.Sprint("d", i))
		os.MkdirAll(d, 0o700)
		return Policy{RW: []string{d}, ROX: []string{"/usr", "/bin"}}
	}
	if readyTid(&c) != 0 {
		t.Fatal("a thread made before any agent was confined")
	}
	used := map[int]bool{tidOf(t, &c, policy(0)): true}
	for i := 1; i <= 6; i++ {
		var ahead int
		wait.For(t, 10*time.Second, "the next thread made ahead", func() bool { ahead = readyTid(&c); return ahead != 0 })
		if used[ahead] {
			t.Fatalf("thread %d, used already, kept ahead", ahead)
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/self/task/%d", ahead)); err != nil {
			t.Fatalf("the thread kept ahead: %v", err)
		}
		tid := tidOf(t, &c, policy(i))
		if tid != ahead {
			t.Fatalf("spawn %d on thread %d, not the one made ahead (%d)", i, tid, ahead)
		}
		used[tid] = true
		if c.Threads != i+1 {
			t.Fatalf("%d threads confined after %d policies", c.Threads, i+1)
		}
	}
	wait.For(t, 10*time.Second, "the next thread made ahead", func() bool { return readyTid(&c) != 0 })
	last := readyTid(&c)
	c.Close()
	threadGone(t, last, "the thread kept ahead's end at Close")
	if readyTid(&c) != 0 {
		t.Fatal("a thread kept ahead after Close")
	}
}

// A start is handed to its thread pinned to the caller's CPU (worker.hand), but the
// agent it forks gets the server's affinity, not that one CPU: the agent of a new
// policy (the thread made ahead, confined) and of a kept one (the thread woken), and
// the thread itself holds the server's affinity again while it waits.
func TestAgentsKeepTheServersAffinity(t *testing.T) {
	if _, err := KernelABI(); err != nil {
		clis.Missingf(t, "no Landlock here: %v", err)
	}
	// With one CPU allowed nothing is pinned, and the agent's is the server's all the same.
	want := cpusAllowed(t, "self")
	root := t.TempDir()
	var c Rulesets
	defer c.Close()
	p := Policy{RW: []string{root}, ROX: []string{"/usr", "/bin", "/lib", "/lib64", "/etc"}, RO: []string{"/proc"}, Dev: []string{"/dev/null"}}
	for i, what := range []string{"a new policy's thread", "the thread kept for it"} {
		var out []byte
		var tid int
		if _, err := c.Ready(p, 0).Run(func(Report) error {
			tid = unix.Gettid()
			var err error
			out, err = exec.Command("sh", "-c", "grep Cpus_allowed_list /proc/self/status").Output()
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(string(out)); got != want {
			t.Errorf("agent %d, forked from %s: %q, want the server's %q", i, what, got, want)
		}
		if got := cpusAllowed(t, fmt.Sprintf("self/task/%d", tid)); got != want {
			t.Errorf("%s after the start: %q, want %q", what, got, want)
		}
	}
}

// The handoff pins a parked thread to one CPU (the caller's) until it runs, and the
// thread's own first step gives it the caller's affinity back (the start itself is
// TestAgentsKeepTheServersAffinity's).
func TestHandPinsUntilTheThreadRuns(t *testing.T) {
	if _, err := KernelABI(); err != nil {
		clis.Missingf(t, "no Landlock here: %v", err)
	}
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		t.Fatal(err)
	}
	want := cpusAllowed(t, "self")
	pl, err := Build(Policy{RW: []string{t.TempDir()}, ROX: []string{"/usr"}})
	if err != nil {
		t.Fatal(err)
	}
	fd, fl, err := pl.Config.NewRulesetFD(pl.Rules...)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	w, err := newThread()
	if err != nil {
		t.Fatal(err)
	}
	defer w.end()
	if err := w.confine(fd, fl); err != nil {
		t.Fatal(err)
	}
	task := fmt.Sprintf("self/task/%d", w.tid)
	mask := w.hand()
	var pinned unix.CPUSet
	if err := unix.SchedGetaffinity(w.tid, &pinned); err != nil {
		t.Fatal(err)
	}
	switch {
	case all.Count() < 2 && (mask != nil || pinned.Count() != all.Count()):
		t.Fatalf("one CPU allowed: pinned anyway (%s)", cpusAllowed(t, task))
	case all.Count() >= 2 && (mask == nil || pinned.Count() != 1):
		t.Fatalf("the parked thread handed a start: %s, want one CPU", cpusAllowed(t, task))
	}
	res := make(chan error, 1)
	w.jobs <- job{fn: func() error { return nil }, res: res, mask: mask}
	if err := <-res; err != nil {
		t.Fatal(err)
	}
	if got := cpusAllowed(t, task); got != want {
		t.Fatalf("the thread once it ran: %q, want the caller's %q", got, want)
	}
}

// cpusAllowed is the Cpus_allowed_list line of /proc/PATH/status.
func cpusAllowed(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + path + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "Cpus_allowed_list:") {
			return strings.TrimSpace(l)
		}
	}
	t.Fatalf("no Cpus_allowed_list in /proc/%s/status", path)
	return ""
}

// A thread's restriction is applied by the thread itself before its first start, in
// the same handoff; when it fails (here a descriptor that is no ruleset) the start is
// not run, its caller gets the error, and the thread takes no other start.
func TestFailedRestrictionRunsNothing(t *testing.T) {
	if _, err := KernelABI(); err != nil {
		clis.Missingf(t, "no Landlock here: %v", err)
	}
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := newThread()
	if err != nil {
		t.Fatal(err)
	}
	defer w.end()
	if err := w.confine(int(f.Fd()), 0); err != nil {
		t.Fatal(err)
	}
	if err := w.confine(int(f.Fd()), 0); err == nil {
		t.Fatal("a thread confined twice")
	}
	ran := false
	got, err := w.do(func() error { ran = true; return nil })
	if !got || err == nil || ran {
		t.Fatalf("first start: handed %v, err %v, run %v; want handed, a restriction error, not run", got, err, ran)
	}
	if got, err := w.do(func() error { ran = true; return nil }); got || err != nil || ran {
		t.Fatalf("a start after the failed restriction: handed %v, err %v, run %v", got, err, ran)
	}
	if !w.ended() {
		t.Fatal("the thread did not end")
	}
}

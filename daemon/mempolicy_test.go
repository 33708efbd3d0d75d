package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"syscall"
	"testing"
	"time"

	"orcr/core"
	"orcr/pty"
	"orcr/testutil/serve"
	"orcr/testutil/wait"
	"orcr/tmux"
)

// forcedGCs is how many collections were forced so far (runtime.GC, debug.FreeOSMemory).
func forcedGCs() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// The end of a burst returns memory at once, inside the report of its last end, and
// only then: ends while anything still runs return nothing, one agent coming and
// going (fewer than burstEnds ends, little let go) returns nothing, and a second
// report of nothing running returns nothing more at once (once per burst; what came
// after the return goes with the burst's tail, TestMemPolicyReturnsABurstsTail). A burst is ends or
// bytes let go.
func TestMemPolicyReturnsAtTheEndOfABurst(t *testing.T) {
	m := newMemPolicy()
	defer m.close()
	m.returnFreed = 1 << 40 // only the burst rule here
	m.freedQuiet = time.Hour
	for i := range 10 {
		m.Ended(10 - i)
	}
	m.Ended(0)
	if n := m.returns.Load(); n != 0 {
		t.Fatalf("%d returns after 11 ends; want none (not a burst)", n)
	}
	for range burstEnds {
		m.Ended(1)
	}
	if n := m.returns.Load(); n != 0 {
		t.Fatalf("%d returns while a program still ran; want none", n)
	}
	gcs := forcedGCs()
	m.Ended(0)
	if n := m.returns.Load(); n != 1 {
		t.Fatalf("%d returns once the burst's last program ended; want 1", n)
	}
	if forcedGCs() == gcs {
		t.Fatal("the return made no collection: nothing went back to the OS")
	}
	m.Ended(0)
	if n := m.returns.Load(); n != 1 {
		t.Fatalf("%d returns at once after a second end with nothing running; want still 1 (once per burst; its tail comes later)", n)
	}
	m.Freed(burstFreed)
	m.Ended(0)
	if n := m.returns.Load(); n != 2 {
		t.Fatalf("%d returns after %d MiB let go and the last end; want 2", n, burstFreed>>20)
	}
}

// A burst's tail is returned too: the counts start again at each return, so when a
// return came a few ends before the burst's last (a for_each of instant programs has
// nothing running between most of its items), the last end found too little counted
// to return it, and the last programs' garbage (up to burstFreed) stayed resident.
// Once no program has ended for burstQuiet after a burst's return, what came since
// goes back; when nothing came since, nothing more is done.
func TestMemPolicyReturnsABurstsTail(t *testing.T) {
	m := newMemPolicy()
	defer m.close()
	m.returnFreed = 1 << 40 // only the burst rules here
	m.freedQuiet = time.Hour
	m.burstQuiet = 300 * time.Millisecond
	burst := func() {
		for range burstEnds - 1 {
			m.Ended(1)
		}
		m.Ended(0)
	}
	// A burst with nothing after its return: no tail return.
	burst()
	if n := m.returns.Load(); n != 1 {
		t.Fatalf("%d returns at the burst's end; want 1", n)
	}
	if wait.Until(4*m.burstQuiet, func() bool { return m.returns.Load() > 1 }) {
		t.Fatal("a tail return with nothing ended or let go since the burst's return")
	}
	// A burst that goes on past its return: one more program, its garbage, its end
	// with nothing running, within burstQuiet.
	burst()
	m.Ended(1)
	m.Freed(6 << 20)
	m.Ended(0)
	if !wait.Until(wait.Scale(5*time.Second), func() bool { return m.returns.Load() == 3 }) {
		t.Fatalf("%d returns; the burst's tail (1 end, 6 MiB) was not returned", m.returns.Load())
	}
	if wait.Until(4*m.burstQuiet, func() bool { return m.returns.Load() > 3 }) {
		t.Fatal("a second tail return")
	}
}

// What piles up while programs run goes back after returnBatch, at most once per
// returnEvery, whether or not anything ends.
func TestMemPolicyReturnsWhatPilesUp(t *testing.T) {
	m := newMemPolicy()
	defer m.close()
	m.returnBatch, m.returnEvery = 50*time.Millisecond, 600*time.Millisecond
	m.freedQuiet = time.Hour // only the pile-up rule here (TestMemPolicyReturnsWhatSettles has the other)
	m.Freed(returnFreed - 1)
	if wait.Until(10*m.returnBatch, func() bool { return m.returns.Load() > 0 }) {
		t.Fatal("a return before returnFreed bytes were let go")
	}
	start := time.Now()
	m.Freed(1)
	if !wait.Until(wait.Scale(10*time.Second), func() bool { return m.returns.Load() == 1 }) {
		t.Fatal("no return after returnFreed bytes were let go")
	}
	first := time.Now()
	if first.Sub(start) < m.returnBatch {
		t.Fatalf("returned %v after the bytes; want after returnBatch (%v), so panes packing together share it", first.Sub(start), m.returnBatch)
	}
	m.Freed(returnFreed)
	if !wait.Until(wait.Scale(10*time.Second), func() bool { return m.returns.Load() == 2 }) {
		t.Fatal("no second return")
	}
	if gap := time.Since(first); gap < m.returnEvery-m.returnBatch {
		t.Fatalf("second return %v after the first; want at most one per %v", gap, m.returnEvery)
	}
}

// What was let go comes back once the letting go stops, even under returnFreed: 100
// pty agents started together let go ~50 MB as their panes pack, a few hundred KB
// each over seconds, and the idle server kept it (+34 to +71 MB a minute later in
// bench/pty). Reports closer together than freedQuiet put the return off; less than
// freedSettle since the last return is left to the runtime.
func TestMemPolicyReturnsWhatSettles(t *testing.T) {
	m := newMemPolicy()
	defer m.close()
	m.returnBatch, m.returnEvery = 20*time.Millisecond, 20*time.Millisecond
	m.freedQuiet = 400 * time.Millisecond
	start := time.Now()
	var last time.Time
	for range 8 { // 8 × 1 MiB, one every 100 ms: the letting go goes on
		m.Freed(1 << 20)
		last = time.Now()
		if n := m.returns.Load(); n != 0 {
			t.Fatalf("%d returns %v into the letting go; want none while it goes on", n, time.Since(start))
		}
		time.Sleep(100 * time.Millisecond) // the reports' own pace, not a wait for a condition
	}
	if !wait.Until(wait.Scale(10*time.Second), func() bool { return m.returns.Load() == 1 }) {
		t.Fatalf("no return after 8 MiB let go and %v of quiet", m.freedQuiet)
	}
	if since := time.Since(last); since < m.freedQuiet-50*time.Millisecond {
		t.Fatalf("returned %v after the last report; want once it stopped (%v)", since, m.freedQuiet)
	}
	m.Freed(1 << 20) // under freedSettle: the runtime's business
	if wait.Until(4*m.freedQuiet, func() bool { return m.returns.Load() > 1 }) {
		t.Fatal("a return for 1 MiB let go; want none under freedSettle")
	}
}

// hostExit waits for pane's PaneExited on h.
func hostExit(t *testing.T, h core.Host, pane string) {
	t.Helper()
	deadline := time.After(wait.Scale(20 * time.Second))
	for {
		select {
		case ev, ok := <-h.Events():
			if !ok {
				t.Fatal("events closed")
			}
			if ev.Pane == pane && ev.Kind == core.PaneExited {
				return
			}
		case <-deadline:
			t.Fatalf("no exit of %s", pane)
		}
	}
}

func hostLaunch(t *testing.T, h core.Host, argv ...string) core.PaneInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait.Scale(20*time.Second))
	defer cancel()
	info, err := h.Launch(ctx, core.LaunchSpec{Name: "mem/" + argv[0], Argv: argv, Cwd: t.TempDir(),
		Env: []string{"PATH=" + os.Getenv("PATH"), "TERM=xterm-256color", "LANG=C.UTF-8"}})
	if err != nil {
		t.Fatalf("launch %q: %v", argv, err)
	}
	return info
}

// burstEndReturns runs a burst of short programs on h beside one that keeps running,
// then ends that one: the memory goes back when the last program ends, before its
// end is heard of, and not before.
func burstEndReturns(t *testing.T, h core.Host, m *memPolicy, n int) {
	keeper := hostLaunch(t, h, "sleep", "600")
	for range n {
		p := hostLaunch(t, h, "sh", "-c", "exit 0")
		hostExit(t, h, p.ID)
	}
	if r := m.returns.Load(); r != 0 {
		t.Fatalf("%d returns of memory while a program still ran; want 0", r)
	}
	gcs := forcedGCs()
	if err := syscall.Kill(keeper.PID, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	hostExit(t, h, keeper.ID)
	if r := m.returns.Load(); r != 1 {
		t.Fatalf("the burst's last program ended and was heard of after %d returns of memory (%d ends counted); want 1", r, m.ends.Load())
	}
	if forcedGCs() == gcs {
		t.Fatal("the return made no collection: nothing went back to the OS")
	}
}

// A burst of short-lived panes on the pty host hands its memory back to the OS when
// its last program ends, before that end is reported: each new pane leaves ~6 MB of
// construction garbage (vt's screens and parser buffer), which the host reports, and a
// server whose burst had just ended (a 1,000-item for_each's last result) still held
// ~20 MB of it, which the runtime's own scavenger returns only over the next seconds.
func TestBurstEndReturnsMemory(t *testing.T) {
	t.Run("pty", func(t *testing.T) {
		m := newMemPolicy()
		defer m.close()
		m.returnFreed = 1 << 40 // the burst's end only
		h := pty.New(pty.Options{Memory: m})
		defer h.Shutdown(context.Background())
		burstEndReturns(t, h, m, 4) // 4 × ~6 MB: past burstFreed
	})
	// On tmux the server holds no terminals; a burst is its ends (burstEnds, 3 here).
	t.Run("tmux", func(t *testing.T) {
		m := newMemPolicy()
		defer m.close()
		m.burstEnds = 4
		sock := filepath.Join(serve.ShortDir(t, "orcr-mp-"), "tmux.sock")
		serve.KillTmux(t, sock)
		ctx, cancel := context.WithTimeout(context.Background(), wait.Scale(20*time.Second))
		defer cancel()
		h, err := tmux.New(ctx, tmux.Options{Socket: sock, Memory: m})
		if err != nil {
			t.Skipf("no tmux: %v", err)
		}
		defer h.Shutdown(context.Background())
		burstEndReturns(t, h, m, 3)
	})
}

// The memory the pty host lets go when it packs idle panes' screens is handed back
// without waiting for the runtime's two-minute collection: an idle server allocates
// next to nothing, so the dead cells of 100 freshly idle agents stayed in the heap
// (and the RSS) for up to two minutes. The test never collects itself; the heap in
// use must fall by the policy's doing.
func TestPackedMemoryIsReturned(t *testing.T) {
	const n = 10 // 400x100 panes: 8.9 MB of cells each
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.HeapInuse
	m := newMemPolicy()
	defer m.close()
	// What is let go after the last return waits for the next returnFreed: about one
	// pane here, so however the packs and returns interleave, the last pack returns.
	m.returnFreed, m.returnEvery = 8<<20, 500*time.Millisecond
	h := pty.New(pty.Options{Cols: 400, Rows: 100, PackAfter: 100 * time.Millisecond, Memory: m})
	defer h.Shutdown(context.Background())
	for i := range n {
		hostLaunch(t, h, "sh", "-c", fmt.Sprintf("echo big%d; exec cat", i))
	}
	if !wait.Until(wait.Scale(30*time.Second), func() bool {
		runtime.ReadMemStats(&ms)
		return m.returns.Load() > 0 && int64(ms.HeapInuse)-int64(before) < 20<<20
	}) {
		t.Fatalf("heap in use %d MiB above the start after %d returns (the panes' cells were %d MiB)",
			(int64(ms.HeapInuse)-int64(before))>>20, m.returns.Load(), n*2*400*100*112>>20)
	}
}

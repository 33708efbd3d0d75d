package pty_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	uv "github.com/charmbracelet/ultraviolet"

	"orcr/core"
	"orcr/pty"
)

// heapPerPane launches n idle panes (real ptys running sleep) after each has printed
// a line, and returns the live heap they add, per pane.
func heapPerPane(t testing.TB, n int) float64 {
	h := newHost(t, pty.Options{Cols: 200, Rows: 50})
	before := liveHeap()
	for i := range n {
		info := launch(t, h, "sh", "-c", fmt.Sprintf("echo idle%d; exec sleep 600", i))
		waitText(t, h, info.ID, 0, "idle")
	}
	after := liveHeap()
	return float64(after-before) / float64(n)
}

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// An idle pane holds memory in proportion to its size, not megabytes of fixed
// buffers: the vt emulator's parser allocated 4 MiB for OSC/DCS strings, which made
// 100 idle panes ~650 MB of live heap. What remains is the emulator's two screens of
// cells (main and alternate) and a few hundred KiB of buffers (under 1 MiB).
func TestIdlePaneHeap(t *testing.T) {
	const n = 20
	per := heapPerPane(t, n)
	screens := 2 * 200 * 50 * float64(unsafe.Sizeof(uv.Cell{})) // the default pane size
	t.Logf("live heap per idle 200x50 pane: %.0f KiB (its screens: %.0f KiB)", per/1024, screens/1024)
	if limit := screens + 1<<20; per > limit {
		t.Errorf("an idle 200x50 pane holds %.0f KiB of heap; its screens need %.0f KiB and the rest should be under 1 MiB",
			per/1024, screens/1024)
	}
}

// An idle pane holds memory in proportion to what it shows: once its output has been
// quiet for PackAfter its two screens of cells (2.2 MB at 200x50) are packed into runs,
// so 100 idle agents add ≤ 20 MB to the server, not 220 MB. Reads of a packed pane
// answer from the runs; output unpacks it and lands on the screen it had.
func TestIdlePaneIsPacked(t *testing.T) {
	const n = 20
	h := newHost(t, pty.Options{Cols: 200, Rows: 50, PackAfter: 100 * time.Millisecond})
	before := liveHeap()
	var ids []string
	for i := range n {
		info := launch(t, h, "sh", "-c", fmt.Sprintf("printf '\\033[1;32midle%d\\033[0m ready\\n'; exec cat", i))
		waitText(t, h, info.ID, 0, fmt.Sprintf("idle%d ready", i))
		ids = append(ids, info.ID)
	}
	waitFor(t, "every idle pane to be packed", func() (bool, string) {
		for _, id := range ids {
			if !pty.Packed(h, id) {
				return false, id + " is not packed"
			}
		}
		return true, ""
	})
	// Signed: garbage of earlier tests collected meanwhile can leave the heap smaller.
	per := float64(int64(liveHeap())-int64(before)) / n
	t.Logf("live heap per idle packed 200x50 pane: %.0f KiB", per/1024)
	if per > 200<<10 {
		t.Errorf("an idle 200x50 pane holds %.0f KiB of heap; packed it should hold under 200 KiB (100 agents ≤ 20 MB)", per/1024)
	}
	// A read of a packed pane is the screen it showed, and leaves it packed.
	scr, err := h.Read(context.Background(), ids[3], core.ReadOpts{})
	if err != nil {
		t.Fatal(err)
	}
	if scr.Text != "idle3 ready" || scr.Cols != 200 || scr.Rows != 50 || scr.CursorY != 1 {
		t.Errorf("packed pane reads %q (%dx%d, cursor row %d), want \"idle3 ready\" on 200x50 with the cursor on row 1",
			scr.Text, scr.Cols, scr.Rows, scr.CursorY)
	}
	// A styled read of a packed pane keeps its colours, and leaves it packed too.
	styled, err := h.Read(context.Background(), ids[3], core.ReadOpts{ANSI: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(styled.Text, "\x1b[32;1midle3") || !strings.Contains(styled.Text, "idle3") || !strings.Contains(styled.Text, "ready") {
		t.Errorf("a styled read of a packed pane reads %q, want idle3 in bold green", styled.Text)
	}
	if !pty.Packed(h, ids[3]) {
		t.Error("a read unpacked the pane")
	}
	// Output unpacks it: the new line lands below the old one.
	if err := h.SendText(context.Background(), ids[3], "more\r"); err != nil {
		t.Fatal(err)
	}
	waitText(t, h, ids[3], 0, "idle3 ready\nmore\nmore")
}

// The memory packing lets go is reported to the server's memory policy
// (Options.Memory), which hands it back without waiting for the runtime's two-minute
// collection (daemon.TestPackedMemoryIsReturned): every packed screen counts, at what
// its cells held less what its runs keep.
func TestPackingIsReported(t *testing.T) {
	const n = 10 // 400x100 panes: 8.9 MB of cells each
	rep := &memReport{}
	h := newHost(t, pty.Options{Cols: 400, Rows: 100, PackAfter: 100 * time.Millisecond, Memory: rep})
	var ids []string
	for i := range n {
		info := launch(t, h, "sh", "-c", fmt.Sprintf("echo big%d; exec cat", i))
		waitText(t, h, info.ID, 0, fmt.Sprintf("big%d", i))
		ids = append(ids, info.ID)
	}
	cells := int64(400 * 100 * unsafe.Sizeof(uv.Cell{})) // one screen's
	waitFor(t, "every pane packed and its cells reported", func() (bool, string) {
		for _, id := range ids {
			if !pty.Packed(h, id) {
				return false, id + " is not packed"
			}
		}
		// Each pane held the cells of one screen, the main one it printed on, from its
		// first output until it went quiet: its blank start (newEmulator) and its
		// alternate screen (hidden) never held any, so they are not reported.
		freed := rep.freed.Load()
		return freed >= n*cells*9/10, fmt.Sprintf("%d MiB reported let go; the panes' main screens were %d MiB", freed>>20, n*cells>>20)
	})
	// Beside the cells: each emulator's 4 MiB parser buffer, let go when it was made.
	if freed := rep.freed.Load(); freed > n*(cells+4<<20) {
		t.Fatalf("%d MiB reported let go, more than the %d MiB of cells the panes' main screens held and their parser buffers", freed>>20, n*(cells+4<<20)>>20)
	}
}

// A pane costs its screens' cells only once its program prints: vt.NewEmulator
// allocates both screens (2.2 MB at 200x50), newEmulator none, and a silent program (a
// workflow item writing its output file) needs none of them. The quiet timer is an hour here,
// so what is measured is the pane as it starts, not as it packs when quiet.
func TestSilentPaneHoldsNoCells(t *testing.T) {
	const n = 20
	h := newHost(t, pty.Options{Cols: 200, Rows: 50, PackAfter: time.Hour})
	before := liveHeap()
	for range n {
		info := launch(t, h, "sleep", "600")
		if !pty.Packed(h, info.ID) {
			t.Fatalf("pane %s of a program that printed nothing holds its cells", info.ID)
		}
	}
	per := float64(int64(liveHeap())-int64(before)) / n
	t.Logf("live heap per silent 200x50 pane: %.0f KiB", per/1024)
	if per > 200<<10 {
		t.Errorf("a silent 200x50 pane holds %.0f KiB of heap; with no cells it should hold under 200 KiB", per/1024)
	}
	// Its first output unpacks it and lands on the screen as on a fresh one.
	info := launch(t, h, "sh", "-c", "read x; printf '\\033[1;31mred\\033[0m %s\\n' \"$x\"; exec cat")
	if err := h.SendText(context.Background(), info.ID, "later\r"); err != nil {
		t.Fatal(err)
	}
	waitText(t, h, info.ID, 0, "later\nred later")
	if pty.Packed(h, info.ID) {
		t.Error("a pane that printed is still packed an hour before its quiet timer")
	}
}

// A closed pane lets go of its cells at once, although its quiet timer (armed by its
// last output, an hour here) still holds the pane until it fires: a 1,000-item
// for_each closed ~20 panes a second and the last ~100 kept 214 MB of the server's
// heap after the run ended.
func TestClosedPaneLetsGoOfItsCells(t *testing.T) {
	const n = 20
	h := newHost(t, pty.Options{Cols: 200, Rows: 50, PackAfter: time.Hour})
	before := liveHeap()
	for i := range n {
		info := launch(t, h, "sh", "-c", fmt.Sprintf("echo item%d; exec cat", i))
		waitText(t, h, info.ID, 0, fmt.Sprintf("item%d", i))
		if err := h.Close(context.Background(), info.ID); err != nil {
			t.Fatal(err)
		}
	}
	per := float64(int64(liveHeap())-int64(before)) / n
	t.Logf("live heap per closed 200x50 pane: %.0f KiB", per/1024)
	if per > 200<<10 {
		t.Errorf("a closed 200x50 pane still holds %.0f KiB of heap (its cells are 2.2 MB); it should hold under 200 KiB", per/1024)
	}
}

// The host reports every program's end to the server's memory policy before the end
// is reported to anyone, with how many of its programs still run, and the construction
// garbage of each pane it makes (vt's 4 MiB parser buffer and blank screens): that is
// all the policy needs to return a burst's memory when the burst's last program ends
// (daemon.TestBurstEndReturnsMemory). The host itself returns nothing.
func TestEndsAreReported(t *testing.T) {
	rep := &memReport{}
	h := newHost(t, pty.Options{Cols: 200, Rows: 50, Memory: rep})
	keeper := launch(t, h, "sleep", "600")
	for i := range 4 {
		info := launch(t, h, "sh", "-c", "exit 0")
		nextExit(t, h, info.ID)
		if got := rep.endsSoFar(); len(got) != i+1 || got[i] != 1 {
			t.Fatalf("after %d exits the host reported ends %v; want %d reports, the last with 1 program running", i+1, got, i+1)
		}
	}
	if err := syscall.Kill(keeper.PID, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	nextExit(t, h, keeper.ID)
	if got := rep.endsSoFar(); len(got) != 5 || got[4] != 0 {
		t.Fatalf("the last program's exit was heard after the ends %v were reported; want 5, the last with 0 running", got)
	}
	if freed, want := rep.freed.Load(), int64(5*4<<20); freed < want {
		t.Errorf("5 panes reported %d MiB let go; their parser buffers alone are %d MiB", freed>>20, want>>20)
	}
}

// memReport records what a host reports (core.MemoryReport).
type memReport struct {
	freed atomic.Int64
	mu    sync.Mutex
	ends  []int
}

func (r *memReport) Freed(n int64) { r.freed.Add(n) }

func (r *memReport) Ended(running int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ends = append(r.ends, running)
}

func (r *memReport) endsSoFar() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.ends...)
}

// A pane that prints holds the cells of the screen it shows, not the other's: the one
// not shown stays packed until the program switches screens (its text intact when it
// comes back), resets the terminal or the pane is resized.
func TestOnlyTheShownScreenHoldsCells(t *testing.T) {
	h := newHost(t, pty.Options{Cols: 120, Rows: 30, PackAfter: time.Hour})
	steps := []string{
		`printf 'main text\n'`,
		`printf '\033[?1049halt text\n'`,
		`printf 'alt more\n'`,
		`printf '\033[?1049lmain again\n'`,
		`printf 'on main\n'`,
		`printf '\033cafter reset\n'`,
		`printf 'before resize\n'`,
		`printf '\033[?1049hback in alt\n'`,
	}
	info := launch(t, h, "sh", "-c", strings.Join(steps, "; read x; ")+"; exec cat")
	id := info.ID
	next := func() {
		t.Helper()
		if err := h.SendText(context.Background(), id, "\r"); err != nil {
			t.Fatal(err)
		}
	}
	held := func(main, alt bool, when string) {
		t.Helper()
		if got := pty.HeldScreens(h, id); got != [2]bool{main, alt} {
			t.Fatalf("%s: main, alternate screen hold cells: %v, want %v", when, got, [2]bool{main, alt})
		}
	}
	pack := func() {
		t.Helper()
		if !pty.Pack(h, id) {
			t.Fatal("the pane did not pack")
		}
		held(false, false, "packed")
	}
	waitText(t, h, id, 0, "main text")
	held(true, false, "a new pane's first output, on the main screen")

	next()
	waitText(t, h, id, 0, "alt text")
	held(true, true, "after the switch to the alternate screen")
	pack()
	next()
	waitText(t, h, id, 0, "alt more")
	held(false, true, "output on the alternate screen after a pack")
	next()
	s := waitText(t, h, id, 0, "main again")
	if !strings.Contains(s.Text, "main text") || strings.Contains(s.Text, "alt") {
		t.Fatalf("back on the main screen, kept packed meanwhile: %q, want its text as it was", s.Text)
	}
	held(true, true, "after the switch back")

	pack()
	next()
	waitText(t, h, id, 0, "on main")
	held(true, false, "output on the main screen after a pack")
	next()
	s = waitText(t, h, id, 0, "after reset")
	if strings.Contains(s.Text, "main text") {
		t.Fatalf("after a full reset the screen still shows what came before: %q", s.Text)
	}
	held(true, true, "after a full reset")

	pack()
	next()
	waitText(t, h, id, 0, "before resize")
	held(true, false, "output after a pack")
	if err := h.Resize(context.Background(), id, 90, 20); err != nil {
		t.Fatal(err)
	}
	held(true, true, "after a resize")
	next()
	s = waitText(t, h, id, 0, "back in alt")
	if s.Cols != 90 || s.Rows != 20 || strings.Contains(s.Text, "alt text") {
		t.Fatalf("the alternate screen after a resize: %dx%d %q, want 90x20 and cleared", s.Cols, s.Rows, s.Text)
	}
}

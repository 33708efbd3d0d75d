package pty_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
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

// The memory packing lets go is handed back without waiting for the runtime's
// two-minute collection: an idle server allocates next to nothing, so the dead cells
// of 100 freshly idle agents stayed in the heap (and the RSS) for up to two minutes.
// The test never collects itself; the heap in use must fall by the host's doing.
func TestPackedMemoryIsReturned(t *testing.T) {
	const n = 10 // 400x100 panes: 8.9 MB of cells each, past the host's 64 MiB batch
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	before := m.HeapInuse
	h := newHost(t, pty.Options{Cols: 400, Rows: 100, PackAfter: 100 * time.Millisecond})
	var ids []string
	for i := range n {
		info := launch(t, h, "sh", "-c", fmt.Sprintf("echo big%d; exec cat", i))
		waitText(t, h, info.ID, 0, fmt.Sprintf("big%d", i))
		ids = append(ids, info.ID)
	}
	waitFor(t, "the heap in use to fall back once every pane is packed", func() (bool, string) {
		for _, id := range ids {
			if !pty.Packed(h, id) {
				return false, id + " is not packed"
			}
		}
		runtime.ReadMemStats(&m)
		grown := int64(m.HeapInuse) - int64(before)
		return grown < 20<<20, fmt.Sprintf("heap in use %d MiB above the start (the panes' cells were %d MiB)", grown>>20, n*2*400*100*112>>20)
	})
}

// A pane costs its screens' cells only once its program prints: vt allocates both
// screens (2.2 MB at 200x50) when the pane is made, and a silent program (a workflow
// item writing its output file) needs none of them. The quiet timer is an hour here,
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

// A burst of short-lived panes hands its memory back to the OS when its last program
// ends, before that end is reported: each new pane leaves ~6 MB of construction
// garbage (vt's screens and parser buffer), and a server whose burst had just ended
// (a 1,000-item for_each's last result) still held ~20 MB of it, which the runtime's
// own scavenger returns only over the next seconds. While any pane still runs its
// program, ends return nothing (that is the periodic return's job).
func TestBurstEndReturnsMemory(t *testing.T) {
	h := newHost(t, pty.Options{Cols: 200, Rows: 50})
	keeper := launch(t, h, "sleep", "600")
	for range 4 { // 4 × ~6 MB: past the return's threshold, short of the periodic one
		info := launch(t, h, "sh", "-c", "exit 0")
		nextExit(t, h, info.ID)
	}
	if n := pty.Releases(h); n != 0 {
		t.Fatalf("%d returns of memory while a pane still ran its program; want 0", n)
	}
	if err := syscall.Kill(keeper.PID, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	nextExit(t, h, keeper.ID)
	if n := pty.Releases(h); n != 1 {
		t.Fatalf("the burst's last program ended and was reported after %d returns of memory; want 1", n)
	}
}

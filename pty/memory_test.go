package pty_test

import (
	"fmt"
	"runtime"
	"testing"
	"unsafe"

	uv "github.com/charmbracelet/ultraviolet"

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

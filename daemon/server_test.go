package daemon

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"orcr/testutil/wait"
)

func TestMemLimitFollowsTheLiveHeap(t *testing.T) {
	for _, c := range []struct{ live, stacks, want int64 }{
		{0, 0, 64 << 20}, {20 << 20, 0, 64 << 20}, {50 << 20, 0, 100 << 20}, {50 << 20, 80 << 20, 180 << 20},
	} {
		if got := memLimit(uint64(c.live), uint64(c.stacks)); got != c.want {
			t.Fatalf("memLimit(%d MiB, %d MiB) = %d MiB, want %d", c.live>>20, c.stacks>>20, got>>20, c.want>>20)
		}
	}
}

// The limit must stay above the collector's own target (live × (1 + GOGC/100)) with
// room to spare, or every collection ends above the limit and the next starts at once:
// 100 embedded-pty panes (~650 MB live) under live + 44 MiB spent 24 % of the time in GC.
func TestMemLimitAboveTheGCTarget(t *testing.T) {
	for _, live := range []uint64{30 << 20, 100 << 20, 650 << 20, 4 << 30} {
		target := live + live*serverGCPercent/100
		if got := uint64(memLimit(live, 0)); got < target+target/4 {
			t.Errorf("memLimit(%d MiB) = %d MiB, under 1.25 × the GC target of %d MiB: the collector would run back to back",
				live>>20, got>>20, target>>20)
		}
	}
}

// The limit follows a growing live heap collection by collection: 100 pty agents
// started at once grow it by ~250 MB in seconds, and a limit re-read on a ticker
// (every 5 s) left every collection until then over the old one, so the next began
// at once (90 back to back). Each step holds 8 MiB more and collects; the limit must
// be twice the live heap within a second of each collection, long before any tick.
func TestMemLimitFollowsEachCollection(t *testing.T) {
	prev := debug.SetMemoryLimit(memLimitFloor)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go followMemLimit(ctx)
	var held [][]byte
	for step := range 12 {
		held = append(held, make([]byte, 8<<20))
		for i := range held[step] {
			held[step][i] = byte(i) // touched: counted live, whatever the kernel does
		}
		runtime.GC()
		live := int64(len(held)) * 8 << 20
		wait.For(t, time.Second, fmt.Sprintf("a limit of twice %d MiB live after the collection", live>>20), func() bool {
			return debug.SetMemoryLimit(-1) >= max(memLimitFloor, 2*live)
		})
	}
	runtime.KeepAlive(held)
}

package daemon

import "testing"

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

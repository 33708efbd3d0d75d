package daemon

import "testing"

func TestMemLimitFollowsTheLiveHeap(t *testing.T) {
	for _, c := range []struct{ live, want int64 }{{0, 64 << 20}, {20 << 20, 64 << 20}, {50 << 20, 94 << 20}} {
		if got := memLimit(uint64(c.live)); got != c.want {
			t.Fatalf("memLimit(%d MiB) = %d MiB, want %d", c.live>>20, got>>20, c.want>>20)
		}
	}
}

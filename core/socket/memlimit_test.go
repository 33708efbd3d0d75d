package socket

import (
	"runtime/debug"
	"testing"
)

// The server moves the soft memory limit with its live heap (daemon.followMemLimit);
// the connection allowance goes on top of the limit it set last, never back on top of
// the limit seen at the first connection (which with 100 pty panes put a 66 MiB limit
// under a ~650 MB live heap, and the collector ran back to back).
func TestMemLimitFollowsTheServersLimit(t *testing.T) {
	prev := debug.SetMemoryLimit(64 << 20)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	var m memLimit
	m.follow(1)
	if got, want := debug.SetMemoryLimit(-1), int64(64<<20+256*connMemory); got != want {
		t.Fatalf("one connection: limit %d, want %d", got, want)
	}
	debug.SetMemoryLimit(1 << 30) // the server follows a bigger live heap
	m.follow(0)
	if got, want := debug.SetMemoryLimit(-1), int64(1<<30); got != want {
		t.Fatalf("after the server raised the limit to 1 GiB, no connections: limit %d MiB, want %d MiB", got>>20, want>>20)
	}
	m.follow(300)
	if got, want := debug.SetMemoryLimit(-1), int64(1<<30+512*connMemory); got != want {
		t.Fatalf("300 connections: limit %d, want %d", got, want)
	}
	m.follow(1)
	if got, want := debug.SetMemoryLimit(-1), int64(1<<30+256*connMemory); got != want {
		t.Fatalf("back to one connection: limit %d, want %d", got, want)
	}
}

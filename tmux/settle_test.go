package tmux

import (
	"context"
	"syscall"
	"testing"
)

// The end of a burst of panes hands the server's free memory back to the OS before
// that end is reported (a 1,000-item for_each ended with ~7 MB of the burst's heap
// still resident), and only then: a pane ending while another still runs returns
// nothing, nor does one agent coming and going (settleEnds).
func TestBurstEndReturnsMemory(t *testing.T) {
	defer func(n int) { settleEnds = n }(settleEnds)
	settleEnds = 3
	h := newTestHost(t, testSocket(t))
	defer h.Shutdown(context.Background())
	keeper := launch(t, h, "sleep", "600")
	before := releases.Load()
	for range 3 {
		p := launch(t, h, "sh", "-c", "exit 0")
		waitExit(t, h, p.ID)
	}
	if n := releases.Load() - before; n != 0 {
		t.Fatalf("%d returns of memory while a pane still ran its program; want 0", n)
	}
	if err := syscall.Kill(keeper.PID, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitExit(t, h, keeper.ID)
	if n := releases.Load() - before; n != 1 {
		t.Fatalf("the burst's last program ended and was reported after %d returns of memory; want 1", n)
	}
}

package tmux

import (
	"context"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The host reports every program's end to the server's memory policy before the end
// is reported to anyone, with how many of its programs still run: that is all the
// policy needs to return a burst's memory when the burst's last program ends
// (daemon.TestBurstEndReturnsMemory). The host itself returns nothing. The last end's
// report comes from the event queue's goroutine, not under the host's lock (the
// policy may collect and scavenge in it; the control reader goes on meanwhile).
func TestEndsAreReported(t *testing.T) {
	rep := &endReport{}
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	h, err := New(c, Options{Socket: testSocket(t), Memory: rep})
	if err != nil {
		t.Fatalf("new tmux host: %v", err)
	}
	defer h.Shutdown(context.Background())
	keeper := launch(t, h, "sleep", "600")
	for i := range 3 {
		p := launch(t, h, "sh", "-c", "exit 0")
		waitExit(t, h, p.ID)
		if got := rep.soFar(); len(got) != i+1 || got[i] != 1 {
			t.Fatalf("after %d exits the host reported ends %v; want %d reports, the last with 1 program running", i+1, got, i+1)
		}
	}
	if err := syscall.Kill(keeper.PID, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitExit(t, h, keeper.ID)
	if got := rep.soFar(); len(got) != 4 || got[3] != 0 {
		t.Fatalf("the last program's exit was heard after the ends %v were reported; want 4, the last with 0 running", got)
	}
}

// endReport records the ends a host reports (core.MemoryReport).
type endReport struct {
	mu   sync.Mutex
	ends []int
}

func (r *endReport) Freed(int64) {}

func (r *endReport) Ended(running int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ends = append(r.ends, running)
}

func (r *endReport) soFar() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.ends...)
}

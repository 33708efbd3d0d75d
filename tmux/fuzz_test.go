package tmux

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"orcr/core"
)

// FuzzControlStream feeds arbitrary bytes to the control-mode parser and the
// notification handler behind it: nothing may panic, each of our pending commands gets
// at most one reply, in order, and the host's pane tables stay consistent.
func FuzzControlStream(f *testing.F) {
	for _, s := range []string{
		"%begin 1700000000 1 1\n%1 123 @1\n%end 1700000000 1 1\n",
		"%begin 1 2 1\nno such window\n%error 1 2 1\n%begin 1 3 1\n%end 1 3 1\n",
		"%begin 1 2 0\n%end 1 2 0\n%session-changed $0 orcr\n",
		"%output %3 hello\\012\n%window-close @4\n%unlinked-window-close @9\n",
		"%subscription-changed " + deadSub + " $0 @1 0 %1 - : 1 0 \n",
		"%subscription-changed " + deadSub + " $0 @1 0 %1 - : 1  9\n%begin\n%end\n",
		"%begin 1 2 1\r\nline\r\n%end 1 2 1\r\n" + strings.Repeat("x", 70<<10) + "\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h := &Host{events: newEventQueue(core.NoMemoryReport{}), mem: core.NoMemoryReport{}, pacer: newPacer(), panes: map[string]*paneState{}, windows: map[string]string{},
			unreaped: map[string]bool{}, stop: make(chan struct{}), reap: make(chan struct{}, 1), ctx: context.Background()}
		defer h.events.close()
		h.panes["%1"] = &paneState{window: "@1", mine: true}
		h.windows["@1"] = "%1"
		c := &control{ready: make(chan struct{}), done: make(chan struct{}), notify: h.notify}
		reqs := make([]*request, 3)
		for i := range reqs {
			reqs[i] = &request{done: make(chan reply, 1)}
		}
		c.pending = append(c.pending, reqs...)
		c.parse(bytes.NewReader(data))
		answered := 0
		for i, r := range reqs {
			select {
			case <-r.done:
				if answered != i {
					t.Fatalf("request %d answered before request %d", i, answered)
				}
				answered++
			default:
			}
		}
		if answered+len(c.pending) != len(reqs) {
			t.Fatalf("%d answered + %d pending != %d requests", answered, len(c.pending), len(reqs))
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		for w, p := range h.windows {
			if h.panes[p] == nil {
				t.Fatalf("window %s points at pane %s, which is not known", w, p)
			}
		}
	})
}

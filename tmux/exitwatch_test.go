package tmux

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"orcr/core"
	"orcr/testutil/wait"
)

func needPidfd(t testing.TB) {
	t.Helper()
	if !pidfdSupported() {
		t.Skip("no pidfd on this kernel")
	}
}

// unsubscribe removes the #{pane_dead} subscription, so exits reach the host only
// through the pidfd watches.
func unsubscribe(t testing.TB, h *Host) {
	t.Helper()
	if _, err := h.call(ctxT(t), "refresh-client -B "+deadSub); err != nil {
		t.Fatalf("unsubscribe: %v", err)
	}
}

// waitExit waits for the PaneExited event of pane and returns its code (-1: none).
func waitExit(t testing.TB, h *Host, pane string) (int, time.Time) {
	t.Helper()
	deadline := time.After(wait.Scale(15 * time.Second))
	for {
		select {
		case ev, ok := <-h.Events():
			if !ok {
				t.Fatal("events closed")
			}
			if ev.Pane != pane || ev.Kind != core.PaneExited {
				continue
			}
			if ev.ExitCode == nil {
				return -1, ev.At
			}
			return *ev.ExitCode, ev.At
		case <-deadline:
			t.Fatalf("no PaneExited for %s", pane)
		}
	}
}

// pidfds counts this process's open pidfds.
func pidfds(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.Contains(l, "pidfd") {
			n++
		}
	}
	return n
}

// TestExitWatchReportsWithoutSubscription: with the subscription gone, launched panes'
// exits (at once, later, by a signal) still arrive, with their codes.
func TestExitWatchReportsWithoutSubscription(t *testing.T) {
	needPidfd(t)
	h := newTestHost(t, testSocket(t))
	defer h.Shutdown(context.Background())
	unsubscribe(t, h)
	for _, tc := range []struct {
		script string
		code   int
	}{
		{"exit 7", 7},
		{"sleep 0.2; exit 3", 3},
		{"kill -TERM $$", 128 + 15},
	} {
		info := launch(t, h, "sh", "-c", tc.script)
		if code, _ := waitExit(t, h, info.ID); code != tc.code {
			t.Errorf("%q: exit code %d, want %d", tc.script, code, tc.code)
		}
	}
}

// TestExitWatchAdopted: a pane found by List after a restart is watched too.
func TestExitWatchAdopted(t *testing.T) {
	needPidfd(t)
	sock := testSocket(t)
	h1 := newTestHost(t, sock)
	info := launch(t, h1, "sh", "-c", "echo ready; read x; exit 5")
	waitText(t, h1, info.ID, "ready")
	if err := h1.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	h2 := newTestHost(t, sock)
	defer h2.Shutdown(context.Background())
	unsubscribe(t, h2)
	panes, err := h2.List(ctxT(t))
	if err != nil || !slices.ContainsFunc(panes, func(p core.PaneInfo) bool { return p.ID == info.ID && !p.Dead }) {
		t.Fatalf("list: %+v, %v", panes, err)
	}
	if err := h2.SendText(ctxT(t), info.ID, "go\n"); err != nil {
		t.Fatal(err)
	}
	if code, _ := waitExit(t, h2, info.ID); code != 5 {
		t.Errorf("exit code %d, want 5", code)
	}
}

// TestExitWatchStops: closing a pane releases its pidfd, and Shutdown releases every
// one and stops every watch goroutine.
func TestExitWatchStops(t *testing.T) {
	needPidfd(t)
	before := pidfds(t)
	h := newTestHost(t, testSocket(t))
	base := pidfds(t) // os/exec holds one for the control client
	var ids []string
	for range 4 {
		ids = append(ids, launch(t, h, "sleep", "60").ID)
	}
	if n := pidfds(t) - base; n != 4 {
		t.Errorf("%d pidfds open for 4 panes", n)
	}
	for _, id := range ids[:2] {
		if err := h.Close(ctxT(t), id); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "2 pidfds after closing 2 of 4 panes", func() bool { return pidfds(t)-base == 2 })
	done := make(chan struct{})
	go func() {
		_ = h.Shutdown(context.Background())
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown did not return: a watch goroutine kept running")
	}
	if n := pidfds(t) - before; n != 0 {
		t.Errorf("%d pidfds open after Shutdown", n)
	}
}

// TestExitWithoutPidfd: without pidfds the subscription alone reports exits.
func TestExitWithoutPidfd(t *testing.T) {
	h := newTestHost(t, testSocket(t))
	defer h.Shutdown(context.Background())
	h.mu.Lock()
	h.pidfd = false
	h.mu.Unlock()
	info := launch(t, h, "sh", "-c", "exit 4")
	if code, _ := waitExit(t, h, info.ID); code != 4 {
		t.Errorf("exit code %d, want 4", code)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if p := h.panes[info.ID]; p != nil && p.watch != nil {
		t.Error("pane watched with pidfds off")
	}
}

// BenchmarkExitDetect measures the time from a program's last act (writing the clock
// to a file) to its PaneExited event, with the pidfd watches and with the
// subscription alone.
func BenchmarkExitDetect(b *testing.B) {
	for _, mode := range []string{"pidfd", "subscription"} {
		b.Run(mode, func(b *testing.B) {
			if mode == "pidfd" {
				needPidfd(b)
			}
			h := newTestHost(b, testSocket(b))
			defer h.Shutdown(context.Background())
			h.mu.Lock()
			h.pidfd = mode == "pidfd"
			h.mu.Unlock()
			stamp := filepath.Join(b.TempDir(), "stamp")
			spec := core.LaunchSpec{Name: "bench/exit", Env: baseEnv(), Cwd: os.TempDir(),
				Argv: []string{"sh", "-c", `sleep 0.02; date +%s%N > "$0"`, stamp}}
			var durs []time.Duration
			ctx := context.Background()
			for b.Loop() {
				info, err := h.Launch(ctx, spec)
				if err != nil {
					b.Fatal(err)
				}
				if code, at := waitExit(b, h, info.ID); code != 0 {
					b.Fatalf("exit code %d", code)
				} else {
					data, err := os.ReadFile(stamp)
					if err != nil {
						b.Fatal(err)
					}
					ns, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
					if err != nil {
						b.Fatal(err)
					}
					durs = append(durs, at.Sub(time.Unix(0, ns)))
				}
				if err := h.Close(ctx, info.ID); err != nil {
					b.Fatal(err)
				}
			}
			reportMedian(b, durs)
		})
	}
}

package bench

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"orcr/adapters/claude"
	"orcr/core"
	"orcr/core/socket"
	"orcr/core/wire"
	"orcr/pty"
	"orcr/store"
	"orcr/testutil/wait"
)

// BenchmarkHookToEvent measures a provider hook report (claude's UserPromptSubmit and
// Stop, through the real claude adapter's observer) until the state change reaches an
// events.subscribe client on the socket (target p99 ≤ 20 ms). The pane runs a stand-in
// for the claude binary that just waits, since only the hook path is measured; the
// real CLI's hooks are exercised end to end in adapters/e2e.
func BenchmarkHookToEvent(b *testing.B) {
	home := b.TempDir()
	fake := filepath.Join(home, "claude")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nexec sleep 1000\n"), 0o755); err != nil {
		b.Fatal(err)
	}
	st, err := store.Open(filepath.Join(home, "store"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	eng, err := core.NewEngine(core.Options{Store: st, Host: pty.New(pty.Options{}), Home: home,
		Socket: socket.SocketPath(home), Logger: slog.New(slog.DiscardHandler),
		Providers: []core.Provider{claude.New(claude.Options{Bin: fake, ConfigDir: filepath.Join(home, "cc")})}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := core.WithCaller(context.Background(), core.Caller{InProcess: true})
	if err := eng.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer eng.Close(context.Background())
	c, stop := serveSocket(b, home, core.KernelMethods(eng)) // the kernel alone: no schedules here
	defer stop()
	a, err := eng.Run(ctx, wire.RunParams{Path: "bench/hook", Provider: "claude", Cwd: home})
	if err != nil {
		b.Fatal(err)
	}
	var got wire.Agent
	if !wait.Until(10*time.Second, func() bool {
		got, _ = eng.Get(ctx, a.ID)
		return got.PaneID != "" && !got.State.Terminal()
	}) {
		b.Fatalf("agent did not start: %+v", got)
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := c.Subscribe(sctx, wire.SubscribeParams{After: eng.LastSeq(), Paths: []string{"bench/**"}})
	if err != nil {
		b.Fatal(err)
	}
	events := []string{"Stop", "UserPromptSubmit"}
	want := []wire.State{wire.StateDone, wire.StateWorking}
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := 0; j < 200; j++ {
			k := j % 2
			t0 := time.Now()
			if err := eng.Hook(ctx, wire.HookParams{Provider: "claude", Event: events[k], AgentID: a.ID,
				Payload: []byte(`{"session_id":"s","hook_event_name":"` + events[k] + `"}`)}); err != nil {
				b.Fatal(err)
			}
			for {
				ev := <-ch
				if ev.Event == wire.EventAgentState && ev.To == want[k] {
					break
				}
			}
			lat = append(lat, time.Since(t0))
			time.Sleep(2 * time.Millisecond) // a steady stream, not a burst
		}
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

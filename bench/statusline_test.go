package bench

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"testing"
	"time"

	"orcr/accounts"
	"orcr/adapters/claude"
	"orcr/core"
	"orcr/core/socket"
	"orcr/core/wire"
	"orcr/pty"
	"orcr/store"
	"orcr/testutil/testbin"
	"orcr/testutil/wait"
	"slices"
)

// BenchmarkStatusLineToBar measures a usage reading from claude's status line to the
// dashboard's bar (target p99 ≤ 50 ms): the pane runs `orcr hook claude statusline`
// the way claude runs its status-line command (a child process of the pane's
// program, the JSON on stdin), the server folds the reading, stamps the agent's
// account and publishes usage.reading; a socket client does what the dashboard does
// on that event — calls usage.get — and the clock stops when the new value is in the
// answer. The pane's program is a stand-in for claude that runs the command whenever
// a line arrives on a FIFO (the real CLI's status line is exercised in adapters/e2e).
func BenchmarkStatusLineToBar(b *testing.B) {
	bin := testbin.Build(b, "orcr")
	home := b.TempDir()
	fifo := filepath.Join(home, "lines")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		b.Fatal(err)
	}
	fake := filepath.Join(home, "claude")
	script := fmt.Sprintf("#!/bin/sh\nexec 3<>%q\nwhile read -r line <&3; do printf '%%s' \"$line\" | %q hook claude statusline >/dev/null; done\n", fifo, bin)
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		b.Fatal(err)
	}
	st, err := store.Open(filepath.Join(home, "store"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	acct, err := accounts.New(accounts.Options{})
	if err != nil {
		b.Fatal(err)
	}
	eng, err := core.NewEngine(core.Options{Store: st, Host: pty.New(pty.Options{}), Home: home,
		Socket: socket.SocketPath(home), Logger: slog.New(slog.DiscardHandler), Self: bin,
		Providers: []core.Provider{claude.New(claude.Options{Bin: fake, ConfigDir: filepath.Join(home, "cc")})}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := core.WithCaller(context.Background(), core.Caller{InProcess: true})
	defer eng.Close(context.Background())
	defer acct.Close()
	if err := eng.Start(ctx, acct); err != nil {
		b.Fatal(err)
	}
	c, stop := serveSocket(b, home, slices.Concat(core.KernelMethods(eng), acct.Methods()))
	defer stop()
	a, err := eng.Run(ctx, wire.RunParams{Path: "bench/status", Provider: "claude", Cwd: home})
	if err != nil {
		b.Fatal(err)
	}
	var got wire.Agent
	if !wait.Until(10*time.Second, func() bool {
		got, _ = eng.Get(ctx, a.ID)
		return got.PaneID != "" && got.State == wire.StateWorking
	}) {
		b.Fatalf("agent did not start: %+v", got)
	}
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := c.Subscribe(sctx, wire.SubscribeParams{After: eng.LastSeq()})
	if err != nil {
		b.Fatal(err)
	}
	reset := time.Now().Add(3 * time.Hour).Unix()
	var lat []time.Duration
	n := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := 0; j < 100; j++ {
			n++
			pct := float64(n%97 + 1)
			line := fmt.Sprintf(`{"session_id":"s","model":{"id":"claude-sonnet-4-5"},"rate_limits":{"five_hour":{"used_percentage":%v,"resets_at":%d}}}`, pct, reset)
			t0 := time.Now()
			if _, err := fmt.Fprintln(w, line); err != nil {
				b.Fatal(err)
			}
			for ev := range ch {
				if ev.Event == wire.EventUsageReading {
					break
				}
			}
			u, err := c.Usage(ctx, wire.UsageParams{})
			if err != nil {
				b.Fatal(err)
			}
			found := false
			for _, r := range u.Readings {
				found = found || r.Window == "5h" && r.UsedPct == pct && r.Account == accounts.DefaultLabel
			}
			if !found {
				b.Fatalf("reading %v%% of the default account not in usage: %+v", pct, u.Readings)
			}
			lat = append(lat, time.Since(t0))
		}
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

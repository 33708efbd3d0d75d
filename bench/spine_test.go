// Package bench holds whole-program benchmarks: the real orcr binary and server,
// measured as a user would feel them, and compared against raw tmux where the issue
// asks for it. Run with: go test ./bench/ -run '^$' -bench . -benchtime 1x
package bench

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"orcr/core"
	"orcr/core/socket"
	"orcr/core/wire"
	"orcr/pty"
	"orcr/store"
	"orcr/testutil/apiclient"
	"orcr/testutil/serve"
	"orcr/testutil/testbin"
)

// server is a real `orcr serve` process on its own home.
type server struct {
	bin, home string
	env       []string
	srv       *serve.Server
}

func startServer(b testing.TB, home string) *server {
	b.Helper()
	bin := testbin.Build(b, "orcr")
	s := &server{bin: bin, home: home}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ORCR_") && !strings.HasPrefix(kv, "XDG_CONFIG_HOME=") {
			s.env = append(s.env, kv)
		}
	}
	s.env = append(s.env, "ORCR_HOME="+home, "ORCR_HOST=pty", "XDG_CONFIG_HOME="+filepath.Join(home, "cfg"))
	s.srv = serve.Start(b, serve.Options{Bin: bin, Env: s.env, Timeout: 10 * time.Second})
	return s
}

// preload writes n exited agent records straight into a fresh store, as if the server
// had run them before.
func preload(b *testing.B, home string, n int) {
	b.Helper()
	now := time.Now().UTC().Add(-time.Hour)
	putAgents(b, home, n, func(i int) wire.Agent {
		code := 0
		return wire.Agent{ID: fmt.Sprintf("0190%04x-0000-7000-8000-%012x", i, i), Path: fmt.Sprintf("fleet/g%02d/a%04d", i%50, i),
			Provider: "shell", Argv: []string{"sh", "-c", "work"}, Cwd: "/tmp", State: wire.StateExited, ExitCode: &code,
			StateSource: "host", StateReason: "process exited with code 0", Host: "pty", PaneID: "p" + strconv.Itoa(i),
			LastScreen: strings.Repeat("some output line\n", 20), CreatedAt: now, StateAt: now, UpdatedAt: now}
	})
}

// BenchmarkSocketGetVsPing measures agent.get against a bare ping on the same socket
// and reports their ratio (target ≤ 3).
func BenchmarkSocketGetVsPing(b *testing.B) {
	home := b.TempDir()
	preload(b, home, 1000)
	startServer(b, home)
	c, err := apiclient.Dial(context.Background(), socket.SocketPath(home), "")
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	const rounds = 2000
	var ping, get time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := 0; j < rounds; j++ {
			t0 := time.Now()
			if _, err := c.Ping(ctx); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if _, err := c.Get(ctx, "fleet/g07/a0507"); err != nil {
				b.Fatal(err)
			}
			ping += t1.Sub(t0)
			get += time.Since(t1)
		}
	}
	n := float64(b.N * rounds)
	b.ReportMetric(float64(ping.Microseconds())/n, "ping-µs")
	b.ReportMetric(float64(get.Microseconds())/n, "get-µs")
	b.ReportMetric(float64(get)/float64(ping), "get/ping")
}

// BenchmarkCLIListWith1000 runs `orcr agent ls` as a whole process against a server
// holding 1,000 agents and reports the median (target ≤ 10 ms).
func BenchmarkCLIListWith1000(b *testing.B) {
	home := b.TempDir()
	preload(b, home, 1000)
	s := startServer(b, home)
	var ds []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := 0; j < 50; j++ {
			cmd := exec.Command(s.bin, "agent", "ls")
			cmd.Env = s.env
			var out bytes.Buffer
			cmd.Stdout = &out
			t0 := time.Now()
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(t0))
			if j == 0 && strings.Count(out.String(), "\n") != 1001 {
				b.Fatalf("ls printed %d lines", strings.Count(out.String(), "\n"))
			}
		}
	}
	b.StopTimer()
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "median-ms")
	b.ReportMetric(float64(ds[len(ds)*9/10].Microseconds())/1000, "p90-ms")
}

// BenchmarkServerRSS1000 reports the server's resident memory after loading and
// listing 1,000 agent records (target ≤ 40 MB).
func BenchmarkServerRSS1000(b *testing.B) {
	home := b.TempDir()
	preload(b, home, 1000)
	s := startServer(b, home)
	c, err := apiclient.Dial(context.Background(), socket.SocketPath(home), "")
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < b.N; i++ {
		for j := 0; j < 20; j++ {
			if _, err := c.List(context.Background(), wire.ListParams{All: true}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(rssKB(b, s.srv.PID()))/1024, "rss-MB")
}

func rssKB(b *testing.B, pid int) int {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			n, _ := strconv.Atoi(strings.Fields(line)[1])
			return n
		}
	}
	b.Fatal("no VmRSS")
	return 0
}

// BenchmarkEventDelivery paces 1,000 events/s through the engine's store-then-deliver
// path to a socket subscriber and reports latency percentiles (target p99 ≤ 5 ms).
func BenchmarkEventDelivery(b *testing.B) {
	home := b.TempDir()
	st, err := store.Open(filepath.Join(home, "store"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	host := pty.New(pty.Options{})
	eng, err := core.NewEngine(core.Options{Store: st, Host: host, Home: home, Socket: socket.SocketPath(home), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := eng.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer eng.Close(ctx)
	c, stop := serveSocket(b, home, core.KernelMethods(eng)) // the kernel alone: no schedules here
	defer stop()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := c.Subscribe(sctx, wire.SubscribeParams{After: eng.LastSeq()})
	if err != nil {
		b.Fatal(err)
	}
	const perRun = 2000
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sent := make(chan time.Time, perRun)
		go func() {
			tick := time.NewTicker(time.Millisecond) // 1,000 events/s
			defer tick.Stop()
			for j := 0; j < perRun; j++ {
				<-tick.C
				sent <- time.Now()
				if _, err := eng.Publish(ctx, wire.Event{Event: "bench.tick", Data: map[string]any{"n": j}}); err != nil {
					panic(err)
				}
			}
		}()
		for j := 0; j < perRun; j++ {
			t0 := <-sent
			<-ch
			lat = append(lat, time.Since(t0))
		}
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// serveSocket serves handlers on home's socket and dials it as a Go client. stop
// closes the client and the socket, for the caller to defer before its engine closes.
func serveSocket(b *testing.B, home string, handlers []wire.Handler) (c *apiclient.Client, stop func()) {
	b.Helper()
	srv, err := socket.Listen(socket.SocketPath(home), handlers, nil)
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve()
	c, err = apiclient.Dial(context.Background(), socket.SocketPath(home), "")
	if err != nil {
		srv.Close()
		b.Fatal(err)
	}
	return c, func() { c.Close(); srv.Close() }
}

// putAgents writes the n agent records agent(i) makes straight into home's fresh
// store, as if the server had run them before.
func putAgents(b testing.TB, home string, n int, agent func(i int) wire.Agent) {
	b.Helper()
	st, err := store.Open(filepath.Join(home, "store"), nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		if err := st.PutAgent(context.Background(), agent(i)); err != nil {
			b.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
}

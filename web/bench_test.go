package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"orcr/core/wire"
	"orcr/testutil/serve"
	"orcr/testutil/wait"
	"orcr/web"
	webapi "orcr/web/api"
)

// BenchmarkEventToSSE100 paces events through the engine's store-then-deliver path
// to 100 SSE clients of the gateway and reports the latency from Publish to each
// client's parse of the event (target p99 ≤ 20 ms). The run with one client is its
// floor on the same machine at the same moment (the store write and the wake-up).
func BenchmarkEventToSSE100(b *testing.B) {
	for _, n := range []int{1, 100} {
		b.Run(fmt.Sprintf("clients=%d", n), func(b *testing.B) { benchEventToSSE(b, n) })
	}
}

func benchEventToSSE(b *testing.B, clients int) {
	r := newRig(b, "", web.Options{})
	tok := r.token(webapi.ScopeRead, 0)
	var mu sync.Mutex
	var lat []time.Duration
	var got sync.WaitGroup
	streams := make([]*sseReader, clients)
	for i := range streams {
		streams[i] = r.openEvents(tok, "", nil)
	}
	ready := make(chan struct{}, clients)
	for _, s := range streams {
		go func() {
			ready <- struct{}{}
			for {
				ev, err := s.next()
				if err != nil {
					return
				}
				var e wire.Event
				if json.Unmarshal([]byte(ev.data), &e) != nil || e.Event != "bench.tick" {
					continue
				}
				sent, _ := e.Data["sent"].(float64)
				d := time.Since(time.Unix(0, int64(sent)))
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
				got.Done()
			}
		}()
	}
	for range clients {
		<-ready
	}
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		got.Add(clients)
		if _, err := r.eng.Publish(ctx, wire.Event{Event: "bench.tick", Data: map[string]any{"sent": time.Now().UnixNano()}}); err != nil {
			b.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // 200 events/s: a busy fleet
	}
	got.Wait()
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkServerRSS100SSE reports what 100 open SSE clients add to a real orcr
// serve's resident memory (target ≤ +20 MB), after events flowed to all of them.
func BenchmarkServerRSS100SSE(b *testing.B) {
	const clients = 100
	bn := serve.StartBench(b, "pty")
	bn.Server.Stop()
	var home string
	for _, kv := range bn.Env {
		if v, ok := strings.CutPrefix(kv, "ORCR_HOME="); ok {
			home = v
		}
	}
	cfg := home + "/cfg/orcr/config.toml"
	old, err := os.ReadFile(cfg)
	if err != nil {
		b.Fatal(err)
	}
	addr := freeAddr(b)
	if err := os.WriteFile(cfg, append(old, fmt.Sprintf("[http]\nlisten = %q\n", addr)...), 0o600); err != nil {
		b.Fatal(err)
	}
	srv := serve.Start(b, serve.Options{Bin: bn.Bin, Env: bn.Env})
	orcr := func(args ...string) string {
		cmd := exec.Command(bn.Bin, args...)
		cmd.Env = bn.Env
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("orcr %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	lines := strings.Split(strings.TrimSpace(orcr("web", "token", "new", "--scope", "read")), "\n")
	tok := lines[len(lines)-1]
	for i := 0; i < b.N; i++ {
		// The events first (10 agents' worth): the panes they run in are the host's
		// memory, not the streams', so they are in the base.
		for j := range 10 {
			orcr("agent", "run", fmt.Sprintf("rss/%d/%d", i, j), "--", "sh", "-c", "echo hello; sleep 30")
		}
		orcr("agent", "wait", fmt.Sprintf("rss/%d/**", i), "--until", "idle", "--timeout", "30s")
		base := rssKB(b, srv.PID())
		var seen sync.WaitGroup
		streams := make([]*sseReader, clients)
		for k := range streams {
			streams[k] = openSSE(b, "http://"+addr+"/api/v1/events?after=0", tok, nil)
			seen.Add(1)
			go func(s *sseReader) {
				n := 0
				for {
					ev, err := s.next()
					if err != nil {
						return
					}
					if ev.event == wire.EventAgentSpawned && strings.Contains(ev.data, fmt.Sprintf(`"rss/%d/`, i)) {
						if n++; n == 10 {
							seen.Done()
						}
					}
				}
			}(streams[k])
		}
		done := make(chan struct{})
		go func() { seen.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(wait.Scale(30 * time.Second)):
			b.Fatal("the clients did not all see the spawns")
		}
		with := rssKB(b, srv.PID())
		b.ReportMetric(float64(base)/1024, "rss-base-MB")
		b.ReportMetric(float64(with)/1024, "rss-100sse-MB")
		b.ReportMetric(float64(with-base)/1024, "rss-delta-MB")
		for _, s := range streams {
			s.close()
		}
		orcr("agent", "kill", "rss/**", "--yes")
	}
}

func freeAddr(b testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func rssKB(b testing.TB, pid int) int {
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

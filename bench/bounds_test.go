package bench

import (
	"bufio"
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"orcr/core/socket"
	"orcr/testutil/serve"
	"orcr/testutil/testbin"
)

func lsMedian(b *testing.B, s *server, n int) time.Duration {
	b.Helper()
	var ds []time.Duration
	for range n {
		cmd := exec.Command(s.bin, "agent", "ls")
		cmd.Env = s.env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		t0 := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatalf("agent ls: %v %s", err, out.String())
		}
		ds = append(ds, time.Since(t0))
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2]
}

// BenchmarkIdleConnections10000 is issue 11's number: 10,000 idle connections cost the server
// ≤ 120 MB and leave `agent ls` as fast as before; at the connection bound a new connection
// is refused at once (target ≤ 1 ms) and the idle ones are still served.
// Run: go test ./bench/ -run '^$' -bench IdleConnections -benchtime 1x
func BenchmarkIdleConnections10000(b *testing.B) {
	const n = 10000
	home := b.TempDir()
	preload(b, home, 100)
	cfg := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfg, []byte("[server]\nmax_connections = 10005\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	s := &server{bin: testbin.Build(b, "orcr"), home: home}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ORCR_") && !strings.HasPrefix(kv, "XDG_CONFIG_HOME=") {
			s.env = append(s.env, kv)
		}
	}
	s.env = append(s.env, "ORCR_HOME="+home, "ORCR_HOST=pty", "ORCR_CONFIG="+cfg)
	s.srv = serve.Start(b, serve.Options{Bin: s.bin, Env: s.env, Timeout: 10 * time.Second})
	for b.Loop() {
		before := lsMedian(b, s, 20)
		rss0 := rssKB(b, s.srv.PID())
		conns := make([]net.Conn, 0, n)
		for len(conns) < n {
			c, err := net.Dial("unix", socket.SocketPath(home))
			if errors.Is(err, syscall.EAGAIN) { // the listen backlog is full: let the server catch up
				time.Sleep(time.Millisecond)
				continue
			}
			if err != nil {
				b.Fatalf("connection %d: %v", len(conns), err)
			}
			conns = append(conns, c)
		}
		time.Sleep(2 * time.Second) // let the server take them all and its GC settle
		rss := rssKB(b, s.srv.PID())
		after := lsMedian(b, s, 20)
		// Fill the bound (10,005: the CLI had room), then time refusals.
		var extras []net.Conn
		var refusals []time.Duration
		for len(refusals) < 21 {
			t0 := time.Now()
			c, err := net.Dial("unix", socket.SocketPath(home))
			if err != nil {
				b.Fatal(err)
			}
			_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
			line, _ := bufio.NewReader(c).ReadString('\n')
			if line == "" { // accepted: a slot was free
				extras = append(extras, c)
				continue
			}
			refusals = append(refusals, time.Since(t0))
			c.Close()
			if !strings.Contains(line, "too_many_connections") {
				b.Fatalf("connection past the bound: %q", line)
			}
		}
		sort.Slice(refusals, func(i, j int) bool { return refusals[i] < refusals[j] })
		refusal := refusals[len(refusals)/2]
		// An idle connection is still served.
		if _, err := conns[n/2].Write([]byte(`{"id":"p","method":"server.ping"}` + "\n")); err != nil {
			b.Fatal(err)
		}
		_ = conns[n/2].SetReadDeadline(time.Now().Add(5 * time.Second))
		if l, err := bufio.NewReader(conns[n/2]).ReadString('\n'); err != nil || !strings.Contains(l, `"id":"p"`) {
			b.Fatalf("idle connection not served: %q %v", l, err)
		}
		b.ReportMetric(float64(rss)/1024, "rss-MB")
		b.ReportMetric(float64(rss-rss0)/1024, "rss-growth-MB")
		b.ReportMetric(float64(before.Microseconds())/1000, "ls-median-before-ms")
		b.ReportMetric(float64(after.Microseconds())/1000, "ls-median-after-ms")
		b.ReportMetric(float64(refusal.Microseconds())/1000, "refusal-median-ms")
		if rss > 120<<10 {
			b.Errorf("server RSS %d MB with %d idle connections; the target is 120 MB", rss>>10, n)
		}
		for _, c := range conns {
			c.Close()
		}
		for _, c := range extras {
			c.Close()
		}
	}
}

package web_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"orcr/core/socket"
	"orcr/core/wire"
	"orcr/testutil/serve"
	"orcr/testutil/wait"
	"orcr/web"
	webapi "orcr/web/api"
)

// BenchmarkEventToSSE100 paces events (200 a second, a busy fleet) through the
// engine's store-then-deliver path and reports the latency from Publish to each
// client's read of the event (target p99 ≤ 20 ms with 100 SSE clients). The same run
// measures two floors on the same machine at the same moment: one SSE client (the
// store write and the wake-ups), and 100 subscribers of the kernel's own socket API
// (events.subscribe over the Unix socket: the fan-out to 100 connections without the
// gateway). The clients are another process (the test binary again, see TestMain), as
// browsers are: in this one they took half of its two CPUs to parse what the server
// wrote, and the latency measured was theirs as much as the server's.
func BenchmarkEventToSSE100(b *testing.B) {
	for _, c := range []struct {
		kind string
		n    int
	}{{"sse", 1}, {"sse", 100}, {"socket", 100}} {
		b.Run(fmt.Sprintf("%s=%d", c.kind, c.n), func(b *testing.B) { benchEventFanout(b, c.kind, c.n) })
	}
}

func benchEventFanout(b *testing.B, kind string, clients int) {
	r := newRig(b, "", web.Options{})
	target := r.srv.URL + "/api/v1/events"
	cred := r.token(webapi.ScopeRead, 0)
	if kind == "socket" {
		target = r.home + "/bench.sock"
		ss, err := socket.Listen(target, r.hs, nil)
		if err != nil {
			b.Fatal(err)
		}
		go ss.Serve()
		defer ss.Close()
	}
	cl := startBenchClients(b, kind, clients, target, cred)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := r.eng.Publish(ctx, wire.Event{Event: "bench.tick", Data: map[string]any{"sent": time.Now().UnixNano()}}); err != nil {
			b.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // 200 events/s: a busy fleet
	}
	lat := cl.wait(b, b.N)
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// benchClients is the process that holds a benchmark's event clients.
type benchClients struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

// startBenchClients starts n clients of kind (sse: GET target with the bearer token;
// socket: events.subscribe on the socket at target) in a process of their own and
// returns once every one is subscribed.
func startBenchClients(b *testing.B, kind string, n int, target, token string) *benchClients {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d %s", benchClientsEnv, kind, n, target), "ORCR_BENCH_TOKEN="+token)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	outp, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	c := &benchClients{cmd: cmd, stdin: in, out: bufio.NewReader(outp)}
	b.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	line, err := c.out.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		b.Fatalf("bench clients: %q %v", line, err)
	}
	return c
}

// wait tells the clients how many events were sent and reads every client's latency
// for each of them.
func (c *benchClients) wait(b *testing.B, events int) []time.Duration {
	b.Helper()
	fmt.Fprintf(c.stdin, "%d\n", events)
	var lat []time.Duration
	for {
		line, err := c.out.ReadString('\n')
		if err != nil {
			b.Fatalf("bench clients ended: %v", err)
		}
		line = strings.TrimSpace(line)
		if line == "done" {
			return lat
		}
		for _, f := range strings.Fields(line) {
			us, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				b.Fatalf("bench clients: %q", line)
			}
			lat = append(lat, time.Duration(us)*time.Microsecond)
		}
	}
}

// benchClientsEnv makes the test binary the benchmark's client process (TestMain):
// "KIND N TARGET".
const benchClientsEnv = "ORCR_BENCH_CLIENTS"

// runBenchClients is the client process: it opens N streams, says "ready", and
// records for each bench.tick event the time since its "sent"; given the number of
// events sent (a line on stdin), it waits until every client read that many (at most
// a minute), prints the latencies in microseconds and "done".
func runBenchClients(spec string) int {
	var kind, target string
	var n int
	if _, err := fmt.Sscanf(spec, "%s %d %s", &kind, &n, &target); err != nil {
		fmt.Fprintln(os.Stderr, "bench clients:", err)
		return 2
	}
	token := os.Getenv("ORCR_BENCH_TOKEN")
	type client struct {
		mu  sync.Mutex
		lat []int64 // nanoseconds
	}
	cls := make([]client, n)
	for i := range n {
		br, err := dialBenchClient(kind, target, token)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench clients:", err)
			return 1
		}
		go func() {
			for {
				line, err := br.ReadSlice('\n')
				if err != nil {
					return
				}
				sent, ok := benchSent(line)
				if !ok {
					continue
				}
				d := time.Now().UnixNano() - sent
				cls[i].mu.Lock()
				cls[i].lat = append(cls[i].lat, d)
				cls[i].mu.Unlock()
			}
		}()
	}
	fmt.Println("ready")
	var events int64
	if _, err := fmt.Fscan(os.Stdin, &events); err != nil {
		return 1
	}
	deadline := time.Now().Add(time.Minute)
	w := bufio.NewWriter(os.Stdout)
	for i := range cls {
		c := &cls[i]
		for {
			c.mu.Lock()
			got := int64(len(c.lat))
			if got >= events || time.Now().After(deadline) {
				for _, d := range c.lat {
					fmt.Fprintf(w, "%d\n", d/1000)
				}
				c.mu.Unlock()
				break
			}
			c.mu.Unlock()
			time.Sleep(time.Millisecond)
		}
	}
	fmt.Fprintln(w, "done")
	w.Flush()
	return 0
}

// dialBenchClient opens one event stream and reads past its start.
func dialBenchClient(kind, target, token string) (*bufio.Reader, error) {
	if kind == "socket" {
		c, err := net.Dial("unix", target)
		if err != nil {
			return nil, err
		}
		req, _ := json.Marshal(wire.Request{ID: "1", Method: wire.MethodEventsSubscribe, Params: json.RawMessage(`{}`), Version: wire.Version})
		if _, err := c.Write(append(req, '\n')); err != nil {
			return nil, err
		}
		br := bufio.NewReaderSize(c, 64<<10)
		if _, err := br.ReadSlice('\n'); err != nil { // the subscription's reply
			return nil, err
		}
		return br, nil
	}
	req, _ := http.NewRequest("GET", target, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("events: %s", resp.Status)
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	if _, err := br.ReadSlice('\n'); err != nil { // the stream's first line
		return nil, err
	}
	return br, nil
}

// benchSent reads the "sent" of a bench.tick event's line (an SSE data line or a
// socket event line) without decoding the rest of it.
func benchSent(line []byte) (int64, bool) {
	i := bytes.Index(line, []byte(`"sent":`))
	if i < 0 || !bytes.Contains(line, []byte(`"bench.tick"`)) {
		return 0, false
	}
	v := line[i+len(`"sent":`):]
	end := bytes.IndexAny(v, ",}")
	if end < 0 {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(bytes.TrimSpace(v[:end])), 64)
	if err != nil {
		return 0, false
	}
	return int64(f), true
}

// BenchmarkServerRSS100SSE reports what 100 open SSE clients add to a real orcr
// serve's resident memory (target ≤ +20 MB), after events flowed to all of them: the
// largest delta of its iterations (each is logged), each between two settled
// readings (settledRSSKB), so memory the rest of the server gives back or takes
// meanwhile counts less. The clients read from ?after=0: the whole log, as a
// browser that comes back after long.
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
	bn.Server = srv // MemDump's server
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
	worst := math.MinInt // the largest delta of the iterations: the figure reported
	for i := 0; i < b.N; i++ {
		// The events first (10 agents' worth): the panes they run in are the host's
		// memory, not the streams', so they are in the base.
		for j := range 10 {
			orcr("agent", "run", fmt.Sprintf("rss/%d/%d", i, j), "--", "sh", "-c", "echo hello; sleep 30")
		}
		orcr("agent", "wait", fmt.Sprintf("rss/%d/**", i), "--until", "idle", "--timeout", "30s")
		base := settledRSSKB(b, srv.PID())
		before := bn.MemDump(b, 2*i+1) // with ORCR_BENCH_MEMPROFILE: what the heap holds
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
		with := settledRSSKB(b, srv.PID())
		worst = max(worst, with-base)
		b.Logf("iteration %d: rss base %.1f MB, with 100 SSE clients %.1f MB, delta %+.2f MB", i, float64(base)/1024, float64(with)/1024, float64(with-base)/1024)
		if after := bn.MemDump(b, 2*i+2); after != "" {
			b.Logf("memory figures before the clients: %s, with them: %s", before, after)
		}
		b.ReportMetric(float64(base)/1024, "rss-base-MB")
		b.ReportMetric(float64(with)/1024, "rss-100sse-MB")
		b.ReportMetric(float64(worst)/1024, "rss-delta-MB")
		for _, s := range streams {
			s.close()
		}
		orcr("agent", "kill", "rss/**", "--yes")
	}
}

// settledRSSKB is pid's resident memory once it stopped moving: read every 200 ms
// until the last five readings (a second) are within 256 KB of each other, for at
// most ten seconds (then the last reading). The Go runtime gives freed memory back
// to the system over seconds, and the rest of the server (agents ending, their
// screens let go) moves it too: a single reading at once gave deltas from -13 to
// +22 MB for the same clients.
func settledRSSKB(b testing.TB, pid int) int {
	var last []int
	deadline := time.Now().Add(wait.Scale(10 * time.Second))
	for {
		last = append(last, rssKB(b, pid))
		if n := len(last); n >= 5 {
			w := last[n-5:]
			if slices.Max(w)-slices.Min(w) <= 256 || time.Now().After(deadline) {
				return w[4]
			}
		}
		time.Sleep(200 * time.Millisecond) // the pace of the readings, not a wait for a condition
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

package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
	roleapi "orcr/roles/api"
)

// preloadFinished writes n finished agent records (roles, usage, a mix of results)
// straight into a fresh store.
func preloadFinished(b testing.TB, home string, n int) {
	b.Helper()
	now := time.Now().UTC().Add(-time.Hour)
	putAgents(b, home, n, func(i int) wire.Agent {
		code := i % 3
		cost := float64(i%100) / 100
		start := now.Add(-time.Duration(i) * time.Second)
		end := start.Add(time.Duration(30+i%600) * time.Second)
		return wire.Agent{ID: fmt.Sprintf("0190%04x-0000-7000-8000-%012x", i, i), Path: fmt.Sprintf("review/g%02d/a%04d", i%50, i),
			Provider: "claude", Model: "claude-sonnet-5", Role: "reviewer", Cwd: "/tmp", State: wire.StateExited, ExitCode: &code,
			StateSource: "host", StateReason: "process exited", Host: "pty", LastScreen: strings.Repeat("some output line\n", 20),
			Usage:     wire.Usage{InputTokens: 1200, OutputTokens: 300, CacheReadTokens: 9000, CostUSD: &cost, Priced: true},
			CreatedAt: start, StartedAt: &start, StateAt: end, EndedAt: &end, UpdatedAt: end}
	})
}

// BenchmarkCLIHistory10000 runs `orcr history` as a whole process against a server
// holding 10,000 finished agents and reports the median (target ≤ 30 ms), and the
// median time to its first output (the first page, printed as it arrives).
func BenchmarkCLIHistory10000(b *testing.B) {
	home := b.TempDir()
	preloadFinished(b, home, 10000)
	s := startServer(b, home)
	var ds, firsts []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := 0; j < 30; j++ {
			cmd := exec.Command(s.bin, "history")
			cmd.Env = s.env
			pipe, err := cmd.StdoutPipe()
			if err != nil {
				b.Fatal(err)
			}
			t0 := time.Now()
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			var out bytes.Buffer
			buf := make([]byte, 64<<10)
			for {
				n, err := pipe.Read(buf)
				if n > 0 && out.Len() == 0 {
					firsts = append(firsts, time.Since(t0))
				}
				out.Write(buf[:n])
				if err != nil {
					break
				}
			}
			if err := cmd.Wait(); err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(t0))
			if j == 0 && strings.Count(out.String(), "\n") != 10001 {
				b.Fatalf("history printed %d lines", strings.Count(out.String(), "\n"))
			}
		}
	}
	b.StopTimer()
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	sort.Slice(firsts, func(i, j int) bool { return firsts[i] < firsts[j] })
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "median-ms")
	b.ReportMetric(float64(ds[len(ds)*9/10].Microseconds())/1000, "p90-ms")
	b.ReportMetric(float64(firsts[len(firsts)/2].Microseconds())/1000, "first-output-ms")
}

// BenchmarkDashboardHistory10000 is the dashboard's history view opening over 10,000
// finished agents from a separate server (connected mode): one history.list of the
// view's first page (ui's historyChunk, 500 entries), decoded by the socket client,
// off the dashboard's Update. It was the whole history in one answer (16 MB, 80k
// allocations); BenchmarkHistoryWhole10000 keeps that figure.
func BenchmarkDashboardHistory10000(b *testing.B) {
	home := b.TempDir()
	preloadFinished(b, home, 10000)
	c := startServer(b, home).srv.Client()
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := c.AgentHistory(ctx, roleapi.AgentHistoryParams{Limit: 500})
		if err != nil {
			b.Fatal(err)
		}
		if len(r.Entries) != 500 || r.Next == "" {
			b.Fatalf("%d entries, next %q", len(r.Entries), r.Next)
		}
	}
}

// BenchmarkHistoryWhole10000 is history.list of all 10,000 entries in one answer, as
// a script that asks for no limit gets it.
func BenchmarkHistoryWhole10000(b *testing.B) {
	home := b.TempDir()
	preloadFinished(b, home, 10000)
	c := startServer(b, home).srv.Client()
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := c.AgentHistory(ctx, roleapi.AgentHistoryParams{})
		if err != nil {
			b.Fatal(err)
		}
		if len(r.Entries) != 10000 {
			b.Fatalf("%d entries", len(r.Entries))
		}
	}
}

// TestCLIHistoryPages: `orcr history` over more entries than one page prints one
// table (the header once, every entry once, newest first), --limit stops after the
// newest N, and --json gathers every page into one answer.
func TestCLIHistoryPages(t *testing.T) {
	home := t.TempDir()
	const n = 1200 // more than two of the CLI's pages
	preloadFinished(t, home, n)
	s := startServer(t, home)
	orcr := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(s.bin, args...)
		cmd.Env = s.env
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("orcr %s: %v", strings.Join(args, " "), err)
		}
		return string(out)
	}
	out := orcr("history")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != n+1 || strings.Count(out, "ENDED") != 1 || !strings.HasPrefix(lines[0], "ENDED") {
		t.Fatalf("history printed %d lines with %d headers", len(lines), strings.Count(out, "ENDED"))
	}
	// In the order of one whole answer.
	whole, err := s.srv.Client().AgentHistory(context.Background(), roleapi.AgentHistoryParams{})
	if err != nil || len(whole.Entries) != n {
		t.Fatalf("whole history: %d entries, %v", len(whole.Entries), err)
	}
	pathAt := strings.Index(lines[0], "PATH")
	for i, l := range lines[1:] {
		if path, _, _ := strings.Cut(l[pathAt:], " "); path != whole.Entries[i].Path {
			t.Fatalf("line %d is %s, want %s", i+1, path, whole.Entries[i].Path)
		}
	}
	if out := orcr("history", "--limit", "10"); strings.Count(out, "\n") != 11 {
		t.Fatalf("--limit 10 printed:\n%s", out)
	}
	var r roleapi.AgentHistoryResult
	if err := json.Unmarshal([]byte(orcr("history", "--json", "review/g01/**")), &r); err != nil || len(r.Entries) != n/50 || r.Next != "" {
		t.Fatalf("--json: %d entries, next %q, %v", len(r.Entries), r.Next, err)
	}
}

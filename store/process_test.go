package store

// Tests that need a second process: a writer killed with SIGKILL, and a clean process
// whose RSS is measured. The test binary re-executes itself; TestMain routes the child
// by an environment variable.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
	"orcr/testutil/wait"

	badger "github.com/dgraph-io/badger/v4"
)

const (
	envCrashChild  = "ORCR_STORE_TEST_CRASH_CHILD"
	envRSSChild    = "ORCR_STORE_TEST_RSS_CHILD"
	envWritesChild = "ORCR_STORE_TEST_WRITES_CHILD"
	// envBadgerDefaults makes the writes child use badger's default options, to show
	// what the tuning buys: ORCR_STORE_TEST_BADGER_DEFAULTS=1 go test -run RSSUnderWrites -v
	envBadgerDefaults = "ORCR_STORE_TEST_BADGER_DEFAULTS"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(envCrashChild); dir != "" {
		os.Exit(crashChild(dir))
	}
	if dir := os.Getenv(envRSSChild); dir != "" {
		os.Exit(rssChild(dir))
	}
	if dir := os.Getenv(envDiskChild); dir != "" {
		os.Exit(diskChild(dir))
	}
	if dir := os.Getenv(envWritesChild); dir != "" {
		os.Exit(writesChild(dir))
	}
	os.Exit(m.Run())
}

// crashChild writes agents, events and bucket records in a loop and acknowledges each
// finished round on stdout as "ack <i> <seq>". It stops by itself after a bounded time if
// nobody kills it. The bound is a backstop, not a deadline for the rounds: 30 s was too
// short for TestCrashSIGKILL's 300 rounds at a load of 35 ("child ended before 300
// rounds: exit status 2"), so it is 5 minutes, scaled with the waits.
func crashChild(dir string) int {
	ctx := context.Background()
	s, err := Open(dir, nil)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	stop := time.Now().Add(wait.Scale(5 * time.Minute))
	for i := 0; time.Now().Before(stop); i++ {
		a := sampleAgent(i)
		if err := s.PutAgent(ctx, a); err != nil {
			fmt.Println("error", err)
			return 1
		}
		e, err := s.AppendEvent(ctx, sampleEvent(i, &a))
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		if err := s.Put(ctx, "crash", fmt.Sprintf("%08d", i), []byte(a.ID)); err != nil {
			fmt.Println("error", err)
			return 1
		}
		fmt.Printf("ack %d %d\n", i, e.Seq)
	}
	return 2
}

func TestCrashSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	ctx := t.Context()
	dir := t.TempDir()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envCrashChild+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill mid-stream once enough rounds are acknowledged; the writer is busy, so the
	// kill lands in the middle of some transaction.
	const killAfter = 300
	lastI, lastSeq := -1, uint64(0)
	sc := bufio.NewScanner(out)
	killed := false
	for sc.Scan() {
		var i int
		var seq uint64
		if _, err := fmt.Sscanf(sc.Text(), "ack %d %d", &i, &seq); err != nil {
			t.Fatalf("child said %q", sc.Text())
		}
		lastI, lastSeq = i, seq
		if !killed && i+1 >= killAfter {
			if err := cmd.Process.Kill(); err != nil { // SIGKILL
				t.Fatal(err)
			}
			killed = true
		}
	}
	err = cmd.Wait()
	if !killed {
		t.Fatalf("child ended before %d rounds: %v", killAfter, err)
	}
	if ws, ok := cmd.ProcessState.Sys().(interface{ Signaled() bool }); !ok || !ws.Signaled() {
		t.Fatalf("child was not killed by a signal: %v", err)
	}
	t.Logf("child killed after acknowledging %d rounds (last seq %d)", lastI+1, lastSeq)

	s := openT(t, dir)
	for i := 0; i <= lastI; i++ {
		a := sampleAgent(i)
		got, err := s.GetAgent(ctx, a.ID)
		if err != nil {
			t.Fatalf("acknowledged agent %d lost: %v", i, err)
		}
		if got.Path != a.Path || got.LastScreen != a.LastScreen {
			t.Fatalf("acknowledged agent %d damaged", i)
		}
		v, err := s.Get(ctx, "crash", fmt.Sprintf("%08d", i))
		if err != nil || string(v) != a.ID {
			t.Fatalf("acknowledged bucket record %d: %q, %v", i, v, err)
		}
	}
	if s.LastSeq() < lastSeq {
		t.Fatalf("LastSeq after crash = %d, below acknowledged %d", s.LastSeq(), lastSeq)
	}
	evs, err := s.Events(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The log is contiguous up to LastSeq: each event committed with m/seq atomically.
	if uint64(len(evs)) != s.LastSeq() {
		t.Fatalf("%d events stored, LastSeq %d", len(evs), s.LastSeq())
	}
	for i, e := range evs {
		if e.Seq != uint64(i+1) || e.Agent == nil || e.Agent.ID != sampleAgent(i).ID {
			t.Fatalf("event %d after crash: seq %d agent %v", i, e.Seq, e.Agent)
		}
	}
	e, err := s.AppendEvent(ctx, sampleEvent(0, nil))
	if err != nil || e.Seq != s.LastSeq() || e.Seq <= lastSeq {
		t.Fatalf("append after crash: seq %d, %v (acknowledged up to %d)", e.Seq, err, lastSeq)
	}
}

// rssChild opens a populated store, lists it, and prints its RSS before and after.
func rssChild(dir string) int {
	before := vmRSSKiB()
	s, err := Open(dir, nil)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	defer s.Close()
	opened := vmRSSKiB()
	agents, err := s.ListAgents(context.Background())
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Printf("rss %d %d %d %d\n", before, opened, vmRSSKiB(), len(agents))
	return 0
}

func vmRSSKiB() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return n
		}
	}
	return -1
}

// TestRSSWith1000Agents measures a fresh process that opens a store of 1,000 realistic
// agent records and lists them. The server's budget is 40 MB in all; the store has to
// leave most of it to everything else.
func TestRSSWith1000Agents(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	if vmRSSKiB() < 0 {
		t.Skip("no /proc/self/status")
	}
	if raceEnabled {
		t.Skip("the race detector inflates RSS")
	}
	ctx := t.Context()
	dir := t.TempDir()
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		if err := s.PutAgent(ctx, sampleAgent(i)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendEvent(ctx, wire.Event{Event: wire.EventAgentSpawned, Agent: &wire.Agent{ID: sampleAgent(i).ID}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envRSSChild+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v: %s", err, out)
	}
	var before, opened, after, n int
	if _, err := fmt.Sscanf(string(out), "rss %d %d %d %d", &before, &opened, &after, &n); err != nil {
		t.Fatalf("child said %q", out)
	}
	if n != 1000 {
		t.Fatalf("child listed %d agents", n)
	}
	mib := func(kib int) float64 { return float64(kib) / 1024 }
	t.Logf("RSS of a process that opened a store of 1,000 agents and listed them: %.1f MiB "+
		"(before Open %.1f MiB, after Open %.1f MiB: Open adds %.1f MiB, ListAgents %.1f MiB)",
		mib(after), mib(before), mib(opened), mib(opened-before), mib(after-opened))
	if after > 40*1024 {
		t.Fatalf("RSS %d KiB is over the server's whole 40 MB budget", after)
	}
}

// writesChild appends events as fast as it can to a store of 1,000 agents and prints the
// peak RSS it saw: "peak <before KiB> <peak KiB> <events>".
func writesChild(dir string) int {
	ctx := context.Background()
	before := vmRSSKiB()
	var tweak func(badger.Options) badger.Options
	if os.Getenv(envBadgerDefaults) != "" {
		tweak = func(badger.Options) badger.Options {
			return badger.DefaultOptions(dir).WithLogger(nil)
		}
	}
	s, err := open(dir, nil, gcInterval, tweak)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	defer s.Close()
	if _, err := s.ListAgents(ctx); err != nil {
		fmt.Println("error", err)
		return 1
	}
	a := sampleAgent(7)
	peak := vmRSSKiB()
	const n = 8000 // ~21 MiB of events that embed an agent
	for i := range n {
		if _, err := s.AppendEvent(ctx, sampleEvent(i, &a)); err != nil {
			fmt.Println("error", err)
			return 1
		}
		if i%100 == 0 {
			peak = max(peak, vmRSSKiB())
		}
	}
	fmt.Printf("peak %d %d %d\n", before, max(peak, vmRSSKiB()), n)
	return 0
}

// BenchmarkWritesPeakRSS reports the peak RSS of a fresh process that opens a store of
// 1,000 agents and appends 8,000 events (~21 MiB) as fast as it can. This is where the
// tuning shows; compare with badger's defaults by running it with
// ORCR_STORE_TEST_BADGER_DEFAULTS=1. Each iteration is one child process.
func BenchmarkWritesPeakRSS(b *testing.B) {
	if vmRSSKiB() < 0 {
		b.Skip("no /proc/self/status")
	}
	ctx := b.Context()
	dir := b.TempDir()
	s := openT(b, dir)
	for i := range 1000 {
		if err := s.PutAgent(ctx, sampleAgent(i)); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	var peakSum, beforeSum float64
	runs := 0
	for b.Loop() {
		// Each run starts from the same store: copy it so runs do not pile up events.
		run := b.TempDir()
		if err := os.CopyFS(run, os.DirFS(dir)); err != nil {
			b.Fatal(err)
		}
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$", "-test.bench=^$")
		cmd.Env = append(os.Environ(), envWritesChild+"="+run)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("child: %v: %s", err, out)
		}
		var before, peak, n int
		if _, err := fmt.Sscanf(string(out), "peak %d %d %d", &before, &peak, &n); err != nil {
			b.Fatalf("child said %q", out)
		}
		peakSum += float64(peak) / 1024
		beforeSum += float64(before) / 1024
		runs++
	}
	b.ReportMetric(peakSum/float64(runs), "peak-RSS-MiB")
	b.ReportMetric(beforeSum/float64(runs), "start-RSS-MiB")
}

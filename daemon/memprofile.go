package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"syscall"
)

// memProfileEnv names a directory: with it set, each SIGUSR1 makes the headless server
// write a heap profile (after a collection, so it shows what is live) and its runtime
// memory figures there, as heap.N.pprof and mem.N.txt. It is how a benchmark finds
// where the server's memory goes (bench.BenchmarkWorkflowForEach1000 with
// ORCR_BENCH_MEMPROFILE). Without it SIGUSR1 keeps its default action.
const memProfileEnv = "ORCR_MEMPROFILE"

// memProfileRate is the heap profile's sampling interval while memProfileEnv is set:
// one sample per 4 KiB allocated instead of the runtime's 512 KiB. At 512 KiB a dump
// after a 1,000-agent burst showed each of the kernel's and features' per-agent
// allocation sites as one 512 KiB sample or none, so what an ended agent keeps could
// not be told apart by site; at 4 KiB it can (a profiling server only: the extra
// cost is a stack walk per 4 KiB).
const memProfileRate = 4 << 10

// sampleHeapFinely sets memProfileRate when memProfileEnv is set. Serve calls it
// before anything else allocates, so every allocation is sampled at one rate.
func sampleHeapFinely() {
	if os.Getenv(memProfileEnv) != "" {
		runtime.MemProfileRate = memProfileRate
	}
}

// memFigures are the runtime/metrics a memory dump reports: what the Go heap holds
// live, what it holds in all (live + garbage + free spans), what it has given back to
// the OS, and the rest of what the runtime maps.
var memFigures = []string{
	"/gc/heap/live:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/stacks:bytes",
	"/memory/classes/other:bytes",
	"/memory/classes/metadata/other:bytes",
	"/memory/classes/total:bytes",
	"/gc/gogc:percent",
	"/gc/gomemlimit:bytes",
	"/gc/cycles/total:gc-cycles",
	"/sched/goroutines:goroutines",
}

// watchMemProfile writes a dump on every SIGUSR1 until ctx ends, when memProfileEnv
// is set.
func watchMemProfile(ctx context.Context, log *slog.Logger) {
	dir := os.Getenv(memProfileEnv)
	if dir == "" {
		return
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGUSR1)
	go func() {
		defer signal.Stop(ch)
		for n := 1; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-ch:
			}
			if err := writeMemDump(dir, n); err != nil {
				log.Error("memory profile", "dir", dir, "err", err)
			}
		}
	}()
}

// writeMemDump writes heap.N.pprof and mem.N.txt into dir; mem.N.txt is written last,
// so a reader that sees it finds both.
func writeMemDump(dir string, n int) error {
	// The figures as the signal found them (what the RSS read beside it holds), then
	// after the collection the profile needs (what of it is live).
	var b strings.Builder
	writeMemFigures(&b, "at-signal ")
	runtime.GC()
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("heap.%d.pprof", n)))
	if err != nil {
		return fmt.Errorf("memory profile: %w", err)
	}
	err = pprof.Lookup("heap").WriteTo(f, 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("memory profile: %w", err)
	}
	writeMemFigures(&b, "")
	if st, err := os.ReadFile("/proc/self/smaps_rollup"); err == nil {
		b.Write(st)
	}
	tmp := filepath.Join(dir, fmt.Sprintf(".mem.%d.txt", n))
	if err := os.WriteFile(tmp, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("memory profile: %w", err)
	}
	return os.Rename(tmp, filepath.Join(dir, fmt.Sprintf("mem.%d.txt", n)))
}

// writeMemFigures writes memFigures' values, one "prefix name value" a line.
func writeMemFigures(b *strings.Builder, prefix string) {
	sample := make([]metrics.Sample, len(memFigures))
	for i, name := range memFigures {
		sample[i].Name = name
	}
	metrics.Read(sample)
	for _, s := range sample {
		if s.Value.Kind() == metrics.KindUint64 {
			fmt.Fprintf(b, "%s%s %d\n", prefix, s.Name, s.Value.Uint64())
		}
	}
}

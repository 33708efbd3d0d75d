package daemon

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"runtime/trace"
)

// cpuProfileEnv names a file: with it set, the headless server profiles its CPU from
// its start until it stops (SIGTERM, SIGINT) and writes the profile there. It is how
// the spawn loop's server side was broken down (docs/architecture.md, "The spawn
// loop: the server's side"): `ORCR_CPUPROFILE=/tmp/cpu.pprof orcr serve`, then
// `go tool pprof`.
const cpuProfileEnv = "ORCR_CPUPROFILE"

// startCPUProfile starts the profile when cpuProfileEnv is set; the function it
// returns stops it and closes the file (a no-op without the variable).
func startCPUProfile() (stop func() error, err error) {
	return recordTo(cpuProfileEnv, "cpu profile", pprof.StartCPUProfile, pprof.StopCPUProfile)
}

// recordTo starts a recorder (a CPU profile, a trace) writing to the file the
// environment variable env names, when it is set; the function it returns stops it and
// closes the file (a no-op without the variable).
func recordTo(env, what string, start func(io.Writer) error, stopRec func()) (stop func() error, err error) {
	path := os.Getenv(env)
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := start(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	return func() error {
		stopRec()
		if err := f.Close(); err != nil {
			return fmt.Errorf("%s %s: %w", what, path, err)
		}
		return nil
	}, nil
}

// traceEnv names a file: with it set, the headless server records a runtime execution
// trace (runtime/trace) from its start until it stops and writes it there. The trace
// shows each goroutine's wake-ups, which a CPU profile of an idle server (a few samples
// a minute) cannot: it is how the idle server's timers were found (docs/architecture.md,
// "idle11, session 11"). `ORCR_TRACE=/tmp/t.out orcr serve`, then `go tool trace`.
const traceEnv = "ORCR_TRACE"

// startTrace starts the trace when traceEnv is set; the function it returns stops it
// and closes the file (a no-op without the variable).
func startTrace() (stop func() error, err error) {
	return recordTo(traceEnv, "trace", trace.Start, trace.Stop)
}

package daemon

import (
	"fmt"
	"os"
	"runtime/pprof"
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
	path := os.Getenv(cpuProfileEnv)
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile %s: %w", path, err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("cpu profile %s: %w", path, err)
		}
		return nil
	}, nil
}

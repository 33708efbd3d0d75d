package daemon

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"testing"
)

// With ORCR_CPUPROFILE set the server writes a CPU profile there when it stops (a
// gzipped pprof); without it nothing is profiled and nothing written.
func TestCPUProfileWrittenAtStop(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	t.Setenv(cpuProfileEnv, path)
	stop, err := startCPUProfile()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1e6; i++ {
		_ = bytes.Repeat([]byte{byte(i)}, 1)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("profile at %s: %d bytes, %v; want a gzipped pprof", path, len(b), err)
	}
	t.Setenv(cpuProfileEnv, "")
	stop, err = startCPUProfile()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	// Nothing profiles now: the runtime lets another profile start.
	if err := pprof.StartCPUProfile(io.Discard); err != nil {
		t.Fatalf("without %s the CPU was profiled: %v", cpuProfileEnv, err)
	}
	pprof.StopCPUProfile()
}

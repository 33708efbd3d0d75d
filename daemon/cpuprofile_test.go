package daemon

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
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

// With ORCR_TRACE set the server records an execution trace there until it stops (the
// trace format's header, "go 1.NN trace"); without it nothing is traced.
func TestTraceWrittenAtStop(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.out")
	t.Setenv(traceEnv, path)
	stop, err := startTrace()
	if err != nil {
		t.Fatal(err)
	}
	if !trace.IsEnabled() {
		t.Fatal("no trace under way")
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || !bytes.HasPrefix(b, []byte("go 1.")) || !bytes.Contains(b[:16], []byte(" trace")) {
		t.Fatalf("trace at %s: %q, %v; want a runtime trace", path, b[:min(len(b), 16)], err)
	}
	t.Setenv(traceEnv, "")
	stop, err = startTrace()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if trace.IsEnabled() {
		t.Fatalf("without %s a trace is under way", traceEnv)
	}
}

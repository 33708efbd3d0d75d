package daemon

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A memory dump is a heap profile and the figures that tell Go's heap from
// the rest of the RSS.
func TestWriteMemDump(t *testing.T) {
	dir := t.TempDir()
	if err := writeMemDump(dir, 3); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "heap.3.pprof"))
	if err != nil {
		t.Fatal(err)
	}
	// A profile is a gzipped protocol buffer naming its sample types.
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("heap.3.pprof is not gzipped: %v", err)
	}
	pb, err := io.ReadAll(zr)
	if err != nil || !bytes.Contains(pb, []byte("inuse_space")) {
		t.Errorf("heap.3.pprof is no heap profile (err %v)", err)
	}
	mem, err := os.ReadFile(filepath.Join(dir, "mem.3.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"/gc/heap/live:bytes ", "/memory/classes/heap/released:bytes ", "Pss_Anon:",
		"at-signal /memory/classes/heap/free:bytes ", "at-signal /gc/heap/live:bytes "} {
		if !strings.Contains(string(mem), want) {
			t.Errorf("mem.3.txt lacks %q:\n%s", want, mem)
		}
	}
}

// A profiling server samples the heap every 4 KiB, so a dump tells the per-agent
// allocation sites apart; without ORCR_MEMPROFILE the runtime's rate is untouched.
func TestProfilingSamplesTheHeapFinely(t *testing.T) {
	defer func(r int) { runtime.MemProfileRate = r }(runtime.MemProfileRate)
	was := runtime.MemProfileRate
	t.Setenv(memProfileEnv, "")
	sampleHeapFinely()
	if runtime.MemProfileRate != was {
		t.Fatalf("MemProfileRate %d without %s; want the runtime's %d", runtime.MemProfileRate, memProfileEnv, was)
	}
	t.Setenv(memProfileEnv, t.TempDir())
	sampleHeapFinely()
	if runtime.MemProfileRate != memProfileRate {
		t.Fatalf("MemProfileRate %d with %s set; want %d", runtime.MemProfileRate, memProfileEnv, memProfileRate)
	}
}

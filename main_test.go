package main

import (
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"

	"orcr/testutil/testbin"
)

// maxOwnInitAllocs bounds the allocations orcr's own packages make at initialisation,
// in every process (`orcr agent get` as much as `orcr serve`). Tables, regexps and
// handler maps are built on first use (sync.OnceValue) instead, and a method
// declaration boxes no params or result value (core/wire). Before that the packages
// made 873, then 377; now ~180.
const maxOwnInitAllocs = 250

// TestInitIsCheap runs the binary with GODEBUG=inittrace=1 and fails when orcr's own
// packages do more work at init than maxOwnInitAllocs allocations, naming the ones that
// do the most: a CLI command pays for every package the binary links, so work a
// package needs only in the server belongs behind a sync.OnceValue.
func TestInitIsCheap(t *testing.T) {
	bin := testbin.Build(t, "orcr")
	cmd := exec.Command(bin, "--version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("orcr --version: %v\n%s", err, out)
	}
	type pkg struct {
		name   string
		allocs int
	}
	var own []pkg
	total, seen := 0, 0
	// init orcr/core/socket @4.8 ms, 0.28 ms clock, 54008 bytes, 291 allocs
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 11 || f[0] != "init" || f[10] != "allocs" {
			continue
		}
		seen++
		n, err := strconv.Atoi(f[9])
		if err != nil {
			t.Fatalf("unreadable init trace line %q", line)
		}
		if f[1] == "orcr" || strings.HasPrefix(f[1], "orcr/") {
			own = append(own, pkg{f[1], n})
			total += n
		}
	}
	if seen < 10 {
		t.Fatalf("GODEBUG=inittrace=1 printed %d init lines; the trace format may have changed:\n%s", seen, out)
	}
	sort.Slice(own, func(i, j int) bool { return own[i].allocs > own[j].allocs })
	if total > maxOwnInitAllocs {
		var top []string
		for _, p := range own[:min(5, len(own))] {
			top = append(top, p.name+" "+strconv.Itoa(p.allocs))
		}
		t.Errorf("orcr's packages make %d allocations at init (most: %s); build tables and regexps on first use (sync.OnceValue) to stay under %d",
			total, strings.Join(top, ", "), maxOwnInitAllocs)
	}
	t.Logf("orcr's packages: %d allocations at init", total)
}

package web_test

import (
	"os"
	"testing"
)

// TestMain runs the tests, or, when the event benchmark starts this binary as its
// client process (ORCR_BENCH_CLIENTS), that process.
func TestMain(m *testing.M) {
	if spec := os.Getenv(benchClientsEnv); spec != "" {
		os.Exit(runBenchClients(spec))
	}
	os.Exit(m.Run())
}

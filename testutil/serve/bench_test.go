package serve

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// StartBench is what the whole-program benchmarks (bench/cli, bench/tmux, bench/pty)
// start their server with; a benchmark is run rarely, so its rig is checked here.
func TestStartBenchPty(t *testing.T) {
	t.Setenv("ORCR_STRAY", "1")
	t.Setenv("GOSTRAY", "1")
	bn := StartBench(t, "pty", "GO")
	if len(bn.Socket) > 100 {
		t.Errorf("socket path %q is too long for a unix socket", bn.Socket)
	}
	if slices.ContainsFunc(bn.Env, func(kv string) bool {
		return strings.HasPrefix(kv, "ORCR_STRAY=") || strings.HasPrefix(kv, "GOSTRAY=")
	}) {
		t.Errorf("the caller's own variables leaked into the server's environment: %q", bn.Env)
	}
	if lastValue(bn.Env, "ORCR_HOME") != bn.Home || lastValue(bn.Env, "ORCR_HOST") != "pty" {
		t.Errorf("environment %q, want ORCR_HOME=%s and ORCR_HOST=pty", bn.Env, bn.Home)
	}
	info, err := bn.Client().Info(context.Background())
	if err != nil || info.Host != "pty" {
		t.Fatalf("info %+v, %v", info, err)
	}
}

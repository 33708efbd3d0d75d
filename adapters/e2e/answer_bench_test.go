package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
	"orcr/testutil/modelserver"
)

// BenchmarkClaudeAnswer measures `orcr agent answer --allow` on a real claude on tmux,
// from starting the CLI until the agent's state has left blocked (the answer returns
// only then), per Bash permission prompt. Target: median ≤ 300 ms.
func BenchmarkClaudeAnswer(b *testing.B) {
	r := newClaudeAnswerRig(b)
	r.Models.SetDefault(modelserver.Turn{Text: "ok", Usage: modelserver.Usage{Input: 1, Output: 1}})
	r.Must("agent", "run", "bench/a", "--provider", "claude", "--cwd", r.Work, "--prompt", "hello",
		"--", "--permission-mode", "default")
	r.Must("agent", "wait", "bench/a", "--until", "done", "--timeout", "90s")
	var samples []time.Duration
	for i := 0; i < b.N; i++ {
		dir := fmt.Sprintf("build%d", i)
		os.MkdirAll(filepath.Join(r.Work, dir), 0o755)
		r.Models.Push(bashTurn("rm -rf "+dir), modelserver.Turn{Text: "removed", Usage: modelserver.Usage{Input: 1, Output: 1}})
		r.Must("agent", "send", "bench/a", "remove "+dir)
		r.blockedOn("bench/a", wire.BlockedPermission)
		start := time.Now()
		res := r.answer("bench/a", "--allow")
		samples = append(samples, time.Since(start))
		if res.Answers[0].Agent.State == wire.StateBlocked {
			b.Fatalf("still blocked: %+v", res.Answers[0].Agent)
		}
		r.Must("agent", "wait", "bench/a", "--until", "done", "--timeout", "60s")
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	med := samples[len(samples)/2]
	b.ReportMetric(float64(med.Microseconds())/1000, "ms-median")
	b.ReportMetric(float64(samples[len(samples)-1].Microseconds())/1000, "ms-max")
	b.Logf("answer → left blocked, %d samples: %v", len(samples), samples)
	if os.Getenv("ORCR_TEST_DEBUG") != "" { // the server's timing of each answer (debug log)
		lb, _ := os.ReadFile(filepath.Join(r.Home, "orcr.log"))
		for _, l := range strings.Split(string(lb), "\n") {
			if strings.Contains(l, "answer") {
				b.Log(l)
			}
		}
	}
}

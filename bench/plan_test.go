package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"orcr/core"
	"orcr/orchestrate"
	"orcr/store"
)

// plan50 is a plan of 50 milestones, each depending on up to two earlier ones.
func plan50() string {
	var b strings.Builder
	b.WriteString("# Plan: big\nrequest: a large change\ncheck: go test ./...\n")
	tiers := []string{"small", "medium", "high"}
	for i := 1; i <= 50; i++ {
		deps := "-"
		switch {
		case i > 2:
			deps = fmt.Sprintf("M%d, M%d", i-1, i-2)
		case i > 1:
			deps = "M1"
		}
		fmt.Fprintf(&b, "\n## M%d · Milestone number %d\ndepends: %s\ntier: %s\nneeds: go, sql\nmodel-why: reason %d\nestimate: %dm\n\n### Goal\nMake part %d true.\n\n### Acceptance\n- [ ] test %d passes\n- [ ] docs for %d\n",
			i, i, deps, tiers[i%3], i, 10+i%50, i, i, i)
	}
	return b.String()
}

// BenchmarkPlanShow50 runs `orcr plan show` of a drafted 50-milestone plan as a whole
// process against a running server and reports the median (target ≤ 15 ms).
func BenchmarkPlanShow50(b *testing.B) {
	home := b.TempDir()
	repo := filepath.Join(home, "repo")
	file := orchestrate.PlanFile(repo, "big")
	os.MkdirAll(filepath.Dir(file), 0o755)
	if err := os.WriteFile(file, []byte(plan50()), 0o644); err != nil {
		b.Fatal(err)
	}
	// The record, as the plan service leaves it once the lead's draft parsed.
	st, err := store.Open(filepath.Join(home, "store"), nil)
	if err != nil {
		b.Fatal(err)
	}
	r, err := orchestrate.NewRecord("big", "a large change", repo, "claude:claude-opus-5", time.Now().UTC())
	if err != nil {
		b.Fatal(err)
	}
	r.State = orchestrate.PlanDrafted
	if err := orchestrate.NewPlans(core.FeatureBuckets(st, orchestrate.Name)).Create(context.Background(), r); err != nil {
		b.Fatal(err)
	}
	st.Close()
	s := startServer(b, home)
	var ds []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := 0; j < 50; j++ {
			cmd := exec.Command(s.bin, "plan", "show", "big")
			cmd.Env = s.env
			var out bytes.Buffer
			cmd.Stdout = &out
			t0 := time.Now()
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(t0))
			if j == 0 && !strings.Contains(out.String(), "50 milestones") {
				b.Fatalf("plan show printed:\n%s", out.String())
			}
		}
	}
	b.StopTimer()
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "median-ms")
	b.ReportMetric(float64(ds[len(ds)*9/10].Microseconds())/1000, "p90-ms")
}

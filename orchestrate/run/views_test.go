package run

import (
	"slices"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
)

// TestSummaryTimeAddsUp: a milestone's time in the summary is split by what it was
// spent on — waiting for dispatch, building, checks, fix rounds — and the parts add up
// to its elapsed time, from its first ready to its merge. Before, the check's time
// was shown as "fixing" (a milestone with no fix round had minutes of fixing), the
// wait for dispatch was nowhere, and "actual" started at the first brief.
func TestSummaryTimeAddsUp(t *testing.T) {
	r := newRun(t, 1, false, "A::small")
	now := t0
	step := func(after time.Duration, f Fact) {
		t.Helper()
		now = now.Add(after)
		var err error
		if r, _, err = Step(r, f, now); err != nil {
			t.Fatalf("%+v: %v", f, err)
		}
	}
	step(10*time.Minute, Fact{Kind: FDispatch, M: "A"})
	// Building for 20 minutes, 3 of them at a permission prompt (the same prompt
	// seen twice counts once); the fix round 5, 1 of them at a prompt the milestone
	// left by reporting done (a move ends the wait).
	step(5*time.Minute, Fact{Kind: FPrompt, M: "A", Coder: "coder-1"})
	step(2*time.Minute, Fact{Kind: FPrompt, M: "A", Coder: "coder-1"})
	step(time.Minute, Fact{Kind: FPromptDone, M: "A", Coder: "coder-1"})
	step(time.Minute, Fact{Kind: FPromptDone, M: "A", Coder: "coder-1"})
	step(11*time.Minute, Fact{Kind: FDone, M: "A", Coder: "coder-1", Commits: 1, Head: "a1"})
	step(2*time.Minute, Fact{Kind: FChecked, M: "A", Head: "a1", OK: false, Text: "FAIL"})
	step(4*time.Minute, Fact{Kind: FPrompt, M: "A", Coder: "coder-1"})
	// While the prompt is up the summary counts its time so far.
	col := func(name string) int {
		return slices.IndexFunc(timeParts, func(c struct {
			name   string
			states []State
		}) bool {
			return c.name == name
		})
	}
	if parts, elapsed := TimeSpent(r.Milestones[0], now.Add(30*time.Second)); parts[col("waiting at a permission prompt")] != 3*60+30 || parts[col("fix rounds")] != 4*60 ||
		elapsed != (10+20+2+4)*60+30 {
		t.Fatalf("during the fix round's prompt: parts %v, elapsed %v", parts, elapsed)
	}
	step(time.Minute, Fact{Kind: FDone, M: "A", Coder: "coder-1", Commits: 2, Head: "a2"})
	step(time.Minute, Fact{Kind: FChecked, M: "A", Head: "a2", OK: true})
	step(30*time.Second, Fact{Kind: FMergedIn, M: "A", Head: "a2"})
	step(30*time.Second, Fact{Kind: FAdvanced, M: "A", Head: "f1"})
	m, _ := r.Milestone("A")
	if m.State != Merged {
		t.Fatalf("A is %s", m.State)
	}
	later := now.Add(time.Hour) // after the merge nothing more is the milestone's
	parts, elapsed := TimeSpent(m, later)
	want := map[string]time.Duration{"waiting for dispatch": 10 * time.Minute, "building": 17 * time.Minute,
		"checks": 4 * time.Minute, "fix rounds": 4 * time.Minute, "waiting at a permission prompt": 4 * time.Minute}
	var sum float64
	for i, c := range timeParts {
		sum += parts[i]
		if got := time.Duration(parts[i] * float64(time.Second)); got != want[c.name] {
			t.Errorf("%s: %s, want %s", c.name, got, want[c.name])
		}
	}
	if sum != elapsed || time.Duration(elapsed*float64(time.Second)) != m.MergedAt.Sub(t0) {
		t.Fatalf("parts add up to %vs, elapsed %vs, first ready to merge %s", sum, elapsed, m.MergedAt.Sub(t0))
	}

	// The summary shows the same figures.
	s := newFakeService(t, &fakeAgents{agents: map[string]wire.Agent{}}, t.TempDir())
	s.o.Now = func() time.Time { return later }
	text := s.Summary(Record{Run: r, Check: "true"})
	if !strings.Contains(text, "| checks | fix rounds | review | waiting for an answer | waiting at a permission prompt |") || !strings.Contains(text, "| 1/0/0 | 10m0s | 17m0s | 4m0s | 4m0s | - | - | 4m0s | - | - |") ||
		!strings.Contains(text, "| 39m0s | 1/0/0 |") {
		t.Fatalf("summary:\n%s", text)
	}
}

package cli_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/core"
	"orcr/orchestrate"
)

const cliPlan = `# Plan: p
request: r
check: go test ./...

## M1 · One
depends: -
tier: high
model-why: the contract
estimate: 20m

### Goal
Do one.

### Acceptance
- [ ] one works

## M2 · Two
depends: M1
tier: medium
estimate: 1h

### Goal
Do two.

### Acceptance
- [ ] two works
`

// TestPlanCommands drives orcr plan ls|show|edit|approve and catalog against the plan
// service over a real store, with a plan whose lead already wrote its file.
func TestPlanCommands(t *testing.T) {
	r := newRig(t)
	repo := t.TempDir()
	if out, err := exec.Command("git", "-C", repo, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	rec, err := orchestrate.NewRecord("p", "r", repo, "claude:claude-opus-5", time.Now().UTC().Add(-2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	rec.State = orchestrate.PlanDrafted
	if err := orchestrate.NewPlans(core.FeatureBuckets(r.st, orchestrate.Name)).Create(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Dir(rec.File), 0o755)
	os.WriteFile(rec.File, []byte(cliPlan), 0o644)

	must := func(args ...string) string {
		t.Helper()
		code, out, errOut := r.run(t, "", args...)
		if code != 0 {
			t.Fatalf("orcr %s: exit %d: %s", strings.Join(args, " "), code, errOut)
		}
		return out
	}
	if out := must("plan", "ls"); !strings.Contains(out, "p     drafted  lead claude:claude-opus-5  2m") {
		t.Fatalf("plan ls:\n%s", out)
	}
	out := must("plan", "show", "p")
	for _, want := range []string{"M1  One    -        high    20m       the contract", "M2  Two    M1       medium  1h        -", "2 milestones, 1h20m estimated in all"} {
		if !strings.Contains(out, want) {
			t.Fatalf("plan show lacks %q:\n%s", want, out)
		}
	}

	// An edit that breaks the file: the problems by line, exit 1, approve refused.
	t.Setenv("EDITOR", "sed -i s/tier:\\ medium/tier:\\ huge/")
	code, _, errOut := r.run(t, "", "plan", "edit", "p")
	if code != 1 || !strings.Contains(errOut, `p.md:19: unknown tier "huge": tiers are small, medium, high [unknown_tier]`) {
		t.Fatalf("plan edit of a broken file: exit %d\n%s", code, errOut)
	}
	if code, _, errOut := r.run(t, "", "plan", "approve", "p"); code != 1 || !strings.Contains(errOut, "unknown tier") {
		t.Fatalf("approve a broken file: exit %d %s", code, errOut)
	}
	t.Setenv("EDITOR", "sed -i s/tier:\\ huge/tier:\\ medium/")
	if out := must("plan", "edit", "p"); !strings.Contains(out, "parses (2 milestones), drafted") {
		t.Fatalf("plan edit that fixes it: %s", out)
	}
	if out := must("plan", "approve", "p"); !strings.Contains(out, "approved (sha256 ") {
		t.Fatalf("plan approve: %s", out)
	}
	t.Setenv("EDITOR", "sed -i s/estimate:\\ 1h/estimate:\\ 2h/")
	if out := must("plan", "edit", "p"); !strings.Contains(out, "changed after approval, recorded as an event") {
		t.Fatalf("plan edit after approval: %s", out)
	}
	if out := must("plan", "show", "p", "--json"); !strings.Contains(out, `"kind": "edited"`) {
		t.Fatalf("no edited event:\n%s", out)
	}

	// plan new: outside a repository, a taken name, a lead the server cannot start
	// (this engine has no claude): each refused, and nothing left behind.
	if code, _, errOut := r.run(t, "", "plan", "new", "q", "x", "--repo", t.TempDir()); code != 1 || !strings.Contains(errOut, "not inside a git repository") {
		t.Fatalf("outside a repo: %d %s", code, errOut)
	}
	if code, _, errOut := r.run(t, "", "plan", "new", "p", "x", "--repo", repo); code != 1 || !strings.Contains(errOut, "plan p exists already") {
		t.Fatalf("a taken name: %d %s", code, errOut)
	}
	if code, _, errOut := r.run(t, "", "plan", "new", "q", "x", "--repo", repo, "--lead", "claude"); code != 1 || !strings.Contains(errOut, "unknown provider") {
		t.Fatalf("a lead that cannot start: %d %s", code, errOut)
	}
	if out := must("plan", "ls"); strings.Contains(out, "q ") {
		t.Fatalf("a plan whose lead did not start is left:\n%s", out)
	}
	if out := must("catalog"); !strings.Contains(out, "claude-opus-5") || !strings.Contains(out, "TIER") {
		t.Fatalf("catalog:\n%s", out)
	}
}

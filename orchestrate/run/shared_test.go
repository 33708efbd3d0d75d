package run_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runapi "orcr/orchestrate/run/api"
	"orcr/testutil/wait"
)

// threeShared is M1 and M2 side by side and M3 on both: in shared mode the two that
// could run in parallel must still go one after the other through the one folder.
const threeShared = `# Plan: demo
request: three files
check: sleep 0.3

## M1 · First file
depends: -
tier: small

### Goal
Write M1.txt.

### Acceptance
- [ ] M1.txt exists

## M2 · Second file
depends: -
tier: small

### Goal
Write M2.txt.

### Acceptance
- [ ] M2.txt exists

## M3 · Third file
depends: M1, M2
tier: small

### Goal
Write M3.txt.

### Acceptance
- [ ] M3.txt exists
`

// sharedCoder is a shell coder for the repository's own folder: its milestone comes
// from its brief (the folder says nothing), and `git add -A` takes everything
// untracked, as a real coder's does.
func sharedCoder(orcr string) []string {
	return []string{"sh", "-c", `m=$(printf '%s' "$ORCR_PROMPT" | sed -n 's/.*building milestone \([A-Z0-9]*\):.*/\1/p' | head -n 1)
echo "$m on $(git rev-parse --abbrev-ref HEAD)" > "$m.txt" && git add -A && git commit -qm "$m: work" && ` + orcr + ` run done "$m"
while read -r line; do
  case "$line" in
    *"turn ended without"*) ` + orcr + ` run done "$m" ;;
  esac
done`}
}

// TestSharedModeOneMilestoneAtATime: a shared-mode run of three milestones (two
// independent, dispatched together, and one on both) ends with three commits on
// feature/demo, each holding exactly its own file — no empty commit, no .orcr/ — with
// the repository back on main and .orcr/ where it was. Before, M2 was briefed (its
// branch checked out) as soon as M1's check passed, so M1's merge ran on M2's HEAD
// and recorded an empty commit, the coder's `git add -A` committed the plan, and the
// repository was left on orcr/demo/M3.
func TestSharedModeOneMilestoneAtATime(t *testing.T) {
	g := newRig(t)
	ctx := context.Background()
	g.approve("demo", threeShared)
	plan := filepath.Join(g.repo, ".orcr", "plans", "demo.md")
	if _, err := os.Stat(plan); err != nil {
		t.Fatal(err)
	}
	if _, err := g.svc.RunStart(ctx, runapi.RunStartParams{Name: "demo", Mode: "shared", Coders: 2, Coder: "shell", CoderArgv: sharedCoder(g.orcr), Lead: "none"}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.svc.RunDispatch(ctx, runapi.RunMilestonesParams{Name: "demo", Milestones: []string{"M1", "M2"}}); err != nil {
		t.Fatal(err)
	}
	// While one of them is under way, the other waits for it, and says so.
	seen := false
	wait.For(t, 90*time.Second, "M1 and M2 to merge", func() bool {
		v := g.status("demo")
		busy := 0
		for _, m := range v.Milestones[:2] {
			switch m.State {
			case "building", "checking", "merging", "fixing", "asking", "reviewing":
				busy++
			}
			if m.State == "ready" && strings.Contains(m.Waits, "to merge (shared mode") {
				seen = true
			}
		}
		if busy > 1 {
			t.Fatalf("two milestones under way at once in shared mode: %+v", v.Milestones)
		}
		return v.Milestones[0].State == "merged" && v.Milestones[1].State == "merged"
	})
	if !seen {
		t.Error("the second milestone never said it waits for the first to merge")
	}
	g.waitState("demo", "M3", "ready", 10*time.Second)
	if _, err := g.svc.RunDispatch(ctx, runapi.RunMilestonesParams{Name: "demo", Milestones: []string{"M3"}}); err != nil {
		t.Fatal(err)
	}
	g.waitState("demo", "M3", "merged", 60*time.Second)
	wait.For(t, 30*time.Second, "the run to finish its final check", func() bool { return g.status("demo").State == "done" })

	subjects := sh(t, g.repo, "git log --format=%s main..feature/demo | sort | tr '\n' ,")
	if subjects != "M1: First file,M2: Second file,M3: Third file," {
		t.Fatalf("feature/demo commits %q, want one per milestone", subjects)
	}
	for i := 0; i < 3; i++ {
		rev := fmt.Sprintf("feature/demo~%d", i)
		subject := sh(t, g.repo, "git log -1 --format=%s "+rev)
		files := sh(t, g.repo, "git diff-tree --no-commit-id --name-only -r "+rev+" | tr '\n' ' '")
		want := strings.SplitN(subject, ":", 2)[0] + ".txt"
		if files != want {
			t.Errorf("%s (%s) changes %q, want only %q", rev, subject, files, want)
		}
	}
	if m3 := sh(t, g.repo, "git show feature/demo:M3.txt"); m3 != "M3 on orcr/demo/M3" {
		t.Errorf("M3.txt is %q: M3 was not built on its own branch", m3)
	}
	// Once the summary is written, the repository is back where the user had it.
	var cur string
	if !wait.Until(30*time.Second, func() bool { cur = sh(t, g.repo, "git rev-parse --abbrev-ref HEAD"); return cur == "main" }) {
		t.Errorf("the repository is left on %s, want main (where it was)", cur)
	}
	if _, err := os.Stat(plan); err != nil {
		t.Errorf(".orcr/ did not survive the run: %v", err)
	}
	if ex, _ := os.ReadFile(filepath.Join(g.repo, ".git", "info", "exclude")); !strings.Contains(string(ex), "/.orcr/") {
		t.Errorf(".git/info/exclude does not ignore .orcr/:\n%s", ex)
	}
}

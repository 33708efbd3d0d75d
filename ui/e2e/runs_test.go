package e2e

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
	"orcr/planning"
	"orcr/store"
)

// runPlan is two dependent milestones whose check fails until the coder adds the
// file it looks for, as orchestrate/run's shell-coder test has it.
const runPlan = `# Plan: demo
request: two files
check: ls ok-* >/dev/null 2>&1

## M1 · First file
depends: -
tier: small
estimate: 5m

### Goal
Write M1.txt.

### Acceptance
- [ ] M1.txt exists

## M2 · Second file
depends: M1
tier: small

### Goal
Write M2.txt.

### Acceptance
- [ ] M2.txt exists
`

// seedApprovedPlan writes the plan into repo and records it approved in the store
// under home, before any server opens it (what `orcr plan approve` leaves behind,
// without a lead model to draft it).
func seedApprovedPlan(t *testing.T, home, repo string) {
	t.Helper()
	rec, err := orchestrate.NewRecord("demo", "two files", repo, "claude:x", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(rec.File), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rec.File, []byte(runPlan), 0o644); err != nil {
		t.Fatal(err)
	}
	rec.State, rec.ApprovedHash = orchestrate.PlanApproved, planning.HashBytes([]byte(runPlan))
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(home, "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := orchestrate.NewPlans(core.FeatureBuckets(st, orchestrate.Name)).Create(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
}

// TestDashboardRunView drives a run from the dashboard on the real binary: a run of
// two dependent milestones with shell coders in real panes, real worktrees and a real
// check. The runs view lists it; its milestones are dispatched from the view (d);
// M2's question is answered from the view (a) and the answer reaches the coder that
// asked; the view follows the run's events by itself to "2/2 merged" and "done"; the
// summary opens from the file the run wrote.
func TestDashboardRunView(t *testing.T) {
	r := newRig(t)
	repo := filepath.Join(r.dir, "repo")
	ident := []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t"}
	r.env = append(r.env, ident...)
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	git := exec.Command("sh", "-c", "git init -q -b main && echo '# demo' > README.md && git add -A && git commit -qm init")
	git.Dir, git.Env = repo, r.env
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git: %v\n%s", err, out)
	}
	seedApprovedPlan(t, r.home, repo)
	r.start()
	r.waitText(20*time.Second, "agents 0", "in-process")

	// The coders are shell programs: M1's commits its file and reports done (and adds
	// what the failed check wants); M2's asks first and writes the answer it gets.
	coder := `m=$(basename "$PWD")
if [ "$m" = M2 ]; then ` + r.bin + ` run ask "$m" "skip empty rows or reject the file?"
else echo "$m" > "$m.txt" && git add -A && git commit -qm "$m: work" && ` + r.bin + ` run done "$m"; fi
while read -r line; do
  case "$line" in
    *"Answer to your question"*) echo "$line" > "$m.txt" && git add -A && git commit -qm "$m: work" && ` + r.bin + ` run done "$m" ;;
    *"check failed"*) touch "ok-$m" && git add -A && git commit -qm "$m: fix" && ` + r.bin + ` run done "$m" ;;
    *"turn ended without"*) ` + r.bin + ` run done "$m" ;;
  esac
done`
	r.mustOrcr("run", "start", "demo", "--coders", "2", "--coder", "shell", "--lead", "none", "--", "sh", "-c", coder)

	r.keys("O")
	r.waitScreen("the run in the runs view", 20*time.Second, func(s string) bool {
		return strings.Contains(s, "─ runs ") && runRow(s, "demo", "running", "0/2")
	})
	r.keys("Enter")
	r.waitText(20*time.Second, "─ run demo ", "M1", "ready", "M1 to merge")
	r.keys("d") // M1 is selected: dispatch it from the view
	r.waitText(20*time.Second, "dispatched M1 of demo")
	// The view follows the run's events: M1's failed check, its fix, the merge.
	r.waitScreen("M1 merged and M2 ready, without a key", 90*time.Second, func(s string) bool {
		return strings.Contains(s, "1/2 merged") && milestoneRow(s, "M1", "merged") && milestoneRow(s, "M2", "ready")
	})
	if s := r.screen(); !strings.Contains(rowOf(s, "✓ M1"), "1/0/0") {
		t.Fatalf("M1's row should count one failed check round:\n%s", s)
	}
	r.keys("Down", "d")
	// M2's coder asks; the question shows on the selected milestone and is answered
	// from the view.
	r.waitScreen("M2 asking", 60*time.Second, func(s string) bool {
		return milestoneRow(s, "M2", "asking") && strings.Contains(s, "asks: skip empty rows or reject the file?")
	})
	r.keys("a")
	r.waitText(10*time.Second, "─ answer M2 of demo ", "Your answer goes back to coder-")
	r.typeText("skip empty rows")
	r.keys("Enter")
	r.waitText(20*time.Second, "answered M2 of demo")
	r.waitScreen("the run done", 90*time.Second, func(s string) bool {
		return strings.Contains(s, "2/2 merged") && strings.Contains(s, "demo done") && strings.Contains(s, "summary written")
	})
	r.keys("s")
	r.waitText(20*time.Second, "─ summary of run demo ", "summary.md", "M1 First file", "M2 Second file")
	show := exec.Command("git", "show", "feature/demo:M2.txt")
	show.Dir = repo
	if out, err := show.CombinedOutput(); err != nil || !strings.Contains(string(out), "Answer to your question about M2: skip empty rows") {
		t.Fatalf("M2.txt on feature/demo should hold the answer: %v\n%s", err, out)
	}

	// Without a remote nothing is pushed: finish says so and exits 1.
	out, err := r.orcr("run", "finish", "demo")
	if err == nil || !strings.Contains(out, "no remote") {
		t.Fatalf("finish: %v\n%s", err, out)
	}
	// Back out one level at a time (escapes sent together read as one alt+esc).
	r.keys("Escape")
	r.waitText(10*time.Second, "─ run demo ")
	r.keys("Escape")
	r.waitText(10*time.Second, "─ runs ")
	r.keys("Escape")
	r.waitScreen("the runs view closed", 10*time.Second, func(s string) bool { return !strings.Contains(s, "─ runs ") })
	for i := 0; i < 4; i++ {
		r.keys("q")
		if r.pollScreen(3*time.Second, func(s string) bool { return r.paneDead() || strings.Contains(s, "still run on the embedded host") }) {
			break
		}
	}
	if !r.paneDead() {
		r.keys("s")
	}
	r.waitScreen("the dashboard to exit", 20*time.Second, func(string) bool { return r.paneDead() })
}

// rowOf is the first screen line containing s.
func rowOf(screen, s string) string {
	for _, l := range strings.Split(screen, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// runRow reports a runs-list row for name with the given words.
func runRow(screen, name string, words ...string) bool {
	for _, l := range strings.Split(screen, "\n") {
		f := strings.Fields(strings.Trim(l, "│ "))
		if len(f) > 0 && strings.Contains(l, " "+name+" ") && containsAll(l, words) {
			return true
		}
	}
	return false
}

// milestoneRow reports a milestone row (glyph, id, state) in the run view's table.
func milestoneRow(screen, id, state string) bool {
	for _, l := range strings.Split(screen, "\n") {
		f := strings.Fields(l)
		for i := 0; i+2 < len(f); i++ {
			if f[i+1] == id && f[i+2] == state {
				return true
			}
		}
	}
	return false
}

func containsAll(s string, words []string) bool {
	for _, w := range words {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}

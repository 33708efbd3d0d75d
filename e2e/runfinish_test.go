package e2e

import (
	"os"
	"strings"
	"testing"
	"time"

	"orcr/orchestrate/run"
	"orcr/testutil/wait"
)

// TestRunFinishSaysWhatItDidNot: `run finish` whose pull request cannot be opened
// (origin is not on GitHub) says so and exits 1 — it exited 0, and a script went on
// as if the pull request existed. Finished again once origin is on GitHub, it opens
// the pull request titled with the plan's request (not "orcr run NAME"), whose body
// is summary.md as the finish wrote it.
func TestRunFinishSaysWhatItDidNot(t *testing.T) {
	r := newRunRig(t, "solo")
	r.approvePlan(oneMilestone)
	coder := []string{"sh", "-c", `printf 'hello\nsigned-off\n' > greet.txt && git add -A && git commit -qm "M1: greeting" && ` + r.bin + ` run done M1
cat >/dev/null`}
	r.must(append([]string{"run", "start", "solo", "--coders", "1", "--coder", "shell", "--lead", "none", "--"}, coder...)...)
	r.must("run", "dispatch", "solo", "M1")
	wait.For(t, 90*time.Second, "the run to be done", func() bool { return r.status().State == "done" })

	onGitHub := r.git(r.repo, "remote get-url origin")
	r.git(r.repo, "remote set-url origin "+r.bare)
	res := r.orcr("run", "finish", "solo")
	if res.Code != 1 || !strings.Contains(res.Out, "not done: pull request:") || !strings.Contains(res.Err, "orcr run finish solo") {
		t.Fatalf("finish without a pull request: exit %d\n%s\n%s", res.Code, res.Out, res.Err)
	}

	r.git(r.repo, "remote set-url origin "+onGitHub)
	out := r.must("run", "finish", "solo")
	if !strings.Contains(out, "opened ") {
		t.Fatalf("finish said:\n%s", out)
	}
	summary, err := os.ReadFile(run.SummaryFile(r.repo, "solo"))
	if err != nil {
		t.Fatal(err)
	}
	title, _, _, body := r.pullRequest(1)
	if title != "a greeting" {
		t.Errorf("the pull request's title is %q, want the plan's request %q", title, "a greeting")
	}
	if body != string(summary) {
		t.Errorf("the pull request's body is not summary.md:\n%s\nsummary.md:\n%s", body, summary)
	}
}

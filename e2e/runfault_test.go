package e2e

import (
	"strings"
	"testing"
	"time"

	"orcr/orchestrate/run"
	"orcr/testutil/wait"
)

// Crashes at exact moments of a run: the server is a real `orcr serve` that kills
// itself with SIGKILL at a fault point (run.FaultEnv), since a kill from outside
// cannot be timed to fall between two writes of the store. The restarted server has
// no fault point set.

// crashed waits until the server killed itself at its fault point, then takes the
// fault point out of the environment of the servers to come.
func (e *env) crashed(d time.Duration) {
	e.t.Helper()
	select {
	case <-e.srv.Exited():
	case <-time.After(wait.Scale(d)):
		e.t.Fatalf("the server did not reach its fault point in %s", wait.Scale(d))
	}
	if st := e.srv.Cmd.ProcessState; st == nil || !strings.Contains(st.String(), "killed") {
		e.t.Fatalf("the server ended by %v, not by its fault point's SIGKILL:\n%s", st, e.srv.Output())
	}
	e.srv = nil
	var keep []string
	for _, kv := range e.vars {
		if !strings.HasPrefix(kv, run.FaultEnv+"=") {
			keep = append(keep, kv)
		}
	}
	e.vars = keep
}

// TestRunReviewerVerdictSurvivesKill9: the reviewer (the real claude CLI) approves
// M1 and the server is killed after the verdict arrived and before it is applied.
// After the restart the verdict is applied exactly once and M1 leaves review and
// merges (it used to stay in review for good: the record forgot the review before
// the verdict was logged).
func TestRunReviewerVerdictSurvivesKill9(t *testing.T) {
	r := newRunRig(t, "solo", run.FaultEnv+"="+run.FaultReviewed)
	r.approvePlan(oneMilestone)
	r.models.PushTo("review/M1", say("greet.txt greets the world.\n\nVERDICT: approve"))
	coder := []string{"sh", "-c", `printf 'hello, world\nsigned-off\n' > greet.txt && git add -A && git commit -qm "M1: greet" && ` +
		r.bin + ` run done M1; exec cat`}
	r.must(append([]string{"run", "start", "solo", "--coder", "shell", "--reviewer", "claude", "--lead", "none", "--"}, coder...)...)
	r.must("run", "dispatch", "solo", "M1")
	r.crashed(150 * time.Second)
	r.serve()
	// The reviewer's claude outlives the killed server that started it: it is ended
	// (the restarted server knows its pid) before the test's directories are removed.
	t.Cleanup(func() { stopAgentProcs(t, r.env, "runs/**") })
	r.waitState("M1", "merged", 90*time.Second)
	applied := 0
	for _, e := range r.events() {
		if e.Type == "fact" && e.Kind == "reviewed" && !strings.Contains(e.Text, "ignored") {
			applied++
		}
	}
	if applied != 1 {
		t.Fatalf("the verdict was applied %d times, want once:\n%s", applied, r.facts(""))
	}
	if n := r.git(r.repo, "rev-list --count main..feature/solo"); n != "1" {
		t.Fatalf("feature/solo has %s commits, want 1", n)
	}
}

// oneFilePlan is one milestone for a shell coder (killCoder).
const oneFilePlan = `request: one file
check: test -s M1.txt

## M1 · One
depends: -
tier: small

### Goal
Write M1.txt.

### Acceptance
- [ ] M1.txt
`

// TestRunStartSurvivesKill9BeforeTheBranch: `orcr run start` is cut off by a kill
// after the run's record is stored and before feature/NAME is created. After the
// restart the run is there, the branch is created, and the run completes (it used to
// leave feature/NAME without a run, and a new `run start` refused the branch).
func TestRunStartSurvivesKill9BeforeTheBranch(t *testing.T) {
	e, repo := newRepoEnv(t)
	seedPlansText(t, e.home, repo, oneFilePlan, "br")
	e.vars = append(e.vars, run.FaultEnv+"="+run.FaultBranch)
	e.serve()
	starts := t.TempDir() + "/starts"
	e.orcr(append([]string{"run", "start", "br", "--coder", "shell", "--lead", "none", "--"}, killCoder(e.bin, starts)...)...)
	e.crashed(60 * time.Second)
	e.serve()
	if res := e.orcr("run", "status", "br"); res.Code != 0 {
		t.Fatalf("after the restart there is no run br: %s%s(feature/br: %s)", res.Out, res.Err,
			gitSh(t, repo, nil, "git branch --list 'feature/*'"))
	}
	lead := &testLead{e: e, name: "br"}
	defer lead.drop()
	if !wait.Until(90*time.Second, func() bool { return lead.step() == "done" }) {
		t.Fatalf("br did not complete after the restart:\n%s", runDump(e, "br"))
	}
	if s := gitSh(t, repo, nil, "git log --format=%s main..feature/br"); s != "M1: One" {
		t.Fatalf("feature/br commits %q, want M1 once", s)
	}
}

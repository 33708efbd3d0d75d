package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/orchestrate/run"
	runapi "orcr/orchestrate/run/api"
	"orcr/testutil/modelserver"
	"orcr/testutil/wait"
)

// twoParallel is a plan of two independent milestones that both add NOTES.md, so
// whichever merges second conflicts.
const twoParallel = `# Plan: demo
request: a greeting and a farewell
check: sh check.sh
mode: worktree

## M1 · Greeting
depends: -
tier: small
estimate: 10m

### Goal
greet.txt greets the world; NOTES.md says what M1 added.

### Acceptance
- [ ] sh check.sh passes

## M2 · Farewell
depends: -
tier: small
estimate: 10m

### Goal
bye.txt says goodbye; NOTES.md says what M2 added.

### Acceptance
- [ ] sh check.sh passes
`

// TestRunWithRealClaude is a whole run with the real claude CLI as lead, coders and
// reviewer in real tmux panes, every scripted turn a tool call the CLI really runs in
// real git worktrees: the lead dispatches with `orcr run dispatch`; M1's first
// check fails and its output reaches the coder's next request, which fixes it; the
// reviewer's BLOCKER (after an earlier message that looked like approval) becomes a
// fix job; M2's coder asks a QUESTION that the lead answers with `orcr run answer`;
// M2 then conflicts with the merged M1 in NOTES.md and its coder resolves it; finish
// pushes feature/demo to the bare origin and opens a pull request on the fake GitHub
// with summary.md as its body.
func TestRunWithRealClaude(t *testing.T) {
	r := newRunRig(t, "demo")
	began := time.Now()
	r.approvePlan(twoParallel)
	m1, m2, rev := r.worktree("M1"), r.worktree("M2"), run.ReviewDir(r.home, "demo")

	// The run's lead: the plan's lead had turns 0 and 1 of this script.
	r.models.PushTo("lead",
		bash("orcr run dispatch demo M1 M2"), say("Dispatched M1 and M2."),
		when("M2 asks", bash(`orcr run answer demo M2 "casual, one line"`)), say("Answered M2."))
	// A message the autopilot sends while claude works is put into the turn under
	// way ("The user sent a new message while you were working"), else it starts the
	// next turn: each turn that waits for one plays on the first request carrying it.
	r.models.PushTo("M1",
		write(m1+"/greet.txt", "hello\n"), write(m1+"/NOTES.md", "M1: greeting\n"),
		commitDone("M1", "greeting"),
		// 3: the check's output came back.
		when("The check failed for M1", read(m1+"/greet.txt")),
		edit(m1+"/greet.txt", "hello", "hello\nsigned-off"), commitDone("M1", "sign off"),
		// 6: the reviewer's blocker came back as a fix job.
		when("The review of M1 asks for changes", write(m1+"/greet.txt", "hello, world\nsigned-off\n")),
		commitDone("M1", "greet the world"), say("Fixed the blocker."))
	r.models.PushTo("M2",
		write(m2+"/bye.txt", "goodbye\nsigned-off\n"),
		say("QUESTION: should the farewell be formal or casual?"),
		// 2: the lead's answer came back; M2 then waits (its script runs out) until M1
		// is merged, so that M2 is the one that conflicts.
		when("Answer to your question about M2", write(m2+"/NOTES.md", "M2: farewell, casual\n")))
	// M1's first review fails at the API (a 403 claude does not retry): its turn ends
	// with no message, which is no verdict — asked once more, never an approval.
	failed := modelserver.Turn{Fail: &modelserver.APIError{Status: 403, Type: "permission_error", Message: "scripted: the review turn fails"}}
	r.models.PushTo("review/M1", failed,
		saying("VERDICT: approve, at first sight. Reading the log.", bash("git log --oneline -3")),
		say("BLOCKER: greet.txt:1 — it says hello but not to whom — the goal is to greet the world\nVERDICT: changes"),
		saying("Earlier: BLOCKER: greet.txt:1 — it says hello but not to whom. Checking the fix.", read(rev+"/greet.txt")),
		say("The greeting names the world now.\n\nVERDICT: approve"))
	// M2's first review tries to edit, which prompts (a notification); the user
	// denies, which ends the reviewer's turn with no verdict (never read as the
	// verdict of M1's review before it): asked once more, it approves.
	r.models.PushTo("review/M2",
		write(rev+"/bye.txt", "farewell, edited by the reviewer\n"),
		say("The farewell is fine.\nVERDICT: approve"),
		say("The merge keeps both notes.\nVERDICT: approve"))
	notes := collectEvents(t, r.env, "run.notify")

	r.must("run", "start", "demo", "--coders", "2", "--coder", "claude", "--reviewer", "claude", "--lead", "claude")
	r.models.PushTo("lead", say("Noted."), say("Noted."), say("Noted."), say("Noted."), say("Noted."), say("Noted."))

	// a. The lead's Bash dispatched both; b, c, d: M1 through a failed check and a
	// review round to merged.
	r.waitState("M1", "merged", 150*time.Second)
	if got := r.milestone(r.status(), "M1"); got.Rounds.Check != 1 || got.Rounds.Review != 1 || got.Rounds.Conflict != 0 {
		t.Fatalf("M1 rounds %+v, want one failed check and one review round", got.Rounds)
	}
	// `orcr run done` ran in claude's Bash, found its run from inside the pane, and
	// its answer came back to the model as the tool's result.
	if !r.saw("M1", "M1: checking; the check") {
		t.Fatal("no tool result of `orcr run done` reached the model")
	}
	if u := r.request("M1", 3).LastUser(); !strings.Contains(u, "FAIL greet.txt: its last line must be signed-off, not: hello") {
		t.Fatalf("the check's output is not in the coder's next request:\n%s", u)
	} else if !strings.Contains(u, "The last lines of its output:\n\nFAIL greet.txt") {
		t.Fatalf("the check's output reached the coder flattened, not line by line:\n%s", u)
	}
	if u := r.request("M1", 6).LastUser(); !strings.Contains(u, "greet.txt:1 — it says hello but not to whom — the goal is to greet the world") {
		t.Fatalf("the reviewer's blocker is not in the coder's next request:\n%s", u)
	}
	// f. The question went to the lead, its answer back to the coder.
	if u := r.request("lead", 4).LastUser(); !strings.Contains(u, "M2 asks (coder-2): should the farewell be formal or casual?") {
		t.Fatalf("the question is not in the lead's request:\n%s", u)
	}
	if u := r.request("M2", 2).LastUser(); !strings.Contains(u, "casual, one line") {
		t.Fatalf("the lead's answer is not in the coder's next request:\n%s", u)
	}

	// e. M2 goes on now and conflicts with M1 in NOTES.md; its coder merges, resolves
	// and reports again.
	r.models.PushTo("M2", commitDone("M2", "farewell"),
		when("conflicts in: NOTES.md", bash("git merge feature/demo")), // 4
		read(m2+"/NOTES.md"), write(m2+"/NOTES.md", "M1: greeting\nM2: farewell, casual\n"),
		commitDone("M2", "merge feature/demo"), say("Resolved the conflict."))
	wait.For(t, 120*time.Second, "a notification of the reviewer's prompt", func() bool {
		for _, n := range notes.texts() {
			if strings.Contains(n, "reviewer of run demo waits for you: permission") {
				return true
			}
		}
		return false
	})
	r.must("agent", "answer", "runs/demo/reviewer", "--deny")
	// The deny ends the reviewer's turn with no verdict, and the re-ask checks the
	// review out afresh at once: made writable again (a new ctime on every file),
	// `git checkout --force` unlinks and writes each file anew, and a read in that
	// instant finds no bye.txt (under the lanes' load this read "" and failed). So
	// the file is read until it is there; that the denied Write never ran is also
	// in the model's requests, checked once M2 is merged.
	var bye []byte
	wait.For(t, 30*time.Second, "bye.txt in the reviewer's checkout", func() bool {
		var err error
		bye, err = os.ReadFile(rev + "/bye.txt")
		return err == nil
	})
	if string(bye) != "goodbye\nsigned-off\n" {
		t.Fatalf("the reviewer edited its checkout: %q", bye)
	}
	r.waitState("M2", "merged", 150*time.Second)
	if !r.saw("M2", "M2: checking; the check") {
		t.Fatal("no tool result of M2's `orcr run done` reached the model")
	}
	if f := r.notes("M1"); !strings.Contains(f, "the reviewer gave no verdict on M1; asked once more") {
		t.Fatalf("M1's failed review was not asked once more: %s", f)
	}
	if f := r.notes("M2"); !strings.Contains(f, "the reviewer gave no verdict on M2; asked once more") {
		t.Fatalf("M2's silent review was not asked once more: %s", f)
	}
	// A Write that ran would have its result ("File created successfully at: …",
	// "The file … has been updated successfully") in the reviewer's next request.
	for _, q := range r.models.Requests() {
		if u := q.LastUser(); strings.HasPrefix(q.Script, "review/") && strings.Contains(u, rev+"/bye.txt") && strings.Contains(u, "successfully") {
			t.Fatalf("the reviewer's denied Write ran: %q", u)
		}
	}
	if got := r.milestone(r.status(), "M2"); got.Rounds.Conflict != 1 || got.Rounds.Check != 0 {
		t.Fatalf("M2 rounds %+v, want one conflict round", got.Rounds)
	}
	if u := r.request("M2", 4).LastUser(); !strings.Contains(u, "Merging the tip of feature/demo into the branch of M2 conflicts in: NOTES.md") {
		t.Fatalf("the conflict is not in the coder's next request:\n%s", u)
	}
	if u := r.request("M2", 6).LastUser(); !strings.Contains(u, "<<<<<<<") {
		t.Fatalf("the coder's Read did not see the conflict markers:\n%s", u)
	}
	wait.For(t, 60*time.Second, "the run's final check", func() bool { return r.status().State == "done" })

	// One commit per milestone on feature/demo, with the coders' files.
	if log := r.git(r.repo, "log --format=%s main..feature/demo"); log != "M2: Farewell\nM1: Greeting" {
		t.Fatalf("feature/demo log %q", log)
	}
	for file, want := range map[string]string{"greet.txt": "hello, world\nsigned-off\n", "bye.txt": "goodbye\nsigned-off\n",
		"NOTES.md": "M1: greeting\nM2: farewell, casual\n"} {
		if got := r.git(r.repo, "show feature/demo:"+file); got != strings.TrimSpace(want) {
			t.Errorf("%s on feature/demo is %q, want %q", file, got, want)
		}
	}
	if a := r.must("agent", "get", "runs/demo/coder-1"); !strings.Contains(a, "acceptEdits") || !strings.Contains(a, "Bash(orcr run:*)") {
		t.Errorf("coder-1 does not run with the autonomy flags:\n%s", a)
	}
	if a := r.must("agent", "get", "runs/demo/reviewer"); strings.Contains(a, "acceptEdits") || !strings.Contains(a, "Bash(git diff:*)") {
		t.Errorf("the reviewer may edit, or lacks its git list:\n%s", a)
	}

	// h. finish: pushed to origin, the pull request's body is the summary, only
	// feature/demo is left.
	out := r.must("run", "finish", "demo")
	for _, want := range []string{"pushed feature/demo to origin", "opened "} {
		if !strings.Contains(out, want) {
			t.Fatalf("finish said:\n%s", out)
		}
	}
	summary, err := os.ReadFile(run.SummaryFile(r.repo, "demo"))
	if err != nil {
		t.Fatal(err)
	}
	title, head, base, body := r.pullRequest(1)
	if head != "feature/demo" || base != "main" || title == "" || body != string(summary) {
		t.Fatalf("pull request %q %s→%s with body:\n%s\nsummary.md:\n%s", title, head, base, body, summary)
	}
	if !strings.Contains(body, "M1") || !strings.Contains(body, "M2") {
		t.Fatalf("the summary names no milestones:\n%s", body)
	}
	if tip, pushed := r.git(r.repo, "rev-parse feature/demo"), r.git(r.bare, "rev-parse feature/demo"); tip != pushed {
		t.Fatalf("origin has feature/demo at %s, the repository at %s", pushed, tip)
	}
	if brs := r.git(r.repo, "branch --format=%(refname:short)"); brs != "feature/demo\nmain" {
		t.Fatalf("branches after finish: %q", brs)
	}
	if wts := r.git(r.repo, "worktree list"); strings.Count(wts, "\n") != 0 {
		t.Fatalf("worktrees left after finish:\n%s", wts)
	}
	if _, err := os.Stat(filepath.Dir(m1)); !os.IsNotExist(err) {
		t.Fatalf("the run's worktree folder is still there: %v", err)
	}
	t.Logf("the run took %v", time.Since(began).Round(time.Second))
}

// oneMilestone is a plan of one milestone.
const oneMilestone = `# Plan: solo
request: a greeting
check: sh check.sh

## M1 · Greeting
depends: -
tier: small
estimate: 10m

### Goal
greet.txt greets the world.

### Acceptance
- [ ] sh check.sh passes
`

// TestRunUsageLimitHandsOn: a scripted 429 usage limit in the middle of coder-1's
// work (after a Write the CLI ran) benches coder-1 until the limit's reset and hands
// M1, with what is in its worktree, to a new coder-2, whose first request says so and
// which commits the work and reports it done.
func TestRunUsageLimitHandsOn(t *testing.T) {
	r := newRunRig(t, "solo")
	began := time.Now()
	r.approvePlan(oneMilestone)
	m1 := r.worktree("M1")
	reset := time.Now().Add(3 * time.Hour).UTC().Truncate(time.Minute)
	r.models.PushTo("M1",
		write(m1+"/greet.txt", "hello, world\nsigned-off\n"),
		modelserver.Turn{Limit: &modelserver.LimitError{ResetsAt: reset,
			Message: "You've hit your session limit · resets " + strings.ToLower(reset.Format("3:04pm")) + " (UTC)"}},
		// 2: the next coder's brief.
		when("Another coder started this milestone", commitDone("M1", "greeting")), say("Committed what was there."))
	r.must("run", "start", "solo", "--coders", "2", "--coder", "claude", "--lead", "none")
	r.must("run", "dispatch", "solo", "M1")
	r.waitState("M1", "merged", 120*time.Second)

	limited := false
	for _, q := range r.models.Requests() {
		limited = limited || q.Script == "M1" && q.Status == 429
	}
	if !limited {
		t.Fatal("the server sent no 429")
	}
	if u := r.request("M1", 2).LastUser(); !strings.Contains(u, "building milestone M1") || !strings.Contains(u, "Another coder started this milestone; its work is on the branch") {
		t.Fatalf("the next coder's first request lacks the brief or the hand-on:\n%s", u)
	}
	v := r.status()
	if got := r.milestone(v, "M1"); got.Rounds != (runapi.Rounds{}) {
		t.Fatalf("M1 rounds %+v: a usage limit is not a failed round", got.Rounds)
	}
	var bench *time.Time
	for _, c := range v.Pool {
		if c.Name == "coder-1" {
			bench = c.BenchedUntil
		}
	}
	if bench == nil || !bench.Equal(reset) {
		t.Fatalf("coder-1 benched until %v, want the limit's reset %v (pool %+v)", bench, reset, v.Pool)
	}
	if f := r.facts("coder-1"); !strings.Contains(f, "limited") {
		t.Fatalf("no limited fact for coder-1: %s", f)
	}
	if a := agentJSON(t, r.env, "runs/solo/coder-2"); a.Cwd != m1 {
		t.Fatalf("coder-2 works in %s, not in M1's worktree %s", a.Cwd, m1)
	}
	if log := r.git(r.repo, "log --format=%s main..feature/solo"); log != "M1: Greeting" {
		t.Fatalf("feature/solo log %q", log)
	}
	if got := r.git(r.repo, "show feature/solo:greet.txt"); got != "hello, world\nsigned-off" {
		t.Fatalf("greet.txt on feature/solo is %q: coder-1's work was not handed on", got)
	}
	t.Logf("the run took %v", time.Since(began).Round(time.Second))
}

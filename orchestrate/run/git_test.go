package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"orcr/core/wire"
	"orcr/testutil/wait"
)

var testIdentity = []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t",
	"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"}

func sh(t *testing.T, dir, script string) string {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), testIdentity...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return strings.TrimSpace(string(out))
}

// newRepo is a real repository on main with one commit.
func newRepo(t *testing.T) (string, Git) {
	t.Helper()
	dir := t.TempDir()
	sh(t, dir, "git init -q -b main && echo base > a.txt && git add -A && git commit -qm base")
	return dir, Git{Dir: dir, Env: testIdentity}
}

func TestGitMilestoneLifecycle(t *testing.T) {
	ctx := context.Background()
	repo, g := newRepo(t)
	home := t.TempDir()
	base, _ := g.Rev(ctx, "main")
	feat, err := g.EnsureBranch(ctx, FeatureBranch("demo"), "main")
	if err != nil || feat != base {
		t.Fatalf("feature %s %v", feat, err)
	}
	if again, _ := g.EnsureBranch(ctx, FeatureBranch("demo"), "main"); again != feat {
		t.Fatal("EnsureBranch not idempotent")
	}
	// Two milestones in parallel worktrees from the feature tip.
	w1, w2 := WorktreeDir(home, "demo", "M1"), WorktreeDir(home, "demo", "M2")
	for _, w := range []struct{ dir, m string }{{w1, "M1"}, {w2, "M2"}} {
		if err := g.EnsureWorktree(ctx, w.dir, MilestoneBranch("demo", w.m), feat); err != nil {
			t.Fatal(err)
		}
		if err := g.EnsureWorktree(ctx, w.dir, MilestoneBranch("demo", w.m), feat); err != nil {
			t.Fatalf("second EnsureWorktree: %v", err)
		}
	}
	work, err := g.WorkOf(ctx, w1, MilestoneBranch("demo", "M1"), feat)
	if err != nil || work.Commits != 0 || work.Dirty {
		t.Fatalf("fresh work %+v %v", work, err)
	}
	os.WriteFile(filepath.Join(w1, "m1.txt"), []byte("one\n"), 0o644)
	if work, _ = g.WorkOf(ctx, w1, MilestoneBranch("demo", "M1"), feat); !work.Dirty || work.Commits != 0 {
		t.Fatalf("untracked file is dirty: %+v", work)
	}
	sh(t, w1, "git add -A && git commit -qm 'M1: one' && echo more >> m1.txt && git commit -qam 'M1: more'")
	sh(t, w2, "echo two > m2.txt && echo changed > a.txt && git add -A && git commit -qm 'M2: two'")
	work, _ = g.WorkOf(ctx, w1, MilestoneBranch("demo", "M1"), feat)
	if work.Commits != 2 || work.Dirty || work.Head == "" {
		t.Fatalf("M1 work %+v", work)
	}

	// M1 merges: the feature tip is in its branch already.
	h1, conflicts, err := g.MergeIn(ctx, w1, FeatureBranch("demo"), feat, "merge")
	if err != nil || conflicts != nil || h1 != work.Head {
		t.Fatalf("merge-in %s %v %v", h1, conflicts, err)
	}
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	msg := CommitMessage("M1", "one", "Make one.")
	f1, err := g.Advance(ctx, FeatureBranch("demo"), feat, h1, msg, at)
	if err != nil {
		t.Fatal(err)
	}
	// Repeating the advance (a restart) finds it landed and applies nothing twice.
	if again, err := g.Advance(ctx, FeatureBranch("demo"), feat, h1, msg, at); err != nil || again != f1 {
		t.Fatalf("repeat advance %s %v", again, err)
	}
	if n := sh(t, repo, "git rev-list --count main..feature/demo"); n != "1" {
		t.Fatalf("one commit per milestone, got %s", n)
	}
	if m := sh(t, repo, "git log -1 --format=%B feature/demo"); m != "M1: one\n\nMake one." {
		t.Fatalf("message %q", m)
	}

	// M2 merges the new tip in: no conflict (different files), a new head to re-check.
	h2, conflicts, err := g.MergeIn(ctx, w2, FeatureBranch("demo"), f1, "Merge feature/demo into M2")
	if err != nil || conflicts != nil || h2 == "" {
		t.Fatalf("merge-in M2 %s %v %v", h2, conflicts, err)
	}
	if res, err := RunCheck(ctx, w2, "test -f m1.txt && test -f m2.txt", time.Minute, nil); err != nil || !res.OK {
		t.Fatalf("re-check on the merge %+v %v", res, err)
	}
	f2, err := g.Advance(ctx, FeatureBranch("demo"), f1, h2, CommitMessage("M2", "two", ""), at.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if n := sh(t, repo, "git rev-list --count main..feature/demo"); n != "2" {
		t.Fatalf("two milestones, %s commits", n)
	}
	if got := sh(t, repo, "git show feature/demo:a.txt"); got != "changed" {
		t.Fatalf("content %q", got)
	}

	// Moved by hand: the CAS refuses and says where it is.
	sh(t, repo, "git update-ref refs/heads/feature/demo "+f1)
	_, err = g.Advance(ctx, FeatureBranch("demo"), f2, h2, "x", at)
	var me *MovedError
	if !errors.As(err, &me) || !errors.Is(err, ErrMoved) || me.Got != f1 {
		t.Fatalf("moved: %v", err)
	}
	if cur, _ := g.Rev(ctx, "feature/demo"); cur != f1 {
		t.Fatal("a refused advance moved the branch")
	}
	// A merge-in of a tip the feature branch has left says where it is instead.
	if _, _, err := g.MergeIn(ctx, w2, FeatureBranch("demo"), f2, "merge"); !errors.As(err, &me) || me.Got != f1 {
		t.Fatalf("merge-in of a moved tip: %v", err)
	}

	// Cleanup keeps only the feature branch.
	for _, w := range []string{w1, w2} {
		if err := g.RemoveWorktree(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	brs, _ := g.Branches(ctx, "orcr/demo/")
	for b := range brs {
		if err := g.DeleteBranch(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	if out := sh(t, repo, "git branch --format='%(refname:short)' | sort | tr '\n' ' '"); out != "feature/demo main" {
		t.Fatalf("branches left: %q", out)
	}
}

func TestGitConflict(t *testing.T) {
	ctx := context.Background()
	_, g := newRepo(t)
	home := t.TempDir()
	feat, _ := g.EnsureBranch(ctx, FeatureBranch("demo"), "main")
	w1, w2 := WorktreeDir(home, "demo", "M1"), WorktreeDir(home, "demo", "M2")
	g.EnsureWorktree(ctx, w1, MilestoneBranch("demo", "M1"), feat)
	g.EnsureWorktree(ctx, w2, MilestoneBranch("demo", "M2"), feat)
	sh(t, w1, "echo one > a.txt && echo x > b.txt && git commit -qam M1 && git add b.txt && git commit -qm b")
	sh(t, w2, "echo two > a.txt && echo y > b.txt && git add -A && git commit -qam M2")
	h1, _ := g.Rev(ctx, MilestoneBranch("demo", "M1"))
	f1, err := g.Advance(ctx, FeatureBranch("demo"), feat, h1, "M1: one\n", time.Unix(1e9, 0))
	if err != nil {
		t.Fatal(err)
	}
	head, conflicts, err := g.MergeIn(ctx, w2, FeatureBranch("demo"), f1, "merge")
	if err != nil || head != "" || strings.Join(conflicts, ",") != "a.txt,b.txt" {
		t.Fatalf("conflict %q %v %v", head, conflicts, err)
	}
	// The merge is aborted: the coder finds a clean worktree.
	if work, _ := g.WorkOf(ctx, w2, MilestoneBranch("demo", "M2"), feat); work.Dirty || work.Commits != 1 {
		t.Fatalf("after conflict %+v", work)
	}
	// The coder resolves it as the message says; the merge then goes through.
	sh(t, w2, "git merge feature/demo >/dev/null 2>&1; echo both > a.txt && echo xy > b.txt && git add -A && git commit -qm 'M2: merge feature/demo'")
	head, conflicts, err = g.MergeIn(ctx, w2, FeatureBranch("demo"), f1, "merge")
	if err != nil || conflicts != nil || head == "" {
		t.Fatalf("after resolving %q %v %v", head, conflicts, err)
	}
}

func TestReviewCheckoutIsReadOnly(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Log("running as root: file modes do not stop root; checking the modes instead")
	}
	ctx := context.Background()
	repo, g := newRepo(t)
	dir := ReviewDir(t.TempDir(), "demo")
	head, _ := g.Rev(ctx, "main")
	if err := g.ReviewCheckout(ctx, dir, head); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "a.txt"))
	if err != nil || fi.Mode().Perm()&0o222 != 0 {
		t.Fatalf("a.txt mode %v %v", fi.Mode(), err)
	}
	sh(t, repo, "echo next > a.txt && git commit -qam next")
	next, _ := g.Rev(ctx, "main")
	if err := g.ReviewCheckout(ctx, dir, next); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "next\n" {
		t.Fatalf("checkout not moved: %q", b)
	}
	if err := g.RemoveWorktree(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("review checkout left")
	}
}

func TestRunCheck(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	res, err := RunCheck(ctx, dir, "true", time.Minute, nil)
	if err != nil || !res.OK || res.ExitCode != 0 {
		t.Fatalf("%+v %v", res, err)
	}
	res, err = RunCheck(ctx, dir, "for i in $(seq 1 100); do echo line $i; done; echo oops >&2; exit 3", time.Minute, nil)
	if err != nil || res.OK || res.ExitCode != 3 {
		t.Fatalf("%+v %v", res, err)
	}
	lines := strings.Split(strings.TrimRight(res.Tail, "\n"), "\n")
	if len(lines) != TailLines || lines[0] != "line 42" || lines[len(lines)-1] != "oops" {
		t.Fatalf("tail: %d lines, %q … %q", len(lines), lines[0], lines[len(lines)-1])
	}
	// A timeout kills the whole group, also what the check started in the background.
	start := time.Now()
	res, err = RunCheck(ctx, dir, "sleep 30 & sleep 30; echo never", 300*time.Millisecond, nil)
	if err != nil || res.OK || !res.TimedOut || !strings.Contains(res.Tail, "check timed out after 300ms and was stopped") {
		t.Fatalf("%+v %v", res, err)
	}
	if time.Since(start) > 10*time.Second {
		t.Fatal("timeout did not stop the check")
	}
	// A process that leaves the check's group (setsid, a daemon) and keeps its output
	// open cannot hold the check past its timeout: it is reported, not waited for.
	// It is stopped, with what it started in its own group.
	pids := filepath.Join(t.TempDir(), "pids")
	escape := "setsid sh -c 'sleep 30 & echo $! >> " + pids + "; exec sleep 30' & echo $! >> " + pids
	start = time.Now()
	res, err = RunCheck(ctx, dir, "echo started; "+escape+"; true", 500*time.Millisecond, nil)
	if err != nil || res.OK || !res.TimedOut || !strings.Contains(res.Tail, "started\n") ||
		!strings.Contains(res.Tail, "check timed out after 500ms; a process it started kept its output open and was stopped") {
		t.Fatalf("%+v %v", res, err)
	}
	if time.Since(start) > 10*time.Second {
		t.Fatalf("a forked process held the check for %s", time.Since(start))
	}
	waitGone(t, pids, 2)
	// Nor can it hold a server that shuts down.
	pids = filepath.Join(t.TempDir(), "pids")
	escape = "setsid sh -c 'exec sleep 30' & echo $! >> " + pids
	sctx, stop := context.WithTimeout(ctx, 300*time.Millisecond)
	defer stop()
	start = time.Now()
	if _, err := RunCheck(sctx, dir, escape+"; sleep 30", time.Minute, nil); err == nil {
		t.Fatal("a check cut short by its context reported as a result")
	}
	if time.Since(start) > 10*time.Second {
		t.Fatalf("a forked process held a cancelled check for %s", time.Since(start))
	}
	waitGone(t, pids, 1)
	// A cancelled context is an error, not a failed check.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := RunCheck(cctx, dir, "sleep 5", time.Minute, nil); err == nil {
		t.Fatal("cancelled check reported as a result")
	}
}

// TestGitIdentityAndHandOver covers the paths the batched git work takes off the
// usual one: a repository without an identity gets orcr's (read once, not per
// commit), and a worktree for a branch that exists already (a hand-over after the old
// worktree was removed by hand) checks that branch out instead of making a new one.
func TestGitIdentityAndHandOver(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sh(t, dir, "git init -q -b main && echo base > a.txt && git add -A && git commit -qm base")
	g := Git{Dir: dir, Env: []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"}}
	base, _ := g.Rev(ctx, "main")
	before := gitProcs.Load()
	c1, err := g.SquashCommit(ctx, base, base, "one\n", time.Unix(1e9, 0))
	if err != nil {
		t.Fatal(err)
	}
	c2, err := g.SquashCommit(ctx, base, base, "two\n", time.Unix(1e9, 0))
	if err != nil {
		t.Fatal(err)
	}
	if n := gitProcs.Load() - before; n != 3 {
		t.Errorf("two squash commits took %d git processes, want 3 (the identity read once)", n)
	}
	for _, c := range []string{c1, c2} {
		if who := sh(t, dir, "git log -1 --format='%an <%ae>' "+c); who != "orcr <orcr@localhost>" {
			t.Errorf("committer %q, want orcr's", who)
		}
	}
	// The repository's own identity wins where it has one.
	sh(t, dir, "git config user.name Ann && git config user.email ann@example.com")
	g2 := Git{Dir: dir, Env: append([]string{"X=1"}, g.Env...)} // another cache entry
	c3, err := g2.SquashCommit(ctx, base, base, "three\n", time.Unix(1e9, 0))
	if err != nil {
		t.Fatal(err)
	}
	if who := sh(t, dir, "git log -1 --format='%an <%ae>' "+c3); who != "Ann <ann@example.com>" {
		t.Errorf("committer %q, want the repository's", who)
	}

	// Hand-over: M1's branch has work, its worktree was removed by hand.
	home := t.TempDir()
	w := WorktreeDir(home, "demo", "M1")
	if err := g.EnsureWorktree(ctx, w, MilestoneBranch("demo", "M1"), base); err != nil {
		t.Fatal(err)
	}
	sh(t, w, "echo one > m1.txt && git add -A && git commit -qm M1")
	tip, _ := g.Rev(ctx, MilestoneBranch("demo", "M1"))
	if err := os.RemoveAll(w); err != nil {
		t.Fatal(err)
	}
	if err := g.EnsureWorktree(ctx, w, MilestoneBranch("demo", "M1"), base); err != nil {
		t.Fatalf("worktree for an existing branch: %v", err)
	}
	work, err := g.WorkOf(ctx, w, MilestoneBranch("demo", "M1"), base)
	if err != nil || work.Head != tip || work.Commits != 1 || work.Dirty {
		t.Fatalf("the branch's work is not what the worktree has: %+v %v (tip %s)", work, err, tip)
	}
}

// TestGitHookCannotHoldTheRun: a hook of the user's repository that leaves a process
// of its own session holding git's output open (a daemon a post-commit hook starts)
// made every git command of the run wait for that process — the autopilot stood
// still. Git's exit decides now, and the commit is not taken for a failure.
func TestGitHookCannotHoldTheRun(t *testing.T) {
	repo, g := newRepo(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	sh(t, repo, "printf '#!/bin/sh\\nsetsid sh -c \"exec sleep 60\" &\\necho $! > "+pidFile+"\\n' > .git/hooks/post-commit && chmod +x .git/hooks/post-commit")
	t.Cleanup(func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	start := time.Now()
	if _, err := g.run(context.Background(), nil, "commit", "-q", "--allow-empty", "-m", "hooked"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("git commit took %s: the hook's process held it", d)
	}
	if subject := sh(t, repo, "git log -1 --format=%s"); subject != "hooked" {
		t.Fatalf("last commit %q", subject)
	}
}

// waitGone waits until the n processes whose pids are in file have ended, and kills
// them if they do not.
func waitGone(t *testing.T, file string, n int) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	if len(pids) != n {
		t.Fatalf("%d pids in %s, want %d", len(pids), file, n)
	}
	alive := func() []int {
		var out []int
		for _, pid := range pids {
			// A zombie has no fd table left; a live process has one.
			if _, err := os.Stat(fmt.Sprintf("/proc/%d/fd/0", pid)); err == nil {
				out = append(out, pid)
			}
		}
		return out
	}
	if !wait.Until(10*time.Second, func() bool { return len(alive()) == 0 }) {
		left := alive()
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		t.Fatalf("processes the check started still run: %v", left)
	}
}

// TestMergeRefusesAnEmptyResult: a milestone whose merge result has the feature
// tip's files (its work was lost, or merged on the wrong HEAD) is held with a
// reason, and feature/demo does not move: before, it got an empty "M1: …" commit
// and the milestone was recorded as merged.
func TestMergeRefusesAnEmptyResult(t *testing.T) {
	ctx := context.Background()
	repo, g := newRepo(t)
	feat, err := g.EnsureBranch(ctx, FeatureBranch("demo"), "main")
	if err != nil {
		t.Fatal(err)
	}
	// orcr/demo/M1 has a commit, but one that changes nothing.
	sh(t, repo, "git checkout -q -b orcr/demo/M1 && git commit -q --allow-empty -m 'M1: nothing'")
	s := newFakeService(t, &fakeAgents{agents: map[string]wire.Agent{}}, t.TempDir())
	r := newRun(t, 1, false, "M1::small")
	r.Feature = feat
	r.Milestones[0].State, r.MergeQueue = Merging, []string{"M1"} // its merge under way
	if _, err := s.runs.Create(ctx, Record{Run: r, Repo: repo, Check: "true", Mode: "shared"}, nil, t0); err != nil {
		t.Fatal(err)
	}
	f, err := s.do(ctx, "demo", Pending{At: t0, Action: Action{Kind: AMergeIn, M: "M1", Base: feat}})
	if err != nil {
		t.Fatal(err)
	}
	if f == nil || f.Kind != FHold || !strings.Contains(f.Text, "changes nothing on feature/demo") {
		t.Fatalf("an empty merge gave %+v, want a hold saying it changes nothing", f)
	}
	if tip, _ := g.Rev(ctx, FeatureBranch("demo")); tip != feat {
		t.Fatalf("feature/demo moved to %s on an empty merge", tip)
	}
	// With work on it, the same merge goes through.
	sh(t, repo, "echo x > b.txt && git add -A && git commit -qm 'M1: b'")
	if f, err = s.do(ctx, "demo", Pending{At: t0, Action: Action{Kind: AMergeIn, M: "M1", Base: feat}}); err != nil || f == nil || f.Kind != FMergedIn {
		t.Fatalf("a merge with work gave %+v, %v", f, err)
	}
}

// TestSharedStaleCheckLeavesTheFolder: in shared mode a check performed again after a
// restart, for a milestone that has moved on (merged), is not performed: it would
// check out that milestone's branch under the next milestone's coder. (A re-performed
// advance checked out the user's branch the same way in the kill test, and M5's coder
// committed on main.)
func TestSharedStaleCheckLeavesTheFolder(t *testing.T) {
	ctx := context.Background()
	repo, g := newRepo(t)
	feat, err := g.EnsureBranch(ctx, FeatureBranch("demo"), "main")
	if err != nil {
		t.Fatal(err)
	}
	sh(t, repo, "git branch orcr/demo/M1 && git checkout -q -b orcr/demo/M2")
	s := newFakeService(t, &fakeAgents{agents: map[string]wire.Agent{}}, t.TempDir())
	r := newRun(t, 1, false, "M1::small", "M2::small")
	r.Feature = feat
	r.Milestones[0].State, r.Milestones[1].State = Merged, Building
	if _, err := s.runs.Create(ctx, Record{Run: r, Repo: repo, Check: "true", Mode: "shared"}, nil, t0); err != nil {
		t.Fatal(err)
	}
	for _, a := range []Action{{Kind: ACheck, M: "M1", Head: feat}, {Kind: AMergeIn, M: "M1", Base: feat}} {
		f, err := s.do(ctx, "demo", Pending{At: t0, Action: a})
		if f != nil || !errors.Is(err, errMoot) {
			t.Errorf("a stale %s of merged M1: %+v, %v", a.Kind, f, err)
		}
		if cur, _ := g.CurrentBranch(ctx); cur != "orcr/demo/M2" {
			t.Fatalf("a stale %s of M1 checked out %s under M2's coder", a.Kind, cur)
		}
	}
}

// TestBriefAndDoneGitProcesses counts what a milestone's worktree and its `run done`
// cost in git processes — one each (they were two each: a checkout beside the folder
// then moved in place, and a status then a rev-list) — and that a worktree whose
// making was cut short (its marker left) is made again, not taken as whole.
func TestBriefAndDoneGitProcesses(t *testing.T) {
	ctx := context.Background()
	_, g := newRepo(t)
	home := t.TempDir()
	feat, err := g.EnsureBranch(ctx, FeatureBranch("demo"), "main")
	if err != nil {
		t.Fatal(err)
	}
	w := WorktreeDir(home, "demo", "M1")
	if err := g.ExcludeOrcr(ctx); err != nil { // as a brief does first: it learns where .git is
		t.Fatal(err)
	}
	// Git's trace counts every git process, those git starts itself included
	// (`worktree add` ran three more).
	trace := filepath.Join(t.TempDir(), "trace2")
	traced := Git{Dir: g.Dir, Env: append(slices.Clone(g.Env), "GIT_TRACE2_EVENT="+trace)}
	gitStarts := func() int {
		b, _ := os.ReadFile(trace)
		return strings.Count(string(b), `"event":"start"`)
	}
	before := gitProcs.Load()
	if err := traced.EnsureWorktree(ctx, w, MilestoneBranch("demo", "M1"), feat); err != nil {
		t.Fatal(err)
	}
	if n, all := gitProcs.Load()-before, gitStarts(); n != 1 || all != 1 {
		t.Errorf("a new milestone worktree took %d git processes (%d with git's own), want 1", n, all)
	}
	// Git knows it as its own: listed on its branch, and removed by git.
	if list := sh(t, g.Dir, "git worktree list --porcelain"); !strings.Contains(list, "worktree "+w+"\n") || !strings.Contains(list, "branch refs/heads/orcr/demo/M1") {
		t.Fatalf("git does not list the worktree:\n%s", list)
	}
	if got := sh(t, w, "git rev-parse HEAD && git status --porcelain"); got != feat {
		t.Fatalf("the worktree is not a clean checkout of the feature tip: %q", got)
	}
	if _, err := os.Stat(w + ".adding"); !os.IsNotExist(err) {
		t.Errorf("the marker outlived the worktree's making: %v", err)
	}
	sh(t, w, "echo one > m1.txt && git add -A && git commit -qm one && echo two >> m1.txt && git commit -qam two")
	before, all := gitProcs.Load(), gitStarts()
	work, err := traced.WorkOf(ctx, w, MilestoneBranch("demo", "M1"), feat)
	if err != nil || work.Commits != 2 || work.Dirty || work.Head == feat {
		t.Fatalf("work %+v %v", work, err)
	}
	if n, all := gitProcs.Load()-before, gitStarts()-all; n != 1 || all != 1 {
		t.Errorf("run done's look at the work took %d git processes (%d with git's own), want 1", n, all)
	}
	// Without the feature branch to count against, the count takes its own process.
	sh(t, g.Dir, "git branch -m feature/demo feature/other")
	if work, err := g.WorkOf(ctx, w, MilestoneBranch("demo", "M1"), feat); err != nil || work.Commits != 2 {
		t.Fatalf("work without the feature branch %+v %v", work, err)
	}
	sh(t, g.Dir, "git branch -m feature/other feature/demo")

	// The server died while git made M2's worktree: the marker stands, a file is
	// missing. The next brief makes it again.
	w2 := WorktreeDir(home, "demo", "M2")
	if err := g.EnsureWorktree(ctx, w2, MilestoneBranch("demo", "M2"), feat); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(w2, "a.txt"))
	os.WriteFile(w2+".adding", nil, 0o600)
	if err := g.EnsureWorktree(ctx, w2, MilestoneBranch("demo", "M2"), feat); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(w2, "a.txt")); err != nil {
		t.Errorf("the cut-short worktree was taken as whole: %v", err)
	}
	if _, err := os.Stat(w2 + ".adding"); !os.IsNotExist(err) {
		t.Errorf("the marker outlived the worktree's making again: %v", err)
	}
	if list := sh(t, g.Dir, "git worktree list"); strings.Count(list, w2+" ") != 1 {
		t.Errorf("the worktree made again is listed other than once:\n%s", list)
	}
	for _, d := range []string{w, w2} {
		if err := g.RemoveWorktree(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if list := sh(t, g.Dir, "git worktree list"); strings.Contains(list, home) {
		t.Errorf("removed worktrees still listed:\n%s", list)
	}
}

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/testutil/wait"
)

func TestWorktreeAgent(t *testing.T) {
	e := newEnv(t)
	e.serve()
	repo := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	e.must("agent", "run", "wt/a", "--cwd", repo, "--worktree", "feature-x", "--", "sh", "-c", "git branch --show-current; pwd; exec sleep 300")
	wait.For(t, 10*time.Second, "agent in its worktree", func() bool {
		return strings.Contains(e.orcr("agent", "read", "wt/a").Out, "feature-x")
	})
	a := agentJSON(t, e, "wt/a")
	if !strings.HasPrefix(a.Cwd, filepath.Join(e.home, "worktrees")) {
		t.Fatalf("cwd %s is not a worktree under the home", a.Cwd)
	}
	if _, err := os.Stat(filepath.Join(a.Cwd, ".git")); err != nil {
		t.Fatalf("worktree has no .git: %v", err)
	}
	// Not a repository: the agent fails with the reason.
	e.must("agent", "run", "wt/b", "--cwd", t.TempDir(), "--worktree", "x", "--", "true")
	e.must("agent", "wait", "wt/b", "--until", "exited", "--timeout", "10s")
	if b := agentJSON(t, e, "wt/b"); b.State != "failed" || !strings.Contains(b.Error, "git repository") {
		t.Fatalf("worktree outside a repo: %s %q", b.State, b.Error)
	}
}

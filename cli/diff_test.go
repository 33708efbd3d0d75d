package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/testutil/wait"
)

// TestAgentDiffAndColouredRead: `orcr agent diff` prints what an agent in its own
// worktree changed against main, and `agent read --ansi` keeps the screen's colours.
func TestAgentDiffAndColouredRead(t *testing.T) {
	r := newRig(t)
	repo := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(repo, "a.txt"), []byte("kept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", ".")
	git("commit", "-qm", "base")
	if code, _, errOut := r.run(t, "", "agent", "run", "cli/d", "--cwd", repo, "--worktree", "cli-d", "--",
		"sh", "-c", `echo added-line >> a.txt; printf '\033[31mred-mark\033[0m\n'; sleep 60`); code != 0 {
		t.Fatalf("agent run: %s", errOut)
	}
	wait.For(t, 20*time.Second, "the agent's red mark", func() bool {
		_, out, _ := r.run(t, "", "agent", "read", "cli/d", "--ansi")
		return strings.Contains(out, "\x1b[31mred-mark")
	})
	if _, out, _ := r.run(t, "", "agent", "read", "cli/d"); strings.Contains(out, "\x1b") {
		t.Fatalf("a plain read carries escapes: %q", out)
	}
	code, out, errOut := r.run(t, "", "agent", "diff", "cli/d")
	if code != 0 || !strings.Contains(out, "+added-line") || !strings.Contains(out, "a/a.txt") {
		t.Fatalf("agent diff: exit %d, stderr %q, out:\n%s", code, errOut, out)
	}
	if code, _, errOut := r.run(t, "", "agent", "diff"); code == 0 || !strings.Contains(errOut, "missing TARGET; usage: orcr agent diff TARGET") {
		t.Fatalf("agent diff without a target: exit %d, %q", code, errOut)
	}
}

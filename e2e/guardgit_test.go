package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitNamesRefusedUpFront: plan names and --worktree branches git cannot use were
// taken and failed later with git's raw message; now each is refused when given, with
// git's rule and a name that works.
func TestGitNamesRefusedUpFront(t *testing.T) {
	ident := []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t"}
	e := newEnv(t, ident...)
	repo := t.TempDir()
	gitSh(t, repo, ident, "git init -q -b main && echo '# demo' > README.md && git add -A && git commit -qm init")
	e.serve()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "new", "x..y", "a request", "--repo", repo, "--lead", "none"}, `plan name "x..y": git cannot use it in the branch feature/x..y: it contains ".."; pick another name, e.g. "x.y"`},
		{[]string{"plan", "new", "y.lock", "a request", "--repo", repo, "--lead", "none"}, `a part ends with ".lock"`},
		{[]string{"plan", "new", "z.", "a request", "--repo", repo, "--lead", "none"}, `it ends with '.'`},
		{[]string{"agent", "run", "w", "--cwd", repo, "--worktree", "a..b", "--", "true"}, `--worktree "a..b": git cannot use it as a branch name: it contains ".."; pick another name, e.g. --worktree a.b`},
		{[]string{"agent", "run", "w", "--cwd", repo, "--worktree", "fix/x.lock", "--", "true"}, `a part ends with ".lock" ("x.lock")`},
	} {
		r := e.orcr(c.args...)
		if r.Code == 0 || !strings.Contains(r.Err, c.want) {
			t.Errorf("orcr %s: exit %d, %q, want %q", strings.Join(c.args, " "), r.Code, r.Err, c.want)
		}
	}
	if out := e.must("agent", "ls", "--all"); strings.Contains(out, " w ") || strings.Contains(out, "\nw") {
		t.Fatalf("an agent with a bad --worktree was made:\n%s", out)
	}
	if out := e.must("plan", "ls"); strings.Contains(out, "x..y") {
		t.Fatalf("a plan with a bad name was made:\n%s", out)
	}
}

// TestReadOnlyHomeSaysSo: a server on a read-only ORCR_HOME said "connect to it instead",
// sending the user after a server that did not exist.
func TestReadOnlyHomeSaysSo(t *testing.T) {
	e := newEnv(t)
	home := filepath.Join(t.TempDir(), "ro")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		// Root writes through any mode, so the home is a read-only mount.
		if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "ro,mode=0700", "tmpfs", home).CombinedOutput(); err != nil {
			t.Skipf("as root a read-only home needs a read-only mount, and mount failed: %v %s", err, out)
		}
		t.Cleanup(func() { exec.Command("umount", home).Run() })
	} else if err := os.Chmod(home, 0o500); err != nil {
		t.Fatal(err)
	}
	r := e.orcrEnv([]string{"ORCR_HOME=" + home}, "serve")
	want := "ORCR_HOME " + home + " is not writable"
	if r.Code == 0 || !strings.Contains(r.Err, want) || !strings.Contains(r.Err, "point ORCR_HOME at a writable directory") || strings.Contains(r.Err, "connect to it instead") {
		t.Fatalf("serve on a read-only home: exit %d, %q, want %q", r.Code, r.Err, want)
	}
}

package core

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// addWorktree gives an agent started with --worktree BRANCH its own git worktree under
// $ORCR_HOME/worktrees/<agent id>, on BRANCH (created from the repository's HEAD when
// it does not exist yet). It returns the worktree directory, the agent's new cwd.
func addWorktree(ctx context.Context, home, repoDir, branch, id string) (string, error) {
	if strings.HasPrefix(branch, "-") || strings.ContainsAny(branch, " \t\n~^:?*[\\") {
		return "", fmt.Errorf("invalid branch name %q", branch)
	}
	top, err := git(ctx, repoDir, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", fmt.Errorf("--worktree needs a git repository at %s: %w", repoDir, err)
	}
	dir := filepath.Join(home, "worktrees", id)
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		return dir, nil // re-launch after a restart: the worktree is already there
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return "", err
	}
	if _, err := git(ctx, top, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch); err == nil {
		_, err = git(ctx, top, "worktree", "add", dir, branch)
		if err != nil {
			return "", fmt.Errorf("add worktree for existing branch %s: %w", branch, err)
		}
		return dir, nil
	}
	if _, err := git(ctx, top, "worktree", "add", "-b", branch, dir); err != nil {
		return "", fmt.Errorf("add worktree on new branch %s: %w", branch, err)
	}
	return dir, nil
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	// A post-checkout hook may leave a process holding git's output open after git
	// exited: git's own exit decides, its output is read for 5 s more at most.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil && !errors.Is(err, exec.ErrWaitDelay) {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("git %s: %s", strings.Join(args, " "), msg)
	}
	return strings.TrimSpace(out.String()), nil
}

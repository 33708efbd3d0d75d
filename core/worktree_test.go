package core

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestWorktreeHookCannotHoldGit: a post-checkout hook that leaves a process of its own
// session holding git's output open (a daemon it starts) made `git worktree add` wait
// for that process; the agent's start hung with it. Git's exit decides now.
func TestWorktreeHookCannotHoldGit(t *testing.T) {
	repo := t.TempDir()
	pidFile := filepath.Join(t.TempDir(), "pid")
	script := "git init -q -b main && git -c user.name=t -c user.email=t@t commit -q --allow-empty -m init && " +
		"printf '#!/bin/sh\\nsetsid sh -c \"exec sleep 60\" &\\necho $! > " + pidFile + "\\n' > .git/hooks/post-checkout && chmod +x .git/hooks/post-checkout"
	if out, err := exec.Command("sh", "-c", "cd "+repo+" && "+script).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Cleanup(func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	dir, err := addWorktree(ctx, t.TempDir(), repo, "feature-x", "agent-1")
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("git worktree add took %s: the hook's process held it", d)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		t.Fatalf("no worktree: %v", err)
	}
}

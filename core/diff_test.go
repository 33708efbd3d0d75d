package core

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"orcr/core/wire"
)

// gitT runs git in dir for a test.
func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestAgentDiffAgainstBase: an agent in its own worktree diffs against the commit its
// branch started from — its commits and its uncommitted edits, not main's later
// commits — and lists its untracked files; a diff past the bound is cut at a line.
func TestAgentDiffAgainstBase(t *testing.T) {
	ctx := context.Background()
	repo := t.TempDir()
	gitT(t, repo, "init", "-q", "-b", "main")
	write := func(dir, name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(repo, "a.txt", "one\ntwo\n")
	gitT(t, repo, "add", ".")
	gitT(t, repo, "commit", "-qm", "base")
	base := gitT(t, repo, "rev-parse", "HEAD")
	wt, err := addWorktree(ctx, t.TempDir(), repo, "agent-b", "id1")
	if err != nil {
		t.Fatal(err)
	}
	// The agent commits one change and leaves another uncommitted; main moves on.
	write(wt, "a.txt", "one\ntwo\nthree-committed\n")
	gitT(t, wt, "commit", "-qam", "agent work")
	write(wt, "a.txt", "one\ntwo\nthree-committed\nfour-uncommitted\n")
	write(wt, "new.txt", "fresh\n")
	write(repo, "main-only.txt", "later\n")
	gitT(t, repo, "add", ".")
	gitT(t, repo, "commit", "-qm", "main moves on")

	a := wire.Agent{Path: "x/b", Cwd: wt, Worktree: "agent-b"}
	r, err := agentDiff(ctx, a, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Base != base || r.BaseName != "main" {
		t.Errorf("base %s (%s), want %s (main)", r.Base, r.BaseName, base)
	}
	for _, want := range []string{"+three-committed", "+four-uncommitted", "a/a.txt"} {
		if !strings.Contains(r.Text, want) {
			t.Errorf("diff lacks %q:\n%s", want, r.Text)
		}
	}
	if strings.Contains(r.Text, "main-only") {
		t.Errorf("diff shows main's later commit:\n%s", r.Text)
	}
	if len(r.Untracked) != 1 || r.Untracked[0] != "new.txt" || r.Truncated {
		t.Errorf("untracked %v truncated %v, want [new.txt] false", r.Untracked, r.Truncated)
	}

	// A bound cuts the text at a line end and says so.
	r, err = agentDiff(ctx, a, 40)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Truncated || len(r.Text) > 40 || (r.Text != "" && !strings.HasSuffix(r.Text, "\n")) {
		t.Errorf("bounded diff: truncated %v, %d bytes %q", r.Truncated, len(r.Text), r.Text)
	}

	// An agent without a worktree diffs its uncommitted changes against HEAD.
	write(repo, "a.txt", "one\nTWO\n")
	r, err = agentDiff(ctx, wire.Agent{Path: "x/c", Cwd: repo}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.BaseName != "HEAD" || !strings.Contains(r.Text, "+TWO") {
		t.Errorf("plain agent: base %s, diff:\n%s", r.BaseName, r.Text)
	}

	// Outside a repository: a stable code and what to do.
	_, err = agentDiff(ctx, wire.Agent{Path: "x/d", Cwd: t.TempDir()}, 0)
	if wire.CodeOf(err) != wire.CodeNotARepo {
		t.Errorf("outside a repo: %v, want %s", err, wire.CodeNotARepo)
	}
}

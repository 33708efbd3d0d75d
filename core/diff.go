package core

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"orcr/core/wire"
)

// agentDiff answers agent.diff for agent a: `git diff` of its working directory
// against its base, at most maxBytes of it, and its untracked files. An agent started
// with --worktree diffs against the merge base of its branch and the main worktree's
// HEAD (what it changed since it branched, committed or not); any other agent in a
// repository against HEAD (what it has not committed). It is a plain function of the
// record so the kernel grows no method: the handler resolves the target with Get.
func agentDiff(ctx context.Context, a wire.Agent, maxBytes int) (wire.DiffResult, error) {
	if maxBytes <= 0 {
		maxBytes = wire.DefaultDiffBytes
	}
	dir := a.Cwd
	if st, err := os.Stat(dir); dir == "" || err != nil || !st.IsDir() {
		return wire.DiffResult{}, wire.Errorf(wire.CodeNotFound, "%s: its working directory %q is gone; nothing to diff", a.Path, dir)
	}
	top, err := git(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return wire.DiffResult{}, wire.Errorf(wire.CodeNotARepo, "%s works in %s, which is not in a git repository; nothing to diff", a.Path, dir)
	}
	res := wire.DiffResult{Dir: top, BaseName: "HEAD"}
	res.Base, err = git(ctx, top, "rev-parse", "--verify", "--quiet", "HEAD")
	if err != nil {
		// A repository without a commit yet: diff against the empty tree.
		res.Base, res.BaseName = emptyTree, "empty tree"
	}
	if a.Worktree != "" {
		if sha, name, ok := mainHead(ctx, top); ok {
			if mb, err := git(ctx, top, "merge-base", "HEAD", sha); err == nil {
				res.Base, res.BaseName = mb, name
			}
		}
	}
	res.Text, res.Truncated, err = gitBounded(ctx, top, maxBytes,
		"diff", "--no-color", "--no-ext-diff", "--no-textconv", res.Base, "--")
	if err != nil {
		return wire.DiffResult{}, hostErr("git diff", err)
	}
	if out, err := git(ctx, top, "ls-files", "--others", "--exclude-standard"); err == nil && out != "" {
		res.Untracked = strings.Split(out, "\n")
		if len(res.Untracked) > 1000 {
			res.Untracked, res.Truncated = res.Untracked[:1000], true
		}
	}
	return res, nil
}

// emptyTree is git's id of the empty tree, the base of a repository with no commit.
const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// mainHead finds the main worktree of the repository at top (the first `git worktree
// list` shows) and its HEAD: the commit and the branch name (or short id).
func mainHead(ctx context.Context, top string) (sha, name string, ok bool) {
	out, err := git(ctx, top, "worktree", "list", "--porcelain")
	if err != nil {
		return "", "", false
	}
	// The first stanza is the main worktree: "worktree P", "HEAD SHA", "branch REF".
	for _, l := range strings.Split(out, "\n") {
		if l == "" {
			break
		}
		if v, found := strings.CutPrefix(l, "HEAD "); found {
			sha = v
		}
		if v, found := strings.CutPrefix(l, "branch "); found {
			name = strings.TrimPrefix(v, "refs/heads/")
		}
	}
	if sha == "" {
		return "", "", false
	}
	if name == "" {
		name = sha[:min(len(sha), 12)]
	}
	return sha, name, true
}

// gitBounded runs git in dir and returns at most max bytes of its output, cut at a
// line end, stopping git once it has said more (a diff of a vendored tree can run to
// gigabytes).
func gitBounded(ctx context.Context, dir string, max int, args ...string) (string, bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", false, err
	}
	if err := cmd.Start(); err != nil {
		return "", false, err
	}
	b, rerr := io.ReadAll(io.LimitReader(bufio.NewReader(out), int64(max)+1))
	truncated := len(b) > max
	if truncated {
		b = b[:max]
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			b = b[:i+1]
		}
		cancel() // enough: stop git
	}
	werr := cmd.Wait()
	switch {
	case truncated:
		return string(b), true, nil
	case rerr != nil:
		return "", false, rerr
	case werr != nil && !errors.Is(werr, exec.ErrWaitDelay):
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = werr.Error()
		}
		return "", false, fmt.Errorf("git %s: %s", strings.Join(args, " "), msg)
	}
	return string(b), false, nil
}

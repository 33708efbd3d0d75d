package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The git side of a run, with the real git. Every operation is safe to perform twice,
// because a restarted autopilot performs again whatever it had not recorded as done:
// creating a branch or worktree that exists is a no-op, merging a tip that is merged
// already changes nothing, and the squash commit is dated by the instant the advance
// was asked for, so it is the same commit the second time and a compare-and-swap that
// landed before the crash is recognised instead of applied twice.

// Git runs git commands in one repository.
type Git struct {
	Dir string // the repository's top folder (or a worktree of it)
	// Env is added to git's environment (tests set an identity here).
	Env []string
}

// GitError is a git command that failed, with what it said.
type GitError struct {
	Args   []string
	Stderr string
	Err    error
}

func (e *GitError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.Args, " "), msg)
}

func (e *GitError) Unwrap() error { return e.Err }

// gitTimeout bounds one git command. A git command is not stopped when its caller's
// context ends (the server shutting down): killed half way, git leaves lock files
// (refs/heads/…lock, index.lock) that fail every later command, and a half-done
// operation is worse than a finished one the restart recognises.
const gitTimeout = 2 * time.Minute

// gitOutputGrace is how long a git command's output is read after git exited.
const gitOutputGrace = 5 * time.Second

func (g Git) run(ctx context.Context, env []string, args ...string) (string, error) {
	return g.runIn(ctx, env, "", args...)
}

// gitProcs counts the git processes orcr starts: the autopilot's cost per milestone
// is mostly process starts, and a test holds it to its figure.
var gitProcs atomic.Int64

// runIn is run with stdin as git's standard input.
func (g Git) runIn(ctx context.Context, env []string, stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", g.Dir}, args...)...)
	cmd.Env = append(append(os.Environ(), g.Env...), env...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	// A hook of the user's repository (post-commit, post-checkout) may start a
	// process that keeps git's output open after git exited; its output is not
	// waited for past gitOutputGrace, and git's own exit decides the result.
	cmd.WaitDelay = gitOutputGrace
	gitProcs.Add(1)
	if err := cmd.Run(); err != nil && !errors.Is(err, exec.ErrWaitDelay) {
		return out.String(), &GitError{Args: args, Stderr: errb.String(), Err: err}
	}
	return strings.TrimSpace(out.String()), nil
}

func (g Git) at(dir string) Git { return Git{Dir: dir, Env: g.Env} }

// Rev is the commit ref names, or "" when it does not exist.
func (g Git) Rev(ctx context.Context, ref string) (string, error) {
	out, err := g.run(ctx, nil, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
	var ge *GitError
	if errors.As(err, &ge) && strings.TrimSpace(ge.Stderr) == "" {
		return "", nil // --quiet: a missing ref fails silently
	}
	return out, err
}

// revs resolves names in one process (`git cat-file --batch-check`), each to the
// commit it names or to "" when it does not exist: a step that needs several refs
// reads them together instead of one `rev-parse` each. A name with its own peel
// ("HEAD^{tree}") is resolved as it says.
func (g Git) revs(ctx context.Context, names ...string) (map[string]string, error) {
	var in strings.Builder
	for _, n := range names {
		if strings.Contains(n, "^{") {
			in.WriteString(n + "\n") // "X^{tree}" asks for what it names
			continue
		}
		in.WriteString(n + "^{commit}\n")
	}
	out, err := g.runIn(ctx, nil, in.String(), "cat-file", "--batch-check=%(objectname)")
	if err != nil {
		return nil, err
	}
	lines := strings.Split(out, "\n")
	if len(lines) != len(names) {
		return nil, fmt.Errorf("git cat-file: %d answers for %d names", len(lines), len(names))
	}
	m := make(map[string]string, len(names))
	for i, n := range names {
		if l := strings.TrimSpace(lines[i]); !strings.Contains(l, " ") {
			m[n] = l
		} else {
			m[n] = "" // "NAME missing" (or ambiguous)
		}
	}
	return m, nil
}

// CurrentBranch is the branch checked out in the repository ("" when detached).
func (g Git) CurrentBranch(ctx context.Context) (string, error) {
	out, err := g.run(ctx, nil, "symbolic-ref", "--quiet", "--short", "HEAD")
	if err != nil {
		return "", nil
	}
	return out, nil
}

// Checkout puts branch in the repository's folder unless it is there already (shared
// mode, where the coders work in the repository itself).
func (g Git) Checkout(ctx context.Context, branch string) error {
	if cur, _ := g.CurrentBranch(ctx); cur == branch || branch == "" {
		return nil
	}
	_, err := g.run(ctx, nil, "checkout", "--quiet", branch)
	return err
}

// ExcludeOrcr makes git ignore .orcr/ (orcr's plans and notes in the repository)
// through the repository's .git/info/exclude, which every worktree of it reads: a
// coder's `git add -A` must never put the plan into a milestone, and an ignored
// folder is left alone by every checkout. Adding the line twice is avoided.
func (g Git) ExcludeOrcr(ctx context.Context) error {
	if _, ok := excluded.Load(g.Dir); ok {
		return nil // every brief asks; the file was looked at once
	}
	if err := g.excludeOrcr(ctx); err != nil {
		return err
	}
	excluded.Store(g.Dir, true)
	return nil
}

// excluded holds the repositories whose .git/info/exclude has .orcr/ already.
var excluded sync.Map

func (g Git) excludeOrcr(ctx context.Context) error {
	common, err := g.commonDir(ctx)
	if err != nil {
		return err
	}
	file := filepath.Join(common, "info", "exclude")
	old, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, l := range strings.Split(string(old), "\n") {
		switch strings.TrimSpace(l) {
		case ".orcr", ".orcr/", "/.orcr", "/.orcr/":
			return nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	text := string(old)
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	text += "# orcr's plans and notes (added by orcr run start)\n/.orcr/\n"
	return os.WriteFile(file, []byte(text), 0o644)
}

// commonDir is the repository's git directory shared by its worktrees (absolute),
// asked of git once per repository.
func (g Git) commonDir(ctx context.Context) (string, error) {
	if c, ok := commonDirs.Load(g.Dir); ok {
		return c.(string), nil
	}
	common, err := g.run(ctx, nil, "rev-parse", "--git-common-dir")
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(common) {
		common = filepath.Join(g.Dir, common)
	}
	commonDirs.Store(g.Dir, common)
	return common, nil
}

var commonDirs sync.Map

// EnsureBranch creates branch at from unless it exists, and returns its tip.
func (g Git) EnsureBranch(ctx context.Context, branch, from string) (string, error) {
	if tip, err := g.Rev(ctx, "refs/heads/"+branch); err != nil || tip != "" {
		return tip, err
	}
	if _, err := g.run(ctx, nil, "branch", branch, from); err != nil {
		return "", err
	}
	return g.Rev(ctx, "refs/heads/"+branch)
}

// worktreeMu serialises git's worktree bookkeeping: two `git worktree add` at once in
// one repository trip over each other's .git/worktrees entries.
var worktreeMu sync.Mutex

// EnsureWorktree gives branch a worktree at dir (creating the branch at from when it
// does not exist yet), unless dir is one already.
func (g Git) EnsureWorktree(ctx context.Context, dir, branch, from string) error {
	worktreeMu.Lock()
	defer worktreeMu.Unlock()
	// A checkout cut short (the server killed during it) must never be taken for a
	// worktree, or the coder's `git add -A` would commit the files it lacks as
	// deleted. A marker beside dir stands while git makes it: a worktree with its
	// marker is removed and made again; one without is whole (as is one made by an
	// older server, which checked out beside dir and moved it in place — a process
	// more per brief than the marker's two file operations).
	adding := dir + ".adding"
	_, markErr := os.Stat(adding)
	if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil && markErr != nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return err
	}
	for _, stale := range []string{dir, dir + ".new"} {
		if _, err := os.Stat(stale); err == nil {
			_, _ = g.run(ctx, nil, "worktree", "remove", "--force", "--force", stale)
			_ = os.RemoveAll(stale)
		}
	}
	if err := os.WriteFile(adding, nil, 0o600); err != nil {
		return err
	}
	// The usual case, a new branch, takes one process: the worktree's few files are
	// written here as git lays them out (gitrepository-layout: worktrees/ID with its
	// gitdir, commondir and an unborn HEAD; the folder's .git pointing there), and
	// `checkout -b` makes the branch and fills the folder. `worktree add -b` took
	// four (it runs branch, symbolic-ref and reset --hard as processes of their own):
	// 4–40 ms on an idle machine, 0.4 s at a load of 30, on the path from a merge to
	// the next coder's brief. Anything else (the branch exists, the repository is
	// not laid out as expected) goes the careful way, through git.
	if err := g.handWorktree(ctx, dir, branch, from); err != nil {
		if _, err := os.Stat(dir); err == nil {
			_, _ = g.run(ctx, nil, "worktree", "remove", "--force", "--force", dir)
			_ = os.RemoveAll(dir)
		}
		_, _ = g.run(ctx, nil, "worktree", "prune")
		if _, err := g.EnsureBranch(ctx, branch, from); err != nil {
			return err
		}
		if _, err := g.run(ctx, nil, "worktree", "add", dir, branch); err != nil {
			return err
		}
	}
	return os.Remove(adding)
}

// handWorktree makes a worktree at dir on a new branch from commit from in one git
// process. It fails, leaving the cleaning to its caller, when the branch exists.
func (g Git) handWorktree(ctx context.Context, dir, branch, from string) error {
	common, err := g.commonDir(ctx)
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	admins := filepath.Join(common, "worktrees")
	if err := os.MkdirAll(admins, 0o755); err != nil {
		return err
	}
	// An entry left by a worktree at the same folder (removed without git knowing)
	// would stand beside the new one: it is the folder's, so it goes.
	ents, _ := os.ReadDir(admins)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(admins, e.Name(), "gitdir"))
		if err == nil && strings.TrimSpace(string(b)) == filepath.Join(abs, ".git") {
			_ = os.RemoveAll(filepath.Join(admins, e.Name()))
		}
	}
	// The entry's name is the folder's, numbered when another has it, as git does.
	base := filepath.Base(abs)
	var admin string
	for i := 0; ; i++ {
		admin = filepath.Join(admins, base)
		if i > 0 {
			admin += strconv.Itoa(i)
		}
		err := os.Mkdir(admin, 0o755)
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrExist) || i > 1000 {
			return err
		}
	}
	files := []struct{ path, text string }{
		{filepath.Join(admin, "gitdir"), filepath.Join(abs, ".git") + "\n"},
		{filepath.Join(admin, "commondir"), "../..\n"},
		{filepath.Join(admin, "HEAD"), "ref: refs/heads/" + branch + "\n"},
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return err
	}
	files = append(files, struct{ path, text string }{filepath.Join(abs, ".git"), "gitdir: " + admin + "\n"})
	for _, f := range files {
		if err := os.WriteFile(f.path, []byte(f.text), 0o644); err != nil {
			_ = os.RemoveAll(admin)
			return err
		}
	}
	if _, err := g.at(abs).run(ctx, nil, "checkout", "--quiet", "-b", branch, from); err != nil {
		_ = os.RemoveAll(admin)
		return err
	}
	return nil
}

// RemoveWorktree removes the worktree at dir (forcibly: the run owns it).
func (g Git) RemoveWorktree(ctx context.Context, dir string) error {
	worktreeMu.Lock()
	defer worktreeMu.Unlock()
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		_, _ = g.run(ctx, nil, "worktree", "prune")
		return nil
	}
	makeWritable(dir)
	if _, err := g.run(ctx, nil, "worktree", "remove", "--force", "--force", dir); err != nil {
		if rerr := os.RemoveAll(dir); rerr != nil {
			return err
		}
		_, _ = g.run(ctx, nil, "worktree", "prune")
	}
	return nil
}

// DeleteBranch deletes branch when it exists.
func (g Git) DeleteBranch(ctx context.Context, branch string) error {
	if tip, err := g.Rev(ctx, "refs/heads/"+branch); err != nil || tip == "" {
		return err
	}
	_, err := g.run(ctx, nil, "branch", "-D", branch)
	return err
}

// Branches lists the local branches under prefix ("orcr/NAME/") with their tips.
func (g Git) Branches(ctx context.Context, prefix string) (map[string]string, error) {
	out, err := g.run(ctx, nil, "for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads/"+prefix)
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if name, sha, ok := strings.Cut(strings.TrimSpace(l), " "); ok {
			m[name] = sha
		}
	}
	return m, nil
}

// Work is what git says about a milestone's branch when its coder reports.
type Work struct {
	Head    string // the branch's tip
	Commits int    // commits ahead of base
	Dirty   bool   // uncommitted changes in the worktree (untracked files count)
}

// WorkOf looks at the worktree dir on branch against base in one process: `status
// --branch` says the tip checked out and whether the worktree is dirty, and, with the
// run's feature branch given as the branch's upstream for that one command (`-c`, no
// config is written), how many commits the branch has that the feature has not — base
// is the feature's tip as the run knows it, so they are base..head (a second process,
// `rev-list --count`, cost 3–130 ms on the path from `run done` to the check). When
// the feature branch is not there to count against, or dir is on another branch
// (shared mode, switched by hand), the count takes its own process.
func (g Git) WorkOf(ctx context.Context, dir, branch, base string) (Work, error) {
	var w Work
	args := []string{"status", "--porcelain=v2", "--branch"}
	if name, _, ok := strings.Cut(strings.TrimPrefix(branch, "orcr/"), "/"); ok && strings.HasPrefix(branch, "orcr/") {
		args = append([]string{"-c", "branch." + branch + ".remote=.", "-c", "branch." + branch + ".merge=refs/heads/" + FeatureBranch(name)}, args...)
	}
	st, err := g.at(dir).run(ctx, nil, args...)
	if err != nil {
		return w, err
	}
	var oid, checkedOut string
	ahead := -1
	for _, l := range strings.Split(st, "\n") {
		switch {
		case strings.HasPrefix(l, "# branch.oid "):
			oid = strings.TrimPrefix(l, "# branch.oid ")
		case strings.HasPrefix(l, "# branch.head "):
			checkedOut = strings.TrimPrefix(l, "# branch.head ")
		case strings.HasPrefix(l, "# branch.ab +"):
			if a, _, ok := strings.Cut(strings.TrimPrefix(l, "# branch.ab +"), " "); ok {
				if n, err := strconv.Atoi(a); err == nil {
					ahead = n
				}
			}
		case l != "" && !strings.HasPrefix(l, "#"):
			w.Dirty = true
		}
	}
	if checkedOut == branch && oid != "(initial)" {
		w.Head = oid
	} else if w.Head, err = g.Rev(ctx, "refs/heads/"+branch); err != nil {
		return w, err // dir is on another branch (shared mode, switched by hand)
	} else {
		ahead = -1 // the count was of the branch checked out, not of branch
	}
	if w.Head == "" {
		return w, fmt.Errorf("branch %s does not exist", branch)
	}
	if w.Head == base {
		return w, nil
	}
	if ahead >= 0 {
		w.Commits = ahead
		return w, nil
	}
	n, err := g.run(ctx, nil, "rev-list", "--count", base+".."+w.Head)
	if err != nil {
		return w, err
	}
	w.Commits, _ = strconv.Atoi(n)
	return w, nil
}

// MergeIn merges tip into the branch checked out at dir. It returns the branch's new
// head, or the conflicted paths (the merge is then aborted, so the coder finds a clean
// worktree and redoes the merge with the message it gets). Merging a tip that is in
// the branch already returns the head unchanged. When feature is not "", the branch
// feature must still be at tip: a *MovedError says where it is instead, and nothing
// is merged. A result whose files are the feature tip's (the milestone brings
// nothing, or its work was lost) is an *EmptyError: it would land as an empty
// commit. The refs are read in one process.
func (g Git) MergeIn(ctx context.Context, dir, feature, tip, message string) (head string, conflicts []string, err error) {
	w := g.at(dir)
	names := []string{"HEAD", "MERGE_HEAD", "HEAD^{tree}", tip + "^{tree}"}
	if feature != "" {
		names = append(names, "refs/heads/"+feature)
	}
	refs, err := w.revs(ctx, names...)
	if err != nil {
		return "", nil, err
	}
	if feature != "" && refs["refs/heads/"+feature] != tip {
		return "", nil, &MovedError{Branch: feature, Want: tip, Got: refs["refs/heads/"+feature]}
	}
	if refs["MERGE_HEAD"] != "" {
		// A merge cut short (performed again after a restart): start it over. HEAD
		// does not move during a merge that stopped, so the one read above holds.
		_, _ = w.run(ctx, nil, "merge", "--abort")
	}
	if _, err := w.run(ctx, nil, "merge-base", "--is-ancestor", tip, "HEAD"); err == nil {
		if refs["HEAD^{tree}"] == refs[tip+"^{tree}"] {
			return "", nil, &EmptyError{Head: refs["HEAD"], Tip: tip}
		}
		return refs["HEAD"], nil, nil
	}
	_, merr := w.run(ctx, g.identity(ctx), "merge", "--no-ff", "--no-edit", "-m", message, tip)
	if merr == nil {
		after, err := w.revs(ctx, "HEAD", "HEAD^{tree}")
		if err != nil {
			return "", nil, err
		}
		if after["HEAD^{tree}"] == refs[tip+"^{tree}"] {
			return "", nil, &EmptyError{Head: after["HEAD"], Tip: tip}
		}
		return after["HEAD"], nil, nil
	}
	out, err := w.run(ctx, nil, "diff", "--name-only", "--diff-filter=U")
	if err != nil {
		return "", nil, merr
	}
	_, _ = w.run(ctx, nil, "merge", "--abort")
	if out == "" {
		return "", nil, merr // failed for another reason
	}
	return "", strings.Split(out, "\n"), nil
}

// identityTTL is how long a repository's configured identity is trusted: looking it
// up on every merge cost two processes per milestone, and a user who configures one
// mid-run sees it used within the minute.
const identityTTL = time.Minute

type identityEntry struct {
	env []string
	at  time.Time
}

// identities caches identity per repository (and environment).
var identities sync.Map

// identity is the committer orcr uses where the repository has none configured, read
// with one `git config --get-regexp` and kept for identityTTL.
func (g Git) identity(ctx context.Context) []string {
	key := g.Dir + "\x00" + strings.Join(g.Env, "\x00")
	if e, ok := identities.Load(key); ok && time.Since(e.(identityEntry).at) < identityTTL {
		return e.(identityEntry).env
	}
	// Exit status 1 is "none configured", which is what the fallback is for.
	out, _ := g.run(ctx, nil, "config", "--get-regexp", `^user\.(name|email)$`)
	vals := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(l), " ")
		vals[strings.ToLower(k)] = strings.TrimSpace(v)
	}
	var env []string
	if vals["user.name"] == "" {
		env = append(env, "GIT_AUTHOR_NAME=orcr", "GIT_COMMITTER_NAME=orcr")
	}
	if vals["user.email"] == "" {
		env = append(env, "GIT_AUTHOR_EMAIL=orcr@localhost", "GIT_COMMITTER_EMAIL=orcr@localhost")
	}
	identities.Store(key, identityEntry{env: env, at: time.Now()})
	return env
}

// SquashCommit makes (without moving any ref) the one commit milestone work head
// becomes on feature: head's tree on parent, with message, dated at. The same
// arguments give the same commit.
func (g Git) SquashCommit(ctx context.Context, parent, head, message string, at time.Time) (string, error) {
	date := fmt.Sprintf("%d +0000", at.Unix())
	env := append(slices.Clip(g.identity(ctx)), "GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date)
	return g.run(ctx, env, "commit-tree", head+"^{tree}", "-p", parent, "-m", message)
}

// EmptyError is a merge whose result has the files of the feature tip it merged:
// recorded, it would be an empty commit on the feature branch and a milestone the
// next ones find missing, so it is refused.
type EmptyError struct {
	Head, Tip string
}

func (e *EmptyError) Error() string {
	return fmt.Sprintf("the result %s changes nothing on the feature tip %s", short(e.Head), short(e.Tip))
}

// ErrMoved is what Advance returns when the branch is not where the run left it.
var ErrMoved = errors.New("branch moved")

// MovedError says where the branch is instead.
type MovedError struct {
	Branch, Want, Got string
}

func (e *MovedError) Error() string {
	return fmt.Sprintf("%s is at %s, not at %s", e.Branch, short(e.Got), short(e.Want))
}

func (e *MovedError) Is(t error) bool { return t == ErrMoved }

// Advance moves branch from old to the squash commit of head by compare-and-swap
// (`git update-ref refs/heads/BRANCH NEW OLD`) and returns the new tip. When the
// branch is at that commit already (a restart repeating an advance that landed) it
// returns it; when it is anywhere else it returns a *MovedError and changes nothing.
func (g Git) Advance(ctx context.Context, branch, old, head, message string, at time.Time) (string, error) {
	next, err := g.SquashCommit(ctx, old, head, message, at)
	if err != nil {
		return "", err
	}
	// The compare-and-swap is tried first; only when it fails is the branch read, to
	// tell an advance that landed before a restart from a branch moved by someone else.
	_, err = g.run(ctx, nil, "update-ref", "-m", "orcr: "+firstLine(message), "refs/heads/"+branch, next, old)
	if err == nil {
		return next, nil
	}
	cur, rerr := g.Rev(ctx, "refs/heads/"+branch)
	switch {
	case rerr != nil:
		return "", err
	case cur == next:
		return next, nil
	case cur != old:
		return "", &MovedError{Branch: branch, Want: old, Got: cur}
	}
	return "", err
}

// CommitMessage is a milestone's commit on the feature branch: "M1: title", the goal
// as its body.
func CommitMessage(id, title, goal string) string {
	msg := id + ": " + title
	if g := strings.TrimSpace(goal); g != "" {
		msg += "\n\n" + g
	}
	return msg + "\n"
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// ReviewCheckout puts the reviewer's read-only checkout at dir on commit head: a
// detached worktree whose files are not writable, so a reviewer that tries to "fix"
// things cannot.
func (g Git) ReviewCheckout(ctx context.Context, dir, head string) error {
	worktreeMu.Lock()
	defer worktreeMu.Unlock()
	if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		makeWritable(dir)
		if _, err := g.at(dir).run(ctx, nil, "checkout", "--force", "--detach", head); err != nil {
			return err
		}
		if _, err := g.at(dir).run(ctx, nil, "clean", "-fdx"); err != nil {
			return err
		}
	} else {
		if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
			return err
		}
		_, _ = g.run(ctx, nil, "worktree", "prune")
		if _, err := g.run(ctx, nil, "worktree", "add", "--detach", dir, head); err != nil {
			return err
		}
	}
	return makeReadOnly(dir)
}

// Diff is the diff of head against base, as the reviewer reads it.
func (g Git) Diff(ctx context.Context, base, head string) (string, error) {
	return g.run(ctx, nil, "diff", base+"..."+head)
}

func makeReadOnly(dir string) error {
	return filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" && p != dir {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type()&os.ModeSymlink != 0 {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return os.Chmod(p, info.Mode().Perm()&^0o222)
	})
}

func makeWritable(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.Type()&os.ModeSymlink != 0 {
			return nil
		}
		if info, err := d.Info(); err == nil {
			_ = os.Chmod(p, info.Mode().Perm()|0o200)
		}
		return nil
	})
}

// Push pushes branch to remote (forcing with lease: the run owns feature/NAME).
func (g Git) Push(ctx context.Context, remote, branch string) error {
	_, err := g.run(ctx, nil, "push", "--force-with-lease", remote, "refs/heads/"+branch+":refs/heads/"+branch)
	return err
}

// Remote is the URL of the repository's remote name ("" when there is none).
func (g Git) Remote(ctx context.Context, name string) string {
	out, err := g.run(ctx, nil, "remote", "get-url", name)
	if err != nil {
		return ""
	}
	return out
}

// Dirty lists what `git status` shows in the working tree, .orcr/ (orcr's own plans and
// notes) left out: one "XY path" per change, untracked files included.
func (g Git) Dirty(ctx context.Context) ([]string, error) {
	out, err := g.run(ctx, nil, "-c", "core.quotepath=off", "status", "--porcelain=v1", "--untracked-files=all",
		"--", ".", ":(exclude).orcr")
	if err != nil {
		return nil, err
	}
	var files []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			files = append(files, l)
		}
	}
	return files, nil
}

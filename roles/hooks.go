package roles

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"orcr/core/secretenv"
	"orcr/core/wire"
	"orcr/internal/strictfile"
)

// Per-repo hooks (DESIGN §12): .orcr/hooks/NAME.sh in the agent's folder (or, for a
// worktree or a subfolder, the repository's top, then its main worktree). Each runs
// with the agent's folder as cwd, its lineage variables and ORCR_HOOK/ORCR_ATTEMPT,
// in its own process group that is killed at the timeout.

// RepoConfig is .orcr/config.toml.
type RepoConfig struct {
	// MaxRetries is how many times a failing validate.sh's output goes back to the
	// agent (default 3).
	MaxRetries int
	// Timeout bounds each hook run (default 10m).
	Timeout time.Duration
}

// Defaults of .orcr/config.toml.
const (
	DefaultMaxRetries  = 3
	DefaultHookTimeout = 10 * time.Minute
	// outputTail is how much of a hook's output is kept and sent back.
	outputTail = 4 << 10
	tailLines  = 60
)

type rawRepoConfig struct {
	MaxRetries *int `toml:"max_retries"`
	Hooks      struct {
		Timeout *string `toml:"timeout"`
	} `toml:"hooks"`
}

// LoadRepoConfig reads dir/.orcr/config.toml; a missing file gives the defaults.
func LoadRepoConfig(repo string) (RepoConfig, error) {
	c := RepoConfig{MaxRetries: DefaultMaxRetries, Timeout: DefaultHookTimeout}
	file := filepath.Join(repo, ".orcr", "config.toml")
	var raw rawRepoConfig
	doc, err := strictfile.Load(context.Background(), file, MaxFile, &raw)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if doc == nil {
		return c, err
	}
	if raw.MaxRetries != nil {
		if *raw.MaxRetries < 0 || *raw.MaxRetries > 100 {
			doc.Add("max_retries", "max_retries must be 0…100")
		}
		c.MaxRetries = *raw.MaxRetries
	}
	if raw.Hooks.Timeout != nil {
		d, err := time.ParseDuration(*raw.Hooks.Timeout)
		if err != nil || d <= 0 {
			doc.Add("hooks.timeout", "hooks.timeout %q: use a positive duration such as \"5m\"", *raw.Hooks.Timeout)
		}
		c.Timeout = d
	}
	return c, doc.Err()
}

// RepoOf finds the folder whose .orcr/ serves an agent working in cwd: cwd itself,
// else its git top, else the main worktree of its repository ("" when none has one).
// It reads the file system only (no git process): it runs before every launch, and
// a wake from hibernation must not wait for two git calls.
func RepoOf(_ context.Context, cwd string) string {
	if cwd == "" {
		return ""
	}
	has := func(d string) bool {
		st, err := os.Stat(filepath.Join(d, ".orcr"))
		return err == nil && st.IsDir()
	}
	for d := filepath.Clean(cwd); ; d = filepath.Dir(d) {
		if has(d) && (d == filepath.Clean(cwd) || isGitTop(d)) {
			return d
		}
		if st, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			if st.IsDir() {
				return "" // the repository's top has no .orcr
			}
			// A linked worktree: ".git" is a file naming <main>/.git/worktrees/<name>.
			if main := mainWorktree(filepath.Join(d, ".git")); main != "" && has(main) {
				return main
			}
			return ""
		}
		if d == filepath.Dir(d) {
			return ""
		}
	}
}

func isGitTop(d string) bool {
	_, err := os.Lstat(filepath.Join(d, ".git"))
	return err == nil
}

// mainWorktree reads a linked worktree's .git file and returns the main worktree.
func mainWorktree(gitFile string) string {
	b, err := readBounded(gitFile)
	if err != nil {
		return ""
	}
	dir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	if !ok {
		return ""
	}
	dir = strings.TrimSpace(dir)
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(filepath.Dir(gitFile), dir)
	}
	// <main>/.git/worktrees/<name>
	if filepath.Base(filepath.Dir(dir)) != "worktrees" {
		return ""
	}
	common := filepath.Dir(filepath.Dir(dir))
	if filepath.Base(common) != ".git" {
		return ""
	}
	return filepath.Dir(common)
}

// HookPath is repo's script for hook ("" when the repo has none).
func HookPath(repo, hook string) string {
	if repo == "" {
		return ""
	}
	p := filepath.Join(repo, ".orcr", "hooks", hook+".sh")
	if _, err := os.Lstat(p); err != nil {
		return ""
	}
	return p
}

// notExecutable says why script (st its stat) cannot be run as a hook, or "".
func notExecutable(st os.FileInfo, script string) string {
	if st.IsDir() || st.Mode().Perm()&0o111 == 0 {
		return fmt.Sprintf("%s is not executable; make it so with: chmod +x %s", script, script)
	}
	return ""
}

// RunHook runs script for agent a (cwd: a.Cwd) with a timeout and returns its run.
func RunHook(ctx context.Context, script, hook string, attempt int, a wire.Agent, timeout time.Duration) wire.HookRun {
	run := wire.HookRun{Hook: hook, Attempt: attempt, StartedAt: time.Now().UTC()}
	st, err := os.Stat(script)
	if err != nil {
		run.Result, run.Output = wire.HookError, fmt.Sprintf("%s: %v", script, err)
		return run
	}
	if why := notExecutable(st, script); why != "" {
		run.Result, run.Output = wire.HookNotExecutable, why
		return run
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, script)
	cmd.Dir = a.Cwd
	cmd.Env = append(os.Environ(), "ORCR_ID="+a.ID, "ORCR_PATH="+a.Path, "ORCR_PROVIDER="+a.Provider,
		"ORCR_ROLE="+a.Role, "ORCR_HOOK="+hook, fmt.Sprintf("ORCR_ATTEMPT=%d", attempt))
	for k, v := range a.Env {
		if v == secretenv.Redacted {
			continue // the record names it; the value is the launch's alone (core/envkeep.go)
		}
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	var out tailBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	run.Seconds = time.Since(run.StartedAt).Seconds()
	run.Output = out.String()
	var ee *exec.ExitError
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		run.Result = wire.HookTimeout
		run.Output = strings.TrimRight(run.Output, "\n") + fmt.Sprintf("\n[orcr: %s.sh killed after its %s timeout]", hook, timeout)
	case err == nil:
		run.Result = wire.HookPassed
		zero := 0
		run.ExitCode = &zero
	case errors.As(err, &ee):
		code := ee.ExitCode()
		run.ExitCode = &code
		run.Result = wire.HookFailed
	case errors.Is(err, syscall.ENOEXEC) || errors.Is(err, fs.ErrPermission):
		run.Result = wire.HookNotExecutable
		run.Output = fmt.Sprintf("%s cannot be executed (%v); give it a #! line and chmod +x", script, err)
	default:
		run.Result, run.Output = wire.HookError, fmt.Sprintf("%s: %v", script, err)
	}
	return run
}

// tailBuffer keeps the last outputTail bytes written.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 2*outputTail {
		t.b = append([]byte{}, t.b[len(t.b)-outputTail:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	b := t.b
	if len(b) > outputTail {
		b = b[len(b)-outputTail:]
	}
	lines := bytes.Split(b, []byte("\n"))
	if len(lines) > tailLines+1 {
		lines = lines[len(lines)-tailLines-1:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

package roles_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
	"orcr/roles"
)

func script(t *testing.T, repo, hook, body string, mode os.FileMode) string {
	t.Helper()
	dir := filepath.Join(repo, ".orcr", "hooks")
	os.MkdirAll(dir, 0o755)
	p := filepath.Join(dir, hook+".sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunHookResults(t *testing.T) {
	repo := t.TempDir()
	a := wire.Agent{ID: "id1", Path: "p/q", Cwd: repo, Env: map[string]string{"K": "v"}}
	ctx := context.Background()

	pass := script(t, repo, "before", `echo "in $PWD as $ORCR_PATH hook $ORCR_HOOK attempt $ORCR_ATTEMPT K=$K"`, 0o755)
	r := roles.RunHook(ctx, pass, "before", 2, a, time.Minute)
	if r.Result != wire.HookPassed || r.ExitCode == nil || *r.ExitCode != 0 ||
		!strings.Contains(r.Output, "as p/q hook before attempt 2 K=v") {
		t.Fatalf("pass: %+v", r)
	}
	fail := script(t, repo, "validate", `echo "FAIL: TestLogin"; exit 3`, 0o755)
	r = roles.RunHook(ctx, fail, "validate", 1, a, time.Minute)
	if r.Result != wire.HookFailed || *r.ExitCode != 3 || !strings.Contains(r.Output, "FAIL: TestLogin") {
		t.Fatalf("fail: %+v", r)
	}
	noexec := script(t, repo, "after", `true`, 0o644)
	r = roles.RunHook(ctx, noexec, "after", 1, a, time.Minute)
	if r.Result != wire.HookNotExecutable || !strings.Contains(r.Output, "chmod +x") {
		t.Fatalf("not executable: %+v", r)
	}
	// A hanging script (and the child holding its output) is killed at the timeout.
	hang := script(t, repo, "init", `sleep 60 & echo started; sleep 60`, 0o755)
	start := time.Now()
	r = roles.RunHook(ctx, hang, "init", 1, a, 500*time.Millisecond)
	if r.Result != wire.HookTimeout || time.Since(start) > 10*time.Second || !strings.Contains(r.Output, "killed after its 500ms timeout") {
		t.Fatalf("hang: %+v after %v", r, time.Since(start))
	}
}

func TestRepoOfFindsTheMainWorktree(t *testing.T) {
	repo := t.TempDir()
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.email=t@t", "-c", "user.name=t"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	git("init", "-q")
	git("commit", "-q", "--allow-empty", "-m", "init")
	script(t, repo, "validate", "true", 0o755) // untracked: not in a new worktree
	wt := filepath.Join(t.TempDir(), "wt")
	git("worktree", "add", "-q", "-b", "feature", wt)
	if got := roles.RepoOf(context.Background(), wt); got != repo {
		r1, _ := filepath.EvalSymlinks(got)
		r2, _ := filepath.EvalSymlinks(repo)
		if r1 != r2 {
			t.Fatalf("RepoOf(worktree) = %q, want %q", got, repo)
		}
	}
	os.MkdirAll(filepath.Join(repo, "sub"), 0o755)
	if got := roles.RepoOf(context.Background(), filepath.Join(repo, "sub")); got == "" {
		t.Fatal("RepoOf(subfolder) found nothing")
	}
	if got := roles.RepoOf(context.Background(), t.TempDir()); got != "" {
		t.Fatalf("RepoOf(plain dir) = %q", got)
	}
}

func TestRepoConfig(t *testing.T) {
	repo := t.TempDir()
	c, err := roles.LoadRepoConfig(repo)
	if err != nil || c.MaxRetries != 3 || c.Timeout != 10*time.Minute {
		t.Fatalf("defaults %+v %v", c, err)
	}
	os.MkdirAll(filepath.Join(repo, ".orcr"), 0o755)
	os.WriteFile(filepath.Join(repo, ".orcr", "config.toml"), []byte("max_retries = 1\n[hooks]\ntimeout = \"30s\"\n"), 0o644)
	if c, err = roles.LoadRepoConfig(repo); err != nil || c.MaxRetries != 1 || c.Timeout != 30*time.Second {
		t.Fatalf("config %+v %v", c, err)
	}
	os.WriteFile(filepath.Join(repo, ".orcr", "config.toml"), []byte("max_retries = 1\nretries = 2\n"), 0o644)
	if _, err = roles.LoadRepoConfig(repo); err == nil || !strings.Contains(err.Error(), `config.toml:2: unknown key "retries"`) {
		t.Fatalf("unknown key: %v", err)
	}
	// A key inside [hooks] is named at its own line (it was blamed on the [hooks] header),
	// and a value of the wrong type names its line too (it had none).
	for body, want := range map[string]string{
		"[hooks]\ntimeout = \"30s\"\ntimout = \"1m\"\n": `config.toml:3: unknown key "timout" in [hooks] (known: timeout)`,
		"\nmax_retries = \"2\"\n":                       `config.toml:2: max_retries is a string; give an integer`,
		"[hooks]\n\ntimeout = \"soon\"\n":               `config.toml:3: hooks.timeout "soon": use a positive duration`,
	} {
		os.WriteFile(filepath.Join(repo, ".orcr", "config.toml"), []byte(body), 0o644)
		if _, err = roles.LoadRepoConfig(repo); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %s", body, err, want)
		}
	}
}

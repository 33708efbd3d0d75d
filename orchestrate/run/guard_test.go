package run_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"orcr/core/wire"
	runapi "orcr/orchestrate/run/api"
)

// TestSharedModeRefusesADirtyTree: with an edited README and an untracked file, `run
// start --mode shared` was accepted and the coder's `git add -A` put both into M1. Now it
// is refused with the files and what to do; the plan under .orcr/ does not count, and a
// clean tree starts.
func TestSharedModeRefusesADirtyTree(t *testing.T) {
	g := newRig(t)
	ctx := context.Background()
	g.approve("demo", twoMilestones)
	if err := os.WriteFile(filepath.Join(g.repo, "README.md"), []byte("# edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(g.repo, "notes.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := runapi.RunStartParams{Name: "demo", Mode: "shared", Coder: "shell", CoderArgv: []string{"sh", "-c", "cat >/dev/null"}, Lead: "none"}
	_, err := g.svc.RunStart(ctx, p)
	for _, want := range []string{"shared mode needs a clean working tree", "M README.md", "?? notes.txt", "git stash -u", "--mode worktree"} {
		if wire.CodeOf(err) != wire.CodeInvalidParams || err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("a dirty shared start: %v, want %q", err, want)
		}
	}
	if strings.Contains(err.Error(), ".orcr") {
		t.Fatalf("the plan under .orcr/ counted as a change: %v", err)
	}
	if out := sh(t, g.repo, "git branch --list 'feature/*'"); out != "" {
		t.Fatalf("a refused start made a branch: %s", out)
	}
	sh(t, g.repo, "git add README.md notes.txt && git commit -qm mine")
	if _, err := g.svc.RunStart(ctx, p); err != nil {
		t.Fatalf("a clean shared start: %v", err)
	}
}

// TestConcurrentRunStartSaysExists: two `run start` of one plan at once; the second got
// git's raw "a branch named 'feature/demo' already exists". One starts, the other is told
// the run exists.
func TestConcurrentRunStartSaysExists(t *testing.T) {
	g := newRig(t)
	ctx := context.Background()
	g.approve("demo", twoMilestones)
	p := runapi.RunStartParams{Name: "demo", Coder: "shell", CoderArgv: []string{"sh", "-c", "cat >/dev/null"}, Lead: "none"}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = g.svc.RunStart(ctx, p)
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !strings.Contains(err.Error(), "run demo exists already (running): see `orcr run status demo`"):
			t.Errorf("a concurrent start: %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d of %d concurrent starts succeeded: %v", ok, len(errs), errs)
	}
}

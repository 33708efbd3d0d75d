package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDashboardDiff is the operator's loop over an agent working in a real git
// repository: find it, attach and change a tracked file from inside it, detach, read
// the change in the diff view (`D`), and kill it by glob.
func TestDashboardDiff(t *testing.T) {
	r := newRig(t)
	repo := filepath.Join(r.dir, "repo")
	gitRun(t, "", "init", "-q", repo)
	if err := os.WriteFile(filepath.Join(repo, "notes.txt"), []byte("first line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitRun(t, repo, "add", "notes.txt")
	gitRun(t, repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "start")

	r.start()
	r.waitText(20*time.Second, "agents 0", "in-process")
	// A shell agent working in the repository, and a neighbour the kill must spare.
	r.mustOrcr("agent", "run", "work/repo", "--cwd", repo, "--", "sh", "-c", `PS1='repo> ' exec sh -i`)
	r.mustOrcr("agent", "run", "ops/other", "--", r.fake, "--name", "other")
	r.waitScreen("both agents in the tree", 20*time.Second, func(s string) bool {
		return strings.Contains(s, "agents 2") && treeLine(s, "repo") != "" && treeLine(s, "other") != ""
	})

	// Find it fuzzily and attach.
	r.keys("/")
	r.typeText("wrkrep")
	r.keys("Enter")
	r.waitText(10*time.Second, "/ wrkrep  1 match")
	r.waitText(10*time.Second, "─ work/repo ", "repo>")
	r.keys("Enter")
	r.waitScreen("the attached agent's own screen", 15*time.Second, func(s string) bool {
		return !strings.Contains(s, "─ work/repo ") && strings.Contains(s, "repo>")
	})
	// Change a tracked file and add an untracked one from inside the agent.
	r.typeText("echo changed-by-agent >> notes.txt && echo new > fresh.txt && echo wrote-$((6*7))")
	r.keys("Enter")
	r.waitText(10*time.Second, "wrote-42")
	r.keys("C-]")
	// Back in the dashboard with its filter and selection kept. The "detached"
	// notice is not waited for: it stays 6 s from the detach, and at a load of 35
	// the dashboard's first frame after the terminal came back plus the polls'
	// capture-pane took longer (seen beside two busy loops: filter and preview
	// drawn, the notice gone).
	r.waitText(15*time.Second, "─ work/repo ", "/ wrkrep", "in-process")

	// The diff view: the agent's change against HEAD, and the untracked file.
	r.keys("D")
	r.waitText(15*time.Second, "diff work/repo against HEAD", "+changed-by-agent", "fresh.txt")
	r.keys("Escape")
	r.waitScreen("the diff view closed", 10*time.Second, func(s string) bool {
		return !strings.Contains(s, "diff work/repo") && strings.Contains(s, "─ work/repo ")
	})
	r.keys("Escape") // clear the filter
	r.waitScreen("filter cleared", 10*time.Second, func(s string) bool {
		return treeLine(s, "other") != "" && !strings.Contains(s, "/ wrkrep")
	})

	// Kill work/** by glob: the repo agent goes, ops/other stays.
	r.keys("K")
	r.waitText(10*time.Second, "kill by glob", "glob ›")
	r.keys("C-u")
	r.typeText("work/**")
	r.waitText(10*time.Second, "1 agent match", "work/repo")
	r.keys("Enter")
	r.waitText(10*time.Second, "kill 1 agent matching work/**?")
	r.keys("y")
	r.waitText(20*time.Second, "killed 1 of 1 matching work/**")
	// The selected agent stays in view, shown killed, until the selection moves.
	r.waitScreen("the agent shown killed", 20*time.Second, func(s string) bool {
		return strings.Contains(s, "1 ended hidden") && strings.Contains(treeLine(s, "repo"), "✕") && live(treeLine(s, "other"))
	})
	out := r.mustOrcr("agent", "ls", "--all")
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && (f[0] == "work/repo") != (f[1] == "killed") {
			t.Fatalf("agent ls after kill:\n%s", out)
		}
	}
}

// gitRun runs git in dir, failing the test on error.
func gitRun(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

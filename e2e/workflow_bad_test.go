package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/testutil/wait"
)

// TestWorkflowBadInput holds a real server to a clear end for every bad step: an
// output never written, invalid JSON, 100 MB of output, a for_each over 100,000
// items, an expression that loops, a step past its timeout, one that panics, and a file edited (even broken)
// while its run is under way — that run keeps the version it started with. The
// server answers throughout.
func TestWorkflowBadInput(t *testing.T) {
	e := newEnv(t)
	e.serve()
	repo := t.TempDir()
	shell := func(name, argv, extra string) string {
		return "[[steps]]\nname = \"" + name + "\"\nprovider = \"shell\"\nargv = [\"sh\", \"-c\", " + argv + "]\n" + extra + "\n"
	}
	cases := []struct {
		name, body, why string
	}{
		{"nowrite", shell("a", `"true"`, `outputs = { n = "int" }`), "no output was written to $ORCR_OUTPUT"},
		{"badjson", shell("a", `"echo '{n: 1' > \"$ORCR_OUTPUT\""`, `outputs = { n = "int" }`), "the output is not JSON"},
		{"huge", shell("a", `"head -c 104857600 /dev/zero > \"$ORCR_OUTPUT\""`, `outputs = { n = "int" }`), "the output is 104857600 bytes, over the limit of 1048576"},
		{"many", shell("a", `"seq 1 100000 | paste -sd, | sed 's/.*/{\"items\": [&]}/' > \"$ORCR_OUTPUT\""`, `outputs = { items = "list" }`) +
			shell("b", `"echo {{item}}"`, `for_each = "steps.a.items"`), "for_each \"steps.a.items\" gave 100000 items, over the limit of 10000"},
		// 10^10 evaluations unbounded, each making a 100,000-item range: the memory
		// budget ends it after ten of them, in milliseconds. (Three nested `all`s over
		// a cheap predicate ran 800,000 predicates first: 1.1 s at a load of 12, and
		// under more load the 2 s wall-clock bound ended it before the budget did.)
		{"loop", shell("a", `"echo '{\"n\": 3}' > \"$ORCR_OUTPUT\""`, `outputs = { n = "int" }`) +
			shell("b", `"true"`, `when = "all(1..100000, {all(1..100000, {len(1..100000) >= steps.a.n})})"`), "memory budget exceeded"},
		{"slow", shell("a", `"sleep 60"`, `timeout = "1s"`), "the program was killed (hard timeout 1s reached)"},
		{"panic", shell("a", `"echo '{\"n\": 3}' > \"$ORCR_OUTPUT\""`, `outputs = { n = "int" }`) +
			shell("b", `"true"`, `when = "int(steps.a.n) % 0 == 1"`), "divide by zero"},
	}
	for _, c := range cases {
		writeWorkflow(t, repo, c.name, c.body)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			began := time.Now()
			r := e.orcr("workflow", "run", c.name, "--repo", repo, "--wait")
			if r.Code == 0 {
				t.Fatalf("workflow run %s succeeded:\n%s", c.name, r.Out)
			}
			if !strings.Contains(r.Out, c.name+"-1") {
				t.Fatalf("workflow run %s did not start: %s", c.name, r.Err)
			}
			v := workflowStatus(t, e, c.name)
			why := ""
			for _, s := range v.Steps {
				why += s.Why + "\n"
				for _, a := range s.Agents {
					why += a.Error + "\n"
				}
			}
			if v.State != "failed" || !strings.Contains(why, c.why) {
				t.Errorf("run %s (%s), steps say:\n%s\nwant %q", v.State, v.Why, why, c.why)
			}
			t.Logf("%s: failed in %s: %s", c.name, time.Since(began).Round(time.Millisecond), strings.TrimSpace(why))
		})
	}

	// Edited while running: the first step waits for a file; the file is rewritten
	// (the second step's text changed) and then broken; the run ends with what it
	// started with, and the next run reads the file as it is then.
	gate := filepath.Join(t.TempDir(), "gate")
	out := filepath.Join(t.TempDir(), "said")
	v1 := shell("a", `"while [ ! -e '`+gate+`' ]; do sleep 0.05; done"`, "") +
		shell("b", `"echo version-one >> '`+out+`'"`, `after = ["a"]`)
	writeWorkflow(t, repo, "edited", v1)
	e.must("workflow", "run", "edited", "--repo", repo)
	writeWorkflow(t, repo, "edited", strings.Replace(v1, "version-one", "version-two", 1))
	writeWorkflow(t, repo, "edited", v1+"\nbroken = \n")
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	wait.For(t, 30*time.Second, "the edited run to end", func() bool { return workflowStatus(t, e, "edited-1").State != "running" })
	if v := workflowStatus(t, e, "edited-1"); v.State != "done" {
		t.Fatalf("edited-1 %s: %s", v.State, v.Why)
	}
	if b, _ := os.ReadFile(out); string(b) != "version-one\n" {
		t.Errorf("the running workflow said %q, want its own version's words", b)
	}
	if r := e.orcr("workflow", "run", "edited", "--repo", repo); r.Code == 0 || !strings.Contains(r.Err, "edited.toml:") {
		t.Errorf("the broken file was run: exit %d: %s", r.Code, r.Err)
	}
}

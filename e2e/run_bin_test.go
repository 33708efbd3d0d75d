package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"orcr/testutil/wait"
)

// TestRunLeadWithoutOrcrOnPath: the server, and so every pane, runs with a PATH
// that lacks orcr, as a login shell that sets its own PATH does. The run lead's first
// turn calls plain `orcr run dispatch`, which is "command not found", and ends saying
// it dispatched: `run status` says at once that M1 is ready and not dispatched (not
// 15 minutes later). Woken again, the lead calls orcr the way its brief writes it —
// by its absolute path, which claude's allow-list lets run with no prompt: M1 is
// dispatched, and its coder reports done the same way.
func TestRunLeadWithoutOrcrOnPath(t *testing.T) {
	var path []string
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if _, err := os.Stat(filepath.Join(d, "orcr")); err != nil {
			path = append(path, d)
		}
	}
	r := newRunRig(t, "solo", "PATH="+strings.Join(path, string(filepath.ListSeparator)))
	r.approvePlan(oneMilestone)
	m1 := r.worktree("M1")
	r.models.PushTo("lead", bash("orcr run dispatch solo M1"), say("Dispatched M1."))
	r.must("run", "start", "solo", "--coders", "1", "--coder", "claude", "--lead", "claude")

	wait.For(t, 60*time.Second, "the failed dispatch's tool result", func() bool { return r.saw("lead", "command not found") })
	var waits, status string
	wait.For(t, 60*time.Second, "run status saying M1 was not dispatched", func() bool {
		waits = r.milestone(r.status(), "M1").Waits
		status = r.must("run", "status", "solo")
		return strings.Contains(waits, "turn ended without")
	})
	if m := r.milestone(r.status(), "M1"); m.State != "ready" {
		t.Fatalf("M1 is %s, want ready (not dispatched)", m.State)
	}
	for _, want := range []string{"M1 ready, not dispatched: the lead's turn ended without `orcr run dispatch` (auto-start in 1",
		"`orcr run dispatch solo M1` to start it now"} {
		if !strings.Contains(status, want) {
			t.Fatalf("run status lacks %q:\n%s", want, status)
		}
	}

	// The lead's brief writes orcr as its absolute path.
	brief := r.request("lead", 2).LastUser()
	found := regexp.MustCompile("`(\\S+) run dispatch solo M1 M2`").FindStringSubmatch(brief)
	if found == nil || !filepath.IsAbs(found[1]) {
		t.Fatalf("the lead's brief does not call orcr by its path:\n%s", brief)
	}
	orcr := found[1]
	r.models.PushTo("lead", when("call orcr as your brief says", bash(orcr+" run dispatch solo M1")), say("Dispatched M1, this time for real."))
	r.models.PushTo("M1", write(m1+"/greet.txt", "hello, world\nsigned-off\n"),
		bash(`git add -A && git commit -qm "M1: greeting" && `+orcr+" run done M1"), say("Done."))
	r.must("agent", "send", "runs/solo/lead", "orcr is not on your PATH: call orcr as your brief says")
	r.waitState("M1", "merged", 120*time.Second)
	wait.For(t, 60*time.Second, "the tool result of the coder's `run done`", func() bool { return r.saw("M1", "M1: checking; the check") })
	if u := r.request("M1", 0).LastUser(); !strings.Contains(u, orcr+" run done M1") {
		t.Fatalf("the coder's brief does not call orcr by its path:\n%s", u)
	}
}

// TestDoctorSaysWhetherTheShellFindsOrcr: doctor asks the user's shell as a login
// shell (how agents' tool shells run) for orcr. Where its login setup leaves orcr off
// PATH, doctor says runs still work (briefs call orcr by its path) and how to put it
// on PATH; once the setup does, doctor says where the shell finds it.
func TestDoctorSaysWhetherTheShellFindsOrcr(t *testing.T) {
	for _, d := range []string{"/usr/bin", "/bin"} {
		if _, err := os.Stat(filepath.Join(d, "orcr")); err == nil {
			t.Skipf("orcr is installed in %s, which every login shell finds", d)
		}
	}
	home := t.TempDir()
	e := newEnv(t, "SHELL=/bin/sh", "HOME="+home)
	dir := filepath.Dir(e.bin)
	profile := filepath.Join(home, ".profile")
	if err := os.WriteFile(profile, []byte("PATH=/usr/bin:/bin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := e.must("doctor")
	want := "shell    /bin/sh -l does not find orcr on its PATH — agents' briefs call orcr by its path (ORCR_BIN=" + e.bin + "), so runs still work; " +
		"to type `orcr` in an agent's shell too, add " + dir + " to PATH in your login setup (~/.profile)"
	if !strings.Contains(out, want) {
		t.Fatalf("doctor does not say the shell lacks orcr:\n%s\nwant the line:\n%s", out, want)
	}
	if err := os.WriteFile(profile, []byte("PATH="+dir+":/usr/bin:/bin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := e.must("doctor"); !strings.Contains(out, "shell    /bin/sh -l finds orcr at "+e.bin+"\n") {
		t.Fatalf("doctor does not say where the shell finds orcr:\n%s", out)
	}
}

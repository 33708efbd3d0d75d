package testbin_test

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"orcr/testutil/testbin"
)

// TestBuildFakeAgent builds the fake agent, checks the build is cached, and drives the
// real binary through its commands with piped input.
func TestBuildFakeAgent(t *testing.T) {
	bin := testbin.Build(t, "orcr/testutil/fakeagent")
	if again := testbin.Build(t, "orcr/testutil/fakeagent"); again != bin {
		t.Errorf("second Build gave %q, first %q", again, bin)
	}
	cmd := exec.Command(bin, "--name", "bob", "--print-env")
	cmd.Env = []string{"ORCR_PATH=a/b", "ORCR_ID=42", "OTHER=x"}
	cmd.Stdin = strings.NewReader("echo hi there\nask ship it?\n1\nflood 3\nwork 0\nfrobnicate\ncrash 5\necho never\n")
	out, err := cmd.Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 5 {
		t.Fatalf("exit: %v, want code 5; output:\n%s", err, out)
	}
	want := "ORCR_ID=42\nORCR_PATH=a/b\n" +
		"bob> hi there\n" +
		"bob> QUESTION: ship it?\n[1] yes  [2] no\nanswered: 1\n" +
		"bob> flood line 1\nflood line 2\nflood line 3\nflood done\n" +
		"bob> working…\ndone.\n" +
		"bob> unknown: frobnicate\n" +
		"bob> crashing with 5\n"
	if string(out) != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
}

// TestBuildStamped builds the fake agent with a link-time -X: the stamp is in the
// binary, the stamped build is a file of its own beside the plain one, and a second
// call with the same stamps reuses the first build.
func TestBuildStamped(t *testing.T) {
	plain := testbin.Build(t, "orcr/testutil/fakeagent")
	bin := testbin.BuildStamped(t, "orcr/testutil/fakeagent", "main.defaultName=stamped")
	if bin == plain {
		t.Fatalf("the stamped build is the plain one's file %s", bin)
	}
	if again := testbin.BuildStamped(t, "orcr/testutil/fakeagent", "main.defaultName=stamped"); again != bin {
		t.Errorf("second BuildStamped gave %q, first %q", again, bin)
	}
	for path, want := range map[string]string{bin: "stamped> ", plain: "fake> "} {
		cmd := exec.Command(path)
		cmd.Stdin = strings.NewReader("exit\n")
		out, err := cmd.Output()
		if err != nil || !strings.HasPrefix(string(out), want) {
			t.Errorf("%s printed %q (%v), want a prompt %q", path, out, err, want)
		}
	}
}

// TestBuildFailure checks that a package that is not a program is a test failure, not
// a panic or a silent empty path.
func TestBuildFailure(t *testing.T) {
	ft := &fakeT{TB: t}
	func() {
		defer func() { _ = recover() }()
		testbin.Build(ft, "orcr/no/such/package")
	}()
	if !ft.failed {
		t.Error("Build of a missing package did not fail the test")
	}
}

// fakeT records Fatalf instead of stopping the real test.
type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Helper() {}

func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = true
	panic("fatal")
}

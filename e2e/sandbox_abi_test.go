package e2e

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"orcr/testutil/wait"
)

// TestSandboxForcedOldABI: a live server with ORCR_SANDBOX_MAX_ABI=3 confines files
// but not the network (ABI 3 has no TCP rules): the agent connects to a port it was
// not given, cannot write outside, and --explain and doctor say ABI 3 is in force and
// the network is not confined. With ORCR_SANDBOX_MAX_ABI=0 (as on a kernel without
// Landlock) a sandbox asked for is refused with the reason and nothing starts; an
// unreadable value stops the server from starting, naming the variable.
func TestSandboxForcedOldABI(t *testing.T) {
	s := newSandboxEnv(t, "ORCR_SANDBOX_MAX_ABI=3")
	s.serve()
	given, other := listenTCP(t), listenTCP(t)
	s.must("agent", "run", "old/abi", "--sandbox", "--sandbox-port", fmt.Sprint(given), "--cwd", s.work, "--", "sh", "-c",
		probeScript(s.outside, s.user, given, other))
	var screen string
	wait.For(t, 20*time.Second, "the probes at ABI 3", func() bool {
		screen = s.orcr("agent", "read", "old/abi", "--lines", "60").Out
		return strings.Contains(screen, "probes-done")
	})
	got := probeAnswers(screen)
	for k, v := range map[string]string{"write-cwd": "yes", "write-outside": "no", "read-ssh": "no", "connect-other": "yes"} {
		if got[k] != v {
			t.Errorf("at ABI 3 %s: %q, want %q", k, got[k], v)
		}
	}
	ex := s.must("agent", "get", "old/abi", "--explain")
	for _, w := range []string{"on: Landlock ABI 3 of the kernel's", "network NOT confined (ABI < 4)", "warning", "cannot restrict TCP connect",
		"audit", "Landlock logs denials from ABI 7; this server applies ABI 3"} {
		if !strings.Contains(ex, w) {
			t.Errorf("--explain lacks %q:\n%s", w, ex)
		}
	}
	if d := s.orcr("doctor").Out; !strings.Contains(d, "capped at 3 by ORCR_SANDBOX_MAX_ABI") {
		t.Errorf("doctor:\n%s", d)
	}
	if t.Failed() {
		t.Fatalf("screen:\n%s", screen)
	}
	s.srv.Stop()

	off := newSandboxEnv(t, "ORCR_SANDBOX_MAX_ABI=0")
	off.serve()
	r := off.orcr("agent", "run", "none/abi", "--sandbox", "--cwd", off.work, "--", "sh", "-c", "exec cat")
	if r.Code == 0 || !strings.Contains(r.Err, "ORCR_SANDBOX_MAX_ABI=0") || !strings.Contains(r.Err, "--sandbox=off") {
		t.Fatalf("a sandbox without Landlock: exit %d\n%s%s", r.Code, r.Out, r.Err)
	}
	if ls := off.must("agent", "ls"); strings.Contains(ls, "none/abi") {
		t.Fatalf("the refused agent was recorded:\n%s", ls)
	}
	off.must("agent", "run", "none/plain", "--cwd", off.work, "--", "sh", "-c", "exec cat")
	off.srv.Stop()

	bad := newSandboxEnv(t, "ORCR_SANDBOX_MAX_ABI=seven")
	cmd := exec.Command(bad.bin, "serve")
	cmd.Env = bad.vars
	done := make(chan []byte, 1)
	go func() { out, _ := cmd.CombinedOutput(); done <- out }()
	select {
	case out := <-done:
		if !strings.Contains(string(out), `ORCR_SANDBOX_MAX_ABI="seven"`) {
			t.Fatalf("serve with a bad ORCR_SANDBOX_MAX_ABI:\n%s", out)
		}
	case <-time.After(wait.Scale(30 * time.Second)):
		cmd.Process.Kill()
		t.Fatal("serve with a bad ORCR_SANDBOX_MAX_ABI did not stop")
	}
}

package e2e

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
	"orcr/testutil/testbin"
	"orcr/testutil/wait"
)

// newHerdrEnv is an env whose server uses the herdr host, with the protocol-faithful
// test server standing in for herdr (herdr cannot be installed here).
func newHerdrEnv(t *testing.T) *env {
	t.Helper()
	bin := testbin.Build(t, "orcr/herdr/herdrtest/cmd/fakeherdr")
	e := newEnv(t, "ORCR_HOST=herdr", "ORCR_HERDR_BIN="+bin, noCLIs(t), plainShell)
	t.Cleanup(func() {
		cmd := exec.Command(bin, "--session", "orcr", "session", "stop")
		cmd.Env = e.vars
		cmd.Run()
	})
	return e
}

func TestHerdrAgentsSurviveServerKill9(t *testing.T) {
	e := newHerdrEnv(t)
	e.serve()
	if out := e.must("doctor"); !strings.Contains(out, "host     herdr") {
		t.Fatalf("doctor does not report herdr:\n%s", out)
	}
	e.must("agent", "run", "h/a", "--", "sh", "-c", `echo "I am $ORCR_PATH"; exec cat`)
	wait.For(t, 15*time.Second, "greeting", func() bool {
		return strings.Contains(e.orcr("agent", "read", "h/a").Out, "I am h/a")
	})
	before := agentJSON(t, e, "h/a")
	if before.Host != "herdr" || !strings.Contains(before.PaneID, ":") {
		t.Fatalf("not a herdr pane: host %s pane %s", before.Host, before.PaneID)
	}
	e.kill9()
	e.serve()
	after := agentJSON(t, e, "h/a")
	if after.State.Terminal() || after.PaneID != before.PaneID {
		t.Fatalf("after kill -9: %s pane %s (before %s)", after.State, after.PaneID, before.PaneID)
	}
	e.must("agent", "send", "h/a", "after-restart")
	wait.For(t, 15*time.Second, "input after restart", func() bool {
		return strings.Contains(e.orcr("agent", "read", "h/a").Out, "after-restart")
	})
	e.must("agent", "send", "h/a", "--no-enter", "--keys", "ctrl-d")
	out := e.must("agent", "wait", "h/a", "--until", "exited", "--timeout", "15s")
	if !strings.Contains(out, "exited (exit 0)") {
		t.Fatalf("exit on herdr: %q", out)
	}
	if a := agentJSON(t, e, "h/a"); a.State != wire.StateExited || !strings.Contains(a.LastScreen, "after-restart") {
		t.Fatalf("record after exit: %s screen %q", a.State, a.LastScreen)
	}
}

func TestHerdrMissingIntegrationFailsFast(t *testing.T) {
	e := newHerdrEnv(t)
	e.serve()
	r := e.orcr("agent", "run", "h/c", "--provider", "claude", "--prompt", "hi")
	if r.Code != 2 || !strings.Contains(r.Err, "herdr integration install claude") {
		t.Fatalf("claude without integration: exit %d %q", r.Code, r.Err)
	}
}

func TestExplicitMissingHostExits2(t *testing.T) {
	e := newEnv(t, "ORCR_HOST=herdr", "ORCR_HERDR_BIN=/nonexistent/herdr")
	r := e.orcr("serve")
	if r.Code != 2 || !strings.Contains(r.Err, "herdr") {
		t.Fatalf("missing herdr: exit %d %q", r.Code, r.Err)
	}
}

package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
	"orcr/testutil/clis"
	"orcr/testutil/rig"
)

// TestNotSignedInIsSetup: each real CLI without a login. Claude with onboarding done
// takes the prompt and answers "Not logged in · Please run /login"; codex with an
// empty CODEX_HOME and no key shows its sign-in screen and waits there; pi with an
// empty agent dir warns "No models available. Use /login" and waits. `agent run`
// warns up front where the server's accounts know the login is missing (claude,
// codex) and still spawns; each agent is then blocked on setup saying how to log in,
// not "working" or "done" as if a turn had run. The three share one server and start
// side by side, so the test waits for the slowest CLI, not for all three in turn.
func TestNotSignedInIsSetup(t *testing.T) {
	t.Parallel()
	e := rig.New(t)
	claudeCfg := clis.ClaudeConfig(t, filepath.Join(e.Dir, "claude-config")) // onboarded, no token
	codexHome := filepath.Join(e.Dir, "codex-home")                          // no provider, no key
	piDir := filepath.Join(e.Dir, "pi-agent")                                // no models
	for _, d := range []string{codexHome, piDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	e.Vars = append(e.Vars,
		"ORCR_CLAUDE_BIN="+clis.Find(t, "claude", "ORCR_CLAUDE_BIN"), "CLAUDE_CONFIG_DIR="+claudeCfg,
		"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"ORCR_CODEX_BIN="+clis.Find(t, "codex", "ORCR_CODEX_BIN"), "CODEX_HOME="+codexHome,
		"ORCR_PI_BIN="+clis.Find(t, "pi", "ORCR_PI_BIN"), "PI_CODING_AGENT_DIR="+piDir, "PI_OFFLINE=1")
	e.Serve()
	cases := []struct {
		provider, path string
		prompt         bool
		warn           string // a line `agent run` prints, "" for none checked
		detail         string // what the blocked record says to do
		source         string // who decided it, "" for any
	}{
		{"claude", "login/c", true, "orcr: warning: claude account default: no login found; log in with: claude /login",
			"CLAUDE_CONFIG_DIR=" + claudeCfg + " claude /login", ""},
		{"codex", "login/x", true, "orcr: warning: codex account default: no login found; log in with: codex login",
			"codex is not signed in: run `CODEX_HOME=" + codexHome + " codex login`", "screen"},
		{"pi", "login/p", false, "", "/login", "screen"},
	}
	t0 := time.Now()
	for _, c := range cases {
		args := []string{"agent", "run", c.path, "--provider", c.provider, "--cwd", e.Work}
		if c.prompt {
			args = append(args, "--prompt", "hello")
		}
		r := e.Run(args...)
		if r.Code != 0 {
			t.Fatalf("%s: agent run: exit %d: %s", c.provider, r.Code, r.Err)
		}
		if !strings.Contains(r.Err, c.warn) {
			t.Fatalf("%s: agent run stderr %q, want a line with %q", c.provider, r.Err, c.warn)
		}
	}
	for _, c := range cases {
		a := e.WaitAgent(c.path, 90*time.Second, c.provider+" blocked on setup", func(a wire.Agent) bool {
			return a.State == wire.StateBlocked && a.Blocked != nil && a.Blocked.Kind == wire.BlockedSetup
		})
		t.Logf("%s blocked after %s", c.provider, time.Since(t0))
		if !strings.Contains(a.Blocked.Detail, c.detail) || c.source != "" && a.StateSource != c.source {
			t.Fatalf("%s: blocked %+v (%s: %s)", c.provider, a.Blocked, a.StateSource, a.StateReason)
		}
	}
	e.Must("agent", "kill", "login/*", "--yes")
}

package roles_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	orcrrig "orcr/testutil/rig"
	"orcr/testutil/wait"
)

// rig is one isolated orcr installation (testutil/rig: real binary, embedded pty
// host) with the real claude CLI pointed at its scripted model server and no other
// agent CLI unless the test adds it (Pi, Codex, Opencode), so a role's fallback finds
// only what the test installed.
type rig struct {
	*orcrrig.Rig
	roles string // $XDG_CONFIG_HOME/orcr/roles
}

func newClaudeRig(t *testing.T) *rig { return newClaudeRigTB(t) }

func newClaudeRigTB(t testing.TB) *rig {
	t.Helper()
	r := &rig{Rig: orcrrig.New(t)}
	r.OnlyAdded()
	r.Claude()
	r.roles = filepath.Join(r.Config, "orcr", "roles")
	if err := os.MkdirAll(r.roles, 0o700); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *rig) role(name, body string) {
	r.T.Helper()
	if err := os.WriteFile(filepath.Join(r.roles, name+".toml"), []byte(body), 0o600); err != nil {
		r.T.Fatal(err)
	}
}

// runArgs is `agent run PATH` on provider or provider:model with prompt, in the rig's
// repository.
func (r *rig) runArgs(path, choice, prompt string) []string {
	provider, model, _ := strings.Cut(choice, ":")
	args := []string{"agent", "run", path, "--provider", provider, "--prompt", prompt, "--cwd", r.Work}
	if model != "" {
		args = append(args, "--model", model)
	}
	return args
}

// happensWithin polls cond (5 ms, doubling up to 200 ms) for d and reports whether it
// held at any poll: the window of a negative check, which passes only by running to
// its end. The window is wait.Held(d): it grows with the wait scale up to ×2, not ×3-6
// as wait.Until's deadline would (a check that passes is not made more certain by
// waiting six times as long).
func happensWithin(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(wait.Held(d))
	for delay := 5 * time.Millisecond; ; delay = min(delay*2, 200*time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(delay)
	}
}

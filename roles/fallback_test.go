package roles_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	acctapi "orcr/accounts/api"
	"orcr/core/wire"
	"orcr/testutil/modelserver"
	"orcr/testutil/wait"
)

// codexWindowHeaders are the x-codex-* rate-limit headers the real codex CLI writes
// into its rollout's token_count: the 5-hour window at fiveH percent.
func codexWindowHeaders(fiveH int, reset time.Time) map[string]string {
	return map[string]string{
		"x-codex-primary-used-percent": fmt.Sprint(fiveH), "x-codex-primary-window-minutes": "300",
		"x-codex-primary-reset-at":       fmt.Sprint(reset.Unix()),
		"x-codex-secondary-used-percent": "10", "x-codex-secondary-window-minutes": "10080",
		"x-codex-secondary-reset-at": fmt.Sprint(reset.Add(96 * time.Hour).Unix()),
	}
}

// TestRoleSkipsHeldProvider: a role's chain starts with codex, whose one account's
// 5-hour window is full (read from the real codex's rollout, as the scripted server's
// headers said); the role's agent runs on claude, and --explain says why codex was
// skipped. A role whose only provider is held still queues its work (held, with the
// window's reason), never refused.
func TestRoleSkipsHeldProvider(t *testing.T) {
	t.Parallel()
	r := newClaudeRig(t)
	home := r.Codex()
	os.MkdirAll(filepath.Join(r.Dir, "config", "orcr"), 0o700)
	os.WriteFile(filepath.Join(r.Dir, "config", "orcr", "config.toml"),
		[]byte(fmt.Sprintf("[[accounts.codex]]\nlabel = \"main\"\nhome = %q\n", home)), 0o600)
	r.role("impl", `providers = ["codex:gpt-5.3-codex", "claude:sonnet"]
prompt = "Implement {{what}}."
`)
	r.role("codex-only", `providers = ["codex:gpt-5.3-codex"]
prompt = "Implement {{what}}."
`)
	r.Serve()

	reset := time.Now().Add(2 * time.Hour).Truncate(time.Minute)
	r.Models.Push(modelserver.Turn{Text: "spent the window", Usage: modelserver.Usage{Input: 100, Output: 10}, Headers: codexWindowHeaders(100, reset)})
	r.Must("agent", "run", "cx/first", "--provider", "codex", "--cwd", r.Work, "--prompt", "hi")
	if a := r.WaitAgent("cx/first", 120*time.Second, "codex turn", func(a wire.Agent) bool { return a.State == wire.StateDone }); a.Account != "main" {
		t.Fatalf("first codex agent on account %q", a.Account)
	}
	if !wait.Until(30*time.Second, func() bool {
		var l acctapi.AccountListResult
		json.Unmarshal([]byte(r.Must("account", "ls", "--json")), &l)
		for _, ac := range l.Accounts {
			for _, w := range ac.Windows {
				if ac.Provider == "codex" && ac.Label == "main" && w.Window == "5h" && w.State == "exhausted" {
					return true
				}
			}
		}
		return false
	}) {
		t.Fatalf("codex/main 5h never read as full:\n%s", r.Must("account", "ls"))
	}

	r.Models.Push(modelserver.Turn{Text: "Claude implemented it.", Usage: modelserver.Usage{Input: 10, Output: 5}})
	r.Must("agent", "run", "impl/a", "--role", "impl", "--var", "what=the cache", "--cwd", r.Work)
	a := r.WaitAgent("impl/a", 90*time.Second, "the role's turn", func(a wire.Agent) bool {
		return a.State == wire.StateDone && a.LastMessage == "Claude implemented it."
	})
	if a.Provider != "claude" {
		t.Fatalf("role ran on %s, want claude (codex held)", a.Provider)
	}
	want := "skipped codex:gpt-5.3-codex: every account held — codex/main 5h window full, resets " + reset.Format("15:04")
	if out := r.Must("agent", "get", "impl/a", "--explain"); !strings.Contains(out, want) || !strings.Contains(out, "provider claude:sonnet: choice 2 of 2") {
		t.Fatalf("explain lacks %q:\n%s", want, out)
	}

	// Nothing to fall back to: the work waits on the held provider.
	r.Must("agent", "run", "impl/b", "--role", "codex-only", "--var", "what=more", "--cwd", r.Work)
	b := r.Agent("impl/b")
	if b.State != wire.StateQueued || b.Provider != "codex" || !strings.Contains(strings.Join(b.RoleNotes, "\n"), "queued on choice 1 until an account has room") {
		t.Fatalf("held-only role: %s on %s notes %q", b.State, b.Provider, b.RoleNotes)
	}
	if q := r.Must("queue"); !strings.Contains(q, "impl/b") || !strings.Contains(q, "codex/main 5h window full") {
		t.Fatalf("queue:\n%s", q)
	}
}

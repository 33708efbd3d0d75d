package roles_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"orcr/core/secretenv"
	"orcr/core/wire"
	"orcr/testutil/modelserver"
	"orcr/testutil/wait"
)

// TestClaudeRole runs a role through the real claude CLI: the first provider of the
// chain cannot start (opencode is not installed) so claude is used; the role's system
// prompt and skill arrive in the model request; the soft timeout's wrap-up arrives as
// a user turn. (The hard timeout's stop is orcr's, whatever runs in the pane:
// TestRoleHardTimeout proves it on a shell role in seconds, where waiting it out
// here, past a real CLI's slowest first turn, cost 30 s times the wait scale.)
func TestClaudeRole(t *testing.T) {
	t.Parallel()
	r := newClaudeRig(t)
	r.reviewerRole("claude:sonnet")
	r.Serve()

	// Bad input is refused before anything starts.
	if res := r.Run("agent", "run", "review/x", "--role", "reviewer"); res.Code == 0 || !strings.Contains(res.Err, "--var target=") {
		t.Fatalf("missing var: exit %d %s", res.Code, res.Err)
	}
	if res := r.Run("agent", "run", "review/x", "--role", "nope"); res.Code == 0 || !strings.Contains(res.Err, `no role "nope"`) {
		t.Fatalf("unknown role: exit %d %s", res.Code, res.Err)
	}
	if out := r.Must("agent", "ls", "--all"); strings.Contains(out, "review/x") {
		t.Fatalf("a refused run left a record:\n%s", out)
	}
	if out := r.Must("role", "ls"); !strings.Contains(out, "reviewer") || !strings.Contains(out, "opencode:anthropic/claude-sonnet-5 → claude:sonnet") || !strings.Contains(out, "soft 8s") {
		t.Fatalf("role ls:\n%s", out)
	}
	if out := r.Must("role", "show", "reviewer"); !strings.Contains(out, "(reviewer.toml:2)") || !strings.Contains(out, "(default)") {
		t.Fatalf("role show:\n%s", out)
	}

	roleLimits(t, r, "claude:sonnet", "--model sonnet")
}

// TestCodexRole is the role's system prompt and soft timeout through the real codex
// CLI (the hard stop is orcr's, tested once by TestRoleHardTimeout): the system prompt
// arrives as codex's developer message, the wrap-up as a user turn typed into its TUI.
func TestCodexRole(t *testing.T) {
	t.Parallel()
	r := newClaudeRig(t)
	r.Codex()
	r.reviewerRole("codex:gpt-5.3-codex")
	r.Serve()
	roleLimits(t, r, "codex:gpt-5.3-codex", "-m gpt-5.3-codex")
}

// TestPiRole is the same through the real pi CLI (--append-system-prompt).
func TestPiRole(t *testing.T) {
	t.Parallel()
	r := newClaudeRig(t)
	r.Pi()
	r.reviewerRole("pi:" + modelserver.PiModel)
	r.Serve()
	roleLimits(t, r, "pi:"+modelserver.PiModel, "--model "+modelserver.PiModel)
}

// TestOpencodeRole is the same through the real opencode CLI: the system prompt and
// skill go in as an instructions file of its config, which opencode adds to its
// system prompt. The same agent then goes on with the hibernation and wake through
// opencode (its --session, without --model: adapters/opencode's
// TestPrepareSystemPromptAndResume), what TestClaudeHibernateAndResume's provider part
// is for claude: one opencode session for both, where each took its own (an opencode
// start is 3 s of CPU, 60-100 s at a load of 17). OpenCode keeps its sessions in a
// SQLite db, not a file orcr records: a session deleted there is found gone by asking
// opencode itself.
func TestOpencodeRole(t *testing.T) {
	t.Parallel()
	r := newClaudeRig(t)
	r.Opencode()
	choice := "opencode:" + modelserver.OpencodeModel
	r.reviewerRole(choice)
	r.Serve()
	a := roleWrapUp(t, r, choice, "--model "+modelserver.OpencodeModel)
	// The role's turns are over: GC's idle rule comes in by a config reload (SIGHUP),
	// so its sweep every 30 s could not hibernate the agent between them.
	writeGCConfig(r, "1s")
	if err := syscall.Kill(r.Srv.PID(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	a = hibernateAndWake(t, r, "review/auth", choice, a, "Review internal/auth and report BLOCKER lines.", false)
	if !strings.HasPrefix(a.SessionID, "ses_") {
		t.Fatalf("woken opencode: session %q", a.SessionID)
	}
	oneWrapUp(t, r)
}

// skippedChoice is the reviewer role's first provider, one the rig has not installed,
// so a run falls back to the second (choice).
func skippedChoice(choice string) string {
	if strings.HasPrefix(choice, "opencode:") {
		return "pi:anthropic/claude-sonnet-5"
	}
	return "opencode:anthropic/claude-sonnet-5"
}

// reviewerRole writes the role "reviewer": a provider that is not installed then
// choice, with a system prompt, a skill, env, an 8 s soft timeout and a hard timeout
// of an hour (never reached: the test stops the agent once the wrap-up is proven; a
// slow CLI's first turn is never cut short — opencode takes 10-13 s to make its first
// model request on an idle machine and over a minute under a load of 24).
func (r *rig) reviewerRole(choice string) {
	skill := filepath.Join(r.Dir, "review.md")
	os.WriteFile(filepath.Join(skill), []byte("SKILL-MARKER-9: check error paths first.\n"), 0o600)
	r.role("reviewer", `providers = ["`+skippedChoice(choice)+`", "`+choice+`"]
prompt = "Review {{target}} and report BLOCKER lines."
system_prompt = "You are ROLE-MARKER-7, a careful reviewer."
skills = ["`+skill+`"]
env = { REVIEW_STRICT = "1" }
soft_timeout = "8s"
hard_timeout = "1h"
`)
}

// TestRoleHardTimeout: a role's hard timeout stops its agent when it is reached,
// measured from the start; the record says which limit ended it and history lists it.
// The stop is orcr's and the same whatever runs in the pane, so a shell role proves it.
func TestRoleHardTimeout(t *testing.T) {
	t.Parallel()
	r := newClaudeRig(t)
	r.role("bounded", "providers = [\"shell\"]\nhard_timeout = \"2s\"\n")
	r.Serve()
	r.Must("agent", "run", "review/auth", "--role", "bounded", "--cwd", r.Work, "--", "sh", "-c", "sleep 600")
	hard := 2 * time.Second
	a := r.WaitAgent("review/auth", wait.Scale(30*time.Second), "hard timeout", func(a wire.Agent) bool { return a.State.Terminal() })
	if a.State != wire.StateKilled || !strings.Contains(a.StateReason, "hard timeout 2s reached") {
		t.Fatalf("ended %s: %q", a.State, a.StateReason)
	}
	if a.StartedAt == nil || a.EndedAt.Sub(*a.StartedAt) < hard || a.EndedAt.Sub(*a.StartedAt) > hard+wait.Scale(10*time.Second) {
		t.Fatalf("stopped after %v, want about %s", a.EndedAt.Sub(*a.StartedAt), hard)
	}
	hist := r.Must("history", "review/**")
	if !strings.Contains(hist, "review/auth") || !strings.Contains(hist, "bounded") || !strings.Contains(hist, "hard timeout") {
		t.Fatalf("history:\n%s", hist)
	}
}

// roleLimits runs the reviewer role (its chain ending in choice) and checks the
// fallback, the system prompt and skill in the model request and the soft timeout's
// one wrap-up as a user turn; argv is how the launch names the model.
func roleLimits(t *testing.T, r *rig, choice, argv string) {
	roleWrapUp(t, r, choice, argv)
	r.Must("agent", "kill", "review/auth")
	oneWrapUp(t, r)
}

// roleWrapUp is roleLimits up to the wrap-up's turn, and returns the agent's record
// after it.
func roleWrapUp(t *testing.T, r *rig, choice, argv string) wire.Agent {
	provider, _, _ := strings.Cut(choice, ":")
	r.Models.Push(modelserver.Turn{Text: "No blockers in internal/auth.", Usage: modelserver.Usage{Input: 10, Output: 5}},
		modelserver.Turn{Text: "Summary: reviewed internal/auth, nothing left.", Usage: modelserver.Usage{Input: 10, Output: 5}})
	r.Must("agent", "run", "review/auth", "--role", "reviewer", "--var", "target=internal/auth", "--cwd", r.Work)
	// A CLI slower to start than the soft timeout (opencode, 10-13 s here) gets the
	// wrap-up right after its first report, so the first answer may be overtaken.
	a := r.WaitAgent("review/auth", 90*time.Second, "first turn", func(a wire.Agent) bool {
		return a.LastMessage == "No blockers in internal/auth." || a.Limits.WrapUpAt != nil && r.Models.Played() >= 1
	})
	// The model is what the transcript reports once it answers; the launch asked for sonnet.
	if a.Provider != provider || !strings.Contains(strings.Join(a.Argv, " "), argv) || a.Role != "reviewer" || a.Env["REVIEW_STRICT"] != secretenv.Redacted {
		t.Fatalf("agent %s argv %q role %q env %v", a.Provider, a.Argv, a.Role, a.Env)
	}
	q, ok := r.RequestWith("ROLE-MARKER-7", "SKILL-MARKER-9")
	if !ok {
		t.Fatalf("no model request carried the role's system prompt and skill (%d requests)", len(r.Models.Requests()))
	}
	if got := q.LastUser(); !strings.Contains(got, "Review internal/auth and report BLOCKER lines.") {
		t.Fatalf("first user turn %q", got)
	}
	explain := r.Must("agent", "get", "review/auth", "--explain")
	if !strings.Contains(explain, "role:") || !strings.Contains(explain, "skipped "+skippedChoice(choice)+": "+strings.SplitN(skippedChoice(choice), ":", 2)[0]+" not found") ||
		!strings.Contains(explain, choice+": choice 2 of 2") {
		t.Fatalf("explain:\n%s", explain)
	}

	// The soft timeout: one wrap-up message, as a user turn.
	a = r.WaitAgent("review/auth", 60*time.Second, "wrap-up turn", func(a wire.Agent) bool {
		return a.LastMessage == "Summary: reviewed internal/auth, nothing left." && a.Limits.WrapUpAt != nil
	})
	q, ok = r.RequestWith("soft time limit of 8s")
	if !ok || !strings.Contains(q.LastUser(), "Wrap up now") {
		t.Fatalf("the wrap-up did not arrive as a user turn (found %v)", ok)
	}
	return a
}

// oneWrapUp checks that the agent's one wrap-up was sent once (the agent stopped).
func oneWrapUp(t *testing.T, r *rig) {
	t.Helper()
	n := 0
	for _, q := range r.Models.Requests() {
		if q.Scripted && strings.Count(q.LastUser(), "soft time limit") > 0 {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d requests ended with a wrap-up, want 1", n)
	}
}

// TestClaudeValidate: a repository's validate.sh fails on the agent's first "done",
// its output goes back to the agent and arrives in the next model request, and the
// retry passes; the record keeps both attempts and after.sh runs once. The hooks do
// not depend on the provider, and what does (each CLI's "done" and a turn typed into
// it) is tested once per provider where it lives: adapters/e2e's Through-orcr tests
// (codex, pi), adapters/opencode's TestRealOpenCode and the wrap-up of this package's
// TestOpencodeRole. So claude alone runs it here.
func TestClaudeValidate(t *testing.T) {
	t.Parallel()
	validateRetry(t, newClaudeRig(t), "claude")
}

// validateRetry runs the validation scenario with provider (or provider:model) on
// rig r (not yet serving).
func validateRetry(t *testing.T, r *rig, choice string) {
	hooks := filepath.Join(r.Work, ".orcr", "hooks")
	os.MkdirAll(hooks, 0o755)
	// Fails the first time (no marker file yet), passes after.
	os.WriteFile(filepath.Join(hooks, "validate.sh"), []byte(`#!/bin/sh
if [ -f .validated-once ]; then echo "all checks pass"; exit 0; fi
touch .validated-once
echo "FAIL: TestLogin (VALIDATE-MARKER-3)"
exit 1
`), 0o755)
	os.WriteFile(filepath.Join(hooks, "before.sh"), []byte("#!/bin/sh\necho before ran for $ORCR_PATH\n"), 0o755)
	os.WriteFile(filepath.Join(hooks, "after.sh"), []byte("#!/bin/sh\necho after >> after.log\n"), 0o755)
	r.Serve()
	r.Models.Push(modelserver.Turn{Text: "Implemented login.", Usage: modelserver.Usage{Input: 10, Output: 5}},
		modelserver.Turn{Text: "Fixed TestLogin.", Usage: modelserver.Usage{Input: 10, Output: 5}})
	r.Must(r.runArgs("impl/login", choice, "implement login")...)
	a := r.WaitAgent("impl/login", 120*time.Second, "validation passed", func(a wire.Agent) bool {
		n := 0
		for _, h := range a.Hooks {
			if h.Hook == wire.HookValidate {
				n++
			}
		}
		return n >= 2
	})
	var got []string
	for _, h := range a.Hooks {
		got = append(got, h.Hook+":"+h.Result)
	}
	if strings.Join(got, " ") != "before:passed validate:failed validate:passed" && strings.Join(got, " ") != "before:passed validate:failed validate:passed after:passed" {
		t.Fatalf("hook runs %v", got)
	}
	if !strings.Contains(a.Hooks[0].Output, "before ran for impl/login") || !strings.Contains(a.Hooks[1].Output, "VALIDATE-MARKER-3") {
		t.Fatalf("hook outputs %+v", a.Hooks)
	}
	q, ok := r.RequestWith("VALIDATE-MARKER-3")
	if !ok || !strings.Contains(q.LastUser(), "validate.sh failed (exit 1, attempt 1 of 3)") {
		t.Fatalf("the failing output did not arrive as the next user turn (found %v)", ok)
	}
	// The Stop hook can come before the transcript's last line (agent-clis.md §8).
	r.WaitAgent("impl/login", 20*time.Second, "second answer", func(a wire.Agent) bool { return a.LastMessage == "Fixed TestLogin." })
	r.WaitAgent("impl/login", 20*time.Second, "after.sh", func(a wire.Agent) bool {
		return len(a.Hooks) == 4 && a.Hooks[3].Hook == wire.HookAfter
	})
	if b, _ := os.ReadFile(filepath.Join(r.Work, "after.log")); string(b) != "after\n" {
		t.Fatalf("after.log %q", b)
	}
	if out := r.Must("agent", "get", "impl/login", "--explain"); !strings.Contains(out, "validate.sh #1 failed exit 1") ||
		!strings.Contains(out, "FAIL: TestLogin") {
		t.Fatalf("explain:\n%s", out)
	}
}

// TestBrokenHooks: a before.sh that is not executable fails the launch with a clear
// state on the record; one that hangs is killed at the repo's hook timeout; a
// validate.sh that is not executable fails the launch before any turn is spent.
func TestBrokenHooks(t *testing.T) {
	t.Parallel()
	r := newClaudeRig(t)
	repo := filepath.Join(r.Work, "noexec")
	os.MkdirAll(filepath.Join(repo, ".orcr", "hooks"), 0o755)
	os.WriteFile(filepath.Join(repo, ".orcr", "hooks", "before.sh"), []byte("#!/bin/sh\ntrue\n"), 0o644)
	hang := filepath.Join(r.Work, "hang")
	os.MkdirAll(filepath.Join(hang, ".orcr", "hooks"), 0o755)
	os.WriteFile(filepath.Join(hang, ".orcr", "hooks", "before.sh"), []byte("#!/bin/sh\nsleep 300\n"), 0o755)
	os.WriteFile(filepath.Join(hang, ".orcr", "config.toml"), []byte("[hooks]\ntimeout = \"1s\"\n"), 0o644)
	novalidate := filepath.Join(r.Work, "novalidate")
	os.MkdirAll(filepath.Join(novalidate, ".orcr", "hooks"), 0o755)
	os.WriteFile(filepath.Join(novalidate, ".orcr", "hooks", "validate.sh"), []byte("#!/bin/sh\ntrue\n"), 0o644)
	r.Serve()
	r.Must("agent", "run", "h/novalidate", "--cwd", novalidate, "--", "sh", "-c", "sleep 60")
	a := r.WaitAgent("h/novalidate", 20*time.Second, "failed", func(a wire.Agent) bool { return a.State.Terminal() })
	if a.State != wire.StateFailed || !strings.Contains(a.Error, "validate.sh is not executable; make it so with: chmod +x") || a.PID != 0 {
		t.Fatalf("validate noexec: %s %q pid %d", a.State, a.Error, a.PID)
	}
	r.Must("agent", "run", "h/noexec", "--cwd", repo, "--", "sh", "-c", "sleep 60")
	r.Must("agent", "run", "h/hang", "--cwd", hang, "--", "sh", "-c", "sleep 60")
	a = r.WaitAgent("h/noexec", 20*time.Second, "failed", func(a wire.Agent) bool { return a.State.Terminal() })
	if a.State != wire.StateFailed || !strings.Contains(a.Error, "before.sh is not executable") || !strings.Contains(a.Error, "chmod +x") ||
		len(a.Hooks) != 1 || a.Hooks[0].Result != wire.HookNotExecutable {
		t.Fatalf("noexec: %s %q %+v", a.State, a.Error, a.Hooks)
	}
	a = r.WaitAgent("h/hang", 20*time.Second, "failed", func(a wire.Agent) bool { return a.State.Terminal() })
	if a.State != wire.StateFailed || !strings.Contains(a.Error, "before.sh timed out") || len(a.Hooks) != 1 || a.Hooks[0].Result != wire.HookTimeout {
		t.Fatalf("hang: %s %q %+v", a.State, a.Error, a.Hooks)
	}
}

// TestMaxTurns: a role's turn budget stops the agent after its Nth finished turn (a
// turn is a working → done cycle).
func TestMaxTurns(t *testing.T) {
	t.Parallel()
	r := newClaudeRig(t)
	r.role("twoturns", "providers = [\"claude:sonnet\"]\nprompt = \"one\"\nmax_turns = 2\n")
	r.Serve()
	r.Models.Push(modelserver.Turn{Text: "first", Usage: modelserver.Usage{Input: 1, Output: 1}},
		modelserver.Turn{Text: "second", Usage: modelserver.Usage{Input: 1, Output: 1}})
	r.Must("agent", "run", "t/x", "--role", "twoturns", "--cwd", r.Work)
	a := r.WaitAgent("t/x", 90*time.Second, "first turn", func(a wire.Agent) bool { return a.Limits.Turns == 1 })
	if a.State.Terminal() {
		t.Fatalf("stopped after one turn of two: %s %q", a.State, a.StateReason)
	}
	r.Must("agent", "send", "t/x", "two")
	a = r.WaitAgent("t/x", 60*time.Second, "stopped", func(a wire.Agent) bool { return a.State.Terminal() })
	// (The stop can come before the transcript's last line is read, so the second
	// turn is checked at the model server.)
	if a.State != wire.StateKilled || a.StateReason != "max_turns 2 reached" || a.Limits.Turns != 2 || r.Models.Played() != 2 {
		t.Fatalf("ended %s %q turns %d played %d", a.State, a.StateReason, a.Limits.Turns, r.Models.Played())
	}
}

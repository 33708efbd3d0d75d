package e2e_test

import (
	"encoding/json"
	"fmt"
	"orcr/testutil/rig"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	acctapi "orcr/accounts/api"
	"orcr/core/wire"

	"orcr/testutil/clis"
	"orcr/testutil/modelserver"
	"orcr/testutil/wait"
)

// claudeAccountsRig is an orcr with two claude accounts (two config dirs) against one
// scripted model server whose replies carry the rate-limit headers claude reads.
func claudeAccountsRig(t *testing.T, extra ...string) (*rig.Rig, *modelserver.Server, string) {
	bin := clis.Find(t, "claude", "ORCR_CLAUDE_BIN")
	e := rig.New(t)
	var accts strings.Builder
	for _, l := range []string{"work", "spare"} {
		dir := clis.ClaudeConfig(t, filepath.Join(e.Dir, "claude-"+l))
		// CLAUDE_CODE_OAUTH_TOKEN is subscription-style auth: claude then shows the
		// windows in its status line (agent-clis.md §8).
		fmt.Fprintf(&accts, "[[accounts.claude]]\nlabel = %q\nconfig_dir = %q\nenv = { CLAUDE_CODE_OAUTH_TOKEN = \"tok-%s\" }\n", l, dir, l)
	}
	cfgDir := filepath.Join(e.Config, "orcr")
	os.MkdirAll(cfgDir, 0o700)
	os.WriteFile(filepath.Join(cfgDir, "config.toml"), []byte("[accounts]\nmode = \"ordered\"\nheadroom = 0.9\nhold_below = 5\nresume_stagger = \"1s\"\n"+strings.Join(extra, "\n")+"\n"+accts.String()), 0o600)
	e.Vars = append(e.Vars, "ORCR_CLAUDE_BIN="+bin, "ANTHROPIC_BASE_URL="+e.Models.URL, "DISABLE_AUTOUPDATER=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
	e.Serve()
	return e, e.Models, e.Work
}

func limitHeaders(fiveH, weekly float64, reset time.Time) map[string]string {
	ep := fmt.Sprint(reset.Unix())
	return map[string]string{
		"anthropic-ratelimit-unified-status":         "allowed",
		"anthropic-ratelimit-unified-5h-status":      "allowed",
		"anthropic-ratelimit-unified-5h-utilization": fmt.Sprint(fiveH),
		"anthropic-ratelimit-unified-5h-reset":       ep,
		"anthropic-ratelimit-unified-7d-status":      "allowed",
		"anthropic-ratelimit-unified-7d-utilization": fmt.Sprint(weekly),
		"anthropic-ratelimit-unified-7d-reset":       fmt.Sprint(reset.Add(72 * time.Hour).Unix()),
	}
}

func accounts(e *rig.Rig) acctapi.AccountListResult {
	e.T.Helper()
	var r acctapi.AccountListResult
	if err := json.Unmarshal([]byte(e.Must("account", "ls", "--json")), &r); err != nil {
		e.T.Fatal(err)
	}
	return r
}

func window(r acctapi.AccountListResult, label, win, fam string) *acctapi.Window {
	for _, a := range r.Accounts {
		if a.Provider == "claude" && a.Label == label {
			for i := range a.Windows {
				if a.Windows[i].Window == win && a.Windows[i].Family == fam {
					return &a.Windows[i]
				}
			}
		}
	}
	return nil
}

// TestClaudeAccountsNearLimit: the first account's window reaches 95 % through
// claude's own status line (the server's rate-limit headers); new work then lands on
// the second account, with that account's config dir and env.
func TestClaudeAccountsNearLimit(t *testing.T) {
	t.Parallel()
	e, srv, work := claudeAccountsRig(t)
	reset := time.Now().Add(3 * time.Hour).Truncate(time.Second)
	srv.SetDefault(modelserver.Turn{Text: "ok", Usage: modelserver.Usage{Input: 1, Output: 1}, Headers: limitHeaders(0.95, 0.41, reset)})
	srv.Push(modelserver.Turn{Text: "first done", Usage: modelserver.Usage{Input: 10, Output: 5}, Headers: limitHeaders(0.95, 0.41, reset)})
	e.Must("agent", "run", "r/a", "--provider", "claude", "--cwd", work, "--prompt", "hello")
	a := e.WaitAgent("r/a", 90*time.Second, "first turn", func(a wire.Agent) bool { return a.State == wire.StateDone })
	if a.Account != "work" {
		t.Fatalf("first agent on %q, want work (ordered: the first account)", a.Account)
	}
	var w *acctapi.Window
	if !wait.Until(30*time.Second, func() bool { w = window(accounts(e), "work", "5h", ""); return w != nil && w.UsedPct == 95 }) {
		t.Fatalf("no 5h reading of 95%% on work from the status line: %s", e.Must("account", "ls"))
	}
	if w.ResetsAt == nil || !w.ResetsAt.Equal(reset) || w.State != "throttled" {
		t.Fatalf("window %+v, want reset %v and throttled", w, reset)
	}
	if out := e.Must("usage", "--select", "--provider", "claude"); !strings.Contains(out, "→ spare") || !strings.Contains(out, "over headroom") {
		t.Fatalf("usage --select:\n%s", out)
	}
	// Normal work lands on spare; urgent work may still use the first account's
	// headroom. An account is chosen when the spawn is admitted, from the readings
	// taken so far (work's 95 % above), so the two start side by side instead of one
	// claude turn apart (each reply may go to either; what is checked is the
	// accounts and where the transcript is).
	srv.Push(modelserver.Turn{Text: "second done", Usage: modelserver.Usage{Input: 10, Output: 5}, Headers: limitHeaders(0.10, 0.05, reset)},
		modelserver.Turn{Text: "urgent done", Usage: modelserver.Usage{Input: 1, Output: 1}, Headers: limitHeaders(0.96, 0.41, reset)})
	e.Must("agent", "run", "r/b", "--provider", "claude", "--cwd", work, "--prompt", "hello again")
	e.Must("agent", "run", "r/c", "--provider", "claude", "--cwd", work, "--priority", "5", "--prompt", "urgent")
	b := e.WaitAgent("r/b", 90*time.Second, "second turn", func(a wire.Agent) bool { return a.State == wire.StateDone })
	if b.Account != "spare" {
		t.Fatalf("second agent on %q, want spare", b.Account)
	}
	// It ran with spare's config dir: its transcript is there.
	if !strings.HasPrefix(b.Transcript, filepath.Join(e.Dir, "claude-spare")) {
		t.Fatalf("transcript %q not under spare's config dir", b.Transcript)
	}
	c := e.WaitAgent("r/c", 90*time.Second, "urgent turn", func(a wire.Agent) bool { return a.State == wire.StateDone })
	if c.Account != "work" {
		t.Fatalf("priority-5 agent on %q, want work", c.Account)
	}
	// A spawn that names an account that does not exist is refused up front.
	if r := e.Run("agent", "run", "r/d", "--provider", "claude", "--account", "nope", "--prompt", "x"); r.Code == 0 || !strings.Contains(r.Err, `no claude account "nope"`) {
		t.Fatalf("unknown account: exit %d %s", r.Code, r.Err)
	}
}

// TestBudgetHoldsSubtree: a budget on a subtree, reached by a real claude's usage,
// holds the next spawn under it (queue reason: budget) and not one elsewhere.
func TestBudgetHoldsSubtree(t *testing.T) {
	t.Parallel()
	e, srv, work := claudeAccountsRig(t)
	srv.Push(modelserver.Turn{Text: "spent", Usage: modelserver.Usage{Input: 5000, Output: 5000}})
	e.Must("budget", "set", "review/**", "--tokens", "1000")
	e.Must("agent", "run", "review/a", "--provider", "claude", "--cwd", work, "--prompt", "spend")
	e.WaitAgent("review/a", 90*time.Second, "the spend", func(a wire.Agent) bool { return a.Usage.OutputTokens >= 5000 })
	if !wait.Until(10*time.Second, func() bool { return strings.Contains(e.Must("budget", "ls"), "REACHED") }) {
		t.Fatalf("budget not reached:\n%s", e.Must("budget", "ls"))
	}
	e.Must("agent", "run", "review/b", "--provider", "claude", "--cwd", work, "--prompt", "more")
	e.Must("agent", "run", "other/c", "--provider", "shell", "--", "sleep", "3")
	e.WaitAgent("other/c", 20*time.Second, "the spawn elsewhere", func(a wire.Agent) bool { return a.State == wire.StateWorking || a.State == wire.StateDone })
	q := e.Must("queue")
	if !strings.Contains(q, "review/b") || !strings.Contains(q, "budget review/**") {
		t.Fatalf("queue:\n%s", q)
	}
	if a := e.Agent("review/b"); a.State != wire.StateQueued {
		t.Fatalf("held spawn is %s", a.State)
	}
	e.Must("budget", "rm", "review/**")
	e.WaitAgent("review/b", 30*time.Second, "admission after the budget went", func(a wire.Agent) bool { return a.State != wire.StateQueued })
}

// TestClaudeOpusLimitHoldsOpusOnly: a 429 mid-turn naming the Opus weekly limit blocks
// the opus agent; queued opus work on the account is held (not cancelled) while
// sonnet work runs; after the scripted reset the blocked agent is told to continue
// and the held spawn is admitted.
func TestClaudeOpusLimitHoldsOpusOnly(t *testing.T) {
	t.Parallel()
	e, srv, work := claudeAccountsRig(t)
	// One account only matters here: pin everything to work. The reset is whole
	// minutes (claude's message says "resets 3:04pm") and must still be ahead once the
	// limit is hit and the second opus spawn is held: a real claude's first turn took
	// 55 s at a load of 40, and a reset 90 s out had passed before the queue was read.
	// So the reset is set when the opus request arrives (after the CLI's start, however
	// slow), the next whole minute at least 4 s (scaled with the test's waits) after
	// it: fixed at the start with the start's margin in it, the test waited out 45 s ×
	// the scale plus the minute's rest after the limit, 2-5 minutes in CI. From the
	// request to the sonnet spawn's admission took 0.36 s here (session 15); a margin
	// of 15 s scaled (45-90 s in CI) was waited out in every run.
	var resetMu sync.Mutex
	var built, limitAt time.Time
	srv.Push(modelserver.Turn{Match: func(r modelserver.Request) bool { return strings.Contains(string(r.Body), "opus") },
		Build: func(modelserver.Request) modelserver.Turn {
			at := time.Now().Add(wait.Scale(4 * time.Second)).Truncate(time.Minute).Add(time.Minute)
			resetMu.Lock()
			built, limitAt = at, time.Now()
			resetMu.Unlock()
			msg := "You've hit your Opus limit · resets " + strings.ToLower(at.UTC().Format("3:04pm")) + " (UTC)"
			return modelserver.Turn{Limit: &modelserver.LimitError{ResetsAt: at, Message: msg, Claim: "seven_day_opus"}}
		}})
	e.Must("agent", "run", "m/opus", "--provider", "claude", "--account", "work", "--model", "claude-opus-4-5", "--cwd", work, "--prompt", "big job")
	a := e.WaitAgent("m/opus", 90*time.Second, "the opus limit", func(a wire.Agent) bool {
		return a.State == wire.StateBlocked && a.Blocked != nil && a.Blocked.Kind == wire.BlockedLimit
	})
	resetMu.Lock()
	reset, hit := built, limitAt
	resetMu.Unlock()
	if a.Blocked.ResetsAt == nil || !a.Blocked.ResetsAt.Equal(reset) {
		t.Fatalf("blocked %+v, want reset %v", a.Blocked, reset)
	}
	if !wait.Until(20*time.Second, func() bool {
		w := window(accounts(e), "work", "weekly", "opus")
		return w != nil && w.State == "exhausted"
	}) {
		t.Fatalf("no exhausted opus window:\n%s", e.Must("account", "ls"))
	}
	e.Must("agent", "run", "m/opus2", "--provider", "claude", "--account", "work", "--model", "claude-opus-4-5", "--cwd", work, "--prompt", "more opus")
	// Read while the window is full (the hold ends at the reset).
	q := e.Must("queue")
	if !strings.Contains(q, "m/opus2") || !strings.Contains(q, "claude/work weekly opus window full") {
		t.Fatalf("queue (reset %s, now %s):\n%s", reset.Format(time.TimeOnly), time.Now().Format(time.TimeOnly), q)
	}
	e.Must("agent", "run", "m/sonnet", "--provider", "claude", "--account", "work", "--model", "claude-sonnet-4-5", "--cwd", work, "--prompt", "sonnet job")
	if a := e.Agent("m/sonnet"); a.State == wire.StateQueued || time.Now().After(reset) {
		t.Fatalf("sonnet on the opus-limited account: %s (%s) at %s, reset %s", a.State, a.StateReason, time.Now().Format(time.TimeOnly), reset.Format(time.TimeOnly))
	}
	t.Logf("limit hit %s, sonnet admitted %s, the reset %s after that", hit.Format("15:04:05.000"), time.Now().Format("15:04:05.000"), time.Until(reset).Round(time.Millisecond))
	s := e.WaitAgent("m/sonnet", 90*time.Second, "sonnet work runs", func(a wire.Agent) bool { return a.State == wire.StateDone })
	if s.Account != "work" {
		t.Fatalf("sonnet on %q", s.Account)
	}
	// After the reset: the blocked agent continues (the next conversation request
	// is the default reply) and the held spawn starts.
	srv.SetDefault(modelserver.Turn{Text: "continued", Usage: modelserver.Usage{Input: 1, Output: 1}})
	e.WaitAgent("m/opus", time.Until(reset)+90*time.Second, "resume after the reset", func(a wire.Agent) bool {
		return a.State == wire.StateDone && a.LastMessage == "continued"
	})
	e.WaitAgent("m/opus2", 60*time.Second, "the held spawn admitted", func(a wire.Agent) bool { return a.State != wire.StateQueued })
}

// TestCodexAccountReadings: a configured codex account (its own CODEX_HOME) gets its
// 5-hour and weekly readings from the token_count rate limits codex writes to its
// rollout — the server's x-codex-* headers, read by the real CLI, no tokens spent
// on asking.
func TestCodexAccountReadings(t *testing.T) {
	t.Parallel()
	bin := clis.Find(t, "codex", "ORCR_CODEX_BIN")
	e := rig.New(t)
	srv, work := e.Models, e.Work
	// The account's own CODEX_HOME, not the one Rig.Codex makes: the account names it.
	home := filepath.Join(e.Dir, "codex-main")
	if err := modelserver.WriteCodexHome(home, srv.URL); err != nil {
		t.Fatal(err)
	}
	cfgDir := filepath.Join(e.Config, "orcr")
	os.MkdirAll(cfgDir, 0o700)
	os.WriteFile(filepath.Join(cfgDir, "config.toml"), []byte(fmt.Sprintf(
		"[[accounts.codex]]\nlabel = \"main\"\nhome = %q\nenv = { %s = \"k\" }\n", home, modelserver.CodexKeyEnv)), 0o600)
	e.Vars = append(e.Vars, "ORCR_CODEX_BIN="+bin)
	e.Serve()
	reset := time.Now().Add(2 * time.Hour).Truncate(time.Second)
	srv.Push(modelserver.Turn{Text: "done", Usage: modelserver.Usage{Input: 100, Output: 10}, Headers: map[string]string{
		"x-codex-primary-used-percent": "42", "x-codex-primary-window-minutes": "300",
		"x-codex-primary-reset-at":       fmt.Sprint(reset.Unix()),
		"x-codex-secondary-used-percent": "30", "x-codex-secondary-window-minutes": "10080",
		"x-codex-secondary-reset-at": fmt.Sprint(reset.Add(96 * time.Hour).Unix()),
	}})
	e.Must("agent", "run", "cx/a", "--provider", "codex", "--cwd", work, "--prompt", "hi")
	a := e.WaitAgent("cx/a", 120*time.Second, "turn done", func(a wire.Agent) bool { return a.State == wire.StateDone })
	if a.Account != "main" || !strings.HasPrefix(a.Transcript, home) {
		t.Fatalf("account %q transcript %q", a.Account, a.Transcript)
	}
	var five, week *acctapi.Window
	if !wait.Until(30*time.Second, func() bool {
		l := accounts(e)
		for _, ac := range l.Accounts {
			if ac.Provider == "codex" && ac.Label == "main" {
				for i := range ac.Windows {
					switch ac.Windows[i].Window {
					case "5h":
						five = &ac.Windows[i]
					case "weekly":
						week = &ac.Windows[i]
					}
				}
			}
		}
		return five != nil && week != nil && five.UsedPct == 42 && week.UsedPct == 30
	}) {
		t.Fatalf("codex/main readings: %s", e.Must("account", "ls"))
	}
	if five.ResetsAt == nil || five.ResetsAt.Sub(reset).Abs() > time.Minute {
		t.Fatalf("5h reset %v, want %v", five.ResetsAt, reset)
	}
	if out := e.Must("usage", "--history", "--provider", "codex"); !strings.Contains(out, "codex/main") || !strings.Contains(out, "42%") {
		t.Fatalf("history:\n%s", out)
	}
}

// TestAccountsBadInput: a configured account whose config dir is missing is shown by
// doctor with how to log in and skipped by admission with the reason (work waits, it
// is not cancelled); two accounts with one label make serve refuse the config.
func TestAccountsBadInput(t *testing.T) {
	t.Parallel()
	e := rig.New(t)
	cfgDir := filepath.Join(e.Config, "orcr")
	os.MkdirAll(cfgDir, 0o700)
	missing := filepath.Join(e.Dir, "nowhere")
	os.WriteFile(filepath.Join(cfgDir, "config.toml"), []byte(fmt.Sprintf("[[accounts.claude]]\nlabel = \"work\"\nconfig_dir = %q\n", missing)), 0o600)
	e.Serve()
	doc := e.Must("doctor")
	// doctor aligns its columns: the words are compared, not the spaces between them.
	if !strings.Contains(strings.Join(strings.Fields(doc), " "), "claude work NOT USABLE: config dir "+missing+" does not exist; log in with: CLAUDE_CONFIG_DIR="+missing+" claude /login") {
		t.Fatalf("doctor:\n%s", doc)
	}
	if ls := e.Must("account", "ls"); !strings.Contains(ls, "claude/work") || !strings.Contains(ls, "skipped: config dir") {
		t.Fatalf("account ls:\n%s", ls)
	}
	e.Must("agent", "run", "w/a", "--provider", "claude", "--prompt", "x")
	if !wait.Until(5*time.Second, func() bool { return strings.Contains(e.Must("queue"), "claude/work: config dir") }) {
		t.Fatalf("queue:\n%s", e.Must("queue"))
	}
	if a := e.Agent("w/a"); a.State != wire.StateQueued {
		t.Fatalf("spawn on a missing account is %s, want queued", a.State)
	}
	if r := e.Run("budget", "set", "x/**", "--usd", "-1"); r.Code == 0 || !strings.Contains(r.Err, "out of range: it must be 0 to") {
		t.Fatalf("negative budget: %d %s", r.Code, r.Err)
	}
	e.Stop()
	os.WriteFile(filepath.Join(cfgDir, "config.toml"), []byte("[[accounts.claude]]\nlabel = \"a\"\n[[accounts.claude]]\nlabel = \"a\"\n"), 0o600)
	r := e.Run("serve")
	if r.Code == 0 || !strings.Contains(r.Err, `two claude accounts are labelled "a"`) {
		t.Fatalf("serve with duplicate labels: exit %d %s", r.Code, r.Err)
	}
}

// TestBudgetStopWrapsUp: a stop budget reached by a real claude's usage sends it one
// wrap-up message (which the CLI really takes as a turn) and stops it after the grace.
func TestBudgetStopWrapsUp(t *testing.T) {
	t.Parallel()
	e, srv, work := claudeAccountsRig(t, `budget_grace = "10s"`)
	e.Must("budget", "set", "review/**", "--tokens", "1000", "--action", "stop")
	srv.Push(modelserver.Turn{Text: "spent", Usage: modelserver.Usage{Input: 5000, Output: 5000}})
	e.Must("agent", "run", "review/a", "--provider", "claude", "--cwd", work, "--prompt", "spend")
	wrapped := func() bool {
		for _, r := range srv.Requests() {
			if strings.Contains(string(r.Body), "budget is spent. Wrap up now") {
				return true
			}
		}
		return false
	}
	if !wait.Until(60*time.Second, wrapped) {
		t.Fatalf("the wrap-up message never reached the model; screen:\n%s", e.Run("agent", "read", "review/a").Out)
	}
	if a := e.Agent("review/a"); a.State.Terminal() {
		t.Fatalf("stopped before its grace: %s", a.State)
	}
	a := e.WaitAgent("review/a", 60*time.Second, "stopped by the budget", func(a wire.Agent) bool { return a.State.Terminal() })
	if a.State != wire.StateKilled {
		t.Fatalf("ended %s (%s), want killed", a.State, a.StateReason)
	}
}

// TestBudgetStopLeavesPromptAlone: a stop budget reached while claude waits on
// `Bash(rm -rf build)` does not type its wrap-up into the prompt (its Enter would be
// "Yes" and build/ would go): the message waits for an answer that does not come
// within the grace, and the agent is stopped with build/ intact.
func TestBudgetStopLeavesPromptAlone(t *testing.T) {
	t.Parallel()
	e, srv, work := claudeAccountsRig(t, `budget_grace = "3s"`)
	keep := filepath.Join(work, "build", "keep.o")
	os.MkdirAll(filepath.Dir(keep), 0o755)
	os.WriteFile(keep, []byte("obj"), 0o644)
	e.Must("budget", "set", "clean/**", "--tokens", "1000", "--action", "stop")
	turn := bashTurn("rm -rf build")
	turn.Usage = modelserver.Usage{Input: 5000, Output: 5000}
	srv.Push(turn)
	e.Must("agent", "run", "clean/a", "--provider", "claude", "--cwd", work, "--prompt", "remove the build dir",
		"--", "--permission-mode", "default")
	a := e.WaitAgent("clean/a", 90*time.Second, "stopped by the budget", func(a wire.Agent) bool { return a.State.Terminal() })
	if a.State != wire.StateKilled {
		t.Fatalf("ended %s (%s), want killed", a.State, a.StateReason)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("build/ is gone: the wrap-up answered the permission prompt (%v)", err)
	}
	for _, r := range srv.Requests() {
		if strings.Contains(string(r.Body), "budget is spent. Wrap up now") {
			t.Fatal("the wrap-up reached the model through the prompt")
		}
	}
}

package roles_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"orcr/core/wire"
	"orcr/planning"
	"orcr/roles"
)

// designExample is DESIGN §12's role, with the skill path pointed at a temp file.
const designExample = `providers = ["claude:sonnet", "codex:gpt-5.5"]   # fallback order, provider:model
prompt = "Review {{target}} and report BLOCKER lines."
system_prompt = "You are a careful reviewer."
skills = ["SKILL"]      # appended to the system prompt
env = { REVIEW_STRICT = "1" }
budget_usd = 2
max_turns = 30
soft_timeout = "20m"
hard_timeout = "40m"
`

func check() roles.Checker { return roles.CatalogChecker(planning.Default()) }

func writeRole(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".toml"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func skill(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "review.md")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDesignExampleParses(t *testing.T) {
	sk := skill(t, "Check error paths first.\n")
	src := strings.Replace(designExample, "SKILL", sk, 1)
	r, err := roles.Parse("reviewer", "reviewer.toml", []byte(src), check())
	if err != nil {
		t.Fatal(err)
	}
	w := r.Wire()
	if strings.Join(w.Providers, ",") != "claude:sonnet,codex:gpt-5.5" || w.BudgetUSD != 2 || w.MaxTurns != 30 ||
		w.SoftTimeoutSeconds != 1200 || w.HardTimeoutSeconds != 2400 || w.Env["REVIEW_STRICT"] != "1" {
		t.Fatalf("role %+v", w)
	}
	if strings.Join(w.Vars, ",") != "target" {
		t.Fatalf("vars %v", w.Vars)
	}
	if w.Sources["prompt"] != "reviewer.toml:2" || w.Sources["hard_timeout"] != "reviewer.toml:9" || w.Sources["keep"] != "default" {
		t.Fatalf("sources %v", w.Sources)
	}
}

// TestRoleIdentityAndSpawn: a role names an identity and a [spawn] table; a request
// through it acts as that identity (unless it names one), and its spawn policy is the
// narrower of the role's and the request's, field by field.
func TestRoleIdentityAndSpawn(t *testing.T) {
	dir := t.TempDir()
	writeRole(t, dir, "lead", `providers = ["shell"]
identity = "maintainer"
[spawn]
max_children = 3
max_depth = 2
providers = ["shell", "claude"]
budget_usd = 5
`)
	r := roles.Resolver{Dir: dir}
	ready := func(string) error { return nil }
	two := 2
	q, _, err := r.Resolve(context.Background(), wire.RunParams{Path: "x", Role: "lead", Argv: []string{"true"},
		Spawn: &wire.SpawnPolicy{MaxChildren: &two, Roles: []string{"reviewer"}}}, ready)
	if err != nil {
		t.Fatal(err)
	}
	if q.Identity != "maintainer" || q.Spawn.String() != "max_children = 2, max_depth = 2, providers = [shell, claude], roles = [reviewer], budget_usd = 5.00" {
		t.Fatalf("identity %q spawn %s", q.Identity, q.Spawn)
	}
	q, _, err = r.Resolve(context.Background(), wire.RunParams{Path: "x", Role: "lead", Argv: []string{"true"}, Identity: "other"}, ready)
	if err != nil || q.Identity != "other" || q.Spawn.String() != "max_children = 3, max_depth = 2, providers = [shell, claude], budget_usd = 5.00" {
		t.Fatalf("identity %q spawn %s: %v", q.Identity, q.Spawn, err)
	}
}

func TestBadRolesNameTheLine(t *testing.T) {
	sk := skill(t, "x")
	cases := []struct{ name, src, want string }{
		{"unknown provider", `providers = ["claud:sonnet"]`, `reviewer.toml:1: providers: "claud:sonnet": unknown provider "claud"`},
		{"unknown model", "prompt = \"x\"\nproviders = [\"codex:sonnet\"]", `reviewer.toml:2: providers: "codex:sonnet": unknown model "sonnet" for codex`},
		{"unknown key", "providers = [\"claude\"]\n\nmodel = \"x\"", `reviewer.toml:3: unknown key "model"`},
		{"missing skill", "providers = [\"claude\"]\nskills = [\"/nonexistent/skill.md\"]", `reviewer.toml:2: skills: /nonexistent/skill.md: no such file`},
		{"soft >= hard", "providers = [\"claude\"]\nsoft_timeout = \"40m\"\nhard_timeout = \"40m\"", `reviewer.toml:2: soft_timeout 40m0s must be shorter than hard_timeout 40m0s`},
		{"bad duration", "providers = [\"claude\"]\nhard_timeout = \"40\"", `reviewer.toml:2: hard_timeout "40"`},
		{"bad placeholder", "providers = [\"claude\"]\nprompt = \"Review {{ the target }}\"", `reviewer.toml:2: prompt: bad placeholder`},
		{"no providers", "prompt = \"x\"", `providers is required`},
		{"syntax", "providers = [\"claude\"\nprompt = 1", `reviewer.toml:2:`},
		{"bad budget action", "providers = [\"claude\"]\nbudget_usd = 2\nbudget_action = \"pause\"", `reviewer.toml:3: budget_action "pause": use stop`},
		{"budget action alone", "providers = [\"claude\"]\nbudget_action = \"hold\"", `reviewer.toml:2: budget_action needs budget_usd`},
		// Before the one strict loader this read "reviewer.toml: toml: line 2 (last key …)".
		{"wrong type", "providers = [\"claude\"]\nmax_turns = \"30\"", `reviewer.toml:2: max_turns is a string; give an integer`},
		{"unknown key in a table", "providers = [\"claude\"]\n[env]\nA = \"1\"\n[limits]\nturns = 3", `reviewer.toml:4: unknown key "limits"`},
		{"bad identity", "providers = [\"claude\"]\nidentity = \"Main Tainer\"", `reviewer.toml:2: identity "Main Tainer"`},
		{"spawn unknown key", "providers = [\"claude\"]\n[spawn]\nmax_kids = 3", `reviewer.toml:3: unknown key "max_kids" in [spawn]`},
		{"spawn depth", "providers = [\"claude\"]\n[spawn]\nmax_children = 2\nmax_depth = 40", `reviewer.toml:4: spawn.max_depth 40: give a number from 0`},
		{"spawn negative", "providers = [\"claude\"]\n[spawn]\nmax_children = -1", `reviewer.toml:3: spawn.max_children -1`},
		{"spawn provider", "providers = [\"claude\"]\n[spawn]\nproviders = [\"claude:sonnet\"]", `reviewer.toml:3: spawn.providers: "claude:sonnet"`},
	}
	_ = sk
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := roles.Parse("reviewer", "reviewer.toml", []byte(c.src), check())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestResolveFallsBackAndFillsTheTemplate(t *testing.T) {
	dir := t.TempDir()
	sk := skill(t, "Check error paths first.\n")
	writeRole(t, dir, "reviewer", strings.Replace(designExample, "SKILL", sk, 1))
	res := &roles.Resolver{Dir: dir, Check: check()}
	ready := func(p string) error {
		if p == "claude" {
			return errors.New("claude not found; install it with: npm install -g @anthropic-ai/claude-code")
		}
		return nil
	}
	p, notes, err := res.Resolve(context.Background(), wire.RunParams{Path: "review/auth", Role: "reviewer",
		Vars: map[string]string{"target": "internal/auth"}, Env: map[string]string{"X": "1"}}, ready)
	if err != nil {
		t.Fatal(err)
	}
	if p.Provider != "codex" || p.Model != "gpt-5.5" {
		t.Fatalf("provider %s:%s, want the fallback codex:gpt-5.5", p.Provider, p.Model)
	}
	if p.Prompt != "Review internal/auth and report BLOCKER lines." {
		t.Fatalf("prompt %q", p.Prompt)
	}
	if p.SystemPrompt != "You are a careful reviewer.\n\nCheck error paths first." {
		t.Fatalf("system prompt %q", p.SystemPrompt)
	}
	if p.Env["REVIEW_STRICT"] != "1" || p.Env["X"] != "1" || p.MaxTurns != 30 || p.SoftTimeoutSeconds != 1200 ||
		p.HardTimeoutSeconds != 2400 || p.BudgetUSD != 2 {
		t.Fatalf("params %+v", p)
	}
	if len(notes) != 2 || !strings.Contains(notes[0], "skipped claude:sonnet: claude not found") || !strings.Contains(notes[1], "codex:gpt-5.5: choice 2 of 2") {
		t.Fatalf("notes %q", notes)
	}

	// Bad input is an error before anything is queued.
	_, _, err = res.Resolve(context.Background(), wire.RunParams{Path: "r", Role: "reviewer"}, ready)
	if !(wire.CodeOf(err) == wire.CodeBadRole) || !strings.Contains(err.Error(), "template variable target not given: pass --var target=…") {
		t.Fatalf("missing var: %v", err)
	}
	_, _, err = res.Resolve(context.Background(), wire.RunParams{Path: "r", Role: "nope"}, ready)
	if !(wire.CodeOf(err) == wire.CodeUnknownRole) {
		t.Fatalf("unknown role: %v", err)
	}
	none := func(p string) error { return errors.New(p + " not found") }
	_, _, err = res.Resolve(context.Background(), wire.RunParams{Path: "r", Role: "reviewer", Vars: map[string]string{"target": "x"}}, none)
	if !(wire.CodeOf(err) == wire.CodeMissingProgram) || !strings.Contains(err.Error(), "codex:gpt-5.5: codex not found") {
		t.Fatalf("no provider: %v", err)
	}
	os.Remove(sk)
	_, _, err = res.Resolve(context.Background(), wire.RunParams{Path: "r", Role: "reviewer", Vars: map[string]string{"target": "x"}}, ready)
	if !(wire.CodeOf(err) == wire.CodeBadRole) || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("skill gone: %v", err)
	}
	big := strings.Repeat("x", roles.MaxArg+1)
	_, _, err = res.Resolve(context.Background(), wire.RunParams{Path: "r", Provider: "claude", Prompt: big}, ready)
	if !(wire.CodeOf(err) == wire.CodeInvalidParams) || !strings.Contains(err.Error(), "over the") {
		t.Fatalf("big prompt: %v", err)
	}
	_, _, err = res.Resolve(context.Background(), wire.RunParams{Path: "r", Provider: "claude", SoftTimeoutSeconds: 60, HardTimeoutSeconds: 30}, ready)
	if !(wire.CodeOf(err) == wire.CodeInvalidParams) {
		t.Fatalf("soft >= hard: %v", err)
	}
}

func TestListKeepsBrokenRoles(t *testing.T) {
	dir := t.TempDir()
	writeRole(t, dir, "good", `providers = ["claude:sonnet"]`)
	writeRole(t, dir, "bad", `providers = ["nope:x"]`)
	rs := roles.List(dir, check())
	if len(rs) != 2 || rs[0].Name != "bad" || !strings.Contains(rs[0].Error, "unknown provider") || rs[1].Error != "" {
		t.Fatalf("list %+v", rs)
	}
}

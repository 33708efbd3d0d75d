package tools_test

import (
	"bytes"
	"encoding/json"
	"orcr/testutil/fstree"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
	planapi "orcr/orchestrate/api"
	"orcr/testutil/modelserver"
	"orcr/testutil/rig"
)

// mcpConfig is claude's --mcp-config registering `orcr mcp` (bin) as server "orcr".
func mcpConfig(bin string, args ...string) string {
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"orcr": map[string]any{"type": "stdio", "command": bin, "args": append([]string{"mcp"}, args...)}}})
	return string(b)
}

// hasTool matches a request whose tools list offers name.
func hasTool(name string) func(modelserver.Request) bool {
	return func(r modelserver.Request) bool { return bytes.Contains(r.Body, []byte(`"`+name+`"`)) }
}

// TestClaudeCallsOrcrOverMCP: the real claude CLI, started by orcr with `orcr mcp`
// registered through --mcp-config, offers the model orcr's tools as
// mcp__orcr__<tool>; the scripted model lists the agents and runs a child, and the
// child appears under claude's own path (scope self: relative paths are its subtree).
func TestClaudeCallsOrcrOverMCP(t *testing.T) {
	r := rig.New(t)
	r.Claude()
	r.Serve()
	r.Must("agent", "run", "bystander", "--keep", "--", "sleep", "300")
	// Claude defers MCP tools behind its ToolSearch: a model loads them by name first.
	r.Models.Push(
		modelserver.Turn{Match: hasTool("ToolSearch"), ToolCalls: []modelserver.ToolCall{{Name: "ToolSearch",
			Input: map[string]any{"query": "select:mcp__orcr__agent_list,mcp__orcr__agent_run", "max_results": 5}}}},
		modelserver.Turn{Match: hasTool("mcp__orcr__agent_list"),
			ToolCalls: []modelserver.ToolCall{{Name: "mcp__orcr__agent_list", Input: map[string]any{}}}},
		modelserver.Turn{ToolCalls: []modelserver.ToolCall{{Name: "mcp__orcr__agent_run",
			Input: map[string]any{"path": "helper", "argv": []string{"sleep", "300"}, "keep": true}}}},
		modelserver.Turn{Text: "Started helper."},
	)
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, q := range r.Models.Requests() {
			var body struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			}
			q.JSON(&body)
			var names []string
			for _, tl := range body.Tools {
				names = append(names, tl.Name)
			}
			i := bytes.Index(q.Body, []byte("mcp"))
			ctx := ""
			if i >= 0 {
				ctx = string(q.Body[max(0, i-200):min(len(q.Body), i+300)])
			}
			t.Logf("request %s tools %v; mcp at %d: %s", q.Path, names, i, ctx)
		}
	})
	r.Must("agent", "run", "boss", "--provider", "claude", "--cwd", r.Work, "--prompt", "start a helper",
		"--", "--mcp-config", mcpConfig(r.Bin), "--allowedTools", "mcp__orcr", "--")
	boss := r.WaitAgent("boss", 120*time.Second, "the turn to end", func(a wire.Agent) bool {
		return a.State == wire.StateDone && a.LastMessage == "Started helper."
	})
	helper := r.Agent("boss/helper")
	if helper.ParentID != boss.ID || helper.Env["ORCR_MCP"] != "self" {
		t.Fatalf("helper parent %q (boss %s) env %v", helper.ParentID, boss.ID, helper.Env)
	}
	// What the tools answered went back to the model: the listing (scope self: boss
	// alone, not the bystander), then the child's record.
	var results []string
	for _, q := range r.Models.Requests() {
		var body struct {
			Messages []struct {
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if q.JSON(&body) != nil {
			continue
		}
		for _, m := range body.Messages {
			if bytes.Contains(m.Content, []byte(`"tool_result"`)) {
				results = append(results, string(m.Content))
			}
		}
	}
	all := strings.Join(results, "\n")
	if !strings.Contains(all, `\"path\":\"boss\"`) || strings.Contains(all, "bystander") || !strings.Contains(all, `\"path\":\"boss/helper\"`) {
		t.Fatalf("tool results the model saw:\n%s", all)
	}
}

// skillPlan is the plan the scripted model writes when it follows /orcr-plan.
const skillPlan = `# Plan: csv
request: import CSV files into contacts
check: true
mode: worktree

## M1 · Parser
depends: -
tier: small
needs: go
model-why: small and clear
estimate: 10m

### Goal
Parse CSV files into contact rows.

### Acceptance
- [ ] a test parses a sample file
`

// TestClaudeFollowsTheInstalledSkill: `orcr install claude` puts orcr-plan into the
// claude config dir; a real claude started under orcr gets /orcr-plan, and the model,
// scripted to follow the skill's text, writes .orcr/plans/csv.md and runs the skill's
// `orcr plan new csv … --lead self`: the plan's lead is that claude (plan ls says so).
// Then install --mcp and remove on a copy of that config dir, as claude left it, leave
// it byte for byte as it was.
func TestClaudeFollowsTheInstalledSkill(t *testing.T) {
	r := rig.New(t)
	cfg := r.Claude()
	r.Serve()
	gitInit(t, r.Work)
	if out := r.Must("install", "claude"); !strings.Contains(out, "skills/orcr-plan/SKILL.md") {
		t.Fatalf("install: %s", out)
	}
	file := filepath.Join(r.Work, ".orcr", "plans", "csv.md")
	planNew := r.Bin + ` plan new csv "import CSV files into contacts" --lead self --repo ` + r.Work
	r.Models.Push(
		// The skill's text reached the model: it follows step 5, then step 6.
		modelserver.Turn{Match: func(q modelserver.Request) bool {
			return bytes.Contains(q.Body, []byte("You become the lead of an orcr plan"))
		},
			ToolCalls: []modelserver.ToolCall{{Name: "Write", Input: map[string]any{"file_path": file, "content": skillPlan}}}},
		modelserver.Turn{ToolCalls: []modelserver.ToolCall{{Name: "Bash", Input: map[string]any{"command": planNew, "description": "register the plan"}}}},
		modelserver.Turn{Text: "Plan csv is drafted: one milestone. Approve it?"},
	)
	r.Must("agent", "run", "me", "--provider", "claude", "--cwd", r.Work, "--prompt", "/orcr-plan import CSV files into contacts",
		"--", "--permission-mode", "acceptEdits", "--allowedTools", "Bash("+r.Bin+" plan:*)", "--")
	me := r.WaitAgent("me", 150*time.Second, "the skill's turn to end", func(a wire.Agent) bool {
		return a.State == wire.StateDone && strings.HasPrefix(a.LastMessage, "Plan csv is drafted")
	})
	var pl planapi.PlanResult
	if err := json.Unmarshal([]byte(r.Must("plan", "show", "csv", "--json")), &pl); err != nil {
		t.Fatal(err)
	}
	if pl.Plan.Lead != "self" || pl.Plan.LeadID != me.ID || pl.Plan.State != planapi.StateDrafted {
		t.Fatalf("plan %+v", pl.Plan)
	}
	if ls := r.Must("plan", "ls"); !strings.Contains(ls, "lead self: me") {
		t.Fatalf("plan ls:\n%s", ls)
	}

	// A copy of the config dir as the real claude left it: claude is stopped first, so
	// no lock or temporary file of its own comes and goes while the copy is made.
	r.Must("agent", "kill", "me")
	r.WaitAgent("me", 60*time.Second, "claude to stop", func(a wire.Agent) bool { return a.State.Terminal() })
	cp := filepath.Join(t.TempDir(), "claude-copy")
	if out, err := exec.Command("cp", "-a", cfg, cp).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	before := tree(t, cp)
	if _, err := os.Stat(filepath.Join(cp, ".claude.json")); err != nil {
		t.Fatalf("the copy has no .claude.json: %v", err)
	}
	env := append(slices.Clone(r.Vars), "CLAUDE_CONFIG_DIR="+cp)
	for _, args := range [][]string{{"install", "claude", "--mcp"}, {"install", "claude", "--mcp"}, {"install", "claude", "--remove"}} {
		if res := rig.Exec(t, 30*time.Second, r.Bin, env, r.Work, args...); res.Code != 0 {
			t.Fatalf("orcr %v: %d %s %s", args, res.Code, res.Out, res.Err)
		}
	}
	after := tree(t, cp)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s differs after install and remove", k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s left over", k)
		}
	}
}

func gitInit(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", "git init -q -b main && git -c user.email=t@t -c user.name=t commit -q --allow-empty -m init")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git: %v %s", err, out)
	}
}

func tree(t *testing.T, dir string) map[string]string { return fstree.Snapshot(t, dir) }

// TestRoleGivesClaudeOrcrMCP: a role with `mcp = "self"` gives its claude orcr's MCP
// server (through claude's --mcp-config) and caps it: the model's agent_run makes a
// child under the agent, and the agent's record carries the cap.
func TestRoleGivesClaudeOrcrMCP(t *testing.T) {
	r := rig.New(t)
	r.Claude()
	dir := filepath.Join(r.Config, "orcr", "roles")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "helper.toml"), []byte("providers = [\"claude\"]\nmcp = \"self\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.Serve()
	r.Models.Push(
		modelserver.Turn{Match: hasTool("ToolSearch"), ToolCalls: []modelserver.ToolCall{{Name: "ToolSearch",
			Input: map[string]any{"query": "select:mcp__orcr__agent_run", "max_results": 5}}}},
		modelserver.Turn{Match: hasTool("mcp__orcr__agent_run"), ToolCalls: []modelserver.ToolCall{{Name: "mcp__orcr__agent_run",
			Input: map[string]any{"path": "kid", "argv": []string{"sleep", "300"}, "keep": true}}}},
		modelserver.Turn{Text: "Started kid."},
	)
	r.Must("agent", "run", "lead", "--role", "helper", "--cwd", r.Work, "--prompt", "start a kid", "--", "--allowedTools", "mcp__orcr")
	lead := r.WaitAgent("lead", 120*time.Second, "the turn to end", func(a wire.Agent) bool {
		return a.State == wire.StateDone && a.LastMessage == "Started kid."
	})
	if lead.Env["ORCR_MCP"] != "self" || !strings.Contains(strings.Join(lead.Argv, " "), "--mcp-config") {
		t.Fatalf("lead env %v argv %q", lead.Env, lead.Argv)
	}
	if kid := r.Agent("lead/kid"); kid.ParentID != lead.ID {
		t.Fatalf("kid's parent %q", kid.ParentID)
	}
}

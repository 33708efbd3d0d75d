package tools_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
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

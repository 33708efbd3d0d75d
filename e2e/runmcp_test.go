package e2e

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"orcr/testutil/modelserver"
	"orcr/testutil/wait"
)

// offers matches a request whose tools list offers tool name.
func offers(name string) func(modelserver.Request) bool {
	return func(q modelserver.Request) bool { return bytes.Contains(q.Body, []byte(`"`+name+`"`)) }
}

// TestRunMCP: with `[run] mcp = "self"` a run's agents get orcr's MCP server as a
// role's mcp gives it: the real claude coder is started with --mcp-config running
// `orcr mcp --scope self`, its MCP sessions are capped at self (ORCR_MCP), it may call
// orcr's tools unasked, and it reports its milestone with mcp__orcr__run_done instead
// of the CLI — the milestone is checked and merged.
func TestRunMCP(t *testing.T) {
	r := newRunRigConfig(t, "solo", "[run]\nmcp = \"self\"\n")
	r.approvePlan(oneMilestone)
	m1 := r.worktree("M1")
	r.models.PushTo("M1",
		write(m1+"/greet.txt", "hello, world\nsigned-off\n"),
		bash(`git add -A && git commit -qm "M1: greeting"`),
		// Claude defers MCP tools behind its ToolSearch: a model loads them by name first.
		modelserver.Turn{Match: offers("ToolSearch"), ToolCalls: []modelserver.ToolCall{{Name: "ToolSearch",
			Input: map[string]any{"query": "select:mcp__orcr__run_done", "max_results": 5}}}},
		modelserver.Turn{Match: offers("mcp__orcr__run_done"), ToolCalls: []modelserver.ToolCall{{Name: "mcp__orcr__run_done",
			Input: map[string]any{"milestone": "M1", "text": "greeting written"}}}},
		say("Reported M1 over MCP."))
	r.must("run", "start", "solo", "--coders", "1", "--coder", "claude", "--lead", "none")
	r.must("run", "dispatch", "solo", "M1")
	r.waitState("M1", "merged", 180*time.Second)

	a := agentJSON(t, r.env, "runs/solo/coder-1")
	argv := strings.Join(a.Argv, " ")
	if !strings.Contains(argv, "--mcp-config ") || !strings.Contains(argv, `"args":["mcp","--scope","self"]`) {
		t.Fatalf("the coder was not started with orcr's MCP server: %q", argv)
	}
	if !strings.Contains(argv, "--allowedTools mcp__orcr ") {
		t.Fatalf("the coder may not call orcr's tools unasked: %q", argv)
	}
	if a.Env["ORCR_MCP"] != "self" {
		t.Fatalf("the coder's MCP sessions are not capped at self: %v", a.Env)
	}
	// The tool's answer (run.done's result: the milestone, checking) reached the model
	// in the request after the call: the run took the report from the MCP call.
	if !wait.Until(60*time.Second, func() bool { return r.saw("M1", `{"id":"M1","title":"Greeting","state":"checking"`) }) {
		t.Fatalf("run_done's answer never reached the coder's model")
	}
}

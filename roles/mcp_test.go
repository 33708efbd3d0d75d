package roles

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"orcr/core/wire"
)

// TestWithMCPNeverWidensTheRequest: a role's mcp gives the agent orcr's MCP server
// through its provider's flags and caps it, but never widens a cap the request
// carries (a child started from a self-scoped MCP session).
func TestWithMCPNeverWidensTheRequest(t *testing.T) {
	p, err := withMCP(wire.RunParams{Provider: "claude", Argv: []string{"--allowedTools", "mcp__orcr"}}, "self", "/bin/orcr")
	if err != nil || p.Env[mcpCapEnv] != "self" {
		t.Fatalf("%v %v", p.Env, err)
	}
	argv := strings.Join(p.Argv, " ")
	if !strings.HasPrefix(argv, "--allowedTools mcp__orcr --mcp-config ") || !strings.HasSuffix(argv, " --") ||
		!strings.Contains(argv, `"command":"/bin/orcr"`) || !strings.Contains(argv, `"args":["mcp","--scope","self"]`) {
		t.Fatalf("claude argv %q", argv)
	}
	p, _ = withMCP(wire.RunParams{Provider: "claude", Argv: []string{"--x", "--", "y"}}, "read", "")
	if got := strings.Join(p.Argv, " "); !strings.HasPrefix(got, "--x --mcp-config ") || !strings.HasSuffix(got, " -- y") {
		t.Fatalf("claude argv with its own --: %q", got)
	}
	p, _ = withMCP(wire.RunParams{Provider: "codex"}, "act", "/bin/orcr")
	if got := strings.Join(p.Argv, " "); got != `-c mcp_servers.orcr.command="/bin/orcr" -c mcp_servers.orcr.args=["mcp","--scope","act"]` {
		t.Fatalf("codex argv %q", got)
	}
	capped := func(v string) wire.RunParams {
		return wire.RunParams{Provider: "shell", Env: map[string]string{mcpCapEnv: v}}
	}
	if p, _ := withMCP(capped("self"), "act", ""); p.Env[mcpCapEnv] != "self" {
		t.Fatalf("act widened self: %v", p.Env)
	}
	if p, _ := withMCP(capped("act"), "read", ""); p.Env[mcpCapEnv] != "read" {
		t.Fatalf("read under act: %v", p.Env)
	}
	if _, err := withMCP(capped("self"), "read", ""); wire.CodeOf(err) != wire.CodeNotAllowed {
		t.Fatalf("read under self: %v", err)
	}
}

// TestRoleMCPKey: mcp takes self, read or act; anything else is refused with its line.
func TestRoleMCPKey(t *testing.T) {
	r, err := Parse("h", "h.toml", []byte("providers = [\"claude\"]\nmcp = \"read\"\n"), nil)
	if err != nil || r.MCP != "read" {
		t.Fatalf("%+v %v", r, err)
	}
	_, err = Parse("h", "h.toml", []byte("providers = [\"claude\"]\nmcp = \"all\"\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "h.toml:2") || !strings.Contains(err.Error(), "use self") {
		t.Fatalf("mcp = all: %v", err)
	}
}

// TestRequestMCP: a request's mcp (a run's [run] mcp, `agent run --mcp`) gives the
// agent orcr's MCP server exactly as a role's does, once, narrowed with the role's;
// a scope that is none of the three is refused.
func TestRequestMCP(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{"act": "providers = [\"claude\"]\nmcp = \"act\"\n",
		"read": "providers = [\"claude\"]\nmcp = \"read\"\n", "plain": "providers = [\"claude\"]\n"} {
		if err := os.WriteFile(filepath.Join(dir, name+".toml"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := Resolver{Dir: dir, Bin: "/bin/orcr"}
	ready := func(string) error { return nil }
	resolve := func(role, mcp string) (wire.RunParams, error) {
		q, _, err := r.Resolve(context.Background(), wire.RunParams{Path: "x", Provider: "claude", Role: role, MCP: mcp}, ready)
		return q, err
	}
	for _, c := range []struct{ role, mcp, want string }{
		{"", "self", "self"}, {"plain", "read", "read"}, {"act", "self", "self"}, {"read", "act", "read"}, {"read", "", "read"},
	} {
		q, err := resolve(c.role, c.mcp)
		if err != nil || q.Env[mcpCapEnv] != c.want || q.MCP != "" {
			t.Fatalf("role %q mcp %q: env %v mcp %q: %v", c.role, c.mcp, q.Env, q.MCP, err)
		}
		argv := strings.Join(q.Argv, " ")
		if strings.Count(argv, "--mcp-config") != 1 || !strings.Contains(argv, `"args":["mcp","--scope","`+c.want+`"]`) {
			t.Fatalf("role %q mcp %q: argv %q", c.role, c.mcp, argv)
		}
	}
	if _, err := resolve("read", "self"); wire.CodeOf(err) != wire.CodeNotAllowed || !strings.Contains(err.Error(), "neither is inside") {
		t.Fatalf("self under a role of read: %v", err)
	}
	if _, err := resolve("", "all"); wire.CodeOf(err) != wire.CodeInvalidParams || !strings.Contains(err.Error(), `mcp "all": use self`) {
		t.Fatalf("mcp all: %v", err)
	}
	if q, err := resolve("", ""); err != nil || q.Env[mcpCapEnv] != "" || len(q.Argv) != 0 {
		t.Fatalf("no mcp: %v %v", q, err)
	}
}

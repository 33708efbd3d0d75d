package roles

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"orcr/core/wire"
)

// mcpCapEnv is the variable whose value on an agent's record caps its MCP sessions
// (mcp/api.CapEnv; roles does not import the mcp feature).
const mcpCapEnv = "ORCR_MCP"

// checkMCP refuses an mcp scope that is none of self, read and act.
func checkMCP(scope string) error {
	switch scope {
	case "", "self", "read", "act":
		return nil
	}
	return wire.Errorf(wire.CodeInvalidParams, "mcp %q: use self (its own agents), read (see all, change nothing) or act (act on all)", scope)
}

// narrowMCP is the scope that both the request's (req, "" for none) and the role's
// allow: act gives way to the other; self and read are not inside each other.
func narrowMCP(req, role string) (string, error) {
	switch {
	case req == "" || req == role || req == "act":
		return role, nil
	case role == "act":
		return req, nil
	}
	return "", fmt.Errorf("its mcp = %q and the request's mcp %q: neither is inside the other; ask for %s or none", role, req, role)
}

// withMCP gives an agent orcr's MCP server at scope (DESIGN §17; the scope of its
// role's mcp, of a run's [run] mcp or of the request's): ORCR_MCP on its record caps every MCP session it and its descendants open (set over the request's
// env: a request cannot widen its role), and the provider is told to start `orcr mcp
// --scope scope` through its own configuration — claude's --mcp-config, codex's
// mcp_servers. opencode and pi get the cap only (orcr does not rewrite their config
// per agent; `orcr install opencode --mcp` registers it for the user).
//
// A request that carries a cap already (a child started from an MCP session of scope
// self carries ORCR_MCP=self) is never widened by its role: act gives way to it, and a
// role of read under a cap of self (or the other way) is refused — neither is inside
// the other.
func withMCP(p wire.RunParams, scope, bin string) (wire.RunParams, error) {
	if bin == "" {
		bin = "orcr"
	}
	if have := p.Env[mcpCapEnv]; have != "" && have != scope {
		switch {
		case scope == "act":
			scope = have
		case have == "act":
		default:
			return p, wire.Errorf(wire.CodeNotAllowed, "the agent is given MCP scope %s (by its role or the request's mcp), and this spawn is capped at %s (%s): neither is inside the other; spawn it without that mcp or with mcp = %q",
				scope, have, mcpCapEnv, have)
		}
	}
	env := maps.Clone(p.Env)
	if env == nil {
		env = map[string]string{}
	}
	env[mcpCapEnv] = scope
	p.Env = env
	args := []string{"mcp", "--scope", scope}
	switch p.Provider {
	case "claude":
		cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
			"orcr": map[string]any{"type": "stdio", "command": bin, "args": args}}})
		// --mcp-config takes several values: a "--" ends them before the prompt.
		add := []string{"--mcp-config", string(cfg)}
		argv := slices.Clone(p.Argv)
		if i := slices.Index(argv, "--"); i >= 0 {
			p.Argv = slices.Concat(argv[:i], add, argv[i:])
		} else {
			p.Argv = slices.Concat(argv, add, []string{"--"})
		}
	case "codex":
		cmd, _ := json.Marshal(bin)
		list, _ := json.Marshal(args)
		p.Argv = slices.Concat([]string{"-c", "mcp_servers.orcr.command=" + string(cmd), "-c", "mcp_servers.orcr.args=" + string(list)}, p.Argv)
	}
	return p, nil
}

// Package mcp is orcr inside the agents (DESIGN §17). Its server side is the feature
// that grants MCP sessions: mcp.session verifies the caller as every socket call is
// verified (peer credentials and pane ancestry, core.Kernel.CallerAgent) and grants a
// scope no wider than the caller's cap — the ORCR_MCP value on the records of the
// caller and of each of its ancestors (a role's `mcp = "self"`). The stdio MCP server
// itself (`orcr mcp`, package mcp/tools) is a client of the socket like the CLI, run by
// the agent's program as its child, so its calls carry the agent's verified identity;
// it enforces the granted scope on every tool call. Package mcp/install writes orcr's
// skills into the user's own agents (`orcr install`).
package mcp

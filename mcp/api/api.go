// Package api declares the MCP feature's socket method: mcp.session, which tells an
// `orcr mcp` process who its caller is and which scope it is granted (DESIGN §17).
package api

import "orcr/core/wire"

// Scopes of an MCP server (DESIGN §17).
const (
	// ScopeSelf acts only on the caller's own subtree and reads its lineage (its
	// ancestors and its subtree).
	ScopeSelf = "self"
	// ScopeRead sees the whole fleet and changes nothing.
	ScopeRead = "read"
	// ScopeAct acts on the whole fleet.
	ScopeAct = "act"
)

// Scopes lists the scopes, narrowest first.
var Scopes = []string{ScopeSelf, ScopeRead, ScopeAct}

// CapEnv is the environment variable whose value on an agent's record caps the scope
// of an MCP server that agent (or any agent under it) runs: a role's `mcp = "self"`
// sets it. Its value is kept on the record (ORCR_* values are not redacted), so the
// server reads it from the record, never from the caller's own environment.
const CapEnv = "ORCR_MCP"

// MethodSession is the session method's name.
const MethodSession = "mcp.session"

// Session is the one method of the MCP feature.
var Session = wire.Declare[SessionParams, SessionResult](MethodSession,
	"Open an MCP session: the verified caller (peer credentials and pane ancestry) and the scope granted — the one asked for (default self inside an agent's pane, read outside) when no role or ancestor caps it narrower.")

// SessionParams asks for a scope ("" for the default).
type SessionParams struct {
	Scope string `json:"scope,omitempty"`
}

// SessionResult is the granted session.
type SessionResult struct {
	// Scope is the scope granted.
	Scope string `json:"scope"`
	// Allowed are the scopes this caller may ask for (its cap).
	Allowed []string `json:"allowed"`
	// Caller is the verified agent the MCP server runs inside (nil outside any pane).
	Caller *wire.Agent `json:"caller"`
	// Lineage are the caller's ancestors' paths, nearest first.
	Lineage []string `json:"lineage"`
	// CappedBy names what capped Allowed ("" when nothing did): the agent whose
	// record's ORCR_MCP narrowed it.
	CappedBy string `json:"cappedBy"`
}

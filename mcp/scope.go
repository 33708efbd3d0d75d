package mcp

import (
	"slices"
	"strings"

	"orcr/core/wire"
	"orcr/mcp/api"
)

// allowedBy is what a cap allows: act allows every scope, read and self only
// themselves (self may act on its subtree, which read may not; read sees the fleet,
// which self may not: neither is inside the other).
func allowedBy(cap string) []string {
	switch cap {
	case api.ScopeAct:
		return []string{api.ScopeSelf, api.ScopeRead, api.ScopeAct}
	case api.ScopeRead:
		return []string{api.ScopeRead}
	case api.ScopeSelf:
		return []string{api.ScopeSelf}
	}
	return nil
}

// ValidScope reports whether s names a scope.
func ValidScope(s string) bool { return slices.Contains(api.Scopes, s) }

// capped is one record's cap on the way up the lineage.
type capped struct {
	path, cap string
}

// Grant decides a session: want is the scope asked for ("" for the default), inPane
// whether the caller is an agent, caps the ORCR_MCP values on the caller's and its
// ancestors' records (nearest first; empty values skipped). It returns the scope, the
// scopes allowed and who capped them, or an error that says what may be asked for.
func Grant(want string, inPane bool, caps []capped) (scope string, allowed []string, by string, err error) {
	if want != "" && !ValidScope(want) {
		return "", nil, "", wire.Errorf(wire.CodeInvalidParams, "scope %q is not one of %s", want, strings.Join(api.Scopes, ", "))
	}
	allowed = allowedBy(api.ScopeAct)
	for _, c := range caps {
		if !ValidScope(c.cap) {
			return "", nil, "", wire.Errorf(wire.CodeNotAllowed, "%s's %s=%q is not one of %s; no MCP session is granted under it",
				c.path, api.CapEnv, c.cap, strings.Join(api.Scopes, ", "))
		}
		next := slices.DeleteFunc(slices.Clone(allowed), func(s string) bool { return !slices.Contains(allowedBy(c.cap), s) })
		if len(next) < len(allowed) && by == "" {
			by = c.path
		}
		allowed = next
	}
	if !inPane {
		allowed = slices.DeleteFunc(allowed, func(s string) bool { return s == api.ScopeSelf })
	}
	if want == "" {
		switch {
		case inPane && slices.Contains(allowed, api.ScopeSelf):
			want = api.ScopeSelf
		case slices.Contains(allowed, api.ScopeRead):
			want = api.ScopeRead
		case len(allowed) > 0:
			want = allowed[0]
		}
	}
	if len(allowed) == 0 {
		return "", nil, by, wire.Errorf(wire.CodeNotAllowed, "no MCP scope is allowed here: %s caps it (%s) and an ancestor's cap excludes that", by, api.CapEnv)
	}
	if !slices.Contains(allowed, want) {
		if want == api.ScopeSelf && !inPane {
			return "", allowed, by, wire.Errorf(wire.CodeNotAllowed,
				"scope self is the caller's own subtree, and this caller runs in no agent's pane: use --scope read (or act), or run it inside an agent started by orcr")
		}
		return "", allowed, by, wire.Errorf(wire.CodeNotAllowed,
			"scope %s is wider than this agent may have: %s's role caps MCP at %s (%s); ask for %s",
			want, by, capOf(caps, by), api.CapEnv, strings.Join(allowed, " or "))
	}
	return want, allowed, by, nil
}

func capOf(caps []capped, path string) string {
	for _, c := range caps {
		if c.path == path {
			return c.cap
		}
	}
	return "?"
}

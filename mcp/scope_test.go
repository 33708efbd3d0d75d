package mcp

import (
	"slices"
	"strings"
	"testing"
)

// TestGrant: the default scope, narrowing, and every widening refused.
func TestGrant(t *testing.T) {
	cases := []struct {
		want   string
		inPane bool
		caps   []capped
		scope  string
		refuse string
	}{
		{"", true, nil, "self", ""},
		{"", false, nil, "read", ""},
		{"act", true, nil, "act", ""},
		{"read", true, nil, "read", ""},
		{"self", false, nil, "", "runs in no agent's pane"},
		{"act", true, []capped{{"a", "self"}}, "", "caps MCP at self"},
		{"read", true, []capped{{"a", "self"}}, "", "caps MCP at self"},
		{"", true, []capped{{"a", "self"}}, "self", ""},
		{"", true, []capped{{"a", "read"}}, "read", ""},
		{"self", true, []capped{{"a", "act"}, {"p", "self"}}, "self", ""},
		{"act", true, []capped{{"a/b", "act"}, {"a", "self"}}, "", "a's role caps MCP at self"},
		{"", true, []capped{{"a/b", "read"}, {"a", "self"}}, "", "no MCP scope is allowed"},
		{"all", true, nil, "", "not one of"},
		{"", true, []capped{{"a", "bogus"}}, "", "not one of"},
	}
	for _, c := range cases {
		scope, allowed, _, err := Grant(c.want, c.inPane, c.caps)
		if c.refuse != "" {
			if err == nil || !strings.Contains(err.Error(), c.refuse) {
				t.Errorf("Grant(%q, %v, %v) = %q, %v; want refusal %q", c.want, c.inPane, c.caps, scope, err, c.refuse)
			}
			continue
		}
		if err != nil || scope != c.scope || !slices.Contains(allowed, scope) {
			t.Errorf("Grant(%q, %v, %v) = %q %v %v; want %q", c.want, c.inPane, c.caps, scope, allowed, err, c.scope)
		}
	}
}

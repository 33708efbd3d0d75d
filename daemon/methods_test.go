package daemon

import (
	"testing"

	"orcr/accounts"
	"orcr/core/wire"
	"orcr/listen"
	"orcr/mcp"
	"orcr/nodes"
	"orcr/orchestrate"
	"orcr/orchestrate/run"
	"orcr/roles"
	"orcr/sandbox"
	"orcr/schedule"
	"orcr/web"
	"orcr/workflow"
)

// TestEveryDeclaredMethodIsServed fails when a method declared in core/wire or an api
// package has no handler among the kernel's and the features' the server serves, when
// two serve one method, or when a handler's kind or types disagree with its declaration:
// a declaration without a handler answers unknown_method to every client. (Methods
// builds closures only, so the features need not be started.)
func TestEveryDeclaredMethodIsServed(t *testing.T) {
	hs := serverMethods(nil, (*schedule.Service)(nil), (*roles.Service)(nil), (*accounts.Service)(nil),
		(*orchestrate.Service)(nil), (*listen.Service)(nil), (*run.Service)(nil), (*workflow.Service)(nil), (*web.Service)(nil), mcp.New(), (*nodes.Service)(nil), (*sandbox.Feature)(nil))
	table, err := wire.NewHandlers(hs)
	if err != nil {
		t.Fatal(err)
	}
	schema := wire.Schema()["methods"].(map[string]any)
	for _, m := range wire.Methods {
		h, ok := table[m.Name]
		switch {
		case !ok:
			t.Errorf("%s is declared but nothing serves it", m.Name)
			continue
		case h.Spec().Params != m.Params || h.Spec().Result != m.Result ||
			(h.Spec().Stream == nil) != (m.Stream == nil):
			t.Errorf("%s: the handler's types disagree with the declaration", m.Name)
		}
		if _, ok := schema[m.Name]; !ok {
			t.Errorf("%s is declared but missing from the schema", m.Name)
		}
	}
	if len(table) != len(wire.Methods) {
		t.Errorf("%d handlers for %d declared methods", len(table), len(wire.Methods))
	}
	if len(wire.Methods) < 58 {
		t.Errorf("only %d methods declared", len(wire.Methods))
	}
}

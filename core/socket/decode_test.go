package socket

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"orcr/core/wire"
)

// The schema and the server apply one rule for required params: a request with every
// field at its zero value is refused naming exactly the fields the schema requires.
func TestRequiredParamsMatchSchema(t *testing.T) {
	s := wire.Schema()
	defs := s["$defs"].(map[string]any)
	for _, m := range wire.Methods {
		name := m.Params.Name()
		var want []string
		if r, ok := defs[name].(map[string]any)["required"].([]string); ok {
			want = r
		}
		_, _, _, err := parseRequest(standIns, fmt.Appendf(nil, `{"id":"1","method":%q}`, m.Name))
		if len(want) == 0 {
			if err != nil {
				t.Errorf("%s: no required params in the schema, server says %v", m.Name, err)
			}
			continue
		}
		if wire.CodeOf(err) != wire.CodeInvalidParams {
			t.Errorf("%s: schema requires %v, server accepts no params (%v)", m.Name, want, err)
			continue
		}
		for _, f := range want {
			if !strings.Contains(err.Error(), fmt.Sprintf("%q", f)) {
				t.Errorf("%s: schema requires %q, server's refusal does not name it: %v", m.Name, f, err)
			}
		}
	}
	// The fields the issue found disagreeing are required on both sides now.
	for _, c := range []struct{ method, params, field string }{
		{wire.MethodHookReport, `{"event":"Stop","agentId":"x"}`, "provider"},
		{wire.MethodAgentResize, `{"target":"x","rows":10}`, "cols"},
		{wire.MethodAgentResize, `{"target":"x","cols":10}`, "rows"},
	} {
		_, _, _, err := parseRequest(standIns, fmt.Appendf(nil, `{"id":"1","method":%q,"params":%s}`, c.method, c.params))
		if wire.CodeOf(err) != wire.CodeInvalidParams || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s without %s: %v", c.method, c.field, err)
		}
	}
}

func TestSchemaCoversMethodsAndTypes(t *testing.T) {
	s := wire.Schema()
	methods := s["methods"].(map[string]any)
	defs := s["$defs"].(map[string]any)
	for _, m := range wire.Methods {
		spec, ok := methods[m.Name].(map[string]any)
		if !ok {
			t.Fatalf("schema lacks %s", m.Name)
		}
		ref := spec["params"].(map[string]any)["$ref"].(string)
		name := strings.TrimPrefix(ref, "#/$defs/")
		if name != m.Params.Name() || defs[name] == nil {
			t.Errorf("%s params ref %s, server decodes %s", m.Name, ref, m.Params.Name())
		}
		// Every field the server accepts is in the schema, and no other.
		props := defs[name].(map[string]any)["properties"].(map[string]any)
		typ := m.Params
		if typ.NumField() != len(props) {
			t.Errorf("%s: %d fields, schema has %d properties", m.Name, typ.NumField(), len(props))
		}
	}
}

func TestParseRequestErrors(t *testing.T) {
	cases := []struct{ line, code string }{
		{`{`, wire.CodeBadRequest},
		{`[]`, wire.CodeBadRequest},
		{`{"id":"1"}`, wire.CodeBadRequest},
		{`{"id":"1","method":"agent.nope"}`, wire.CodeUnknownMethod},
		{`{"id":"1","method":"agent.get"}`, wire.CodeInvalidParams},
		{`{"id":"1","method":"agent.get","params":{"target":7}}`, wire.CodeInvalidParams},
		{`{"id":"1","method":"agent.get","params":{"target":"x","bogus":1}}`, wire.CodeInvalidParams},
		{`{"id":"1","method":"agent.run","params":{"provider":"shell"}}`, wire.CodeInvalidParams},
		{`{"id":"1","method":"agent.wait","params":{"glob":"a","timeoutSeconds":"5"}}`, wire.CodeInvalidParams},
		{`{"id":"1","method":"server.ping","version":999}`, wire.CodeVersionMismatch},
		{`{"id":"1","method":"server.ping","version":"1"}`, wire.CodeBadRequest},
	}
	for _, c := range cases {
		_, _, _, err := parseRequest(standIns, []byte(c.line))
		if wire.CodeOf(err) != c.code {
			t.Errorf("%s: got %v, want %s", c.line, err, c.code)
		}
	}
	if _, _, _, err := parseRequest(standIns, fmt.Appendf(nil, `{"id":"1","method":"server.ping","version":%d}`, wire.Version)); err != nil {
		t.Fatalf("request of this version: %v", err)
	}
	req, p, _, err := parseRequest(standIns, []byte(`{"id":"9","method":"agent.get","params":{"target":"a/b"}}`))
	if err != nil || req.ID != "9" || p.(*wire.TargetParams).Target != "a/b" {
		t.Fatalf("good request: %v %+v %v", req, p, err)
	}
}

func TestReadLineLimits(t *testing.T) {
	long := strings.Repeat("x", wire.MaxLine+10)
	r := bufio.NewReaderSize(strings.NewReader(long+"\n"+`{"ok":1}`+"\n"), 64<<10)
	if _, err := readLine(r); !errors.Is(err, errLineTooLong) {
		t.Fatalf("long line: %v", err)
	}
	line, err := readLine(r)
	if err != nil || string(bytes.TrimSpace(line)) != `{"ok":1}` {
		t.Fatalf("line after a long one: %q %v", line, err)
	}
	exact := strings.Repeat("y", wire.MaxLine)
	r = bufio.NewReaderSize(strings.NewReader(exact+"\n"), 64<<10)
	if line, err := readLine(r); err != nil || len(line) != wire.MaxLine+1 {
		t.Fatalf("line of exactly MaxLine: %d %v", len(line), err)
	}
}

func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{`{"id":"1","method":"server.ping"}`, `{"id":"2","method":"agent.run","params":{"path":"a/b","argv":["sh"]}}`,
		`{"id":"3","method":"events.subscribe","params":{"after":5,"paths":["a/**"]}}`, `{`, `null`, `{"method":"agent.kill","params":{"glob":"**"}}`} {
		f.Add([]byte(s))
	}
	known := map[string]bool{}
	for _, c := range wire.ErrorCodes {
		known[c] = true
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bufio.NewReaderSize(bytes.NewReader(append(b, '\n')), 64<<10)
		line, err := readLine(r)
		if err != nil {
			return
		}
		_, p, _, err := parseRequest(standIns, line)
		if err != nil {
			if !known[wire.CodeOf(err)] {
				t.Fatalf("unknown code %q for %q", wire.CodeOf(err), b)
			}
			return
		}
		if p == nil {
			t.Fatalf("no params and no error for %q", b)
		}
	})
}

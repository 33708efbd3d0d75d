package socket

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"orcr/core"
	"orcr/core/wire"
)

func TestEveryMethodHasAHandler(t *testing.T) {
	streams := map[string]bool{wire.MethodEventsSubscribe: true, wire.MethodAgentAttach: true}
	handled := map[string]bool{}
	for _, m := range unaryMethods {
		handled[m] = true
	}
	for _, m := range wire.Methods {
		if (m.Stream != nil) != streams[m.Name] {
			t.Errorf("%s: stream type and server stream handling disagree", m.Name)
		}
		if !handled[m.Name] && !streams[m.Name] {
			t.Errorf("%s is in the schema but the server has no handler", m.Name)
		}
		delete(handled, m.Name)
	}
	for m := range handled {
		t.Errorf("server handles %s, which the schema lacks", m)
	}
	// Every Service method is reachable over the socket (the client implements it by
	// calling a method of the schema); a new Service method without a wire method
	// fails here.
	svc := reflect.TypeOf((*core.Service)(nil)).Elem()
	if svc.NumMethod() != len(wire.Methods)+1 { // AttachStream shares agent.attach
		t.Errorf("core.Service has %d methods, the schema %d (+1 for AttachStream): add the wire method", svc.NumMethod(), len(wire.Methods))
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
		if name != reflect.TypeOf(m.Params).Name() || defs[name] == nil {
			t.Errorf("%s params ref %s, server decodes %s", m.Name, ref, reflect.TypeOf(m.Params).Name())
		}
		// Every field the server accepts is in the schema, and no other.
		props := defs[name].(map[string]any)["properties"].(map[string]any)
		typ := reflect.TypeOf(m.Params)
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
		_, _, err := parseRequest([]byte(c.line))
		if wire.CodeOf(err) != c.code {
			t.Errorf("%s: got %v, want %s", c.line, err, c.code)
		}
	}
	if _, _, err := parseRequest(fmt.Appendf(nil, `{"id":"1","method":"server.ping","version":%d}`, wire.Version)); err != nil {
		t.Fatalf("request of this version: %v", err)
	}
	req, p, err := parseRequest([]byte(`{"id":"9","method":"agent.get","params":{"target":"a/b"}}`))
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
		_, p, err := parseRequest(line)
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

package socket

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"orcr/core"
	"orcr/core/wire"
)

// TestMethodTable fails when a method declared in wire's table lacks a server handler
// of the right kind, a client call, or a schema entry, and when core.Service has a
// method the socket cannot reach.
func TestMethodTable(t *testing.T) {
	schema := wire.Schema()["methods"].(map[string]any)
	for _, m := range wire.Methods {
		h, ok := handlers()[m.Name]
		switch {
		case !ok:
			t.Errorf("%s is declared but the server has no handler", m.Name)
		case (m.Stream != nil) != (h.stream != nil) || (h.stream == nil) == (h.unary == nil):
			t.Errorf("%s: declared stream %v, server handler stream %v", m.Name, m.Stream != nil, h.stream != nil)
		case reflect.TypeOf(h.spec.Params) != reflect.TypeOf(m.Params) || reflect.TypeOf(h.spec.Result) != reflect.TypeOf(m.Result):
			t.Errorf("%s: handler types disagree with the declaration", m.Name)
		}
		if _, ok := schema[m.Name]; !ok {
			t.Errorf("%s is declared but missing from the schema", m.Name)
		}
	}
	if len(handlers()) != len(wire.Methods) {
		t.Errorf("%d handlers for %d declared methods", len(handlers()), len(wire.Methods))
	}
	// The client: call every core.Service method of a Client against a recorder that
	// notes the method of each request and checks that the server's decoder takes its
	// params. Every declared method must be called by some client method.
	seen := recordClientCalls(t)
	for _, m := range wire.Methods {
		if !seen[m.Name] {
			t.Errorf("%s is declared but no Client method calls it", m.Name)
		}
	}
	svc := reflect.TypeOf((*core.Service)(nil)).Elem()
	if svc.NumMethod() != len(wire.Methods)+1 { // AttachStream shares agent.attach
		t.Errorf("core.Service has %d methods, the table %d (+1 for AttachStream): declare the wire method", svc.NumMethod(), len(wire.Methods))
	}
}

// recordClientCalls calls each core.Service method of a real Client against a socket
// that records the requests and answers each with an error.
func recordClientCalls(t *testing.T) map[string]bool {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rec.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	seen := map[string]bool{}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadBytes('\n')
					if err != nil {
						return
					}
					req, _, perr := parseRequest(line)
					if code := wire.CodeOf(perr); perr != nil && code != wire.CodeInvalidParams {
						t.Errorf("client request %s: server decode says %v", line, perr)
					}
					mu.Lock()
					seen[req.Method] = true
					mu.Unlock()
					b, _ := json.Marshal(wire.Response{ID: req.ID, Error: &wire.Error{Code: wire.CodeInternal, Message: "recorded"}})
					c.Write(append(b, '\n'))
				}
			}()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := Dial(ctx, path, "")
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	cv := reflect.ValueOf(cl)
	svc := reflect.TypeOf((*core.Service)(nil)).Elem()
	for i := 0; i < svc.NumMethod(); i++ {
		m := cv.MethodByName(svc.Method(i).Name)
		var args []reflect.Value
		for j := 0; j < m.Type().NumIn(); j++ {
			switch at := m.Type().In(j); at {
			case reflect.TypeFor[context.Context]():
				args = append(args, reflect.ValueOf(ctx))
			case reflect.TypeFor[io.Reader]():
				args = append(args, reflect.ValueOf(io.Reader(strings.NewReader(""))))
			case reflect.TypeFor[io.Writer]():
				args = append(args, reflect.ValueOf(io.Writer(io.Discard)))
			case reflect.TypeFor[wire.ResizeParams]():
				// The client range-checks before it sends; zero columns never leave it.
				args = append(args, reflect.ValueOf(wire.ResizeParams{Cols: 80, Rows: 24}))
			default:
				args = append(args, reflect.Zero(at))
			}
		}
		out := m.Call(args)
		if err, _ := out[len(out)-1].Interface().(error); err == nil || !strings.Contains(err.Error(), "recorded") {
			t.Errorf("Client.%s: %v, want the recorder's answer", svc.Method(i).Name, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return maps.Clone(seen)
}

// The schema and the server apply one rule for required params: a request with every
// field at its zero value is refused naming exactly the fields the schema requires.
func TestRequiredParamsMatchSchema(t *testing.T) {
	s := wire.Schema()
	defs := s["$defs"].(map[string]any)
	for _, m := range wire.Methods {
		name := reflect.TypeOf(m.Params).Name()
		var want []string
		if r, ok := defs[name].(map[string]any)["required"].([]string); ok {
			want = r
		}
		_, _, err := parseRequest(fmt.Appendf(nil, `{"id":"1","method":%q}`, m.Name))
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
		_, _, err := parseRequest(fmt.Appendf(nil, `{"id":"1","method":%q,"params":%s}`, c.method, c.params))
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

package e2e

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"orcr/core/socket"
	"orcr/core/wire"
	planapi "orcr/orchestrate/api"
	schedapi "orcr/schedule/api"
)

// rawConn speaks the socket protocol by hand, as a client in another language would.
type rawConn struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func (e *env) raw() *rawConn {
	e.t.Helper()
	c, err := net.Dial("unix", socket.SocketPath(e.home))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close() })
	return &rawConn{t: e.t, c: c, r: bufio.NewReaderSize(c, 1<<20)}
}

func (rc *rawConn) roundTrip(line string) wire.Response {
	rc.t.Helper()
	rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := rc.c.Write([]byte(line + "\n")); err != nil {
		rc.t.Fatal(err)
	}
	resp, err := rc.r.ReadBytes('\n')
	if err != nil {
		rc.t.Fatalf("read response to %.60q: %v", line, err)
	}
	var r wire.Response
	if err := json.Unmarshal(resp, &r); err != nil {
		rc.t.Fatalf("response is not JSON: %q", resp)
	}
	return r
}

func TestMalformedRequests(t *testing.T) {
	e := newEnv(t)
	e.serve()
	e.must("agent", "run", "taken/one", "--", "sleep", "300")
	rc := e.raw()
	cases := []struct {
		line, code, id string
	}{
		{`this is not json`, wire.CodeBadRequest, ""},
		{`{"id":"1","method":"agent.explode"}`, wire.CodeUnknownMethod, "1"},
		{`{"id":"2","method":"agent.get"}`, wire.CodeInvalidParams, "2"},
		{`{"id":"3","method":"agent.get","params":{"target":42}}`, wire.CodeInvalidParams, "3"},
		{`{"id":"4","method":"agent.run","params":{"path":"a/../b","argv":["true"]}}`, wire.CodeInvalidPath, "4"},
		{`{"id":"5","method":"agent.run","params":{"path":"a//b","argv":["true"]}}`, wire.CodeInvalidPath, "5"},
		{`{"id":"6","method":"agent.run","params":{"path":"Upper/case","argv":["true"]}}`, wire.CodeInvalidPath, "6"},
		{`{"id":"7","method":"agent.run","params":{"path":"` + strings.Repeat("a/", 17) + `a","argv":["true"]}}`, wire.CodeInvalidPath, "7"},
		{`{"id":"8","method":"agent.kill","params":{"glob":"a/[","dryRun":true}}`, wire.CodeInvalidGlob, "8"},
		{`{"id":"9","method":"agent.run","params":{"path":"taken/one","argv":["true"]}}`, wire.CodePathTaken, "9"},
		{`{"id":"10","method":"agent.get","params":{"target":"no/such"}}`, wire.CodeNotFound, "10"},
		{`{"id":"11","method":"agent.kill","params":{"glob":"nothing/**"}}`, wire.CodeNotFound, "11"},
		{`{"id":"12","method":"agent.run","params":{"path":"p","provider":"nope","argv":["true"]}}`, wire.CodeUnknownProvider, "12"},
		{`{"id":"13","method":"agent.wait","params":{"glob":"taken/one","until":"soon"}}`, wire.CodeInvalidParams, "13"},
	}
	for _, c := range cases {
		r := rc.roundTrip(c.line)
		if r.Error == nil || r.Error.Code != c.code || r.ID != c.id {
			t.Errorf("%.50s: got id=%q %+v, want id=%q code %s", c.line, r.ID, r.Error, c.id, c.code)
			continue
		}
		if r.Error.Message == "" {
			t.Errorf("%s: empty message", c.code)
		}
	}
	// A line over 1 MiB is refused and the connection keeps working.
	big := `{"id":"big","method":"agent.run","params":{"path":"x","prompt":"` + strings.Repeat("z", 1<<20) + `"}}`
	if r := rc.roundTrip(big); r.Error == nil || r.Error.Code != wire.CodeLineTooLong {
		t.Fatalf("1 MiB line: %+v", r.Error)
	}
	if r := rc.roundTrip(`{"id":"after","method":"server.ping"}`); r.Error != nil || r.ID != "after" {
		t.Fatalf("ping after long line: %+v", r)
	}
	// Other clients were served all along.
	if out := e.must("agent", "ls"); !strings.Contains(out, "taken/one") {
		t.Fatalf("server stopped serving: %s", out)
	}
	// The messages say what to do.
	r := e.orcr("agent", "run", "taken/one", "--", "true")
	if r.Code != 1 || !strings.Contains(r.Err, "orcr agent kill taken/one") {
		t.Fatalf("path taken message: %q", r.Err)
	}
	r = e.orcr("agent", "read", "no/such")
	if r.Code != 1 || !strings.Contains(r.Err, "orcr agent ls") {
		t.Fatalf("not found message: %q", r.Err)
	}
}

func TestSocketAndHomePermissions(t *testing.T) {
	e := newEnv(t)
	e.serve()
	st, err := os.Stat(socket.SocketPath(e.home))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v, want 0600", st.Mode().Perm())
	}
	hs, _ := os.Stat(e.home)
	if hs.Mode().Perm() != 0o700 {
		t.Fatalf("home mode %v, want 0700", hs.Mode().Perm())
	}
}

func TestSchemaMatchesServer(t *testing.T) {
	e := newEnv(t)
	e.serve()
	var schema map[string]any
	if err := json.Unmarshal([]byte(e.must("api", "schema")), &schema); err != nil {
		t.Fatal(err)
	}
	methods := schema["methods"].(map[string]any)
	for _, m := range wire.Methods {
		if _, ok := methods[m.Name]; !ok {
			t.Errorf("schema output lacks %s", m.Name)
		}
	}
	// Each read-only method answers with exactly the result type the schema names.
	rc := e.raw()
	for _, m := range []string{wire.MethodPing, wire.MethodInfo, wire.MethodQueue, wire.MethodUsage, schedapi.MethodScheduleList, wire.MethodAgentList,
		planapi.MethodPlanList, planapi.MethodCatalogGet} {
		spec, _ := wire.Lookup(m)
		r := rc.roundTrip(`{"id":"s","method":"` + m + `"}`)
		if r.Error != nil {
			t.Fatalf("%s: %+v", m, r.Error)
		}
		if err := strictDecode(r.Result, reflect.Zero(spec.Result).Interface()); err != nil {
			t.Errorf("%s result disagrees with the schema: %v", m, err)
		}
	}
}

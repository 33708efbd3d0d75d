package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"orcr/adapters/shell"
	"orcr/core"
	"orcr/core/wire"
	"orcr/pty"
	"orcr/store"
	"orcr/web"
	webapi "orcr/web/api"
)

// rig is a server's worth of kernel and the web feature on a real badger store and
// the embedded pty host, its gateway served by httptest over the same handler table
// the daemon gives the socket (the kernel's and the features').
type rig struct {
	t     testing.TB
	home  string
	eng   *core.Engine
	st    *store.Store
	web   *web.Service
	srv   *httptest.Server
	hs    []wire.Handler
	host  core.Host
	opts  web.Options
	local *localCaller
	// serveErr is the gateway listener's refusal (ErrNoToken, or any when
	// anyServeErr).
	serveErr    error
	anyServeErr bool
}

func newRig(t testing.TB, home string, o web.Options) *rig {
	t.Helper()
	if home == "" {
		home = t.TempDir()
	}
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	r := &rig{t: t, home: home, opts: o}
	r.start()
	t.Cleanup(r.stop)
	return r
}

func (r *rig) start() {
	t := r.t
	st, err := store.Open(r.home+"/store", nil)
	if err != nil {
		t.Fatal(err)
	}
	r.st = st
	r.host = pty.New(pty.Options{})
	eng, err := core.NewEngine(core.Options{Store: st, Host: r.host, Providers: []core.Provider{shell.New()},
		Home: r.home, Socket: r.home + "/orcr.sock"})
	if err != nil {
		t.Fatal(err)
	}
	r.eng = eng
	r.web = web.New(r.opts)
	if err := eng.Start(context.Background(), r.web); err != nil {
		t.Fatal(err)
	}
	r.hs = append(core.KernelMethods(eng), r.web.Methods()...)
	h, err := r.web.Handler(r.hs)
	if err != nil {
		t.Fatal(err)
	}
	r.srv = httptest.NewServer(h)
	r.local = &localCaller{hs: r.hs}
	// The gateway's own listener too (on a free loopback port), so web.pair has an
	// address to print; the tests call the httptest server, which serves the same
	// handler over the same tokens.
	if _, r.serveErr = r.web.Serve(r.hs); r.serveErr != nil && !errors.Is(r.serveErr, web.ErrNoToken) && !r.anyServeErr {
		t.Fatal(r.serveErr)
	}
}

func (r *rig) stop() {
	if r.eng == nil {
		return
	}
	r.srv.CloseClientConnections()
	r.web.Close()
	r.srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r.eng.Close(ctx)
	r.st.Close()
	r.eng = nil
}

// restart stops everything and starts it again on the same home: a new server
// process's worth (store reopened, agents reconciled), a new gateway address.
func (r *rig) restart() {
	r.stop()
	r.start()
}

// localCaller calls handlers as the socket would for the machine's user.
type localCaller struct{ hs []wire.Handler }

func (l *localCaller) call(t testing.TB, method string, params, result any) error {
	t.Helper()
	for _, h := range l.hs {
		if h.Spec().Name != method {
			continue
		}
		raw, _ := json.Marshal(params)
		p, err := h.Decode(raw)
		if err != nil {
			return err
		}
		res, err := h.Serve(core.WithCaller(context.Background(), core.Caller{InProcess: true}), p)
		if err != nil {
			return err
		}
		b, _ := json.Marshal(res)
		return json.Unmarshal(b, result)
	}
	t.Fatalf("no handler %s", method)
	return nil
}

// token makes a token through the socket method, as `orcr web token new` does.
func (r *rig) token(scope string, ttl time.Duration) string {
	r.t.Helper()
	var res webapi.TokenNewResult
	if err := r.local.call(r.t, webapi.MethodTokenNew, webapi.TokenNewParams{Scope: scope, TTLSeconds: int64(ttl / time.Second)}, &res); err != nil {
		r.t.Fatal(err)
	}
	return res.Secret
}

// post calls a method through the gateway with a bearer token.
func (r *rig) post(method, token, body string) (int, map[string]any) {
	r.t.Helper()
	req, _ := http.NewRequest("POST", r.srv.URL+"/api/v1/"+method, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return do(r.t, req)
}

func do(t testing.TB, req *http.Request) (int, map[string]any) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return resp.StatusCode, m
}

func errCode(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// sseEvent is one event of a stream.
type sseEvent struct {
	id    string
	event string
	data  string
}

// sseReader reads Server-Sent Events.
type sseReader struct {
	resp *http.Response
	br   *bufio.Reader
}

func (r *rig) openEvents(token, query string, header map[string]string) *sseReader {
	r.t.Helper()
	return openSSE(r.t, r.srv.URL+"/api/v1/events"+query, token, header)
}

func openSSE(t testing.TB, url, token string, header map[string]string) *sseReader {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("events: %d %s", resp.StatusCode, b)
	}
	s := &sseReader{resp: resp, br: bufio.NewReader(resp.Body)}
	t.Cleanup(s.close)
	return s
}

func (s *sseReader) close() { s.resp.Body.Close() }

// next reads the next event (comments skipped); io.EOF at the end.
func (s *sseReader) next() (sseEvent, error) {
	var ev sseEvent
	have := false
	for {
		line, err := s.br.ReadString('\n')
		if err != nil {
			return ev, err
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "":
			if have {
				return ev, nil
			}
		case strings.HasPrefix(line, ":"), strings.HasPrefix(line, "retry:"):
		case strings.HasPrefix(line, "id: "):
			ev.id, have = line[4:], true
		case strings.HasPrefix(line, "event: "):
			ev.event, have = line[7:], true
		case strings.HasPrefix(line, "data: "):
			ev.data, have = line[6:], true
		}
	}
}

// nextWithin is next with a deadline: the stream is closed when it passes.
func (s *sseReader) nextWithin(t testing.TB, d time.Duration) sseEvent {
	t.Helper()
	done := make(chan struct{})
	timer := time.AfterFunc(d, func() { s.resp.Body.Close() })
	defer timer.Stop()
	defer close(done)
	ev, err := s.next()
	if err != nil {
		t.Fatalf("no event within %s: %v", d, err)
	}
	return ev
}

func seqOf(t testing.TB, ev sseEvent) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(ev.id, 10, 64)
	if err != nil {
		t.Fatalf("event without a seq id: %+v", ev)
	}
	return n
}

// spawn starts a shell agent through the gateway.
func (r *rig) spawn(token, path, script string) wire.Agent {
	r.t.Helper()
	b, _ := json.Marshal(wire.RunParams{Path: path, Argv: []string{"sh", "-c", script}, Cwd: r.home})
	code, m := r.post("agent.run", token, string(b))
	if code != 200 {
		r.t.Fatalf("agent.run: %d %v", code, m)
	}
	var res wire.AgentResult
	bb, _ := json.Marshal(m)
	json.Unmarshal(bb, &res)
	return res.Agent
}

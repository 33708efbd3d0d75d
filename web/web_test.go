package web_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"orcr/core/wire"
	"orcr/testutil/wait"
	"orcr/web"
	webapi "orcr/web/api"
)

// Every method the server's table holds is reached through POST /api/v1/{method}:
// a malformed body is refused by that method's own decoder (invalid_params), never as
// an unknown method; the credential-minting ones are refused as local-only.
func TestEveryMethodIsServed(t *testing.T) {
	r := newRig(t, "", web.Options{})
	act := r.token(webapi.ScopeAct, 0)
	if len(r.hs) < 20 {
		t.Fatalf("only %d handlers", len(r.hs))
	}
	for _, h := range r.hs {
		name := h.Spec().Name
		code, m := r.post(name, act, `{"no such field": 1}`)
		switch {
		case webapi.Local[name]:
			if code != http.StatusForbidden || errCode(m) != wire.CodePermission {
				t.Errorf("%s over HTTP: %d %v, want 403 permission", name, code, m)
			}
		case code != http.StatusBadRequest || errCode(m) != wire.CodeInvalidParams:
			t.Errorf("%s with a bad body: %d %v, want 400 invalid_params from its decoder", name, code, m)
		}
	}
	code, m := r.post("server.ping", act, "")
	if code != 200 || m["pong"] != true {
		t.Fatalf("ping: %d %v", code, m)
	}
}

func TestRefusals(t *testing.T) {
	r := newRig(t, "", web.Options{})
	read := r.token(webapi.ScopeRead, 0)
	act := r.token(webapi.ScopeAct, 0)
	cases := []struct {
		name, method, token, body string
		status                    int
		code                      string
	}{
		{"no token", "agent.list", "", "{}", 401, webapi.CodeUnauthorized},
		{"wrong token", "agent.list", "orcr_" + strings.Repeat("A", 43), "{}", 401, webapi.CodeUnauthorized},
		{"not our format", "agent.list", "hunter2", "{}", 401, webapi.CodeUnauthorized},
		{"read token lists", "agent.list", read, "{}", 200, ""},
		{"read token kills", "agent.kill", read, `{"glob":"**"}`, 403, wire.CodePermission},
		{"read token runs", "agent.run", read, `{"path":"a"}`, 403, wire.CodePermission},
		{"read token answers", "agent.answer", read, `{"target":"a","deny":true}`, 403, wire.CodePermission},
		{"read token revokes", "web.token.remove", read, `{"name":"x"}`, 403, wire.CodePermission},
		{"read token lists tokens", "web.token.list", read, `{}`, 200, ""},
		{"act token mints", "web.token.new", act, `{"scope":"act"}`, 403, wire.CodePermission},
		{"act token pairs", "web.pair", act, `{}`, 403, wire.CodePermission},
		{"unknown method", "agent.explode", act, "{}", 404, wire.CodeUnknownMethod},
		{"unknown method needs a credential first", "agent.explode", "", "{}", 401, webapi.CodeUnauthorized},
		{"not found keeps its code", "agent.get", act, `{"target":"nobody"}`, 404, wire.CodeNotFound},
		{"bad path keeps its code", "agent.run", act, `{"path":"../x"}`, 400, wire.CodeInvalidPath},
		{"malformed JSON", "agent.list", act, `{`, 400, wire.CodeInvalidParams},
		{"oversized body", "agent.list", act, `{"glob":"` + strings.Repeat("x", wire.MaxLine+10) + `"}`, 413, wire.CodeLineTooLong},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, m := r.post(c.method, c.token, c.body)
			if status != c.status || errCode(m) != c.code {
				t.Fatalf("%s: %d %q %v, want %d %q", c.method, status, errCode(m), m["error"], c.status, c.code)
			}
		})
	}
	// A GET on a method is refused (it is called with POST).
	req, _ := http.NewRequest("GET", r.srv.URL+"/api/v1/agent.list", nil)
	req.Header.Set("Authorization", "Bearer "+act)
	if code, m := do(t, req); code != 405 || errCode(m) != wire.CodeBadRequest {
		t.Fatalf("GET a method: %d %v", code, m)
	}
}

// A token removed or past its TTL is refused at once.
func TestTokenExpiryAndRevocation(t *testing.T) {
	r := newRig(t, "", web.Options{})
	short := r.token(webapi.ScopeAct, time.Second)
	if code, _ := r.post("server.ping", short, ""); code != 200 {
		t.Fatalf("fresh token: %d", code)
	}
	wait.For(t, 5*time.Second, "the 1 s token to expire", func() bool {
		code, m := r.post("server.ping", short, "")
		return code == 401 && errCode(m) == webapi.CodeUnauthorized
	})
	var res webapi.TokenNewResult
	if err := r.local.call(t, webapi.MethodTokenNew, webapi.TokenNewParams{Name: "phone", Scope: "act"}, &res); err != nil {
		t.Fatal(err)
	}
	if code, _ := r.post("server.ping", res.Secret, ""); code != 200 {
		t.Fatalf("named token: %d", code)
	}
	var dup webapi.TokenNewResult
	if err := r.local.call(t, webapi.MethodTokenNew, webapi.TokenNewParams{Name: "phone", Scope: "act"}, &dup); !errors.Is(err, &wire.Error{Code: wire.CodeNameTaken}) {
		t.Fatalf("second token named phone: %v", err)
	}
	if err := r.local.call(t, webapi.MethodTokenNew, webapi.TokenNewParams{Scope: "admin"}, &dup); !errors.Is(err, wire.ErrInvalidParams) {
		t.Fatalf("scope admin: %v", err)
	}
	var empty wire.Empty
	if err := r.local.call(t, webapi.MethodTokenRemove, webapi.TokenNameParams{Name: "phone"}, &empty); err != nil {
		t.Fatal(err)
	}
	if code, _ := r.post("server.ping", res.Secret, ""); code != 401 {
		t.Fatalf("revoked token: %d", code)
	}
	// Tokens are kept across a restart, hashed: the secret is nowhere in the store.
	keep := r.token(webapi.ScopeRead, 0)
	r.restart()
	if code, _ := r.post("server.ping", keep, ""); code != 200 {
		t.Fatalf("token after a restart: %d", code)
	}
	if code, _ := r.post("server.ping", res.Secret, ""); code != 401 {
		t.Fatalf("revoked token after a restart: %d", code)
	}
}

// pair redeems a pairing code as the pairing page's script does.
func pair(t *testing.T, r *rig, code string, header bool) (*http.Response, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", r.srv.URL+"/pair", strings.NewReader(`{"code":"`+code+`"}`))
	req.Header.Set("Content-Type", "application/json")
	if header {
		req.Header.Set("X-Orcr", "1")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	return resp, m
}

func codeOf(t *testing.T, url string) string {
	t.Helper()
	_, c, ok := strings.Cut(url, "code=")
	if !ok {
		t.Fatalf("no code in %s", url)
	}
	return c
}

// A pairing code logs one browser in, once: the cookie is HttpOnly and
// SameSite=Strict, a write with it needs the custom header, and a cross-origin form
// POST is refused.
func TestPairingAndBrowserSession(t *testing.T) {
	r := newRig(t, "", web.Options{})
	var pr webapi.PairResult
	if err := r.local.call(t, webapi.MethodPair, webapi.PairParams{}, &pr); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(pr.URL, "http://127.0.0.1:") || pr.ExpiresAt.Before(time.Now().Add(4*time.Minute)) {
		t.Fatalf("pairing: %+v", pr)
	}
	code := codeOf(t, pr.URL)
	// The pairing page is served without a credential; its script does the rest.
	if resp, err := http.Get(r.srv.URL + "/pair?code=" + code); err != nil || resp.StatusCode != 200 {
		t.Fatalf("pairing page: %v %v", resp, err)
	}
	if resp, _ := pair(t, r, code, false); resp.StatusCode != 403 {
		t.Fatalf("pairing without the header: %d", resp.StatusCode)
	}
	resp, m := pair(t, r, code, true)
	if resp.StatusCode != 200 || m["scope"] != "act" {
		t.Fatalf("pairing: %d %v", resp.StatusCode, m)
	}
	var session *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "orcr_session" {
			session = c
		}
	}
	if session == nil || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || session.Path != "/" {
		t.Fatalf("session cookie: %+v", session)
	}
	if resp, m := pair(t, r, code, true); resp.StatusCode != 401 || errCode(m) != webapi.CodeUnauthorized {
		t.Fatalf("replayed pairing code: %d %v", resp.StatusCode, m)
	}
	if resp, _ := pair(t, r, "nonsense", true); resp.StatusCode != 401 {
		t.Fatalf("made-up pairing code: %d", resp.StatusCode)
	}
	call := func(method, body string, hdr map[string]string) (int, map[string]any) {
		req, _ := http.NewRequest("POST", r.srv.URL+"/api/v1/"+method, strings.NewReader(body))
		req.AddCookie(&http.Cookie{Name: "orcr_session", Value: session.Value})
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		return do(t, req)
	}
	if code, m := call("agent.list", "{}", map[string]string{"X-Orcr": "1"}); code != 200 {
		t.Fatalf("the browser's call: %d %v", code, m)
	}
	if code, m := call("agent.list", "{}", nil); code != 403 || errCode(m) != wire.CodePermission {
		t.Fatalf("the browser's call without the header: %d %v", code, m)
	}
	// A page elsewhere posting a form with the browser's cookie (were it sent).
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": "http://evil.example"}
	if code, m := call("agent.kill", `glob=**`, form); code != 403 || errCode(m) != wire.CodePermission {
		t.Fatalf("cross-origin form POST: %d %v", code, m)
	}
	form["X-Orcr"] = "1"
	if code, _ := call("agent.kill", `{"glob":"**"}`, form); code != 403 {
		t.Fatalf("cross-origin POST with the header: %d", code)
	}
	if code, _ := call("agent.list", `{}`, map[string]string{"X-Orcr": "1", "Sec-Fetch-Site": "cross-site"}); code != 403 {
		t.Fatalf("cross-site fetch: %d", code)
	}
	// The browser shows in the list as a paired device; logging out revokes it.
	var st webapi.StatusResult
	if err := r.local.call(t, webapi.MethodStatus, wire.Empty{}, &st); err != nil || len(st.Devices) != 1 || st.Devices[0].Kind != "session" {
		t.Fatalf("status: %+v %v", st, err)
	}
	req, _ := http.NewRequest("POST", r.srv.URL+"/logout", nil)
	req.AddCookie(&http.Cookie{Name: "orcr_session", Value: session.Value})
	req.Header.Set("X-Orcr", "1")
	if code, _ := do(t, req); code != 204 {
		t.Fatalf("logout: %d", code)
	}
	if code, _ := call("agent.list", "{}", map[string]string{"X-Orcr": "1"}); code != 401 {
		t.Fatalf("after logout: %d", code)
	}
}

// An address beyond loopback is refused while no token exists, and served once one
// is made; loopback serves without one (every request still needs a credential).
func TestWildcardNeedsAToken(t *testing.T) {
	r := newRig(t, "", web.Options{Listen: "0.0.0.0:0"})
	if !errors.Is(r.serveErr, web.ErrNoToken) || r.web.Addr() != "" {
		t.Fatalf("0.0.0.0 with no token: %v, serving on %q", r.serveErr, r.web.Addr())
	}
	var st webapi.StatusResult
	if err := r.local.call(t, webapi.MethodStatus, wire.Empty{}, &st); err != nil || !strings.Contains(st.Error, "orcr web token new") {
		t.Fatalf("status says why: %+v %v", st, err)
	}
	var pr webapi.PairResult
	if err := r.local.call(t, webapi.MethodPair, webapi.PairParams{}, &pr); !errors.Is(err, wire.ErrUnavailable) {
		t.Fatalf("pairing with no gateway: %v", err)
	}
	tok := r.token(webapi.ScopeRead, 0)
	addr := r.web.Addr()
	if addr == "" {
		t.Fatal("a token was made and the gateway still does not serve")
	}
	_, port, _ := net.SplitHostPort(addr)
	req, _ := http.NewRequest("POST", "http://127.0.0.1:"+port+"/api/v1/server.ping", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	if code, m := do(t, req); code != 200 {
		t.Fatalf("ping on the wildcard gateway: %d %v", code, m)
	}
	lo := newRig(t, "", web.Options{Listen: "127.0.0.1:0"})
	if lo.serveErr != nil || lo.web.Addr() == "" {
		t.Fatalf("loopback: %v", lo.serveErr)
	}
}

// The events stream: id is the seq, ?after= and Last-Event-ID start after it, with
// nothing before it and everything after; heartbeats keep an idle stream open.
func TestEventsSSE(t *testing.T) {
	r := newRig(t, "", web.Options{Heartbeat: 50 * time.Millisecond})
	act := r.token(webapi.ScopeAct, 0)
	live := r.openEvents(act, "", nil) // no cursor: live only
	a := r.spawn(act, "one", "sleep 30")
	ev := live.nextWithin(t, 5*time.Second)
	if ev.event != wire.EventAgentSpawned || !strings.Contains(ev.data, a.ID) {
		t.Fatalf("first live event: %+v", ev)
	}
	first := seqOf(t, ev)
	var got wire.Event
	if err := json.Unmarshal([]byte(ev.data), &got); err != nil || got.Seq != first {
		t.Fatalf("data is the event: %v %+v", err, got)
	}
	r.spawn(act, "two", "sleep 30")
	wait.For(t, 5*time.Second, "two's events", func() bool {
		var info wire.InfoResult
		r.local.call(t, wire.MethodInfo, wire.Empty{}, &info)
		return info.LastSeq >= first+3
	})
	for _, from := range []struct {
		query  string
		header map[string]string
	}{
		{fmt.Sprintf("?after=%d", first), nil},
		{"", map[string]string{"Last-Event-ID": fmt.Sprint(first)}},
		{"?after=0", map[string]string{"Last-Event-ID": fmt.Sprint(first)}}, // the reconnect's cursor wins
	} {
		s := r.openEvents(act, from.query, from.header)
		ev := s.nextWithin(t, 5*time.Second)
		if seqOf(t, ev) != first+1 {
			t.Fatalf("%v: first event %s, want seq %d", from, ev.id, first+1)
		}
		s.close()
	}
	// Heartbeats: the raw stream carries comments while nothing happens.
	req, _ := http.NewRequest("GET", r.srv.URL+"/api/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+act)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	buf := make([]byte, 4096)
	var seen bytes.Buffer
	deadline := time.AfterFunc(5*time.Second, func() { resp.Body.Close() })
	defer deadline.Stop()
	for !strings.Contains(seen.String(), ": heartbeat") {
		n, err := resp.Body.Read(buf)
		if err != nil {
			t.Fatalf("no heartbeat: %q %v", seen.String(), err)
		}
		seen.Write(buf[:n])
	}
	// Refusals: no credential, a bad cursor.
	req, _ = http.NewRequest("GET", r.srv.URL+"/api/v1/events", nil)
	if code, _ := do(t, req); code != 401 {
		t.Fatalf("events without a token: %d", code)
	}
	req, _ = http.NewRequest("GET", r.srv.URL+"/api/v1/events?after=-1", nil)
	req.Header.Set("Authorization", "Bearer "+act)
	if code, _ := do(t, req); code != 400 {
		t.Fatalf("events after -1: %d", code)
	}
}

// A client that reconnects with Last-Event-ID after the server restarted gets every
// event it missed and none twice: the stream's ids are the stored seqs.
func TestEventsResumeAcrossRestart(t *testing.T) {
	r := newRig(t, "", web.Options{})
	act := r.token(webapi.ScopeAct, 0)
	seen := map[uint64]int{}
	s := r.openEvents(act, "?after=0", nil)
	for i := range 3 {
		r.spawn(act, fmt.Sprintf("before/%d", i), "sleep 60")
	}
	var last uint64
	wait.For(t, 10*time.Second, "the events of three spawns", func() bool {
		ev := s.nextWithin(t, 5*time.Second)
		last = seqOf(t, ev)
		seen[last]++
		return last >= 6
	})
	s.close()
	r.restart() // the agents are reconciled (their pty panes died with the host): more events
	for i := range 3 {
		r.spawn(act, fmt.Sprintf("after/%d", i), "sleep 60")
	}
	var info wire.InfoResult
	wait.For(t, 10*time.Second, "the events after the restart", func() bool {
		r.local.call(t, wire.MethodInfo, wire.Empty{}, &info)
		return info.LastSeq > last+6
	})
	s2 := r.openEvents(act, "", map[string]string{"Last-Event-ID": fmt.Sprint(last)})
	for last < info.LastSeq {
		ev := s2.nextWithin(t, 5*time.Second)
		last = seqOf(t, ev)
		seen[last]++
	}
	for seq := uint64(1); seq <= info.LastSeq; seq++ {
		if seen[seq] != 1 {
			t.Errorf("seq %d seen %d times", seq, seen[seq])
		}
	}
}

// A client that never reads its stream is dropped once its socket's buffers are
// full and a write waits past the write timeout; another client's stream goes on.
func TestSlowEventsClientIsDropped(t *testing.T) {
	r := newRig(t, "", web.Options{WriteTimeout: 300 * time.Millisecond})
	act := r.token(webapi.ScopeAct, 0)
	u := strings.TrimPrefix(r.srv.URL, "http://")
	d := net.Dialer{}
	slow, err := d.Dial("tcp", u)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	slow.(*net.TCPConn).SetReadBuffer(4096)
	fmt.Fprintf(slow, "GET /api/v1/events?after=0 HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", u, act)
	good := r.openEvents(act, "", nil)
	statusClients := func() int {
		var st webapi.StatusResult
		r.local.call(t, webapi.MethodStatus, wire.Empty{}, &st)
		return st.Clients
	}
	wait.For(t, 5*time.Second, "both streams open", func() bool { return statusClients() == 2 })
	var mu sync.Mutex
	var goodSeen int
	go func() {
		for {
			if _, err := good.next(); err != nil {
				return
			}
			mu.Lock()
			goodSeen++
			mu.Unlock()
		}
	}()
	// Each event carries the agent's argv: 256 KiB of it makes a few dozen events
	// more than any socket buffers.
	big := strings.Repeat("x", 256<<10)
	for i := 0; statusClients() == 2; i++ {
		if i > 200 {
			t.Fatal("the slow client was never dropped")
		}
		b, _ := json.Marshal(wire.RunParams{Path: fmt.Sprintf("big/%d", i), Argv: []string{"sh", "-c", "exit 0", big}, Cwd: r.home})
		if code, m := r.post("agent.run", act, string(b)); code != 200 {
			t.Fatalf("run: %d %v", code, m)
		}
	}
	// The good client still gets what comes next, promptly.
	mu.Lock()
	before := goodSeen
	mu.Unlock()
	r.spawn(act, "after-drop", "sleep 30")
	wait.For(t, 5*time.Second, "the reading client's next event", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return goodSeen > before
	})
}

// Tokens never reach the log nor the events.
func TestTokensNeverLogged(t *testing.T) {
	var logb syncBuffer
	r := newRig(t, "", web.Options{Logger: slog.New(slog.NewTextHandler(&logb, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	act := r.token(webapi.ScopeAct, 0)
	r.post("server.ping", act, "")
	r.post("agent.kill", act+"x", `{"glob":"**"}`)
	r.spawn(act, "a", "sleep 10")
	var pr webapi.PairResult
	if err := r.local.call(t, webapi.MethodPair, webapi.PairParams{}, &pr); err != nil {
		t.Fatal(err)
	}
	pair(t, r, codeOf(t, pr.URL), true)
	s := r.openEvents(act, "?after=0", nil)
	ev := s.nextWithin(t, 5*time.Second)
	secret := strings.TrimPrefix(act, "orcr_")
	if strings.Contains(ev.data, secret) || strings.Contains(logb.String(), secret) || strings.Contains(logb.String(), codeOf(t, pr.URL)) {
		t.Fatalf("a secret leaked: log %q event %q", logb.String(), ev.data)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The live screen: frames of the agent's screen rendered with its colours.
func TestScreenStream(t *testing.T) {
	r := newRig(t, "", web.Options{})
	act := r.token(webapi.ScopeAct, 0)
	a := r.spawn(act, "colours", `printf '\033[31mred\033[0m <b>plain</b>\n'; sleep 30`)
	s := openSSE(t, r.srv.URL+"/api/v1/screen?target="+a.ID, act, nil)
	var f web.Frame
	wait.For(t, 10*time.Second, "a frame with the red text", func() bool {
		ev := s.nextWithin(t, 5*time.Second)
		if ev.event != "screen" {
			t.Fatalf("event %+v", ev)
		}
		if err := json.Unmarshal([]byte(ev.data), &f); err != nil {
			t.Fatal(err)
		}
		return strings.Contains(f.HTML, `<span class="fc1">red</span>`)
	})
	if !strings.Contains(f.HTML, "&lt;b&gt;plain&lt;/b&gt;") || f.ID != a.ID || !f.Live {
		t.Fatalf("frame: %+v", f)
	}
	req, _ := http.NewRequest("GET", r.srv.URL+"/api/v1/screen?target=nobody", nil)
	req.Header.Set("Authorization", "Bearer "+act)
	if code, m := do(t, req); code != 404 || errCode(m) != wire.CodeNotFound {
		t.Fatalf("screen of nobody: %d %v", code, m)
	}
}

// A streaming method over POST answers NDJSON: the result, then its lines.
func TestStreamingMethodOverPOST(t *testing.T) {
	r := newRig(t, "", web.Options{})
	act := r.token(webapi.ScopeAct, 0)
	r.spawn(act, "s", "sleep 10")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", r.srv.URL+"/api/v1/events.subscribe", strings.NewReader(`{"after":0}`))
	req.Header.Set("Authorization", "Bearer "+act)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	var res wire.SubscribeResult
	var ev wire.Event
	if err := dec.Decode(&res); err != nil || !res.Subscribed {
		t.Fatalf("result: %+v %v", res, err)
	}
	if err := dec.Decode(&ev); err != nil || ev.Seq != 1 {
		t.Fatalf("first line: %+v %v", ev, err)
	}
	_ = io.Discard
}

// The page and its files are served without a credential (they hold nothing); the
// page asks the API, which needs one. Every answer carries the strict headers.
func TestPageIsServed(t *testing.T) {
	r := newRig(t, "", web.Options{})
	for _, p := range []string{"/", "/static/app.js", "/static/app.css", "/static/palette.css", "/pair?code=x", "/static/pair.js"} {
		resp, err := http.Get(r.srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || len(b) < 100 {
			t.Fatalf("%s: %d, %d bytes", p, resp.StatusCode, len(b))
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Fatalf("%s: headers %v", p, resp.Header)
		}
	}
	if resp, _ := http.Get(r.srv.URL + "/static/nothing.js"); resp.StatusCode != 404 {
		t.Fatalf("missing file: %d", resp.StatusCode)
	}
	// No CORS: a preflight is not answered with permission.
	req, _ := http.NewRequest("OPTIONS", r.srv.URL+"/api/v1/agent.list", nil)
	req.Header.Set("Origin", "http://evil.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("Access-Control-Allow-Origin") != "" || resp.StatusCode < 400 {
		t.Fatalf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
}

// [notify] command is run once for an agent that becomes blocked, with the event as
// JSON on its stdin; a kind turned off is not told.
func TestNotifyCommand(t *testing.T) {
	dir := t.TempDir()
	out := dir + "/told"
	r := newRig(t, "", web.Options{NotifyCommand: "cat >> " + out, NotifyOff: map[string]bool{"plan_drafted": true}})
	act := r.token(webapi.ScopeAct, 0)
	a := r.spawn(act, "ask/a", `printf 'Remove build? [y/N] '; read -r x; echo "got:$x"; sleep 30`)
	var told []web.Notice
	wait.For(t, 20*time.Second, "the blocked agent told", func() bool {
		b, _ := os.ReadFile(out)
		told = nil
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var n web.Notice
			if json.Unmarshal([]byte(line), &n) == nil {
				told = append(told, n)
			}
		}
		return len(told) > 0
	})
	if told[0].Kind != "blocked" || told[0].Title != "ask/a is blocked" || told[0].Event.Agent == nil || told[0].Event.Agent.ID != a.ID {
		t.Fatalf("told %+v", told[0])
	}
	// Text never answers a prompt by accident: a send to the blocked agent is refused.
	if code, m := r.post("agent.send", act, `{"target":"ask/a","text":"y","enter":true}`); code != 409 || errCode(m) != wire.CodeAgentBlocked {
		t.Fatalf("text to a blocked agent: %d %v", code, m)
	}
	// Answered and blocked no more: nothing more is told for that event, even later.
	if code, m := r.post("agent.answer", act, `{"target":"ask/a","deny":true}`); code != 200 {
		t.Fatalf("answer: %d %v", code, m)
	}
	// After a restart, another agent blocks: it is told, and the first is not again.
	r.restart()
	act = r.token(webapi.ScopeAct, 0)
	r.spawn(act, "ask/b", `printf 'Remove dist? [y/N] '; read -r x; sleep 30`)
	wait.For(t, 20*time.Second, "the second blocked agent told", func() bool {
		b, _ := os.ReadFile(out)
		return strings.Contains(string(b), "ask/b is blocked")
	})
	b, _ := os.ReadFile(out)
	if n := strings.Count(string(b), "ask/a is blocked"); n != 1 {
		t.Fatalf("ask/a told %d times:\n%s", n, b)
	}
}

// 1,000 event streams at once: each gets the next event, and the server still
// answers a call promptly meanwhile.
func TestThousandEventStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test opens 1,000 connections (scripts/test runs it)")
	}
	r := newRig(t, "", web.Options{})
	tok := r.token(webapi.ScopeRead, 0)
	const n = 1000
	var got sync.WaitGroup
	for range n {
		s := r.openEvents(tok, "", nil)
		got.Add(1)
		go func() {
			defer got.Done()
			for {
				ev, err := s.next()
				if err != nil || ev.event == "thousand.tick" {
					return
				}
			}
		}()
	}
	var st webapi.StatusResult
	if err := r.local.call(t, webapi.MethodStatus, wire.Empty{}, &st); err != nil || st.Clients != n {
		t.Fatalf("open streams: %d %v", st.Clients, err)
	}
	if _, err := r.eng.Publish(context.Background(), wire.Event{Event: "thousand.tick"}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { got.Wait(); close(done) }()
	start := time.Now()
	if code, _ := r.post("server.ping", tok, ""); code != 200 {
		t.Fatalf("ping among 1,000 streams: %d", code)
	}
	t.Logf("a ping among 1,000 streams took %s", time.Since(start).Round(time.Millisecond))
	select {
	case <-done:
	case <-time.After(wait.Scale(30 * time.Second)):
		t.Fatal("not every stream got the event")
	}
}

// Every method's answer carries X-Orcr-Seq, the newest event's seq before the
// method ran: the page draws from one agent.list and follows the events after it.
func TestMethodAnswerCarriesSeq(t *testing.T) {
	r := newRig(t, "", web.Options{})
	tok := r.token(webapi.ScopeRead, 0)
	if _, err := r.eng.Publish(context.Background(), wire.Event{Event: "test.tick"}); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", r.srv.URL+"/api/v1/agent.list", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got, want := resp.Header.Get("X-Orcr-Seq"), fmt.Sprint(r.eng.LastSeq()); got != want || want == "0" {
		t.Fatalf("X-Orcr-Seq %q, want %q", got, want)
	}
}

// An address the gateway could never listen on is refused as such (the server then
// does not start), not taken for "beyond loopback, waiting for a token".
func TestBadListenAddress(t *testing.T) {
	for _, addr := range []string{"nonsense", "127.0.0.1:99999", "localhost:http-ish", "0.0.0.0:-1", "a b:7070"} {
		r := &rig{t: t, home: t.TempDir(), opts: web.Options{Listen: addr}, anyServeErr: true}
		r.start()
		if r.serveErr == nil || errors.Is(r.serveErr, web.ErrNoToken) || !strings.Contains(r.serveErr.Error(), "want HOST:PORT") {
			t.Errorf("--http %q: %v", addr, r.serveErr)
		}
		r.stop()
	}
}

// web.agents answers what the page draws of each agent — id, path, state and a
// blocked agent's prompt without its full text — and nothing else of the record; a
// read token may call it, and its answer carries X-Orcr-Seq like every method's.
func TestWebAgentsRows(t *testing.T) {
	r := newRig(t, "", web.Options{})
	read := r.token(webapi.ScopeRead, 0)
	now := time.Now()
	fleet := []wire.Agent{
		{ID: "0193a", Path: "team/a", State: wire.StateWorking, Provider: "claude", Argv: []string{"claude", "--big"},
			Prompt: "a long prompt", CreatedAt: now, Env: map[string]string{"K": "<redacted>"}},
		{ID: "0193b", Path: "team/b", State: wire.StateBlocked, CreatedAt: now, Blocked: &wire.Blocked{Kind: wire.BlockedPlan,
			Detail: "plan", Question: "Approve?", Text: strings.Repeat("# the plan\n", 100),
			Options: []wire.Option{{Label: "Yes", Key: "1", Meaning: wire.MeaningAllowOnce}}}},
	}
	var asked wire.ListParams
	r.web.SetList(func(_ context.Context, p wire.ListParams) ([]wire.Agent, error) { asked = p; return fleet, nil })
	req, _ := http.NewRequest("POST", r.srv.URL+"/api/v1/web.agents", strings.NewReader(`{"glob":"team/**"}`))
	req.Header.Set("Authorization", "Bearer "+read)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("X-Orcr-Seq") == "" {
		t.Fatalf("web.agents: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	if asked.Glob != "team/**" {
		t.Fatalf("listed with %+v", asked)
	}
	var res struct {
		Agents []map[string]json.RawMessage `json:"agents"`
	}
	if err := json.Unmarshal(body, &res); err != nil || len(res.Agents) != 2 {
		t.Fatalf("answer %s: %v", body, err)
	}
	for _, row := range res.Agents {
		keys := make([]string, 0, len(row))
		for k := range row {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if strings.Join(keys, ",") != "blocked,id,path,state" {
			t.Fatalf("a row has %v: %s", keys, body)
		}
	}
	if string(res.Agents[0]["id"]) != `"0193a"` || string(res.Agents[0]["state"]) != `"working"` || string(res.Agents[0]["blocked"]) != "null" {
		t.Fatalf("row 0: %s", body)
	}
	var b wire.Blocked
	if err := json.Unmarshal(res.Agents[1]["blocked"], &b); err != nil || b.Text != "" || b.Question != "Approve?" ||
		len(b.Options) != 1 || b.Options[0].Meaning != wire.MeaningAllowOnce {
		t.Fatalf("row 1's prompt: %+v %v", b, err)
	}
	if fleet[1].Blocked.Text == "" {
		t.Fatal("the record's own prompt text was cleared")
	}
	if len(body) > 600 {
		t.Fatalf("%d bytes for two rows: %s", len(body), body)
	}
}

// The page's script is inline in its head (it asks for the agents before anything
// else is in), allowed by its hash and nothing else inline is: the CSP names the
// sha256 of exactly that script's text, which is app.js.
func TestPageInlineScriptHash(t *testing.T) {
	r := newRig(t, "", web.Options{})
	resp, err := http.Get(r.srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	_, rest, ok := strings.Cut(string(b), "<script>")
	text, _, ok2 := strings.Cut(rest, "</script>")
	if !ok || !ok2 || !strings.Contains(text, "web.agents") {
		t.Fatalf("no inline script asking for web.agents in the page:\n%.2000s", b)
	}
	if js, err := os.ReadFile("static/app.js"); err != nil || string(js) != text {
		t.Fatalf("the inline script is not app.js (%v)", err)
	}
	if i, j := strings.Index(string(b), "<script>"), strings.Index(string(b), "<link rel=\"stylesheet\""); i < 0 || j < i {
		t.Fatal("the script is not ahead of the style sheets (it would wait for them)")
	}
	if strings.Count(string(b), "<script>") != 1 {
		t.Fatal("more than one inline script: the CSP allows one")
	}
	sum := sha256.Sum256([]byte(text))
	want := "script-src 'self' 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "';"
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, want) || strings.Contains(csp, "unsafe-inline") {
		t.Fatalf("CSP %q, want %q in it", csp, want)
	}
}

// Answers are gzipped for a client that takes it — the page, its files, a method's
// answer over a KiB — and the same bytes come out; a client that does not (or says
// q=0) gets them plain.
func TestGzip(t *testing.T) {
	r := newRig(t, "", web.Options{})
	read := r.token(webapi.ScopeRead, 0)
	fleet := make([]wire.Agent, 200)
	for i := range fleet {
		fleet[i] = wire.Agent{ID: fmt.Sprintf("0193%04d", i), Path: fmt.Sprintf("team/a%d", i), State: wire.StateIdle}
	}
	r.web.SetList(func(context.Context, wire.ListParams) ([]wire.Agent, error) { return fleet, nil })
	get := func(method, path, body, enc string) (*http.Response, []byte) {
		req, _ := http.NewRequest(method, r.srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+read)
		if enc != "" {
			req.Header.Set("Accept-Encoding", enc)
		}
		// A transport that leaves the encoding alone: the test reads what was sent.
		resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/", ""}, {"GET", "/static/app.css", ""}, {"GET", "/static/palette.css", ""}, {"POST", "/api/v1/web.agents", "{}"},
	} {
		plain, pb := get(c.method, c.path, c.body, "")
		zresp, zb := get(c.method, c.path, c.body, "br, gzip;q=0.8")
		off, ob := get(c.method, c.path, c.body, "gzip;q=0")
		if plain.StatusCode != 200 || zresp.StatusCode != 200 || plain.Header.Get("Content-Encoding") != "" || off.Header.Get("Content-Encoding") != "" {
			t.Fatalf("%s: %d %d, plain %v, q=0 %v", c.path, plain.StatusCode, zresp.StatusCode, plain.Header, off.Header)
		}
		if zresp.Header.Get("Content-Encoding") != "gzip" || !strings.Contains(zresp.Header.Get("Vary"), "Accept-Encoding") {
			t.Fatalf("%s not gzipped: %v", c.path, zresp.Header)
		}
		zr, err := gzip.NewReader(bytes.NewReader(zb))
		if err != nil {
			t.Fatal(err)
		}
		unz, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(unz, pb) || !bytes.Equal(ob, pb) || len(zb) >= len(pb) {
			t.Fatalf("%s: gzipped %d bytes of %d, same bytes %v (%v)", c.path, len(zb), len(pb), bytes.Equal(unz, pb), err)
		}
		t.Logf("%s: %d bytes, %d gzipped", c.path, len(pb), len(zb))
	}
}

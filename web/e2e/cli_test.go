package e2e_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/testutil/rig"
	"orcr/testutil/wait"
)

// TestWildcardGatewayAsANewUser walks what a new user does to reach the fleet from
// another machine, with the real CLI and a real orcr serve: web pair with no server
// (it says to start one with the gateway), [http] listen on every
// address with no token yet (the server warns and does not serve; web pair says
// why), the first token starts the gateway and says where, a token calls a method
// with curl's request, a read token is refused agent.kill (403), tokens are listed
// and removed (a removed one is refused at once), and pairing works.
func TestWildcardGatewayAsANewUser(t *testing.T) {
	r := rig.New(t)
	_, port, _ := net.SplitHostPort(freePort(t))
	cfg := filepath.Join(r.Config, "orcr", "config.toml")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(cfg)
	if err := os.WriteFile(cfg, append(old, []byte(fmt.Sprintf("\n[http]\nlisten = \"0.0.0.0:%s\"\n", port))...), 0o600); err != nil {
		t.Fatal(err)
	}
	if res := r.Run("web", "pair", "--no-qr"); res.Code == 0 || !strings.Contains(res.Err, "start it with the web gateway: orcr serve --http 127.0.0.1:7070") {
		t.Fatalf("web pair with no server: exit %d\n%s%s", res.Code, res.Out, res.Err)
	}
	r.Serve()
	// The warning comes as the gateway would start, a moment after the socket answers
	// (Serve's return): it once was not there yet.
	if !wait.Until(10*time.Second, func() bool {
		return strings.Contains(r.Srv.Output(), "no web token exists; make one first (orcr web token new --scope act)")
	}) {
		t.Fatalf("serve on 0.0.0.0 with no token said:\n%s", r.Srv.Output())
	}
	if res := r.Run("web", "pair", "--no-qr"); res.Code == 0 || !strings.Contains(res.Err, "no web token exists: make one (orcr web token new --scope act)") {
		t.Fatalf("web pair before any token: exit %d\n%s%s", res.Code, res.Out, res.Err)
	}
	out := r.Must("web", "token", "new", "--scope", "act", "--name", "lan")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	act := lines[len(lines)-1]
	if !strings.Contains(out, "the web gateway now serves on http://") || !strings.HasPrefix(act, "orcr_") {
		t.Fatalf("the first token did not say the gateway started, or its secret is not last:\n%s", out)
	}
	base := "http://127.0.0.1:" + port
	post := func(tok, method, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", base+"/api/v1/"+method, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m struct {
			Error *struct {
				Code string `json:"code"`
			} `json:"error"`
			Agents []struct {
				Path string `json:"path"`
			} `json:"agents"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatalf("%s: %d, not JSON: %v", method, resp.StatusCode, err)
		}
		switch {
		case m.Error != nil:
			return resp.StatusCode, m.Error.Code
		case m.Agents != nil:
			paths := make([]string, len(m.Agents))
			for i, a := range m.Agents {
				paths[i] = a.Path
			}
			return resp.StatusCode, strings.Join(paths, ",")
		}
		return resp.StatusCode, ""
	}
	r.Must("agent", "run", "review/a", "--cwd", r.Work, "--", "sh", "-c", "sleep 60")
	r.Must("agent", "run", "other/b", "--cwd", r.Work, "--", "sh", "-c", "sleep 60")
	if code, got := post(act, "agent.list", `{"glob":"review/**"}`); code != 200 || got != "review/a" {
		t.Fatalf("agent.list review/** with the act token: %d %q", code, got)
	}
	out = r.Must("web", "token", "new", "--scope", "read", "--ttl", "30d", "--name", "phone")
	if strings.Contains(out, "now serves") {
		t.Fatalf("a second token said the gateway started:\n%s", out)
	}
	lines = strings.Split(strings.TrimSpace(out), "\n")
	read := lines[len(lines)-1]
	if code, got := post(read, "agent.kill", `{"target":"review/a"}`); code != 403 || got != "permission" {
		t.Fatalf("agent.kill with a read token: %d %q", code, got)
	}
	if code, _ := post(read, "agent.list", `{}`); code != 200 {
		t.Fatalf("agent.list with a read token: %d", code)
	}
	ls := r.Must("web", "token", "ls")
	for _, want := range []string{"lan ", "phone "} {
		if !strings.Contains(ls, want) {
			t.Fatalf("web token ls has no %q:\n%s", want, ls)
		}
	}
	if got := r.Must("web", "token", "rm", "phone"); strings.TrimSpace(got) != "revoked phone" {
		t.Fatalf("web token rm: %q", got)
	}
	if code, got := post(read, "agent.list", `{}`); code != 401 || got != "unauthorized" {
		t.Fatalf("agent.list with a removed token: %d %q", code, got)
	}
	if res := r.Run("web", "token", "rm", "phone"); res.Code == 0 || !strings.Contains(res.Err, `no web token or paired browser named "phone"`) {
		t.Fatalf("web token rm twice: exit %d %s", res.Code, res.Err)
	}
	out = r.Must("web", "pair", "--no-qr")
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if u := lines[len(lines)-1]; !strings.Contains(u, ":"+port+"/pair?code=") {
		t.Fatalf("web pair printed %q", out)
	}
	r.Must("agent", "kill", "**", "--yes")
}

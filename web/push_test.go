package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
	"orcr/testutil/wait"
	"orcr/web"
	webapi "orcr/web/api"
)

// browser is a paired browser session, as its page calls the gateway.
type browser struct {
	t      *testing.T
	r      *rig
	name   string
	cookie string
}

func pairBrowser(t *testing.T, r *rig) *browser {
	t.Helper()
	var pr webapi.PairResult
	if err := r.local.call(t, webapi.MethodPair, webapi.PairParams{}, &pr); err != nil {
		t.Fatal(err)
	}
	resp, m := pair(t, r, codeOf(t, pr.URL), true)
	for _, c := range resp.Cookies() {
		if c.Name == "orcr_session" {
			return &browser{t: t, r: r, name: m["name"].(string), cookie: c.Value}
		}
	}
	t.Fatalf("pairing gave no cookie: %v", m)
	return nil
}

func (b *browser) req(method, path, body string, csrf bool) (int, string) {
	b.t.Helper()
	req, _ := http.NewRequest(method, b.r.srv.URL+path, strings.NewReader(body))
	req.AddCookie(&http.Cookie{Name: "orcr_session", Value: b.cookie})
	if csrf {
		req.Header.Set("X-Orcr", "1")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

func (b *browser) subscribe(sub map[string]any) (int, string) {
	raw, _ := json.Marshal(sub)
	return b.req("POST", "/push/subscribe", string(raw), true)
}

func devices(t *testing.T, r *rig) map[string]webapi.Token {
	t.Helper()
	var st webapi.StatusResult
	if err := r.local.call(t, webapi.MethodStatus, wire.Empty{}, &st); err != nil {
		t.Fatal(err)
	}
	out := map[string]webapi.Token{}
	for _, d := range st.Devices {
		out[d.Name] = d
	}
	return out
}

// Web Push end to end against a protocol-faithful push service: paired browsers
// subscribe with the server's VAPID key; an agent that blocks is pushed to each of
// them once, the push service verifying the VAPID JWT (signature by the key the
// browser subscribed with, aud its origin, exp within 24 h, sub) and decrypting
// the body with the browser's own private key; a subscription the service says is
// gone (410) is dropped, and so is a revoked browser's.
func TestWebPush(t *testing.T) {
	home := t.TempDir()
	var fake *fakePushService
	fake = newFakePushService(t, nil)
	r := newRig(t, home, web.Options{Home: home, PushClient: fake.srv.Client(), PushSubject: "mailto:ops@example.net"})
	act := r.token(webapi.ScopeAct, 0)
	b1, b2 := pairBrowser(t, r), pairBrowser(t, r)

	// The key: made on first use, 0600 in the state directory, the same for both.
	code, body := b1.req("GET", "/push/key", "", false)
	if code != 200 {
		t.Fatalf("push key: %d %s", code, body)
	}
	var key struct{ Key string }
	json.Unmarshal([]byte(body), &key)
	appKey, err := web.DecodeB64(key.Key)
	if err != nil || len(appKey) != 65 {
		t.Fatalf("push key %q: %v", key.Key, err)
	}
	fi, err := os.Stat(filepath.Join(home, web.VAPIDFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("VAPID key file: %v %v", fi, err)
	}
	fake.setKey(appKey)

	// Refusals: a bearer token has no device; a browser's write needs the header; a
	// subscription that is not one.
	ep1, s1 := fake.subscribe()
	raw, _ := json.Marshal(s1)
	req, _ := http.NewRequest("POST", r.srv.URL+"/push/subscribe", strings.NewReader(string(raw)))
	req.Header.Set("Authorization", "Bearer "+act)
	if code, m := do(t, req); code != 403 {
		t.Fatalf("a bearer token subscribing: %d %v", code, m)
	}
	if code, _ := b1.req("POST", "/push/subscribe", string(raw), false); code != 403 {
		t.Fatalf("subscribe without X-Orcr: %d", code)
	}
	for _, bad := range []map[string]any{
		{"endpoint": "http://push.example.net/x", "keys": s1["keys"]},
		{"endpoint": ep1, "keys": map[string]string{"p256dh": "AAAA", "auth": "BTBZMqHH6r4Tts7J_aSIgg"}},
		{"endpoint": ep1, "keys": map[string]string{"p256dh": s1["keys"].(map[string]string)["p256dh"], "auth": "AAAA"}},
		{"endpoint": ep1 + strings.Repeat("x", 3000), "keys": s1["keys"]},
	} {
		if code, body := b1.subscribe(bad); code != 400 {
			t.Fatalf("bad subscription %v: %d %s", bad, code, body)
		}
	}
	if code, body := b1.req("POST", "/push/subscribe", "not json", true); code != 400 {
		t.Fatalf("junk subscription: %d %s", code, body)
	}
	if code, body := b1.subscribe(s1); code != 204 {
		t.Fatalf("subscribe: %d %s", code, body)
	}
	_, s2 := fake.subscribe()
	if code, body := b2.subscribe(s2); code != 204 {
		t.Fatalf("subscribe: %d %s", code, body)
	}
	if d := devices(t, r); !d[b1.name].Push || !d[b2.name].Push {
		t.Fatalf("devices: %+v", d)
	}

	// An agent blocks: both browsers get it, once, and read it.
	r.spawn(act, "ask/a", `printf 'Remove build? [y/N] '; read -r x; sleep 30`)
	got := func(sub, title string) []pushed {
		var out []pushed
		for _, m := range fake.messages() {
			var pl struct{ Title string }
			json.Unmarshal(m.plain, &pl)
			if m.sub == sub && pl.Title == title {
				out = append(out, m)
			}
		}
		return out
	}
	wait.For(t, 20*time.Second, "both browsers pushed", func() bool {
		return len(got("1", "ask/a is blocked")) > 0 && len(got("2", "ask/a is blocked")) > 0
	})
	if rf := fake.refusals(); len(rf) > 0 {
		t.Fatalf("the push service refused: %v", rf)
	}
	m := got("1", "ask/a is blocked")[0]
	var pl map[string]any
	if err := json.Unmarshal(m.plain, &pl); err != nil || pl["kind"] != "blocked" || pl["tag"] != "blocked:ask/a" || pl["seq"] == nil {
		t.Fatalf("payload %s: %v", m.plain, err)
	}
	if m.urgency != "high" || m.ttl != "3600" || m.claims.Sub != "mailto:ops@example.net" || m.claims.Aud != fake.srv.URL {
		t.Fatalf("push headers: %+v", m)
	}
	if code, m := r.post("agent.answer", act, `{"target":"ask/a","deny":true}`); code != 200 {
		t.Fatalf("answer: %d %v", code, m)
	}

	// The second browser's subscription is gone at the push service (410): the next
	// push drops it.
	fake.unsubscribe("2")
	r.spawn(act, "ask/b", `printf 'Remove dist? [y/N] '; read -r x; sleep 30`)
	wait.For(t, 20*time.Second, "the gone subscription dropped", func() bool {
		return len(got("1", "ask/b is blocked")) > 0 && !devices(t, r)[b2.name].Push
	})
	// The first browser is revoked: its subscription goes with it; a third, paired
	// now, gets the next two pushes and the first none.
	if err := r.local.call(t, webapi.MethodTokenRemove, webapi.TokenNameParams{Name: b1.name}, &wire.Empty{}); err != nil {
		t.Fatal(err)
	}
	b3 := pairBrowser(t, r)
	_, s3 := fake.subscribe()
	if code, body := b3.subscribe(s3); code != 204 {
		t.Fatalf("subscribe: %d %s", code, body)
	}
	r.spawn(act, "ask/c", `printf 'Remove c? [y/N] '; read -r x; sleep 30`)
	r.spawn(act, "ask/d", `printf 'Remove d? [y/N] '; read -r x; sleep 30`)
	wait.For(t, 20*time.Second, "the third browser pushed twice", func() bool {
		return len(got("3", "ask/c is blocked")) > 0 && len(got("3", "ask/d is blocked")) > 0
	})
	if n := len(got("1", "ask/c is blocked")) + len(got("1", "ask/d is blocked")); n != 0 {
		t.Fatalf("a revoked browser was pushed %d times", n)
	}
	// Each event once.
	for _, title := range []string{"ask/a is blocked", "ask/b is blocked"} {
		if n := len(got("1", title)); n != 1 {
			t.Fatalf("%s pushed %d times", title, n)
		}
	}
	// Unsubscribing from the page removes it too.
	if code, _ := b3.req("POST", "/push/unsubscribe", "", true); code != 204 || devices(t, r)[b3.name].Push {
		t.Fatalf("unsubscribe: %d %+v", code, devices(t, r)[b3.name])
	}
}

// Package e2e drives the web cockpit in a real headless Chromium (Debian's chromium,
// through chromedp) against a real `orcr serve` with the real claude CLI on the
// scripted model server.
package e2e_test

import (
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"orcr/core/wire"
	"orcr/testutil/clis"
	"orcr/testutil/modelserver"
	"orcr/testutil/rig"
	"orcr/testutil/wait"
)

// browser starts a fresh headless Chromium (its own profile under the test's
// folder); it is killed when the test ends.
func browser(t testing.TB, w, h int) context.Context {
	t.Helper()
	bin := clis.Program(t, "chromium", "apt-get install -y chromium; scripts/test installs it")
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(w, h),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelB()
		cancelA()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// run runs browser actions with a deadline.
func run(t testing.TB, ctx context.Context, d time.Duration, what string, acts ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, wait.Scale(d))
	defer cancel()
	if err := chromedp.Do(c, acts...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// value runs one browser action that returns a value, with a deadline.
func value[T any](t testing.TB, ctx context.Context, d time.Duration, what string, act chromedp.Action[T]) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, wait.Scale(d))
	defer cancel()
	v, err := chromedp.Run(c, act)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// freePort is a loopback port nothing listens on now.
func freePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// artifacts is where screenshots are kept (testdata/artifacts, ignored by git).
func artifact(t testing.TB, name string, png []byte) {
	t.Helper()
	dir, _ := filepath.Abs(filepath.Join("testdata", "artifacts"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)
}

// serveWeb starts orcr serve with the gateway on a free loopback port and returns
// its base URL.
func serveWeb(t testing.TB, r *rig.Rig) string {
	t.Helper()
	addr := freePort(t)
	cfg := filepath.Join(r.Config, "orcr", "config.toml")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(cfg)
	if err := os.WriteFile(cfg, append(old, []byte(fmt.Sprintf("\n[http]\nlisten = %q\n", addr))...), 0o600); err != nil {
		t.Fatal(err)
	}
	r.Serve()
	return "http://" + addr
}

// TestBrowserPairsSeesAndDenies: the page loads through a pairing URL, shows an
// agent the CLI spawns within a second, and a tap on Deny answers a real claude
// permission prompt with claude's own No: the file it wanted to delete survives.
func TestBrowserPairsSeesAndDenies(t *testing.T) {
	r := rig.New(t)
	r.OnlyAdded()
	r.Claude()
	base := serveWeb(t, r)
	out := r.Must("web", "pair", "--no-qr")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	url := lines[len(lines)-1]
	if !strings.HasPrefix(url, base+"/pair?code=") {
		t.Fatalf("pair printed %q", out)
	}
	ctx := browser(t, 360, 740)
	run(t, ctx, 20*time.Second, "load through the pairing URL",
		chromedp.EmulateViewport(360, 740, chromedp.EmulateScale(2)),
		chromedp.Navigate(url),
		chromedp.WaitVisible(chromedp.CSS(`#conn.on`)))
	// The page's script ran inline under the CSP (allowed by its hash) and asked for
	// the agents (web.agents); it was not fetched as a file of its own.
	if !value(t, ctx, 5*time.Second, "the inline script", chromedp.Evaluate[bool](
		`performance.getEntriesByName("orcr:script").length === 1 && performance.getEntriesByType("resource").some(e => e.name.endsWith("/api/v1/web.agents")) && !performance.getEntriesByType("resource").some(e => e.name.endsWith("/static/app.js"))`)) {
		t.Fatal("the page's script did not run inline (is its hash in the CSP?) or did not ask for web.agents")
	}
	// The pairing URL is spent.
	if res := r.Run("web", "token", "ls"); !strings.Contains(res.Out, "browser-1") || !strings.Contains(res.Out, "session") {
		t.Fatalf("paired browser not listed: %s", res.Out)
	}

	// An agent the CLI spawns shows within a second.
	r.Must("agent", "run", "web/shell", "--cwd", r.Work, "--", "sh", "-c", "printf '\\033[32mgreen\\033[0m\\n'; sleep 120")
	start := time.Now()
	run(t, ctx, time.Second, "the CLI's agent on the page within a second",
		chromedp.WaitVisible(chromedp.Search(`//div[contains(concat(" ", @class, " "), " row ")]/span[@class="path" and text()="web/shell"]`)))
	t.Logf("the CLI's agent showed %s after orcr agent run returned", time.Since(start).Round(time.Millisecond))

	// claude wants to remove build/; the page shows the prompt with its real options.
	keep := filepath.Join(r.Work, "build", "keep.o")
	if err := os.MkdirAll(filepath.Dir(keep), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(keep, []byte("obj"), 0o644)
	r.Models.Push(modelserver.Turn{ToolCalls: []modelserver.ToolCall{{Name: "Bash",
		Input: map[string]any{"command": "rm -rf build", "description": "clean the build"}}},
		Usage: modelserver.Usage{Input: 100, Output: 10}})
	r.Must("agent", "run", "perm/a", "--provider", "claude", "--cwd", r.Work, "--prompt", "remove the build dir",
		"--", "--permission-mode", "default")
	a := r.WaitAgent("perm/a", 90*time.Second, "blocked on the permission", func(a wire.Agent) bool {
		return a.State == wire.StateBlocked && a.Blocked != nil && a.Blocked.Kind == wire.BlockedPermission && len(a.Blocked.Options) > 0
	})
	deny := fmt.Sprintf(`#needs-list button.deny[data-id="%s"]`, a.ID)
	run(t, ctx, 10*time.Second, "the prompt's buttons", chromedp.WaitVisible(chromedp.CSS(deny)))
	labels := value(t, ctx, 10*time.Second, "the buttons' labels", chromedp.Evaluate[[]string](fmt.Sprintf(
		`Array.from(document.querySelectorAll('#needs-list [data-card="%s"] button[data-act=answer]')).map(b => b.textContent)`, a.ID)))
	if strings.Join(labels, "|") != "Allow|Always|Yes, and switch to auto mode|Deny" {
		t.Fatalf("buttons %q for options %+v", labels, a.Blocked.Options)
	}
	phone := value(t, ctx, 10*time.Second, "screenshot 360x740", chromedp.CaptureScreenshot())
	artifact(t, "needs-you-360x740.png", phone)

	run(t, ctx, 10*time.Second, "tap Deny", chromedp.Click(chromedp.CSS(deny)))
	r.WaitAgent("perm/a", 60*time.Second, "done after the refusal", func(a wire.Agent) bool { return a.State == wire.StateDone })
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("the denied command ran: %v\nscreen:\n%s", err, r.Must("agent", "read", "perm/a"))
	}
	if scr := r.Must("agent", "read", "perm/a"); strings.Contains(scr, "auto mode on") {
		t.Fatalf("claude switched mode:\n%s", scr)
	}
	run(t, ctx, 10*time.Second, "the card goes", chromedp.WaitNotPresent(chromedp.CSS(deny)))

	// The desktop: the agent's live screen with its colours.
	run(t, ctx, 20*time.Second, "the live screen at 1280x800",
		chromedp.EmulateViewport(1280, 800),
		chromedp.Click(chromedp.Search(`//div[contains(concat(" ", @class, " "), " row ")]/span[@class="path" and text()="web/shell"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#screen span.fc2`)))
	desk := value(t, ctx, 10*time.Second, "screenshot 1280x800", chromedp.CaptureScreenshot())
	artifact(t, "agent-screen-1280x800.png", desk)

	// The other tabs draw from their methods.
	run(t, ctx, 20*time.Second, "the runs, usage and listeners tabs",
		chromedp.Click(chromedp.CSS(`button[data-tab=runs]`)),
		chromedp.WaitVisible(chromedp.Search(`//div[@id="runs"]/p[contains(., "No runs")]`)),
		chromedp.Click(chromedp.CSS(`button[data-tab=usage]`)),
		chromedp.WaitVisible(chromedp.Search(`//div[@id="usage"]/h2[contains(., "claude")]`)),
		chromedp.Click(chromedp.CSS(`button[data-tab=listeners]`)),
		chromedp.WaitVisible(chromedp.Search(`//div[@id="listeners"]/p[contains(., "No listeners")]`)))
	r.Must("agent", "kill", "**", "--yes")
}

// TestBrowserPushSubscribe runs the page's Web Push code in headless Chromium as far
// as it can go offline: the service worker registers and becomes ready, and when
// pushManager gives a subscription the page posts it and the gateway keeps it for
// this browser. (Headless Chromium cannot get a real subscription here:
// pushManager.subscribe registers with Google's push service over the network. So
// the test stands in for that one call, with a subscription of a real P-256 key;
// everything else — the key fetch, the registration, the post, the gateway's
// checks — is the page's and the server's own.)
func TestBrowserPushSubscribe(t *testing.T) {
	r := rig.New(t)
	r.OnlyAdded()
	serveWeb(t, r)
	out := r.Must("web", "pair", "--no-qr")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	url := lines[len(lines)-1]
	ua, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.RawURLEncoding
	sub := fmt.Sprintf(`{endpoint: "https://push.example.net/wpush/1", expirationTime: null, keys: {p256dh: %q, auth: %q}}`,
		b64.EncodeToString(ua.PublicKey().Bytes()), b64.EncodeToString([]byte("0123456789abcdef")))
	stub := `(function () {
  if (!self.PushManager) return;
  Object.defineProperty(Notification, "permission", {get: function () { return "granted"; }});
  Notification.requestPermission = function () { return Promise.resolve("granted"); };
  PushManager.prototype.getSubscription = function () { return Promise.resolve(null); };
  PushManager.prototype.subscribe = function (o) {
    window.__pushKey = o && o.applicationServerKey ? Array.from(new Uint8Array(o.applicationServerKey)).length : 0;
    var s = ` + sub + `;
    return Promise.resolve({toJSON: function () { return s; }});
  };
})();`
	ctx := browser(t, 1280, 800)
	run(t, ctx, 10*time.Second, "stand in for the push service's subscribe", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: stub})
		return err
	}))
	run(t, ctx, 30*time.Second, "load, register the service worker, subscribe and post",
		chromedp.Navigate(url),
		chromedp.WaitVisible(chromedp.CSS(`#conn.on`)),
		chromedp.WaitReady(chromedp.CSS(`body[data-sw=ready]`)),
		chromedp.WaitReady(chromedp.CSS(`body[data-push=on]`)))
	if n := value(t, ctx, 5*time.Second, "the key subscribed with", chromedp.Evaluate[int](`window.__pushKey`)); n != 65 {
		t.Fatalf("applicationServerKey of %d bytes, want the 65-byte VAPID key", n)
	}
	st := value(t, ctx, 10*time.Second, "web.status from the page", chromedp.Evaluate[string](
		`fetch("/api/v1/web.status", {method: "POST", headers: {"X-Orcr": "1"}, body: "{}"}).then(r => r.text())`, chromedp.EvalAwaitPromise))
	if !strings.Contains(st, `"push":true`) {
		t.Fatalf("the gateway did not keep the subscription: %s", st)
	}
	if fi, err := os.Stat(filepath.Join(r.Home, "web-vapid.pem")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("VAPID key in the state dir: %v %v", fi, err)
	}
}

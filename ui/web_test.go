package ui

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"

	webapi "orcr/web/api"
)

func fixtureWeb() webapi.StatusResult {
	at := func(d time.Duration) *time.Time { t := t0.Add(d); return &t }
	return webapi.StatusResult{Listen: "127.0.0.1:7070", URL: "http://127.0.0.1:7070", Tokens: 2, Clients: 3,
		Devices: []webapi.Token{
			{Name: "browser-1", Kind: webapi.KindSession, Scope: webapi.ScopeAct, CreatedAt: t0.Add(-48 * time.Hour), LastUsed: at(-3 * time.Minute), Push: true,
				Device: "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36"},
			{Name: "browser-2", Kind: webapi.KindSession, Scope: webapi.ScopeRead, CreatedAt: t0.Add(-time.Hour),
				Device: "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"},
		}}
}

// W opens the web dialog over what the bar last read and asks web.status again
// (a command, no I/O in Update); its answer fills the open dialog: the address, the
// streams and tokens, and each paired device with its scope, last seen, push and
// browser. Esc closes it.
func TestWebDialog(t *testing.T) {
	m := newTestModel(t, 160, 48, Options{})
	cmd := press(m, "W")
	if cmd == nil || len(m.dialogs) != 1 {
		t.Fatalf("W opened %d dialogs, cmd %v", len(m.dialogs), cmd)
	}
	if v := plain(screen(t, m)); !strings.Contains(v, "loading…") {
		t.Fatalf("before web.status answers:\n%s", v)
	}
	m.Update(webMsg{st: fixtureWeb()})
	v := plain(screen(t, m))
	for _, w := range []string{"address http://127.0.0.1:7070", "listening on 127.0.0.1:7070", "3 streams open · 2 tokens",
		"2 paired devices", "browser-1", "act", "3m ago", "Chrome · Android", "browser-2", "read", "never", "Firefox · X11"} {
		if !strings.Contains(v, w) {
			t.Fatalf("web dialog lacks %q:\n%s", w, v)
		}
	}
	if !strings.Contains(v, "web 127.0.0.1:7070 (2 browsers)") {
		t.Fatalf("the bar does not show the gateway:\n%s", v)
	}
	// A failed refresh keeps what was shown and says why.
	m.Update(webMsg{err: errors.New("server gone")})
	if v := plain(screen(t, m)); !strings.Contains(v, "server gone") || !strings.Contains(v, "browser-1") {
		t.Fatalf("after a failed refresh:\n%s", v)
	}
	press(m, "esc")
	if len(m.dialogs) != 0 {
		t.Fatal("esc did not close the web dialog")
	}
	// Off, and not serving.
	m.Update(webMsg{st: webapi.StatusResult{Devices: []webapi.Token{}}})
	press(m, "W")
	if v := plain(screen(t, m)); !strings.Contains(v, "off — start the server with --http") || !strings.Contains(v, "no paired devices") {
		t.Fatalf("gateway off:\n%s", v)
	}
	press(m, "esc")
	m.Update(webMsg{st: webapi.StatusResult{Error: "0.0.0.0:7070 is not a loopback address and no web token exists", Devices: []webapi.Token{}}})
	press(m, "W")
	if v := plain(screen(t, m)); !strings.Contains(v, "not serving: 0.0.0.0:7070 is not a loopback") {
		t.Fatalf("gateway refused:\n%s", v)
	}
}

func TestGoldenWeb(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {160, 48}} {
		m := newTestModel(t, sz[0], sz[1], Options{})
		m.Update(webMsg{st: fixtureWeb()})
		press(m, "W")
		t.Run(fmt.Sprintf("%dx%d", sz[0], sz[1]), func(t *testing.T) {
			golden.RequireEqual(t, screen(t, m))
		})
	}
}

package herdr

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/core"
	"orcr/core/hosttest"
	"orcr/herdr/herdrtest"
)

// shortDir is a temp dir short enough for a Unix socket path.
func shortDir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("", "hh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

// fakeServer starts a herdr test server for session "orcr" under a fresh config dir.
func fakeServer(t testing.TB, mod func(*herdrtest.Options)) (*herdrtest.Server, []string) {
	t.Helper()
	dir := shortDir(t)
	env := []string{"XDG_CONFIG_HOME=" + dir, "HOME=" + dir, "PATH=" + os.Getenv("PATH")}
	sock, err := SocketPath(env, "orcr")
	if err != nil {
		t.Fatal(err)
	}
	opts := herdrtest.Options{SocketPath: sock, Shell: "/bin/sh", Env: env}
	if mod != nil {
		mod(&opts)
	}
	s, err := herdrtest.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, env
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newHost(t *testing.T, env []string) *Host {
	t.Helper()
	h, err := New(testCtx(t), Options{Env: env})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// unsupported are conformance cases herdr's socket API cannot meet, with the reason.
var unsupported = map[string]string{
	"Resize": "herdr's socket API has no way to size a pane (reference §1.6: headless panes follow herdr's own layout)",
	// The clearing half of this case is TestReadAfterClearText below.
	"ReadAfterClear": "herdr's pane.read reports no cursor position (reference §2.5), so Screen.CursorX/Y stay 0",
}

func TestConformance(t *testing.T) {
	hosttest.Run(t, hosttest.Factory{
		New: func(t *testing.T) core.Host {
			for name, why := range unsupported {
				if strings.HasSuffix(t.Name(), "/"+name) {
					t.Skip(why)
				}
			}
			_, env := fakeServer(t, nil)
			return newHost(t, env)
		},
		Reopen: func(t *testing.T, old core.Host) core.Host {
			o := old.(*Host).opts
			h, err := New(testCtx(t), Options{Env: o.Env, SocketPath: o.SocketPath})
			if err != nil {
				t.Fatal(err)
			}
			return h
		},
	})
}

func TestSocketPathRules(t *testing.T) {
	p, err := SocketPath([]string{"XDG_CONFIG_HOME=/x", "HOME=/h"}, "orcr")
	if err != nil || p != "/x/herdr/sessions/orcr/herdr.sock" {
		t.Fatalf("XDG: %q %v", p, err)
	}
	p, err = SocketPath([]string{"HOME=/h"}, "orcr")
	if err != nil || p != "/h/.config/herdr/sessions/orcr/herdr.sock" {
		t.Fatalf("HOME: %q %v", p, err)
	}
	for _, bad := range []string{"default", "", ".", "..", "a/b", strings.Repeat("x", 65)} {
		if _, err := SocketPath([]string{"HOME=/h"}, bad); err == nil {
			t.Errorf("session %q accepted", bad)
		}
	}
	// HERDR_SOCKET_PATH of a surrounding herdr pane must not redirect orcr's session.
	p, _ = SocketPath([]string{"HOME=/h", "HERDR_SOCKET_PATH=/user/herdr.sock"}, "orcr")
	if p != "/h/.config/herdr/sessions/orcr/herdr.sock" {
		t.Fatalf("HERDR_SOCKET_PATH leaked into the session path: %q", p)
	}
}

func TestFindBinOrder(t *testing.T) {
	dir := shortDir(t)
	mk := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg, env, onPath := mk("cfg-herdr"), mk("env-herdr"), mk("herdr")
	t.Setenv("ORCR_HERDR_BIN", env)
	t.Setenv("PATH", dir)
	if p, why, err := FindBin(cfg); err != nil || p != cfg || why != "config herdr.bin" {
		t.Errorf("config: %q %q %v", p, why, err)
	}
	if p, why, err := FindBin(""); err != nil || p != env || why != "$ORCR_HERDR_BIN" {
		t.Errorf("env: %q %q %v", p, why, err)
	}
	t.Setenv("ORCR_HERDR_BIN", "")
	if p, why, err := FindBin(""); err != nil || p != onPath || why != "found on $PATH" {
		t.Errorf("PATH: %q %q %v", p, why, err)
	}
	t.Setenv("PATH", t.TempDir())
	if _, _, err := FindBin(""); err == nil || !strings.Contains(err.Error(), "herdr.dev") {
		t.Errorf("missing herdr: %v; want the install pointer", err)
	}
	if _, _, err := FindBin(filepath.Join(dir, "nope")); err == nil {
		t.Error("a configured but missing binary was accepted")
	}
}

// benchServer is fakeServer for benchmarks; it returns the socket and environment.
func benchServer(b *testing.B) (string, []string) {
	srv, env := fakeServer(b, nil)
	return srv.SocketPath(), env
}

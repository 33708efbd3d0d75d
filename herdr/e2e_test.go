package herdr

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"orcr/core"
	"orcr/testutil/testbin"
)

// buildFake builds cmd/fakeherdr once per test binary (testbin: static, as e2e and
// daemon build it, so scripts/test's prebuild leaves it a cache hit; a plain `go
// build` of its own, cgo on, compiled its dependencies afresh in CI — herdr's tests
// took 89 s there against 11 s alone).
func buildFake(t *testing.T) string {
	t.Helper()
	return testbin.Build(t, "orcr/herdr/herdrtest/cmd/fakeherdr")
}

func fakeEnv(t *testing.T, extra ...string) []string {
	dir := shortDir(t)
	return append([]string{"XDG_CONFIG_HOME=" + dir, "HOME=" + dir, "PATH=" + os.Getenv("PATH"),
		// A surrounding herdr's variables must not leak into orcr's session.
		"HERDR_SOCKET_PATH=" + filepath.Join(dir, "user", "herdr.sock"), "HERDR_ENV=1"}, extra...)
}

// New starts `herdr --session orcr server` headless when nothing answers, reuses it
// afterwards, and reports integrations through `herdr integration status`.
func TestStartsSessionWithBinary(t *testing.T) {
	bin := buildFake(t)
	env := fakeEnv(t)
	h, err := New(testCtx(t), Options{Bin: bin, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.StopServer(testCtx(t)) })
	record(t, h)
	want, _ := SocketPath(env, "orcr")
	if h.SocketPath() != want {
		t.Fatalf("socket %s, want %s", h.SocketPath(), want)
	}
	if v, p := h.Version(); v != "0.8.0" || p != 20 {
		t.Fatalf("version %s protocol %d", v, p)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(getenv(env, "HERDR_SOCKET_PATH")))); err == nil {
		t.Fatal("the user's session dir was touched")
	}
	p := launch(t, h, "sh", "-c", "echo via-binary; exec cat")
	waitScreen(t, h, p.ID, "via-binary")

	// A second host reuses the running session instead of starting another.
	h2, err := New(testCtx(t), Options{Bin: bin, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	record(t, h2)
	if _, ok := listed(t, h2, p.ID); !ok {
		t.Fatalf("second host does not see %s", p.ID)
	}

	if got := h.AttachCommand(p.ID); strings.Join(got, " ") != bin+" --session orcr" {
		t.Errorf("attach = %v", got)
	}
	if err := h.Stream(testCtx(t), p.ID, nil, nil); !errors.Is(err, core.ErrNoStream) {
		t.Errorf("stream = %v", err)
	}

	ok, err := h.IntegrationInstalled(testCtx(t), "claude")
	if err != nil || ok {
		t.Fatalf("claude integration before install: %v %v", ok, err)
	}
	fix := strings.Fields(IntegrationFix("claude"))
	cmd := exec.Command(bin, fix[1:]...)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", fix, err, out)
	}
	if ok, err := h.IntegrationInstalled(testCtx(t), "claude"); err != nil || !ok {
		t.Fatalf("claude integration after install: %v %v", ok, err)
	}
}

func listed(t *testing.T, h *Host, pane string) (core.PaneInfo, bool) {
	t.Helper()
	panes, err := h.List(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range panes {
		if p.ID == pane {
			return p, true
		}
	}
	return core.PaneInfo{}, false
}

func TestStartedServerWithWrongProtocolRefused(t *testing.T) {
	bin := buildFake(t)
	env := fakeEnv(t, "FAKEHERDR_PROTOCOL=19")
	_, err := New(testCtx(t), Options{Bin: bin, Env: env})
	if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "protocol 19") {
		t.Fatalf("New = %v; want ErrProtocol naming protocol 19", err)
	}
	// The server New started for nothing was stopped again.
	c := &client{socket: mustSocket(t, env)}
	waitUntil(t, "the refused server to stop", func() bool {
		return errors.Is(c.call(testCtx(t), "ping", nil, nil), ErrUnavailable)
	})
}

func mustSocket(t *testing.T, env []string) string {
	s, err := SocketPath(env, "orcr")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A pane in orcr's workspace that no longer runs orcr's wrapper (as herdr restores
// argv panes as plain shells after a cold restart) is not adopted.
func TestRestoredShellNotAdopted(t *testing.T) {
	srv, env := fakeServer(t, nil)
	h := newHost(t, env)
	record(t, h)
	ws, err := h.workspace(testCtx(t), false)
	if err != nil {
		t.Fatal(err)
	}
	other := &client{socket: srv.SocketPath()}
	var res struct {
		Layout struct {
			Root struct {
				PaneID string `json:"pane_id"`
			} `json:"root"`
		} `json:"layout"`
	}
	if err := other.call(testCtx(t), "layout.apply", map[string]any{"workspace_id": ws,
		"root": map[string]any{"type": "pane", "label": "review/auth", "command": []string{"cat"}}}, &res); err != nil {
		t.Fatal(err)
	}
	mine := launch(t, h, "cat")
	h2 := newHost(t, env)
	record(t, h2)
	if _, ok := listed(t, h2, res.Layout.Root.PaneID); ok {
		t.Errorf("a labelled pane without orcr's wrapper was adopted")
	}
	if _, ok := listed(t, h2, mine.ID); !ok {
		t.Errorf("orcr's own pane was not adopted")
	}
}

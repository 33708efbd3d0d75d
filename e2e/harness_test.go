// Package e2e runs the real orcr binary as a user would: a real `orcr serve`, the
// real CLI, real PTYs, and raw socket clients. Nothing here is mocked.
package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/core/socket"
	"orcr/testutil/apiclient"
	"orcr/testutil/rig"
	"orcr/testutil/serve"
	"orcr/testutil/testbin"
	"orcr/testutil/wait"
)

// env is one isolated orcr installation: its own ORCR_HOME, config dir and PATH.
type env struct {
	t    *testing.T
	bin  string
	home string
	vars []string
	srv  *serve.Server
	// leadPIDs are agent processes a killed server left behind (tests end them).
	leadPIDs []int
}

func newEnv(t *testing.T, extra ...string) *env {
	t.Helper()
	bin := testbin.Build(t, "orcr")
	dir := settledTempDir(t)
	home := filepath.Join(dir, "home")
	e := &env{t: t, bin: bin, home: home}
	base := []string{}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "ORCR_") || k == "TMUX" || k == "XDG_CONFIG_HOME" || k == "PATH" {
			continue
		}
		base = append(base, kv)
	}
	e.vars = append(base,
		"ORCR_HOME="+home, "ORCR_HOST=pty", "XDG_CONFIG_HOME="+filepath.Join(dir, "config"),
		"PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"))
	e.vars = append(e.vars, extra...)
	return e
}

// serve starts `orcr serve` and waits until it answers; it is stopped when the test
// ends.
func (e *env) serve() {
	e.t.Helper()
	e.srv = serve.Start(e.t, serve.Options{Bin: e.bin, Env: e.vars})
}

// kill9 kills the server with SIGKILL, as a crash would.
func (e *env) kill9() {
	e.t.Helper()
	e.srv.Kill9()
	e.srv = nil
}

// orcr runs the CLI with args and returns its output and exit code.
func (e *env) orcr(args ...string) rig.Result {
	e.t.Helper()
	return e.orcrEnv(nil, args...)
}

func (e *env) orcrEnv(extra []string, args ...string) rig.Result {
	e.t.Helper()
	return rig.Exec(e.t, 60*time.Second, e.bin, append(append([]string{}, e.vars...), extra...), "", args...)
}

// must runs the CLI and fails the test unless it exits 0.
func (e *env) must(args ...string) string {
	e.t.Helper()
	r := e.orcr(args...)
	if r.Code != 0 {
		e.t.Fatalf("orcr %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.Code, r.Out, r.Err)
	}
	return r.Out
}

// client dials the server as a Go client.
func (e *env) client() *apiclient.Client {
	e.t.Helper()
	c, err := apiclient.Dial(context.Background(), socket.SocketPath(e.home), "")
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close() })
	return c
}

// settledTempDir is a test's directory, removed when the test ends once nothing writes
// into it any more: a server killed with SIGKILL leaves agents (a claude writing its
// config, a git commit) that end only after the test's own cleanup stopped them, and a
// removal racing their last writes failed the test with "directory not empty".
func settledTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "orcr-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		var err error
		wait.Until(10*time.Second, func() bool { err = os.RemoveAll(dir); return err == nil })
		if err != nil {
			t.Errorf("remove %s: %v", dir, err)
		}
	})
	return dir
}

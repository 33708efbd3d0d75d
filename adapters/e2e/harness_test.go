// Package e2e_test runs the real orcr binary with the real claude and codex CLIs in
// real panes against the scripted model server: what a user does with
// `orcr agent run --provider claude|codex`, checked through the CLI.
package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
	"orcr/testutil/modelserver"
	"orcr/testutil/serve"
	"orcr/testutil/testbin"
	"orcr/testutil/wait"
)

// orcrEnv is one isolated orcr installation with a running `orcr serve`.
type orcrEnv struct {
	t    testing.TB
	bin  string
	home string
	dir  string
	vars []string
	srv  *serve.Server
}

func newOrcr(t testing.TB, extra ...string) *orcrEnv {
	t.Helper()
	bin := testbin.Build(t, "orcr")
	dir := t.TempDir()
	e := &orcrEnv{t: t, bin: bin, dir: dir, home: filepath.Join(dir, "orcr-home")}
	e.vars = []string{
		"PATH=" + filepath.Dir(bin) + ":" + os.Getenv("PATH"),
		"HOME=" + filepath.Join(dir, "user"), "TERM=xterm-256color", "LANG=C.UTF-8", "TZ=UTC",
		"ORCR_HOME=" + e.home, "ORCR_HOST=pty", "XDG_CONFIG_HOME=" + filepath.Join(dir, "config"),
	}
	os.MkdirAll(filepath.Join(dir, "user"), 0o700)
	e.vars = append(e.vars, extra...)
	return e
}

func (e *orcrEnv) serve() {
	e.t.Helper()
	e.srv = serve.Start(e.t, serve.Options{Bin: e.bin, Env: e.vars})
	srv := e.srv
	e.t.Cleanup(func() {
		if e.t.Failed() {
			e.t.Logf("server output:\n%s", srv.Output())
		}
	})
}

type result struct {
	out, err string
	code     int
}

func (e *orcrEnv) run(args ...string) result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.bin, args...)
	cmd.Env = e.vars
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("run orcr %v: %v", args, err)
	}
	return result{out.String(), errb.String(), code}
}

func (e *orcrEnv) must(args ...string) string {
	e.t.Helper()
	r := e.run(args...)
	if r.code != 0 {
		e.t.Fatalf("orcr %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.out, r.err)
	}
	return r.out
}

func (e *orcrEnv) agent(target string) wire.Agent {
	e.t.Helper()
	var r wire.AgentResult
	if err := json.Unmarshal([]byte(e.must("agent", "get", target, "--json")), &r); err != nil {
		e.t.Fatal(err)
	}
	return r.Agent
}

// waitAgent polls the agent until cond holds.
func (e *orcrEnv) waitAgent(target string, d time.Duration, what string, cond func(wire.Agent) bool) wire.Agent {
	e.t.Helper()
	var a wire.Agent
	if !wait.Until(d, func() bool { a = e.agent(target); return cond(a) }) {
		scr := e.run("agent", "read", target).out
		e.t.Fatalf("timed out after %v waiting for %s: state=%s/%s %q usage=%+v last=%q\nscreen:\n%s",
			d, what, a.State, a.StateSource, a.StateReason, a.Usage, a.LastMessage, scr)
	}
	return a
}

// stop stops the running server (gracefully, then by force) so a test can restart it.
func (e *orcrEnv) stop() {
	if e.srv == nil {
		return
	}
	e.srv.Stop()
	e.srv = nil
}

// scriptedCodexHome writes a CODEX_HOME whose config points codex at the scripted model
// server (base URL url, key from $SCRIPTED_API_KEY), and makes a work folder; it
// returns both paths (the folder with symlinks resolved, as the CLI reports it).
func (e *orcrEnv) scriptedCodexHome(url string) (home, work string) {
	e.t.Helper()
	home = filepath.Join(e.dir, "codex-home")
	if err := modelserver.WriteCodexHome(home, url); err != nil {
		e.t.Fatal(err)
	}
	work = filepath.Join(e.dir, "work")
	os.MkdirAll(work, 0o755)
	work, _ = filepath.EvalSymlinks(work)
	return home, work
}

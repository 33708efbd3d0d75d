// Package rig is one isolated orcr installation for whole-program tests that drive
// agents through the CLI: the real binary (testutil/testbin), its own ORCR_HOME on
// the embedded pty host, HOME and config dir, a work folder, a scripted model server
// (testutil/modelserver) and, added one by one, the real agent CLIs pointed at it
// (testutil/clis), served by a real `orcr serve` (testutil/serve). adapters/e2e and
// the roles tests share it, so a CLI's unattended setup is written once.
package rig

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
	"orcr/testutil/clis"
	"orcr/testutil/modelserver"
	"orcr/testutil/serve"
	"orcr/testutil/testbin"
	"orcr/testutil/wait"
)

// Rig is one orcr installation. Everything it writes lives below Dir, removed when
// the test ends.
type Rig struct {
	T      testing.TB
	Bin    string              // the orcr binary
	Dir    string              // the test's folder
	Home   string              // ORCR_HOME
	Config string              // XDG_CONFIG_HOME
	Work   string              // the agents' folder, symlinks resolved as the CLIs report it
	Vars   []string            // the environment of the server and every command; a later KEY= wins
	Srv    *serve.Server       // the running server, after Serve
	Models *modelserver.Server // the scripted model server the added CLIs talk to
}

// New makes an installation on the embedded pty host with its own model server;
// extra is added to the environment (ORCR_HOST=tmux, say). Nothing runs until Serve.
func New(t testing.TB, extra ...string) *Rig {
	t.Helper()
	ms, err := modelserver.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ms.Close)
	bin := testbin.Build(t, "orcr")
	dir := t.TempDir()
	r := &Rig{T: t, Bin: bin, Dir: dir, Home: filepath.Join(dir, "orcr-home"), Config: filepath.Join(dir, "config"), Models: ms}
	user := filepath.Join(dir, "user")
	r.Work = filepath.Join(dir, "work")
	for _, d := range []string{user, r.Work, r.Config} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if r.Work, err = filepath.EvalSymlinks(r.Work); err != nil {
		t.Fatal(err)
	}
	// A home of its own: the agents' shells (claude snapshots a login shell) must not
	// run this machine's rc files.
	r.Vars = append([]string{
		"PATH=" + filepath.Dir(bin) + ":" + os.Getenv("PATH"),
		"HOME=" + user, "TERM=xterm-256color", "LANG=C.UTF-8", "TZ=UTC",
		"ORCR_HOME=" + r.Home, "ORCR_HOST=pty", "XDG_CONFIG_HOME=" + r.Config,
	}, extra...)
	return r
}

// OnlyAdded hides every agent CLI the test does not add (Claude, Codex, Pi, Opencode):
// PATH holds only the system folders and the install cache is an empty folder, so a
// provider the test left out is missing, as on a machine without it. Call it before
// adding CLIs.
func (r *Rig) OnlyAdded() {
	r.T.Helper()
	empty := filepath.Join(r.Dir, "no-clis")
	if err := os.MkdirAll(empty, 0o700); err != nil {
		r.T.Fatal(err)
	}
	r.Vars = append(r.Vars, "PATH="+filepath.Dir(r.Bin)+":/usr/local/bin:/usr/bin:/bin", "ORCR_CLI_CACHE="+empty)
}

// Claude adds the real claude CLI, onboarded and pointed at Models
// (clis.ScriptedClaude), and returns its CLAUDE_CONFIG_DIR. Call it before Serve.
func (r *Rig) Claude() string {
	r.T.Helper()
	r.Vars = append(r.Vars, clis.ScriptedClaude(r.T, r.Dir, r.Models.URL)...)
	return filepath.Join(r.Dir, "claude-config")
}

// Codex adds the real codex CLI with a CODEX_HOME pointed at Models and returns that
// CODEX_HOME. Call it before Serve.
func (r *Rig) Codex() string {
	r.T.Helper()
	bin := clis.Find(r.T, "codex", "ORCR_CODEX_BIN")
	home := filepath.Join(r.Dir, "codex-home")
	if err := modelserver.WriteCodexHome(home, r.Models.URL); err != nil {
		r.T.Fatal(err)
	}
	r.Vars = append(r.Vars, "ORCR_CODEX_BIN="+bin, "CODEX_HOME="+home, modelserver.CodexKeyEnv+"=test-key")
	return home
}

// Pi adds the real pi CLI with an agent dir pointed at Models (model
// modelserver.PiModel) and returns that dir. Call it before Serve.
func (r *Rig) Pi() string {
	r.T.Helper()
	bin := clis.Find(r.T, "pi", "ORCR_PI_BIN")
	dir := filepath.Join(r.Dir, "pi-agent")
	if err := modelserver.WritePiAgentDir(dir, r.Models.URL); err != nil {
		r.T.Fatal(err)
	}
	r.Vars = append(r.Vars, "ORCR_PI_BIN="+bin, "PI_CODING_AGENT_DIR="+dir, "PI_OFFLINE=1")
	return dir
}

// Opencode adds the real opencode CLI, its config pointed at Models (model
// modelserver.OpencodeModel) and its data (the SQLite session db) below Dir, its
// plugin package seeded and the npm registry one that never answers, so a launch
// that would download fails the test instead of passing on a fast network. Call it
// before Serve.
func (r *Rig) Opencode() {
	r.T.Helper()
	bin := clis.Find(r.T, "opencode", "ORCR_OPENCODE_BIN")
	env, err := modelserver.WriteOpencodeConfig(filepath.Join(r.Dir, "opencode-config"), r.Models.URL)
	if err != nil {
		r.T.Fatal(err)
	}
	clis.OpencodeConfigHome(r.T, r.Config)
	r.Vars = append(r.Vars, "ORCR_OPENCODE_BIN="+bin, clis.StalledRegistry(r.T), "XDG_DATA_HOME="+filepath.Join(r.Dir, "data"),
		"XDG_STATE_HOME="+filepath.Join(r.Dir, "state"), "XDG_CACHE_HOME="+filepath.Join(r.Dir, "cache"))
	r.Vars = append(r.Vars, env...)
}

// Serve starts `orcr serve` on the rig's environment and waits until it answers; it
// stops when the test ends. A failed test logs what the server printed, what the
// model server was asked, and the server's and opencode's log files.
func (r *Rig) Serve() {
	r.T.Helper()
	r.Srv = serve.Start(r.T, serve.Options{Bin: r.Bin, Env: r.Vars})
	srv := r.Srv
	r.T.Cleanup(func() {
		if !r.T.Failed() {
			return
		}
		r.T.Logf("server output:\n%s", srv.Output())
		for i, q := range r.Models.Requests() {
			r.T.Logf("model request %d %s %s scripted=%v last user %q", i, q.At.Format("15:04:05.000"), q.Path, q.Scripted, q.LastUser())
		}
		logs, _ := filepath.Glob(filepath.Join(r.Home, "*.log"))
		oc, _ := filepath.Glob(filepath.Join(r.Dir, "data", "opencode", "log", "*.log"))
		for _, l := range append(logs, oc...) {
			b, _ := os.ReadFile(l)
			r.T.Logf("%s:\n%s", l, b)
		}
	})
}

// Stop stops the running server (gracefully, then by force) so a test can restart
// it with Serve.
func (r *Rig) Stop() {
	if r.Srv == nil {
		return
	}
	r.Srv.Stop()
	r.Srv = nil
}

// Result is what one CLI command did.
type Result struct {
	Out, Err string
	Code     int
}

// Run runs `orcr args…` in Work on the rig's environment.
func (r *Rig) Run(args ...string) Result {
	r.T.Helper()
	return Exec(r.T, 150*time.Second, r.Bin, r.Vars, r.Work, args...)
}

// Exec runs bin args… on env in dir (empty: the test's own) within timeout (scaled,
// then the program is killed) and returns what it printed and its exit code. It
// fails t only when the program could not be run at all: an exit code is for the
// caller to judge. Harnesses that keep their own environment (e2e/) run the CLI
// through it too.
func Exec(t testing.TB, timeout time.Duration, bin string, env []string, dir string, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait.Scale(timeout))
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %s %v: %v", filepath.Base(bin), args, err)
	}
	return Result{out.String(), errb.String(), code}
}

// Must runs `orcr args…` and fails the test unless it exits 0.
func (r *Rig) Must(args ...string) string {
	r.T.Helper()
	res := r.Run(args...)
	if res.Code != 0 {
		r.T.Fatalf("orcr %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), res.Code, res.Out, res.Err)
	}
	return res.Out
}

// Agent is the record `orcr agent get target --json` prints.
func (r *Rig) Agent(target string) wire.Agent {
	r.T.Helper()
	var res wire.AgentResult
	if err := json.Unmarshal([]byte(r.Must("agent", "get", target, "--json")), &res); err != nil {
		r.T.Fatal(err)
	}
	return res.Agent
}

// WaitAgent polls the agent until cond holds; when d passes first it fails naming
// what, the last record and the agent's screen.
func (r *Rig) WaitAgent(target string, d time.Duration, what string, cond func(wire.Agent) bool) wire.Agent {
	r.T.Helper()
	var a wire.Agent
	if !wait.Until(d, func() bool { a = r.Agent(target); return cond(a) }) {
		scr := r.Run("agent", "read", target).Out
		started := "-"
		if a.StartedAt != nil {
			started = a.StartedAt.UTC().Format("15:04:05.000")
		}
		wrapUp := "-"
		if a.Limits.WrapUpAt != nil {
			wrapUp = a.Limits.WrapUpAt.UTC().Format("15:04:05.000")
		}
		r.T.Fatalf("timed out after %v waiting for %s: state=%s/%s %q started=%s usage=%+v last=%q hooks=%+v turns=%d wrap-up sent=%s\nscreen:\n%s",
			wait.Scale(d), what, a.State, a.StateSource, a.StateReason, started, a.Usage, a.LastMessage, a.Hooks,
			a.Limits.Turns, wrapUp, scr)
	}
	return a
}

// RequestWith returns the first scripted request to Models whose body contains all
// of s.
func (r *Rig) RequestWith(s ...string) (modelserver.Request, bool) {
	for _, q := range r.Models.Requests() {
		ok := q.Scripted
		for _, x := range s {
			ok = ok && bytes.Contains(q.Body, []byte(x))
		}
		if ok {
			return q, true
		}
	}
	return modelserver.Request{}, false
}

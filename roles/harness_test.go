package roles_test

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

// rig is one isolated orcr installation (real binary, embedded pty host) with the
// real claude CLI pointed at a scripted model server.
type rig struct {
	t      testing.TB
	bin    string
	dir    string
	work   string // the agents' folder
	roles  string // $XDG_CONFIG_HOME/orcr/roles
	vars   []string
	srv    *serve.Server
	models *modelserver.Server
}

func newClaudeRig(t *testing.T) *rig { return newClaudeRigTB(t) }

func newClaudeRigTB(t testing.TB) *rig {
	t.Helper()
	claude := clis.Find(t, "claude", "ORCR_CLAUDE_BIN")
	ms, err := modelserver.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ms.Close)
	bin := testbin.Build(t, "orcr")
	dir := t.TempDir()
	r := &rig{t: t, bin: bin, dir: dir, models: ms, roles: filepath.Join(dir, "config", "orcr", "roles")}
	cfg := filepath.Join(dir, "claude-config")
	os.MkdirAll(cfg, 0o700)
	os.WriteFile(filepath.Join(cfg, ".claude.json"), []byte(`{"hasCompletedOnboarding":true,"theme":"dark"}`), 0o600)
	r.work = filepath.Join(dir, "work")
	os.MkdirAll(r.work, 0o755)
	r.work, _ = filepath.EvalSymlinks(r.work)
	os.MkdirAll(filepath.Join(dir, "user"), 0o700)
	os.MkdirAll(r.roles, 0o700)
	empty := filepath.Join(dir, "no-clis") // so opencode, pi, codex are not found: fallback
	os.MkdirAll(empty, 0o700)
	r.vars = []string{
		"PATH=" + filepath.Dir(bin) + ":/usr/local/bin:/usr/bin:/bin",
		"HOME=" + filepath.Join(dir, "user"), "TERM=xterm-256color", "LANG=C.UTF-8", "TZ=UTC",
		"ORCR_HOME=" + filepath.Join(dir, "orcr-home"), "ORCR_HOST=pty", "XDG_CONFIG_HOME=" + filepath.Join(dir, "config"),
		"ORCR_CLI_CACHE=" + empty, "ORCR_CLAUDE_BIN=" + claude, "CLAUDE_CONFIG_DIR=" + cfg,
		"ANTHROPIC_BASE_URL=" + ms.URL, "ANTHROPIC_AUTH_TOKEN=test-token", "DISABLE_AUTOUPDATER=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
	}
	return r
}

func (r *rig) serve() {
	r.t.Helper()
	r.srv = serve.Start(r.t, serve.Options{Bin: r.bin, Env: r.vars})
	srv := r.srv
	r.t.Cleanup(func() {
		if r.t.Failed() {
			r.t.Logf("server output:\n%s", srv.Output())
			for i, q := range r.models.Requests() {
				r.t.Logf("model request %d %s %s scripted=%v last user %q", i, q.At.Format("15:04:05.000"), q.Path, q.Scripted, lastUserText(r.t, q))
			}
			// OpenCode's own log (withOpencode) says where a launch spent its time.
			logs, _ := filepath.Glob(filepath.Join(r.dir, "orcr-home", "*.log"))
			oc, _ := filepath.Glob(filepath.Join(r.dir, "data", "opencode", "log", "*.log"))
			for _, l := range append(logs, oc...) {
				b, _ := os.ReadFile(l)
				r.t.Logf("%s:\n%s", l, b)
			}
		}
	})
}

func (r *rig) role(name, body string) {
	r.t.Helper()
	if err := os.WriteFile(filepath.Join(r.roles, name+".toml"), []byte(body), 0o600); err != nil {
		r.t.Fatal(err)
	}
}

type result struct {
	out, err string
	code     int
}

func (r *rig) run(args ...string) result {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.bin, args...)
	cmd.Env = r.vars
	cmd.Dir = r.work
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		r.t.Fatalf("run orcr %v: %v", args, err)
	}
	return result{out.String(), errb.String(), code}
}

func (r *rig) must(args ...string) string {
	r.t.Helper()
	res := r.run(args...)
	if res.code != 0 {
		r.t.Fatalf("orcr %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), res.code, res.out, res.err)
	}
	return res.out
}

func (r *rig) agent(target string) wire.Agent {
	r.t.Helper()
	var res wire.AgentResult
	if err := json.Unmarshal([]byte(r.must("agent", "get", target, "--json")), &res); err != nil {
		r.t.Fatal(err)
	}
	return res.Agent
}

func (r *rig) waitAgent(target string, d time.Duration, what string, cond func(wire.Agent) bool) wire.Agent {
	r.t.Helper()
	var a wire.Agent
	if !wait.Until(d, func() bool { a = r.agent(target); return cond(a) }) {
		scr := r.run("agent", "read", target).out
		started := "-"
		if a.StartedAt != nil {
			started = a.StartedAt.UTC().Format("15:04:05.000")
		}
		r.t.Fatalf("timed out after %v waiting for %s: state=%s/%s %q started=%s hooks=%+v\nscreen:\n%s",
			d, what, a.State, a.StateSource, a.StateReason, started, a.Hooks, scr)
	}
	return a
}

// requestWith returns the first conversation request whose body contains all of s.
func (r *rig) requestWith(s ...string) (modelserver.Request, bool) {
	for _, q := range r.models.Requests() {
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

// lastUserText is the text of the last user message of a model request: the
// Messages API's "messages" (claude) or the Responses API's "input" (codex).
func lastUserText(t testing.TB, q modelserver.Request) string {
	var body struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Input json.RawMessage `json:"input"`
	}
	if err := q.JSON(&body); err != nil {
		t.Fatal(err)
	}
	msgs := body.Messages
	if len(msgs) == 0 && len(body.Input) > 0 {
		json.Unmarshal(body.Input, &msgs)
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role != "user" {
			continue
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			return s
		}
		var blocks []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		json.Unmarshal(m.Content, &blocks)
		var b strings.Builder
		for _, bl := range blocks {
			if bl.Type == "text" || bl.Type == "input_text" {
				b.WriteString(bl.Text)
			}
		}
		return b.String()
	}
	return ""
}

// withPi adds the real pi CLI to the rig, its agent dir pointed at the same scripted
// model server (model modelserver.PiModel). Call it before serve.
func (r *rig) withPi() {
	r.t.Helper()
	bin := clis.Find(r.t, "pi", "ORCR_PI_BIN")
	dir := filepath.Join(r.dir, "pi-agent")
	if err := modelserver.WritePiAgentDir(dir, r.models.URL); err != nil {
		r.t.Fatal(err)
	}
	r.vars = append(r.vars, "ORCR_PI_BIN="+bin, "PI_CODING_AGENT_DIR="+dir, "PI_OFFLINE=1")
}

// withCodex adds the real codex CLI to the rig, its CODEX_HOME pointed at the same
// scripted model server, and returns that CODEX_HOME. Call it before serve.
func (r *rig) withCodex() string {
	r.t.Helper()
	bin := clis.Find(r.t, "codex", "ORCR_CODEX_BIN")
	home := filepath.Join(r.dir, "codex-home")
	if err := modelserver.WriteCodexHome(home, r.models.URL); err != nil {
		r.t.Fatal(err)
	}
	r.vars = append(r.vars, "ORCR_CODEX_BIN="+bin, "CODEX_HOME="+home, modelserver.CodexKeyEnv+"=test-key")
	return home
}

// withOpencode adds the real opencode CLI to the rig, its config pointed at the same
// scripted model server (model modelserver.OpencodeModel) and its data (the SQLite
// session db) in the rig's own folders, its plugin package seeded and the npm
// registry one that never answers (so a launch that would download fails the test).
// Call it before serve.
func (r *rig) withOpencode() {
	r.t.Helper()
	bin := clis.Find(r.t, "opencode", "ORCR_OPENCODE_BIN")
	env, err := modelserver.WriteOpencodeConfig(filepath.Join(r.dir, "opencode-config"), r.models.URL)
	if err != nil {
		r.t.Fatal(err)
	}
	clis.OpencodeConfigHome(r.t, filepath.Join(r.dir, "config"))
	r.vars = append(r.vars, "ORCR_OPENCODE_BIN="+bin, clis.StalledRegistry(r.t), "XDG_DATA_HOME="+filepath.Join(r.dir, "data"),
		"XDG_STATE_HOME="+filepath.Join(r.dir, "state"), "XDG_CACHE_HOME="+filepath.Join(r.dir, "cache"))
	r.vars = append(r.vars, env...)
}

// runArgs is `agent run PATH` on provider or provider:model with prompt, in the rig's
// repository.
func (r *rig) runArgs(path, choice, prompt string) []string {
	provider, model, _ := strings.Cut(choice, ":")
	args := []string{"agent", "run", path, "--provider", provider, "--prompt", prompt, "--cwd", r.work}
	if model != "" {
		args = append(args, "--model", model)
	}
	return args
}

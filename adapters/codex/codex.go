// Package codex is orcr's adapter for the OpenAI Codex CLI (`codex`): it finds the
// CLI, builds the launch (--no-daemon so the session lives in the pane, orcr's notify
// program and the folder trust given per process with -c), finds the session's rollout
// file, and observes the agent from notify, the rollout and the screen.
package codex

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"orcr/adapters/internal/agentkit"
	"orcr/adapters/prices"
	"orcr/core"
	"orcr/core/wire"
	"orcr/internal/regfile"
)

// Name is the provider name.
const Name = "codex"

// InstallHint is the command that installs the CLI.
const InstallHint = "npm install -g @openai/codex"

// Options configure the adapter.
type Options struct {
	// Bin overrides discovery of the codex binary.
	Bin    string
	Logger *slog.Logger
	Prices *prices.Table
	// Home overrides CODEX_HOME (tests); it is exported to the pane.
	Home string
}

// Provider implements core.Provider for codex.
type Provider struct {
	agentkit.Base
	opts Options

	mu      sync.Mutex
	claimed map[string]string // rollout path -> agent id, so two agents never share one
}

var _ core.Provider = (*Provider)(nil)

// New returns the adapter.
func New(o Options) *Provider {
	return &Provider{Base: agentkit.NewBase(cli, o.Bin, o.Logger, o.Prices), opts: o, claimed: map[string]string{}}
}

// cli is how the adapter finds and reports its program.
var cli = agentkit.CLI{Name: Name, EnvVar: "ORCR_CODEX_BIN", CacheName: "codex", Bin: "codex", InstallHint: InstallHint,
	Notes: func(version string) (notes []string) {
		notes = append(notes, "orcr notify injected per launch (-c notify=…)")
		return notes
	}}

// home is CODEX_HOME for an agent.
func (p *Provider) home(env []string, agentEnv map[string]string) string {
	if p.opts.Home != "" {
		return p.opts.Home
	}
	if v := agentEnv["CODEX_HOME"]; v != "" {
		return v
	}
	if v := agentkit.EnvValue(env, "CODEX_HOME"); v != "" {
		return v
	}
	if v := os.Getenv("CODEX_HOME"); v != "" && env == nil {
		return v
	}
	return filepath.Join(agentkit.Home(env), ".codex")
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// NotifyArgv is the notify program: codex passes the JSON payload as the last
// argument, and `orcr hook` reads payloads on stdin, so a shell moves it over.
func NotifyArgv(self string) []string {
	return []string{"/bin/sh", "-c", `printf '%s' "$1" | exec "$0" hook codex notify`, self}
}

// Prepare implements core.Provider.
func (p *Provider) Prepare(ctx context.Context, req core.LaunchRequest) (core.LaunchPlan, error) {
	bin, ok := p.Bin()
	if !ok {
		return core.LaunchPlan{}, fmt.Errorf("codex not found; install it with: %s", InstallHint)
	}
	a := req.Agent
	var notify []string
	for _, s := range NotifyArgv(req.Self) {
		notify = append(notify, tomlString(s))
	}
	argv := []string{bin}
	if a.SessionID != "" {
		argv = append(argv, "resume", a.SessionID)
	}
	// disable_paste_burst: orcr types a message and presses enter in one burst; codex
	// would otherwise take the burst for a paste and keep the enter as a newline.
	argv = append(argv, "--no-daemon", "-c", "notify=["+strings.Join(notify, ",")+"]", "-c", "disable_paste_burst=true")
	if cwd := a.Cwd; cwd != "" {
		// Trust the agent's folder for this process only; list the path as given and
		// resolved, since codex compares either.
		dirs := []string{cwd}
		if r := agentkit.RealDir(cwd); r != cwd {
			dirs = append(dirs, r)
		}
		var parts []string
		for _, d := range dirs {
			parts = append(parts, tomlString(d)+`={trust_level="trusted"}`)
		}
		argv = append(argv, "-c", "projects={"+strings.Join(parts, ",")+"}")
	}
	if a.Model != "" {
		argv = append(argv, "-m", a.Model)
	}
	if a.SystemPrompt != "" {
		// A role's system prompt and skills (§12): codex sends developer_instructions
		// as a developer message beside its own base instructions, which stay.
		argv = append(argv, "-c", "developer_instructions="+tomlString(a.SystemPrompt))
	}
	user := a.Argv
	confined := a.Sandbox.On()
	if confined {
		// orcr's Landlock sandbox replaces codex's own, which cannot start inside it
		// (it mounts; §16): whatever sandbox mode was asked for becomes
		// danger-full-access, the approval policy stays.
		user = withoutSandboxFlags(user)
		argv = append(argv, "--sandbox", "danger-full-access")
	}
	argv = append(argv, user...)
	if a.Prompt != "" {
		pr := a.Prompt
		if strings.HasPrefix(pr, "-") {
			pr = " " + pr
		}
		argv = append(argv, pr)
	}
	var env []string
	if p.opts.Home != "" {
		env = append(env, "CODEX_HOME="+p.opts.Home)
	}
	plan := core.LaunchPlan{Argv: argv, Env: env, SessionID: a.SessionID}
	if confined {
		plan.Confine = p.confinement(req, bin)
	}
	return plan, nil
}

// withoutSandboxFlags is argv without codex's sandbox flags (--sandbox/-s MODE,
// --full-auto, which is workspace-write with on-request approvals: that approval
// policy is kept).
func withoutSandboxFlags(argv []string) []string {
	var out []string
	for i := 0; i < len(argv); i++ {
		switch a := argv[i]; {
		case a == "--":
			return append(out, argv[i:]...)
		case a == "--sandbox" || a == "-s":
			i++
		case strings.HasPrefix(a, "--sandbox=") || strings.HasPrefix(a, "-s="):
		case a == "--full-auto":
			out = append(out, "--ask-for-approval", "on-request")
		case a == "-c" && i+1 < len(argv) && strings.HasPrefix(strings.TrimSpace(argv[i+1]), "sandbox_mode"):
			i++
		default:
			out = append(out, a)
		}
	}
	return out
}

var baseURLRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)^\s*(?:openai_)?base_url\s*=\s*"([^"]+)"`)
})

// confinement is what codex needs inside orcr's sandbox: CODEX_HOME (read-write),
// its install (read-execute), and the ports of the model servers its config and
// environment name.
func (p *Provider) confinement(req core.LaunchRequest, bin string) core.Confinement {
	home := p.home(req.Env, req.Agent.Env)
	c := core.Confinement{
		RW:    []string{home},
		ROX:   []string{agentkit.InstallRoot(bin)},
		Notes: []string{"codex's own sandbox is off (--sandbox danger-full-access): orcr's Landlock sandbox confines it instead"},
	}
	urls := []string{req.Agent.Env["OPENAI_BASE_URL"], agentkit.EnvValue(req.Env, "OPENAI_BASE_URL")}
	if b, err := regfile.Read(filepath.Join(home, "config.toml")); err == nil {
		for _, m := range baseURLRE().FindAllStringSubmatch(string(b), -1) {
			urls = append(urls, m[1])
		}
	}
	for _, u := range urls {
		if port := agentkit.URLPort(u); port != 0 && !slices.Contains(c.Ports, port) {
			c.Ports = append(c.Ports, port)
		}
	}
	return c
}

// Observe implements core.Provider.
func (p *Provider) Observe(a wire.Agent) core.Observer { return newObserver(p, a) }

// claim records that agent id follows the rollout at path; false when another agent
// already does.
func (p *Provider) claim(path, id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if owner, ok := p.claimed[path]; ok && owner != id {
		return false
	}
	p.claimed[path] = id
	return true
}

func (p *Provider) release(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, v := range p.claimed {
		if v == id {
			delete(p.claimed, k)
		}
	}
}

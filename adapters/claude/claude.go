// Package claude is orcr's adapter for Claude Code (`claude`): it finds the CLI, builds
// the launch (a fixed --session-id, orcr's hooks and status line injected per launch
// through --settings, the workspace trust pre-accepted), and observes a running agent
// from its hooks first, its transcript second and its screen last.
package claude

import (
	"time"

	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/google/uuid"

	"orcr/adapters/internal/agentkit"
	"orcr/adapters/prices"
	"orcr/core"
	"orcr/core/wire"
	"orcr/internal/regfile"
)

// Name is the provider name.
const Name = "claude"

// InstallHint is the command that installs the CLI.
const InstallHint = "npm install -g @anthropic-ai/claude-code"

// EnvStatusLineChain carries the user's own status line command to `orcr hook claude
// statusline`, which runs it after capturing rate limits.
const EnvStatusLineChain = "ORCR_CLAUDE_STATUSLINE"

// HookEvents are the hook events orcr subscribes to. PostToolUse clears a permission
// block once the approved tool ran.
var HookEvents = []string{"SessionStart", "UserPromptSubmit", "Stop", "StopFailure",
	"Notification", "PermissionRequest", "PostToolUse"}

// Options configure the adapter.
type Options struct {
	// Bin overrides discovery of the claude binary.
	Bin    string
	Logger *slog.Logger
	Prices *prices.Table
	// ConfigDir overrides CLAUDE_CONFIG_DIR (tests); it is exported to the pane.
	ConfigDir string
	// NoTrust leaves the workspace trust dialog alone (it is then detected on the
	// screen and reported as blocked).
	NoTrust bool
}

// Provider implements core.Provider for Claude Code.
type Provider struct {
	agentkit.Base
	opts Options
}

var _ core.Provider = (*Provider)(nil)

// New returns the adapter.
func New(o Options) *Provider {
	return &Provider{Base: agentkit.NewBase(cli, o.Bin, o.Logger, o.Prices), opts: o}
}

// cli is how the adapter finds and reports its program.
var cli = agentkit.CLI{Name: Name, EnvVar: "ORCR_CLAUDE_BIN", CacheName: "claude", Bin: "claude", InstallHint: InstallHint,
	Notes: func(version string) (notes []string) {
		if !strings.HasPrefix(version, "2.") {
			notes = append(notes, fmt.Sprintf("claude %s: orcr is tested with 2.1.x", version))
		}
		notes = append(notes, "orcr hooks injected per launch (--settings)")
		return notes
	}}

// configDir is where claude keeps its state for this launch.
func (p *Provider) configDir(env []string) string {
	if p.opts.ConfigDir != "" {
		return p.opts.ConfigDir
	}
	if d := agentkit.EnvValue(env, "CLAUDE_CONFIG_DIR"); d != "" {
		return d
	}
	return filepath.Join(agentkit.Home(env), ".claude")
}

// globalConfig is the .claude.json that holds per-project trust.
func (p *Provider) globalConfig(env []string) string {
	if p.opts.ConfigDir != "" || agentkit.EnvValue(env, "CLAUDE_CONFIG_DIR") != "" {
		return filepath.Join(p.configDir(env), ".claude.json")
	}
	return filepath.Join(agentkit.Home(env), ".claude.json")
}

// Prepare implements core.Provider.
func (p *Provider) Prepare(ctx context.Context, req core.LaunchRequest) (core.LaunchPlan, error) {
	bin, ok := p.Bin()
	if !ok {
		return core.LaunchPlan{}, fmt.Errorf("claude not found; install it with: %s", InstallHint)
	}
	a := req.Agent
	cwd := agentkit.RealDir(a.Cwd)
	if req.StateDir == "" {
		return core.LaunchPlan{}, fmt.Errorf("claude: no state dir")
	}
	if err := os.MkdirAll(req.StateDir, 0o700); err != nil {
		return core.LaunchPlan{}, fmt.Errorf("claude: state dir: %w", err)
	}
	settings := filepath.Join(req.StateDir, "claude-settings.json")
	doc := HookSettings(req.Self)
	confined := a.Sandbox.On()
	if confined {
		// orcr's Landlock sandbox replaces claude's own bash sandbox, which cannot
		// start inside it (§16).
		doc["sandbox"] = map[string]any{"enabled": false}
	}
	if err := writeJSON(settings, doc); err != nil {
		return core.LaunchPlan{}, fmt.Errorf("claude: write settings: %w", err)
	}
	var env []string
	if p.opts.ConfigDir != "" {
		env = append(env, "CLAUDE_CONFIG_DIR="+p.opts.ConfigDir)
	}
	if chain := userStatusLine(p.configDir(req.Env), cwd); chain != "" {
		env = append(env, EnvStatusLineChain+"="+chain)
	}
	if !p.opts.NoTrust && cwd != "" {
		if err := trustProject(p.globalConfig(req.Env), cwd); err != nil {
			p.Log.Warn("claude: could not pre-accept workspace trust", "cwd", cwd, "err", err)
		}
		// A folder the launch adds (--add-dir: a workflow step's output folder)
		// asks the same trust question at start; it is answered as the cwd's is.
		for i, arg := range a.Argv {
			if arg == "--add-dir" && i+1 < len(a.Argv) {
				if err := trustProject(p.globalConfig(req.Env), agentkit.RealDir(a.Argv[i+1])); err != nil {
					p.Log.Warn("claude: could not pre-accept trust of an added folder", "dir", a.Argv[i+1], "err", err)
				}
			}
		}
	}
	if !p.opts.NoTrust {
		// A directory the spawn adds (an identity's memory, §18) asks the same trust
		// question as the folder when claude starts; the spawn already chose it.
		for _, dir := range addedDirs(a.Argv) {
			if err := trustProject(p.globalConfig(req.Env), agentkit.RealDir(dir)); err != nil {
				p.Log.Warn("claude: could not pre-accept trust of an added directory", "dir", dir, "err", err)
			}
		}
	}

	argv := []string{bin}
	sid := a.SessionID
	if sid != "" {
		argv = append(argv, "--resume", sid)
	} else {
		sid = uuid.NewString()
		argv = append(argv, "--session-id", sid)
	}
	argv = append(argv, "--settings", settings)
	if a.Model != "" {
		argv = append(argv, "--model", a.Model)
	}
	if a.SystemPrompt != "" {
		// A role's system prompt and skills (§12), added to claude's own.
		argv = append(argv, "--append-system-prompt", a.SystemPrompt)
	}
	argv = append(argv, a.Argv...)
	if a.Prompt != "" {
		argv = append(argv, promptArg(a.Prompt))
	}
	plan := core.LaunchPlan{
		Argv:       argv,
		Env:        env,
		SessionID:  sid,
		Transcript: TranscriptPath(p.configDir(req.Env), cwd, sid),
	}
	if confined {
		plan.Confine = p.confinement(req, bin, settings)
	}
	return plan, nil
}

// confinement is what claude needs inside orcr's sandbox: its config dir and global
// config, its caches and local installs (read-write), its install (read-execute), the
// settings orcr wrote (read), its model server's port.
func (p *Provider) confinement(req core.LaunchRequest, bin, settings string) core.Confinement {
	env := req.Env
	home := agentkit.Home(env)
	c := core.Confinement{
		RW:    []string{p.configDir(env), p.globalConfig(env)},
		ROX:   []string{agentkit.InstallRoot(bin)},
		RO:    []string{settings},
		Notes: []string{"claude's own bash sandbox is off (sandbox.enabled=false in its --settings): orcr's Landlock sandbox confines it instead"},
	}
	if home != "" {
		for _, d := range []string{".local/share/claude", ".local/state/claude", ".cache/claude", ".cache/claude-cli-nodejs"} {
			if _, err := os.Stat(filepath.Join(home, d)); err == nil {
				c.RW = append(c.RW, filepath.Join(home, d))
			}
		}
	}
	base := req.Agent.Env["ANTHROPIC_BASE_URL"]
	if base == "" {
		base = agentkit.EnvValue(env, "ANTHROPIC_BASE_URL")
	}
	if port := agentkit.URLPort(base); port != 0 {
		c.Ports = append(c.Ports, port)
	}
	return c
}

// addedDirs are the directories argv gives with --add-dir=DIR or --add-dir DIR.
func addedDirs(argv []string) []string {
	var dirs []string
	for i, arg := range argv {
		if d, ok := strings.CutPrefix(arg, "--add-dir="); ok && d != "" {
			dirs = append(dirs, d)
		} else if arg == "--add-dir" && i+1 < len(argv) && !strings.HasPrefix(argv[i+1], "-") {
			dirs = append(dirs, argv[i+1])
		}
	}
	return dirs
}

// promptArg keeps a prompt that starts with "-" from being parsed as a flag.
func promptArg(s string) string {
	if strings.HasPrefix(s, "-") {
		return " " + s
	}
	return s
}

// HookSettings is the --settings document: orcr's hooks and status line.
func HookSettings(self string) map[string]any {
	hooks := map[string]any{}
	for _, ev := range HookEvents {
		hooks[ev] = []any{map[string]any{"matcher": "", "hooks": []any{map[string]any{
			"type": "command", "command": agentkit.ShellQuote(self) + " hook claude " + ev, "timeout": 10,
		}}}}
	}
	return map[string]any{
		"hooks": hooks,
		"statusLine": map[string]any{"type": "command", "padding": 0,
			"command": agentkit.ShellQuote(self) + " hook claude statusline"},
	}
}

var slugRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9]`) })

// ProjectSlug is claude's directory name for a cwd: every character outside
// [A-Za-z0-9] becomes '-'; names over 200 characters are cut and suffixed with a hash,
// which orcr does not reproduce (it globs by session id instead).
func ProjectSlug(cwd string) string { return slugRE().ReplaceAllString(cwd, "-") }

// TranscriptPath is where claude writes the session's transcript.
func TranscriptPath(configDir, cwd, sessionID string) string {
	slug := ProjectSlug(cwd)
	if len(slug) > 200 {
		if m, _ := filepath.Glob(filepath.Join(configDir, "projects", "*", sessionID+".jsonl")); len(m) > 0 {
			return m[0]
		}
		return ""
	}
	return filepath.Join(configDir, "projects", slug, sessionID+".jsonl")
}

// userStatusLine finds the user's own status line command (project local settings win
// over project settings over user settings) so orcr's can chain to it.
func userStatusLine(configDir, cwd string) string {
	files := []string{filepath.Join(configDir, "settings.json")}
	if cwd != "" {
		files = append(files, filepath.Join(cwd, ".claude", "settings.json"),
			filepath.Join(cwd, ".claude", "settings.local.json"))
	}
	cmd := ""
	for _, f := range files {
		b, err := regfile.Read(f) // the repo's own .claude/: a FIFO there must not hold the spawn
		if err != nil {
			continue
		}
		var s struct {
			StatusLine *struct {
				Command string `json:"command"`
			} `json:"statusLine"`
		}
		if json.Unmarshal(b, &s) == nil && s.StatusLine != nil && s.StatusLine.Command != "" {
			cmd = s.StatusLine.Command
		}
	}
	return cmd
}

// trustProject marks cwd trusted in claude's global config, keeping every other key.
// The file is replaced atomically.
func trustProject(path, cwd string) error {
	doc := map[string]any{}
	// claude's global config keeps every project's history, so it may pass the config
	// bound; it is still a regular file read in bounded time.
	b, err := regfile.ReadMax(context.Background(), path, 256<<20)
	if err == nil {
		if err := json.Unmarshal(b, &doc); err != nil {
			return fmt.Errorf("parse %s: %w", path, err)
		}
	} else if !os.IsNotExist(err) {
		return err
	}
	projects, _ := doc["projects"].(map[string]any)
	if projects == nil {
		projects = map[string]any{}
	}
	proj, _ := projects[cwd].(map[string]any)
	if proj == nil {
		proj = map[string]any{}
	}
	if v, _ := proj["hasTrustDialogAccepted"].(bool); v {
		return nil
	}
	proj["hasTrustDialogAccepted"] = true
	projects[cwd] = proj
	doc["projects"] = projects
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return writeJSON(path, doc)
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".orcr-tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Observe implements core.Provider.
func (p *Provider) Observe(a wire.Agent) core.Observer {
	return newObserver(p, a)
}

// Typing implements core.Typist. Claude 2.1.328 takes a long text typed at once and an
// Enter right after it as one paste, keeping the Enter as a newline in its input box;
// so Enter waits until the text shows, and is pressed again while no turn starts (its
// UserPromptSubmit hook makes the agent working as soon as a message is taken).
func (p *Provider) Typing() core.Typing {
	return core.Typing{Paste: true, Echo: true, Confirm: true, Quiet: 300 * time.Millisecond}
}

// Package config reads orcr's config.toml ($XDG_CONFIG_HOME/orcr/config.toml, or
// $ORCR_CONFIG) into typed settings. A file that does not parse, or has a key orcr does
// not know, is an error naming the file and the line, so a server refuses to start on it
// rather than guessing.
package config

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"time"

	"orcr/internal/regfile"
	"orcr/internal/strictfile"
)

// Config is the whole file. Zero values mean defaults.
type Config struct {
	Host      string                       `toml:"host"` // auto | herdr | tmux | pty
	Herdr     Herdr                        `toml:"herdr"`
	Tmux      Tmux                         `toml:"tmux"`
	Limits    map[string]int               `toml:"limits"` // global, min_free_mb, <provider>
	GC        GC                           `toml:"gc"`
	Server    Server                       `toml:"server"`
	UI        UI                           `toml:"ui"`
	Keys      map[string][]string          `toml:"keys"`
	Themes    map[string]map[string]string `toml:"themes"`
	Providers map[string]Provider          `toml:"providers"`
	Prices    map[string]Price             `toml:"prices"`
	Accounts  Accounts                     `toml:"accounts"`
	GitHub    GitHub                       `toml:"github"`
	Notify    Notify                       `toml:"notify"`
	HTTP      HTTP                         `toml:"http"`
	Nodes     []Node                       `toml:"nodes"` // [[nodes]]: machines agents run on (DESIGN §14)
	Run       Run                          `toml:"run"`
	Workflows Workflows                    `toml:"workflows"`

	// Path is where the config was read from ("" when no file exists).
	Path string `toml:"-"`
}

// Accounts is the [accounts] table and its [[accounts.<provider>]] entries (DESIGN
// §10). Durations use Go syntax.
type Accounts struct {
	Mode          string    `toml:"mode"`       // ordered (default) | distribute
	Headroom      *float64  `toml:"headroom"`   // default 0.9
	HoldBelow     *int      `toml:"hold_below"` // default 5
	ResumeStagger string    `toml:"resume_stagger"`
	Poll          string    `toml:"poll"`         // usage endpoint poll interval ("" : off; ≥ 5m)
	BudgetGrace   string    `toml:"budget_grace"` // stop budgets: time after the wrap-up message
	Claude        []Account `toml:"claude"`
	Codex         []Account `toml:"codex"`
}

// Account is one auth source of a provider.
type Account struct {
	Label     string            `toml:"label"`
	ConfigDir string            `toml:"config_dir"` // claude
	Home      string            `toml:"home"`       // codex
	Env       map[string]string `toml:"env"`
	UsageURL  string            `toml:"usage_url"`
}

// Node is one [[nodes]] entry: a machine reached over SSH that agents may run on.
type Node struct {
	Name string `toml:"name"`
	// SSH is user@host[:port] or a Host alias of ~/.ssh/config.
	SSH              string   `toml:"ssh"`
	IdentityFile     string   `toml:"identity_file"`
	MaxAgents        int      `toml:"max_agents"`
	Accounts         []string `toml:"accounts"`
	Labels           []string `toml:"labels"`
	AcceptNewHostKey bool     `toml:"accept_new_host_key"`
}

// Herdr configures the herdr host.
type Herdr struct {
	Bin     string `toml:"bin"`
	Session string `toml:"session"`
}

// Tmux configures the tmux host.
type Tmux struct {
	Bin string `toml:"bin"`
}

// Server bounds what clients may hold of the server (DESIGN §13); 0 takes the default
// (16384 connections, kept under the file limit; 16 requests in flight and 4 MiB of unread
// answers per connection). `orcr doctor` shows the numbers in force.
type Server struct {
	MaxConnections int `toml:"max_connections"`
	MaxInFlight    int `toml:"max_requests_per_connection"`
	MaxUnreadMB    int `toml:"max_unread_mb"`
}

// HTTP is the [http] table: the web gateway (DESIGN §15). Off unless Listen is set.
type HTTP struct {
	// Listen is the address the gateway serves on ("127.0.0.1:7070"); an address
	// other than loopback needs a web token to exist.
	Listen string `toml:"listen"`
}

// GC configures lifecycle collection; durations use Go syntax ("10m", "24h").
type GC struct {
	ExitedGrace string `toml:"exited_grace"`
	IdleAfter   string `toml:"idle_after"`
	Retain      string `toml:"retain"`
	// IdleAction is what idle_after does: "stop" (default) or "hibernate".
	IdleAction string `toml:"idle_action"`
}

// GitHub configures the GitHub client listeners use.
type GitHub struct {
	// APIURL is the REST root: "" for github.com, "https://HOST/api/v3/" for GitHub
	// Enterprise, or a test server.
	APIURL string `toml:"api_url"`
	// Token is used before GH_TOKEN, GITHUB_TOKEN and `gh auth token`.
	Token string `toml:"token"`
}

// UI configures the dashboard.
type UI struct {
	Theme  string `toml:"theme"`
	Keymap string `toml:"keymap"`
}

// Notify is the [notify] table: how the dashboard tells the operator that something
// needs them. Every switch is on unless set to false.
type Notify struct {
	Bell    *bool `toml:"bell"`    // ring the terminal bell
	Desktop *bool `toml:"desktop"` // a desktop notification: notify-send, else the terminal's OSC 9/777
	// The kinds: an agent blocks, a plan is drafted, a run asks, a run fails, a run
	// is done.
	Blocked     *bool `toml:"blocked"`
	PlanDrafted *bool `toml:"plan_drafted"`
	RunAsks     *bool `toml:"run_asks"`
	RunFailed   *bool `toml:"run_failed"`
	RunDone     *bool `toml:"run_done"` // a run is done (the server's command and Web Push)
	// Command is run by the server (sh -c) for each event that needs the user, the
	// event as JSON on its stdin (e.g. notify-send, or curl -d @- to ntfy); the kinds
	// above turn it off per kind too.
	Command string `toml:"command"`
	// OSC picks the terminal's notification sequence when notify-send is not used:
	// "9", "777", or "" to pick by the terminal.
	OSC string `toml:"osc"`
}

// On reports whether a switch is on (unset means on).
func On(b *bool) bool { return b == nil || *b }

// Kinds are the notification kinds by their [notify] key, each with its switch.
func (n Notify) Kinds() map[string]bool {
	return map[string]bool{"blocked": On(n.Blocked), "plan_drafted": On(n.PlanDrafted),
		"run_asks": On(n.RunAsks), "run_failed": On(n.RunFailed), "run_done": On(n.RunDone)}
}

// Provider overrides a provider adapter's settings.
type Provider struct {
	Bin string `toml:"bin"`
}

// Price overrides a model's price (USD per 1M tokens).
type Price struct {
	Input      float64 `toml:"input"`
	Output     float64 `toml:"output"`
	CacheRead  float64 `toml:"cache_read"`
	CacheWrite float64 `toml:"cache_write"`
}

// Home is orcr's state directory: $ORCR_HOME, else $XDG_STATE_HOME/orcr, else
// ~/.local/state/orcr (DESIGN §2). The server keeps its store, socket and log there.
func Home() string {
	if h := os.Getenv("ORCR_HOME"); h != "" {
		return h
	}
	if x := os.Getenv("XDG_STATE_HOME"); x != "" {
		return filepath.Join(x, "orcr")
	}
	h, _ := os.UserHomeDir()
	return filepath.Join(h, ".local", "state", "orcr")
}

// DefaultPath is $ORCR_CONFIG, else $XDG_CONFIG_HOME/orcr/config.toml.
func DefaultPath() string {
	if p := os.Getenv("ORCR_CONFIG"); p != "" {
		return p
	}
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "orcr", "config.toml")
}

// Load reads path; a missing file gives the defaults. The file is read by the one strict
// loader: a key orcr does not know, a value of the wrong type or a syntax error is an
// error naming the file and the line ("config.toml:3: unknown key …").
func Load(path string) (Config, error) {
	var c Config
	doc, err := strictfile.Load(context.Background(), path, regfile.MaxConfig, &c)
	if errors.Is(err, fs.ErrNotExist) {
		return Config{}, nil
	}
	if err != nil {
		return c, err
	}
	c.Path = path
	var ve *valueError
	if err := c.Validate(); errors.As(err, &ve) {
		// A value that parses but makes no sense is named at its line too.
		doc.Add(ve.key, "%s", ve.msg)
		return c, doc.Err()
	} else if err != nil {
		return c, err
	}
	return c, nil
}

// valueError is a value Validate refuses, with the key it is under so Load can name the
// line; alone it reads "config: msg".
type valueError struct{ key, msg string }

func (e *valueError) Error() string { return "config: " + e.msg }

func bad(key, format string, args ...any) error {
	return &valueError{key: key, msg: fmt.Sprintf(format, args...)}
}

// Run is [run]: how runs start their agents.
type Run struct {
	// Sandbox is "on" (the default: coders confined with Landlock, DESIGN §16) or
	// "off" (coders unconfined).
	Sandbox string `toml:"sandbox"`
	// MCP gives the run's lead, coders and reviewer orcr's MCP server at this scope
	// (self, read or act; "" none), as a role's mcp does (DESIGN §17).
	MCP string `toml:"mcp"`
}

// Workflows is the [workflows] table: how long finished workflow runs are kept.
// A finished run goes (with its log and output files) once it ended Retain ago, or
// once Keep newer finished runs exist; a running one always stays.
type Workflows struct {
	Keep   int    `toml:"keep"`   // finished runs kept (default 100)
	Retain string `toml:"retain"` // finished runs kept this long (default gc.retain's)
}

// Validate checks values that parse but make no sense.
func (c Config) Validate() error {
	switch c.Host {
	case "", "auto", "herdr", "tmux", "pty":
	default:
		return bad("host", "host %q: use auto, herdr, tmux or pty", c.Host)
	}
	var names []string
	for k := range c.Limits {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if c.Limits[k] < 0 {
			return bad(strictfile.Key("limits", k), "limits.%s = %d must not be negative", k, c.Limits[k])
		}
	}
	switch c.GC.IdleAction {
	case "", "stop", "hibernate":
	default:
		return bad("gc.idle_action", "gc.idle_action = %q: use \"stop\" or \"hibernate\"", c.GC.IdleAction)
	}
	if u := c.GitHub.APIURL; u != "" {
		if pu, err := url.Parse(u); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			return bad("github.api_url", "github.api_url = %q: give an http(s) URL, e.g. \"https://github.example.com/api/v3/\"", u)
		}
	}
	switch c.Run.Sandbox {
	case "", "on", "off":
	default:
		return bad("run.sandbox", "run.sandbox = %q: use \"on\" (coders confined, the default) or \"off\"", c.Run.Sandbox)
	}
	switch c.Run.MCP {
	case "", "self", "read", "act":
	default:
		return bad("run.mcp", "run.mcp = %q: use \"self\" (each agent its own subtree), \"read\" (see all, change nothing) or \"act\"", c.Run.MCP)
	}
	switch c.Notify.OSC {
	case "", "9", "777":
	default:
		return bad("notify.osc", "notify.osc = %q: use \"9\", \"777\" or leave it out", c.Notify.OSC)
	}
	if err := c.validateNodes(); err != nil {
		return err
	}
	if err := c.validateNumbers(); err != nil {
		return err
	}
	if c.Workflows.Keep < 0 {
		return bad("workflows.keep", "workflows.keep = %d must not be negative (0: the default, 100)", c.Workflows.Keep)
	}
	for name, d := range map[string]string{"gc.exited_grace": c.GC.ExitedGrace, "gc.idle_after": c.GC.IdleAfter, "gc.retain": c.GC.Retain, "workflows.retain": c.Workflows.Retain} {
		if d == "" {
			continue
		}
		if _, err := time.ParseDuration(d); err != nil {
			return bad(name, "%s = %q is not a duration (e.g. \"10m\", \"24h\")", name, d)
		}
	}
	return nil
}

// validateNodes checks each [[nodes]] entry: a name and an ssh destination, a cap
// that is not negative, no name twice (the nodes feature checks the name's form).
func (c Config) validateNodes() error {
	seen := map[string]bool{}
	for i, n := range c.Nodes {
		switch {
		case n.Name == "":
			return bad("nodes", "[[nodes]] entry %d has no name", i+1)
		case n.SSH == "":
			return bad("nodes", "[[nodes]] %s has no ssh (user@host, user@host:port or a Host alias of ~/.ssh/config)", n.Name)
		case n.MaxAgents < 0:
			return bad("nodes", "[[nodes]] %s: max_agents = %d must not be negative", n.Name, n.MaxAgents)
		case seen[n.Name]:
			return bad("nodes", "[[nodes]] names %s twice", n.Name)
		}
		seen[n.Name] = true
	}
	return nil
}

// GlobalCap, MinFreeMB and ProviderCaps split the flat [limits] table.
func (c Config) GlobalCap() int { return c.Limits["global"] }

// MinFreeMB is the memory guard.
func (c Config) MinFreeMB() int { return c.Limits["min_free_mb"] }

// LocalCap caps the agents placement puts on this machine while nodes are registered
// (DESIGN §14; 0: no cap of its own).
func (c Config) LocalCap() int { return c.Limits["local"] }

// ProviderCaps are the per-provider caps.
func (c Config) ProviderCaps() map[string]int {
	out := map[string]int{}
	for k, v := range c.Limits {
		if k != "global" && k != "min_free_mb" && k != "local" {
			out[k] = v
		}
	}
	return out
}

// validateNumbers refuses numbers TOML reads but orcr cannot use: TOML has nan and inf,
// and headroom = nan reached `orcr account ls` as "json: unsupported value: NaN".
func (c Config) validateNumbers() error {
	if h := c.Accounts.Headroom; h != nil && (math.IsNaN(*h) || *h < 0 || *h > 1) {
		return bad("accounts.headroom", "accounts.headroom = %v: give a fraction from 0 to 1 (default 0.9)", *h)
	}
	if h := c.Accounts.HoldBelow; h != nil && (*h < 0 || *h > 100) {
		return bad("accounts.hold_below", "accounts.hold_below = %d: give a percentage from 0 to 100 (default 5)", *h)
	}
	models := make([]string, 0, len(c.Prices))
	for m := range c.Prices {
		models = append(models, m)
	}
	sort.Strings(models)
	for _, m := range models {
		p := c.Prices[m]
		for key, v := range map[string]float64{"input": p.Input, "output": p.Output, "cache_read": p.CacheRead, "cache_write": p.CacheWrite} {
			if math.IsNaN(v) || v < 0 || v > maxPrice {
				return bad(strictfile.Key("prices", m, key), "prices.%s.%s = %v: give USD per million tokens from 0 to %d", m, key, v, maxPrice)
			}
		}
	}
	for key, v := range map[string]int{"server.max_connections": c.Server.MaxConnections,
		"server.max_requests_per_connection": c.Server.MaxInFlight, "server.max_unread_mb": c.Server.MaxUnreadMB} {
		if v < 0 || v > 1_000_000 {
			return bad(key, "%s = %d: give a number from 0 (the default) to 1000000", key, v)
		}
	}
	return nil
}

// maxPrice bounds a model's price in USD per million tokens (the dearest today is ~$150).
const maxPrice = 100_000

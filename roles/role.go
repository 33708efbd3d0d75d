// Package roles is DESIGN §12: role templates ($XDG_CONFIG_HOME/orcr/roles/NAME.toml)
// that agent.run resolves into a concrete spawn (providers in fallback order, a prompt
// template, a system-prompt addition with skill files, env, limits), per-repo hooks
// (.orcr/hooks/{init,before,validate,after}.sh), the limits' enforcement (soft and
// hard timeouts, turn and cost budgets) and the history of finished agents. It is a
// feature beside the kernel: it plugs into agent.run through core.RunResolver and
// into launches through core.LaunchHook, and watches agents as a client of the
// kernel's events.
package roles

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"orcr/core/wire"
	"orcr/internal/regfile"
	"orcr/internal/strictfile"
	roleapi "orcr/roles/api"
)

// MaxFile bounds a role file (and each skill file): roles are read on every spawn.
const MaxFile = 256 << 10

var nodeNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`) })

var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`) })

// ValidName reports whether name can be a role (it is the file's base name).
func ValidName(name string) bool { return nameRE().MatchString(name) }

// rawRole is a role file as written; pointers tell absent from zero.
type rawRole struct {
	Providers    []string          `toml:"providers"`
	Prompt       *string           `toml:"prompt"`
	SystemPrompt *string           `toml:"system_prompt"`
	Skills       []string          `toml:"skills"`
	Env          map[string]string `toml:"env"`
	Worktree     *string           `toml:"worktree"`
	Keep         *bool             `toml:"keep"`
	Priority     *int              `toml:"priority"`
	BudgetUSD    *float64          `toml:"budget_usd"`
	BudgetAction *string           `toml:"budget_action"`
	MaxTurns     *int              `toml:"max_turns"`
	SoftTimeout  *string           `toml:"soft_timeout"`
	HardTimeout  *string           `toml:"hard_timeout"`
	MCP          *string           `toml:"mcp"`
	Identity     *string           `toml:"identity"`
	Spawn        *rawSpawn         `toml:"spawn"`
	Sandbox      *rawSandbox       `toml:"sandbox"`
	Node         *string           `toml:"node"`
	Labels       []string          `toml:"labels"`
}

// rawSpawn is a role's [spawn] table (DESIGN §18): what its agents may spawn.
type rawSpawn struct {
	MaxChildren *int     `toml:"max_children"`
	MaxDepth    *int     `toml:"max_depth"`
	Providers   []string `toml:"providers"`
	Roles       []string `toml:"roles"`
	BudgetUSD   *float64 `toml:"budget_usd"`
}

// rawSandbox is a role's [sandbox] table (DESIGN §16): its presence confines the
// role's agents (mode = "off" runs them unconfined), rw/rox/ports widen the policy.
type rawSandbox struct {
	Mode  *string  `toml:"mode"`
	RW    []string `toml:"rw"`
	ROX   []string `toml:"rox"`
	Ports []int    `toml:"ports"`
}

// Role is a parsed, checked role.
type Role struct {
	Name         string
	File         string
	Providers    []Choice
	Prompt       string
	SystemPrompt string
	Skills       []string // as written (~ allowed)
	Env          map[string]string
	Worktree     string
	Keep         bool
	Priority     int
	BudgetUSD    float64
	BudgetAction string // "stop" or "hold" ("": stop)
	MaxTurns     int
	SoftTimeout  time.Duration
	HardTimeout  time.Duration
	// Identity is the identity its agents act as ("" for none; §18).
	Identity string
	// Spawn is what its agents may spawn (nil: not bounded by the role).
	Spawn *wire.SpawnPolicy
	// MCP is the scope of the orcr MCP server the role's agents get, and the cap of
	// every MCP session under them (DESIGN §17): self, read or act ("" for none).
	MCP string
	// Sandbox is the role's [sandbox] (nil: none given).
	Sandbox *wire.Sandbox
	// Node pins its agents to a node (DESIGN §14) unless the request names one;
	// Labels, without Node, place them on a node that has every label.
	Node   string
	Labels []string
	// Lines is where each key is in the file.
	Lines map[string]int
}

// Choice is one provider:model of a role's chain.
type Choice struct {
	Provider string
	Model    string
}

func (c Choice) String() string {
	if c.Model == "" {
		return c.Provider
	}
	return c.Provider + ":" + c.Model
}

// Checker decides whether a provider:model names something orcr can run.
type Checker func(provider, model string) error

// Parse reads one role file's text. name is the role's name (the file's base name),
// file is used in messages. check validates each provider:model (nil: no check).
// Skill files must exist and be readable; template variables are collected. Every
// problem is reported at once, each at its line (strictfile.Errors).
func Parse(name, file string, src []byte, check Checker) (*Role, error) {
	if len(src) > MaxFile {
		return nil, strictfile.Errors{{File: file, Msg: fmt.Sprintf("file is %d bytes, over the %d-byte limit", len(src), MaxFile)}}
	}
	var raw rawRole
	doc, err := strictfile.Decode(file, src, &raw)
	if doc == nil {
		return nil, err
	}
	lines := map[string]int{}
	for _, k := range knownKeys {
		if doc.IsDefined(k) {
			lines[k] = doc.Line(k)
		}
	}
	r := &Role{Name: name, File: file, Lines: lines, Env: raw.Env, Skills: raw.Skills}
	if len(raw.Providers) == 0 {
		doc.Add("providers", `providers is required: a list of "provider:model" in fallback order, e.g. providers = ["claude:sonnet"]`)
	}
	seen := map[string]bool{}
	for _, s := range raw.Providers {
		p, m, _ := strings.Cut(strings.TrimSpace(s), ":")
		c := Choice{Provider: p, Model: m}
		if p == "" {
			doc.Add("providers", "providers: %q names no provider", s)
			continue
		}
		if seen[c.String()] {
			doc.Add("providers", "providers: %q listed twice", s)
			continue
		}
		seen[c.String()] = true
		if check != nil {
			if err := check(p, m); err != nil {
				doc.Add("providers", "providers: %q: %v", s, err)
				continue
			}
		}
		r.Providers = append(r.Providers, c)
	}
	if raw.Prompt != nil {
		r.Prompt = *raw.Prompt
		if err := checkTemplate(r.Prompt); err != nil {
			doc.Add("prompt", "prompt: %v", err)
		}
	}
	if raw.SystemPrompt != nil {
		r.SystemPrompt = *raw.SystemPrompt
	}
	for _, sk := range raw.Skills {
		p := ExpandHome(sk)
		st, err := os.Stat(p)
		switch {
		case err != nil:
			doc.Add("skills", "skills: %s: no such file", sk)
		case st.IsDir():
			doc.Add("skills", "skills: %s is a directory, not a file", sk)
		case st.Size() > MaxFile:
			doc.Add("skills", "skills: %s is %d bytes, over the %d-byte limit", sk, st.Size(), MaxFile)
		}
	}
	for k := range raw.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			doc.Add("env", "env: invalid name %q", k)
		}
	}
	if raw.Worktree != nil {
		r.Worktree = *raw.Worktree
		if err := checkTemplate(r.Worktree); err != nil {
			doc.Add("worktree", "worktree: %v", err)
		}
	}
	if raw.Keep != nil {
		r.Keep = *raw.Keep
	}
	if raw.Priority != nil {
		if n := *raw.Priority; n < -wire.MaxPriority || n > wire.MaxPriority {
			doc.Add("priority", "priority %d: give a number from %d to %d", n, -wire.MaxPriority, wire.MaxPriority)
		}
		r.Priority = *raw.Priority
	}
	if raw.BudgetUSD != nil {
		if v := *raw.BudgetUSD; math.IsNaN(v) || v < 0 || v > wire.MaxUSD {
			doc.Add("budget_usd", "budget_usd %v: give a number from 0 to %d", v, wire.MaxUSD)
		}
		r.BudgetUSD = *raw.BudgetUSD
	}
	if raw.BudgetAction != nil {
		switch *raw.BudgetAction {
		case BudgetStop, BudgetHold:
			r.BudgetAction = *raw.BudgetAction
		default:
			doc.Add("budget_action", "budget_action %q: use stop (wrap up, then stop) or hold (new spawns under the path wait)", *raw.BudgetAction)
		}
		if r.BudgetUSD <= 0 {
			doc.Add("budget_action", "budget_action needs budget_usd")
		}
	}
	if raw.MaxTurns != nil {
		if n := *raw.MaxTurns; n < 0 || n > wire.MaxTurns {
			doc.Add("max_turns", "max_turns %d: give a number from 0 to %d", n, wire.MaxTurns)
		}
		r.MaxTurns = *raw.MaxTurns
	}
	if raw.MCP != nil {
		switch *raw.MCP {
		case "self", "read", "act":
			r.MCP = *raw.MCP
		default:
			doc.Add("mcp", "mcp %q: use self (its own agents), read (see all, change nothing) or act (act on all)", *raw.MCP)
		}
	}
	if raw.Node != nil {
		if !nodeNameRE().MatchString(*raw.Node) {
			doc.Add("node", "node %q: name a node (orcr node ls): a lowercase letter, then letters, digits or -", *raw.Node)
		}
		r.Node = *raw.Node
	}
	for _, l := range raw.Labels {
		if strings.TrimSpace(l) == "" {
			doc.Add("labels", "labels: a label is not empty")
		}
	}
	r.Labels = raw.Labels
	if sb := raw.Sandbox; sb != nil {
		r.Sandbox = &wire.Sandbox{Mode: wire.SandboxOn, RW: sb.RW, ROX: sb.ROX, Ports: sb.Ports}
		if sb.Mode != nil {
			switch *sb.Mode {
			case wire.SandboxOn, wire.SandboxOff:
				r.Sandbox.Mode = *sb.Mode
			default:
				doc.Add("sandbox", "sandbox mode %q: use on or off", *sb.Mode)
			}
		}
		for _, d := range append(append([]string{}, sb.RW...), sb.ROX...) {
			if err := sandboxPath(d); err != nil {
				doc.Add("sandbox", "sandbox: %v", err)
			}
		}
		for _, n := range sb.Ports {
			if n < 1 || n > 65535 {
				doc.Add("sandbox", "sandbox: port %d is not a TCP port (1–65535)", n)
			}
		}
	}
	r.SoftTimeout = duration(doc, "soft_timeout", raw.SoftTimeout)
	r.HardTimeout = duration(doc, "hard_timeout", raw.HardTimeout)
	if r.SoftTimeout > 0 && r.HardTimeout > 0 && r.SoftTimeout >= r.HardTimeout {
		doc.Add("soft_timeout", "soft_timeout %s must be shorter than hard_timeout %s (the wrap-up comes before the stop)",
			r.SoftTimeout, r.HardTimeout)
	}
	if raw.Identity != nil {
		r.Identity = *raw.Identity
		if !ValidName(r.Identity) {
			doc.Add("identity", "identity %q: name an identity directory ($XDG_CONFIG_HOME/orcr/identities/NAME), [a-z0-9][a-z0-9._-]*", r.Identity)
		}
	}
	if raw.Spawn != nil {
		r.Spawn = spawnPolicy(doc, raw.Spawn)
	}
	if err := doc.Err(); err != nil {
		return nil, err
	}
	return r, nil
}

// spawnPolicy checks a [spawn] table's values, each at its line.
func spawnPolicy(doc *strictfile.Doc, raw *rawSpawn) *wire.SpawnPolicy {
	sp := &wire.SpawnPolicy{MaxChildren: raw.MaxChildren, MaxDepth: raw.MaxDepth, BudgetUSD: raw.BudgetUSD,
		Providers: raw.Providers, Roles: raw.Roles}
	if n := raw.MaxChildren; n != nil && (*n < 0 || *n > 100000) {
		doc.Add("spawn.max_children", "spawn.max_children %d: give a number from 0 (no children) to 100000", *n)
	}
	if n := raw.MaxDepth; n != nil && (*n < 0 || *n > 16) {
		doc.Add("spawn.max_depth", "spawn.max_depth %d: give a number from 0 (no children) to 16 (the deepest path)", *n)
	}
	if v := raw.BudgetUSD; v != nil && (math.IsNaN(*v) || *v < 0 || *v > wire.MaxUSD) {
		doc.Add("spawn.budget_usd", "spawn.budget_usd %v: give a number from 0 to %d", *v, wire.MaxUSD)
	}
	for _, r := range raw.Roles {
		if !ValidName(r) {
			doc.Add("spawn.roles", "spawn.roles: %q is not a role name", r)
		}
	}
	for _, p := range raw.Providers {
		if p == "" || strings.ContainsAny(p, ": ") {
			doc.Add("spawn.providers", "spawn.providers: %q: name a provider (claude, codex, opencode, pi, shell)", p)
		}
	}
	return sp
}

var knownKeys = []string{"providers", "prompt", "system_prompt", "skills", "env", "worktree", "keep", "priority",
	"budget_usd", "budget_action", "max_turns", "soft_timeout", "hard_timeout", "identity", "spawn", "mcp", "sandbox"}

func duration(doc *strictfile.Doc, key string, s *string) time.Duration {
	if s == nil {
		return 0
	}
	d, err := time.ParseDuration(*s)
	if err != nil || d <= 0 {
		doc.Add(key, "%s %q: use a positive duration such as \"20m\" or \"1h30m\"", key, *s)
		return 0
	}
	if d < time.Second || d > wire.MaxTimeoutSeconds*time.Second {
		doc.Add(key, "%s %q: give 1s to %s", key, *s, wire.MaxTimeoutSeconds*time.Second)
		return 0
	}
	return d
}

// ExpandHome turns a leading ~/ into the user's home.
func ExpandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, strings.TrimPrefix(p, "~"))
		}
	}
	return p
}

// Wire is the role as the API shows it, with where each value came from.
func (r *Role) Wire() roleapi.Role {
	w := roleapi.Role{Name: r.Name, File: r.File, Prompt: r.Prompt, SystemPrompt: r.SystemPrompt,
		Skills: append([]string{}, r.Skills...), Env: r.Env, Worktree: r.Worktree, Keep: r.Keep, Priority: r.Priority,
		BudgetUSD: r.BudgetUSD, BudgetAction: r.BudgetAction, MaxTurns: r.MaxTurns, SoftTimeoutSeconds: int(r.SoftTimeout / time.Second),
		HardTimeoutSeconds: int(r.HardTimeout / time.Second), Vars: templateVars(r.Prompt + " " + r.Worktree),
		Identity: r.Identity, Spawn: r.Spawn, Sources: map[string]string{}}
	if w.Env == nil {
		w.Env = map[string]string{}
	}
	for _, c := range r.Providers {
		w.Providers = append(w.Providers, c.String())
	}
	base := filepath.Base(r.File)
	for _, k := range knownKeys {
		if l, ok := r.Lines[k]; ok {
			w.Sources[k] = fmt.Sprintf("%s:%d", base, l)
		} else {
			w.Sources[k] = "default"
		}
	}
	return w
}

// Dir is the roles directory: $XDG_CONFIG_HOME/orcr/roles (~/.config when unset).
func Dir() string {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "orcr", "roles")
}

// Load reads role name from dir.
func Load(dir, name string, check Checker) (*Role, []byte, error) {
	if !ValidName(name) {
		return nil, nil, wire.Errorf(wire.CodeInvalidParams, "invalid role name %q: use [a-z0-9][a-z0-9._-]*", name)
	}
	file := filepath.Join(dir, name+".toml")
	src, err := readBounded(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, wire.Errorf(wire.CodeUnknownRole, "no role %q (looked for %s); list them with: orcr role ls", name, file)
	}
	if err != nil {
		return nil, nil, wire.Errorf(wire.CodeBadRole, "read role %s: %v", file, err)
	}
	r, err := Parse(name, file, src, check)
	if err != nil {
		return nil, src, wire.Errorf(wire.CodeBadRole, "role %s does not load:\n%v", name, err)
	}
	return r, src, nil
}

// List reads every role file in dir, sorted by name; a broken one is listed with its
// error.
func List(dir string, check Checker) []roleapi.Role {
	ents, _ := os.ReadDir(dir)
	var out []roleapi.Role
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".toml")
		if !ok || e.IsDir() || !ValidName(name) {
			continue
		}
		r, _, err := Load(dir, name, check)
		if err != nil {
			out = append(out, roleapi.Role{Name: name, File: filepath.Join(dir, e.Name()), Error: err.Error()})
			continue
		}
		out = append(out, r.Wire())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func readBounded(path string) ([]byte, error) {
	return regfile.ReadMax(context.Background(), path, MaxFile)
}

// sandboxPath checks a [sandbox] rw/rox entry as the sandbox will: absolute or under
// ~, without a ".." element (a grant names what it opens plainly).
func sandboxPath(p string) error {
	if slices.Contains(strings.Split(filepath.ToSlash(p), "/"), "..") {
		return fmt.Errorf("%q has a \"..\" element: name the directory itself", p)
	}
	if p != "~" && !strings.HasPrefix(p, "~/") && !filepath.IsAbs(p) {
		return fmt.Errorf("%q is not an absolute path (or one under ~)", p)
	}
	return nil
}

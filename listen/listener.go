// Package listen owns listeners (DESIGN §11): a listener file names a source (a shell
// command, or GitHub issues, comments, labels or reviews), an action (spawn an agent or
// draft a plan, from templates over the event's vars) and rolling-window rate limits.
// This package holds the pieces that need no server: parsing listener files strictly
// (every error names its line), templates, the rate limiter, the shell source runner,
// the tick that paces dispatch without losing events, and the records a listener keeps
// in the store (through the small Store interface the daemon provides).
package listen

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"orcr/internal/regfile"
	"orcr/internal/strictfile"
)

// Listener is one parsed listener file.
type Listener struct {
	Name       string
	Interval   time.Duration
	Source     Source
	Action     Action
	RateLimits []RateLimit
}

// Source is the [source] table.
type Source struct {
	Type            string   // shell | github-issues | github-comments | github-labels | github-pr-reviews
	Repos           []string // github-*: owner/name
	Trigger         string   // github-comments: only bodies containing it
	AuthorizedUsers []string // github-comments, github-labels, github-pr-reviews: only these actors (empty: everyone)
	Labels          []string // github-issues: issues carrying all of them; github-labels: only these labels
	States          []string // github-pr-reviews: review states to fire on (default every submitted review)
	Command         string   // shell: run with sh -c
	Timeout         time.Duration
}

// Action is the [action] table: spawn an agent (Path, Prompt, Role or Provider/Model,
// Priority) or draft a plan (Plan, Request, Repo, Lead).
type Action struct {
	Path   Template
	Prompt Template // "" with a role: the role's prompt template, filled from the event
	// Plan is the plan's name (each value slugged, as in a path, '/' included); Request
	// what the plan is for; Repo the local folder inside the git repository it is for
	// (absolute or ~/… once rendered); Lead "provider" or "provider:model" ("" picks
	// a high-tier model, as plan new does).
	Plan     Template
	Request  Template
	Repo     Template
	Lead     string
	Role     string
	Provider string
	Model    string
	Priority int
	// Identity is the identity the agent acts as (DESIGN §18; "" for none).
	Identity string
	// Command is what a shell-provider agent runs (sh -c; not a template: the event's
	// vars reach it as ORCR_EVENT_* environment variables, never spliced into the
	// command line, so an issue title cannot inject shell).
	Command string
	// Cwd is the agent's working directory (absolute, or ~/…); "" is the server's.
	Cwd string
	// Workflow starts a run of that workflow (DESIGN §18) instead: the event's vars
	// fill the workflow's [vars] of the same names; Repo, when set, is where its
	// .orcr/workflows is read and its steps run.
	Workflow string
}

// IsPlan says the action drafts a plan instead of spawning an agent.
func (a Action) IsPlan() bool { return a.Plan.Text != "" }

// IsWorkflow says the action starts a workflow run instead of spawning an agent.
func (a Action) IsWorkflow() bool { return a.Workflow != "" }

// RateLimit is one [[rate_limits]] entry: at most Max dispatches in any Per.
type RateLimit struct {
	Max  int
	Per  time.Duration
	Text string // the file's spelling of per, shown back as written
}

// Defaults where a file says nothing.
const (
	DefaultInterval = time.Minute
	MinInterval     = time.Second
	MaxShellTimeout = 10 * time.Minute
)

// ParseError is a listener file that cannot be used; Line is 0 when the problem is a
// missing key rather than a line.
type ParseError struct {
	Name string
	Path string
	Line int
	Msg  string
	Err  error // the strict loader's *strictfile.Error, when it found the problem
}

func (e *ParseError) Unwrap() error { return e.Err }

func (e *ParseError) Error() string {
	where := "listener " + e.Name
	if e.Path != "" {
		where += " (" + e.Path + ")"
	}
	if e.Line > 0 {
		where += fmt.Sprintf(" line %d", e.Line)
	}
	return where + ": " + e.Msg
}

type fileDoc struct {
	Interval string `toml:"interval"`
	Source   struct {
		Type            string   `toml:"type"`
		Repos           []string `toml:"repos"`
		Trigger         string   `toml:"trigger"`
		AuthorizedUsers []string `toml:"authorized_users"`
		Labels          []string `toml:"labels"`
		States          []string `toml:"states"`
		Command         string   `toml:"command"`
		Timeout         string   `toml:"timeout"`
	} `toml:"source"`
	Action struct {
		Path     string `toml:"path"`
		Prompt   string `toml:"prompt"`
		Plan     string `toml:"plan"`
		Request  string `toml:"request"`
		Repo     string `toml:"repo"`
		Lead     string `toml:"lead"`
		Role     string `toml:"role"`
		Identity string `toml:"identity"`
		Provider string `toml:"provider"`
		Model    string `toml:"model"`
		Priority int64  `toml:"priority"`
		Command  string `toml:"command"`
		Cwd      string `toml:"cwd"`
		Workflow string `toml:"workflow"`
	} `toml:"action"`
	RateLimits []struct {
		Max int64  `toml:"max"`
		Per string `toml:"per"`
	} `toml:"rate_limits"`
}

// keysFor says which [source] keys each type reads; any other is refused, so a
// trigger written on a github-issues source is an error rather than silently ignored.
var keysFor = map[string][]string{
	"shell":             {"command", "timeout"},
	"github-issues":     {"repos", "labels"},
	"github-comments":   {"repos", "trigger", "authorized_users"},
	"github-labels":     {"repos", "labels", "authorized_users"},
	"github-pr-reviews": {"repos", "states", "authorized_users"},
}

// LoadFile reads and parses a listener file; its name is the file's, without .toml.
func LoadFile(path string) (Listener, error) {
	name := strings.TrimSuffix(filepath.Base(path), ".toml")
	b, err := readBounded(path)
	if err != nil {
		return Listener{}, &ParseError{Name: name, Path: path, Msg: err.Error()}
	}
	l, err := Parse(name, b)
	var pe *ParseError
	if errors.As(err, &pe) {
		pe.Path = path
	}
	return l, err
}

// Parse parses a listener document (a file's bytes, or one written through the API).
func Parse(name string, data []byte) (Listener, error) {
	fail := func(line int, format string, a ...any) (Listener, error) {
		return Listener{}, &ParseError{Name: name, Line: line, Msg: fmt.Sprintf(format, a...)}
	}
	if err := ValidateName(name); err != nil {
		return fail(0, "%v", err)
	}
	if line, msg := checkShape(string(data)); msg != "" {
		return fail(line, "%s", msg)
	}
	var doc fileDoc
	md, err := strictfile.Decode("", data, &doc)
	if err != nil {
		// A listener is refused on its first problem; the loader sorts them by line.
		var se *strictfile.Error
		if errors.As(err, &se) {
			return Listener{}, &ParseError{Name: name, Line: se.Line, Msg: se.Msg, Err: se}
		}
		return fail(0, "%v", err)
	}

	l := Listener{Name: name, Interval: DefaultInterval}
	if doc.Interval != "" {
		d, err := ParsePeriod(doc.Interval)
		if err != nil {
			return fail(md.Line("interval"), "interval: %v", err)
		}
		if d < MinInterval {
			return fail(md.Line("interval"), "interval %s is under the minimum of %s", doc.Interval, MinInterval)
		}
		l.Interval = d
	}

	src := doc.Source
	allowed, ok := keysFor[src.Type]
	switch {
	case src.Type == "" && !md.IsDefined("source", "type"):
		return fail(md.Line("source"), "[source] needs type = one of %s", strings.Join(SourceTypes(), ", "))
	case !ok:
		return fail(md.Line("source.type"), "unknown source type %q: use one of %s", src.Type, strings.Join(SourceTypes(), ", "))
	}
	for _, k := range []string{"repos", "trigger", "authorized_users", "labels", "states", "command", "timeout"} {
		if md.IsDefined("source", k) && !slices.Contains(allowed, k) {
			return fail(md.Line("source."+k), "%s does not apply to a %s source (it reads %s)", k, src.Type, strings.Join(allowed, ", "))
		}
	}
	l.Source = Source{Type: src.Type, Trigger: src.Trigger, AuthorizedUsers: src.AuthorizedUsers,
		Labels: src.Labels, Command: src.Command}
	if src.Type == "shell" {
		if strings.TrimSpace(src.Command) == "" {
			return fail(md.Line("source"), "a shell source needs command = \"…\"")
		}
		l.Source.Timeout = min(l.Interval, time.Minute)
		if src.Timeout != "" {
			d, err := ParsePeriod(src.Timeout)
			if err != nil || d > MaxShellTimeout {
				return fail(md.Line("source.timeout"), "timeout %q: a period up to %s, e.g. \"30s\"", src.Timeout, FormatPeriod(MaxShellTimeout))
			}
			l.Source.Timeout = d
		}
	} else {
		if len(src.Repos) == 0 {
			return fail(md.Line("source"), "a %s source needs repos = [\"owner/name\"]", src.Type)
		}
		for _, r := range src.Repos {
			o, n, ok := strings.Cut(r, "/")
			if !ok || o == "" || n == "" || strings.ContainsAny(n, "/ ") || strings.ContainsAny(o, " ") {
				return fail(md.Line("source.repos"), "repo %q: write owner/name", r)
			}
			l.Source.Repos = append(l.Source.Repos, r)
		}
	}
	if src.Type == "github-comments" && strings.TrimSpace(src.Trigger) == "" && md.IsDefined("source", "trigger") {
		return fail(md.Line("source.trigger"), "trigger is empty: leave it out to fire on every comment")
	}
	for _, st := range src.States {
		up := strings.ToUpper(st)
		if !slices.Contains([]string{"APPROVED", "CHANGES_REQUESTED", "COMMENTED"}, up) {
			return fail(md.Line("source.states"), "review state %q: use approved, changes_requested or commented", st)
		}
		l.Source.States = append(l.Source.States, up)
	}

	if err := l.parseAction(doc, md); err != nil {
		return Listener{}, err
	}

	for i, rl := range doc.RateLimits {
		key := fmt.Sprintf("rate_limits[%d]", i)
		if rl.Max <= 0 || rl.Max > 1_000_000 {
			return fail(md.Line(key+".max"), "rate_limits max = %d: it must be 1 or more (leave the limit out for none)", rl.Max)
		}
		if rl.Per == "" {
			return fail(md.Line(key), "rate_limits entry needs per = \"1h\" (or \"90m\", \"day\" …)")
		}
		d, err := ParsePeriod(rl.Per)
		if err != nil {
			return fail(md.Line(key+".per"), "rate_limits per: %v", err)
		}
		if d < time.Second {
			return fail(md.Line(key+".per"), "rate_limits per %q is under a second", rl.Per)
		}
		l.RateLimits = append(l.RateLimits, RateLimit{Max: int(rl.Max), Per: d, Text: rl.Per})
	}
	return l, nil
}

func (l *Listener) parseAction(doc fileDoc, md *strictfile.Doc) error {
	fail := func(line int, format string, a ...any) error {
		return &ParseError{Name: l.Name, Line: line, Msg: fmt.Sprintf(format, a...)}
	}
	a := doc.Action
	if !md.IsDefined("action") {
		return fail(0, "an [action] is needed: path and prompt to spawn an agent, plan = \"…\", or workflow = \"…\"")
	}
	known, closed := VarsFor(l.Source.Type)
	if !closed {
		known = nil
	}
	tmpl := func(key, text string) (Template, error) {
		t, err := ParseTemplate(text, known)
		if err != nil {
			return Template{}, fail(md.Line("action."+key), "%s: %v", key, err)
		}
		return t, nil
	}
	var err error
	if a.Workflow != "" {
		return l.parseWorkflow(doc, md, tmpl)
	}
	if a.Plan != "" {
		return l.parsePlan(doc, md, tmpl)
	}
	for _, k := range []string{"request", "repo", "lead"} {
		if md.IsDefined("action", k) {
			return fail(md.Line("action."+k), "%s belongs to drafting a plan (plan = \"…\"); an agent gets path and prompt", k)
		}
	}
	if a.Path == "" {
		return fail(md.Line("action"), "[action] needs path = \"…\" (e.g. \"gh/{{repo}}/{{number}}\") or plan = \"…\"")
	}
	if a.Prompt == "" && a.Role == "" {
		return fail(md.Line("action"), "[action] needs prompt = \"…\" (or a role, whose prompt template the event's vars fill)")
	}
	if a.Role != "" && (a.Provider != "" || a.Model != "") {
		k := "provider"
		if a.Provider == "" {
			k = "model"
		}
		return fail(md.Line("action."+k), "give role or provider/model, not both")
	}
	if a.Role == "" && a.Provider == "" {
		return fail(md.Line("action"), "[action] needs role = \"…\" or provider = \"…\"")
	}
	if a.Provider == "shell" && strings.TrimSpace(a.Command) == "" {
		return fail(md.Line("action"), "a shell agent needs command = \"…\" (run with sh -c; the event's vars are in its environment as ORCR_EVENT_NAME)")
	}
	if a.Command != "" && a.Provider != "shell" && a.Role == "" {
		// With a role the provider is the role's choice; command is for a role whose
		// chain is shell.
		return fail(md.Line("action.command"), "command belongs to provider = \"shell\" (or a role whose provider is shell); other agents get the prompt")
	}
	if a.Role != "" && ValidateName(a.Role) != nil {
		return fail(md.Line("action.role"), "role %q: a role file's name, [a-z0-9] then [a-z0-9._-] (see orcr role ls)", a.Role)
	}
	if a.Identity != "" && ValidateName(a.Identity) != nil {
		return fail(md.Line("action.identity"), "identity %q: an identity directory's name, [a-z0-9] then [a-z0-9._-]", a.Identity)
	}
	if a.Priority < -1000 || a.Priority > 1000 {
		return fail(md.Line("action.priority"), "priority %d: use -1000 to 1000", a.Priority)
	}
	if l.Action.Path, err = tmpl("path", a.Path); err != nil {
		return err
	}
	if a.Prompt != "" {
		if l.Action.Prompt, err = tmpl("prompt", a.Prompt); err != nil {
			return err
		}
	}
	l.Action.Role, l.Action.Provider, l.Action.Model, l.Action.Priority = a.Role, a.Provider, a.Model, int(a.Priority)
	l.Action.Command, l.Action.Identity = a.Command, a.Identity
	if a.Cwd != "" {
		cwd := a.Cwd
		if rest, ok := strings.CutPrefix(cwd, "~/"); ok {
			home, _ := os.UserHomeDir()
			cwd = filepath.Join(home, rest)
		}
		if !filepath.IsAbs(cwd) {
			return fail(md.Line("action.cwd"), "cwd %q: give an absolute path (or ~/…)", a.Cwd)
		}
		l.Action.Cwd = filepath.Clean(cwd)
	}
	return nil
}

// workflowName is a workflow file's name, as the workflows feature takes it.
var workflowName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`) }) // compiled on first use: every CLI process initialises this package

// parseWorkflow reads an action that starts a workflow run: workflow (its name) and
// repo (optional).
func (l *Listener) parseWorkflow(doc fileDoc, md *strictfile.Doc, tmpl func(key, text string) (Template, error)) error {
	fail := func(line int, format string, a ...any) error {
		return &ParseError{Name: l.Name, Line: line, Msg: fmt.Sprintf(format, a...)}
	}
	a := doc.Action
	for _, k := range []string{"path", "prompt", "role", "provider", "model", "priority", "command", "cwd", "plan", "request", "lead"} {
		if md.IsDefined("action", k) {
			return fail(md.Line("action."+k), "an action with workflow starts a workflow run (workflow, repo); %s belongs to another kind of action", k)
		}
	}
	if !workflowName().MatchString(a.Workflow) {
		return fail(md.Line("action.workflow"), "workflow %q: the name of a workflow file (.orcr/workflows/NAME.toml)", a.Workflow)
	}
	l.Action.Workflow = a.Workflow
	if a.Repo != "" {
		if !strings.HasPrefix(a.Repo, "/") && !strings.HasPrefix(a.Repo, "~/") {
			return fail(md.Line("action.repo"), "repo %q: give an absolute path (or ~/…) to a local checkout", a.Repo)
		}
		var err error
		if l.Action.Repo, err = tmpl("repo", a.Repo); err != nil {
			return err
		}
	}
	return nil
}

// parsePlan reads an action that drafts a plan: plan (the name), request, repo, lead.
func (l *Listener) parsePlan(doc fileDoc, md *strictfile.Doc, tmpl func(key, text string) (Template, error)) error {
	fail := func(line int, format string, a ...any) error {
		return &ParseError{Name: l.Name, Line: line, Msg: fmt.Sprintf(format, a...)}
	}
	a := doc.Action
	for _, k := range []string{"path", "prompt", "role", "provider", "model", "priority", "command", "cwd", "identity"} {
		if md.IsDefined("action", k) {
			return fail(md.Line("action."+k), "an action with plan drafts a plan (plan, request, repo, lead); %s belongs to spawning an agent", k)
		}
	}
	var err error
	if l.Action.Plan, err = tmpl("plan", a.Plan); err != nil {
		return err
	}
	req := a.Request
	if !md.IsDefined("action", "request") {
		req = defaultRequest(l.Source.Type)
	} else if strings.TrimSpace(req) == "" {
		return fail(md.Line("action.request"), "request is empty: say what the plan is for, e.g. \"{{title}}: {{body}}\" (or leave it out)")
	}
	if l.Action.Request, err = tmpl("request", req); err != nil {
		return err
	}
	if strings.TrimSpace(a.Repo) == "" {
		return fail(md.Line("action"), "a plan needs repo = \"…\": the local checkout it is for (absolute or ~/…, e.g. \"~/src/{{repo}}\")")
	}
	if !strings.HasPrefix(a.Repo, "/") && !strings.HasPrefix(a.Repo, "~/") {
		return fail(md.Line("action.repo"), "repo %q: give an absolute path (or ~/…) to a local checkout", a.Repo)
	}
	if l.Action.Repo, err = tmpl("repo", a.Repo); err != nil {
		return err
	}
	if a.Lead != "" {
		provider, model, hasModel := strings.Cut(a.Lead, ":")
		if !validVarName(provider) || hasModel && (model == "" || strings.ContainsAny(model, " \t\n")) {
			return fail(md.Line("action.lead"), "lead %q: write \"provider\" or \"provider:model\", e.g. \"claude:opus\"", a.Lead)
		}
		l.Action.Lead = a.Lead
	}
	return nil
}

// defaultRequest is a plan's request when the file gives none: the issue (or the
// comment, label or review with its issue's title) and its address.
func defaultRequest(sourceType string) string {
	if sourceType == "shell" {
		return "{{id}}"
	}
	return "{{title}}\n\n{{body}}\n\n({{url}})"
}

// ValidateName checks a listener name: the file's base name, used in store keys and
// commands, so [a-z0-9][a-z0-9._-]{0,63} like a path segment.
func ValidateName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("listener name %q: 1 to 64 characters", name)
	}
	for i, c := range name {
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || i > 0 && (c == '.' || c == '_' || c == '-')
		if !ok {
			return fmt.Errorf("listener name %q: use [a-z0-9] then [a-z0-9._-]", name)
		}
	}
	return nil
}

// DefaultDir is where listener files live: $XDG_CONFIG_HOME/orcr/listeners (or
// ~/.config/orcr/listeners).
func DefaultDir() string {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "orcr", "listeners")
}

// Loaded is one listener file as last read: the listener, or why it cannot run.
type Loaded struct {
	Listener Listener
	Err      error // a *ParseError; the other files are unaffected
	ModTime  time.Time
	Size     int64
	Doc      string // the file's text (up to MaxDocBytes)
}

// LoadDir reads every NAME.toml in dir (a missing dir is no listeners). A file that does
// not parse is returned with its error, so it can be shown beside the ones that run.
// prev, when given, is the last result: files whose size and mtime did not change are
// not read again, so a 15 s rescan of an unchanged directory is a few stats.
func LoadDir(dir string, prev map[string]Loaded) (map[string]Loaded, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]Loaded{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listeners: %w", err)
	}
	out := map[string]Loaded{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".toml") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		name := strings.TrimSuffix(e.Name(), ".toml")
		info, err := e.Info()
		if err != nil {
			continue // removed while listing
		}
		if p, ok := prev[name]; ok && p.ModTime.Equal(info.ModTime()) && p.Size == info.Size() {
			out[name] = p
			continue
		}
		path := filepath.Join(dir, e.Name())
		ld := Loaded{ModTime: info.ModTime(), Size: info.Size()}
		b, err := readBounded(path)
		if err != nil {
			ld.Err = &ParseError{Name: name, Path: path, Msg: err.Error()}
		} else {
			ld.Doc = string(b)
			ld.Listener, ld.Err = Parse(name, b)
			var pe *ParseError
			if errors.As(ld.Err, &pe) {
				pe.Path = path
			}
		}
		out[name] = ld
	}
	return out, nil
}

// readBounded reads a regular file, refusing one past MaxDocBytes without reading it all.
func readBounded(path string) ([]byte, error) {
	return regfile.ReadMax(context.Background(), path, MaxDocBytes)
}

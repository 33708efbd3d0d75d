package workflow

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"orcr/internal/regfile"
	"orcr/internal/strictfile"
)

// A workflow file (DESIGN §18): .orcr/workflows/NAME.toml in a repository, or
// $XDG_CONFIG_HOME/orcr/workflows/NAME.toml. Everything a run needs from it is checked
// by Parse before anything starts, and the parsed Def is what the run keeps: an edit of
// the file while a run is under way changes the next run, not that one.

// Bounds of a workflow file.
const (
	MaxFile           = 256 << 10
	MaxSteps          = 100
	DefaultMaxItems   = 10_000
	MaxMaxItems       = 100_000
	DefaultMaxOutput  = 1 << 20
	MaxMaxOutput      = 64 << 20
	DefaultParallel   = 4
	MaxParallel       = 1000
	maxTemplateLength = 64 << 10
)

// Output types a step may declare.
var outputTypes = []string{"string", "int", "float", "bool", "list", "object"}

// Def is a parsed workflow file.
type Def struct {
	Name string            `json:"name"`
	File string            `json:"file"`
	Vars map[string]string `json:"vars,omitempty"`
	// MaxItems bounds a for_each's list; MaxOutput a step's output file.
	MaxItems  int       `json:"maxItems"`
	MaxOutput int64     `json:"maxOutput"`
	Steps     []StepDef `json:"steps"`
}

// StepDef is one [[steps]] entry.
type StepDef struct {
	Name        string            `json:"name"`
	Role        string            `json:"role,omitempty"`
	Provider    string            `json:"provider,omitempty"`
	Model       string            `json:"model,omitempty"`
	Prompt      string            `json:"prompt,omitempty"`
	Argv        []string          `json:"argv,omitempty"`
	Outputs     map[string]string `json:"outputs,omitempty"`
	ForEach     string            `json:"forEach,omitempty"`
	MaxParallel int               `json:"maxParallel"`
	When        string            `json:"when,omitempty"`
	Identity    string            `json:"identity,omitempty"`
	OnFailure   string            `json:"onFailure"` // stop | continue
	// Needs are the steps this one waits for: those its templates and expressions
	// read, and those named by after.
	Needs []string `json:"needs,omitempty"`
}

// Shell reports whether the step runs a plain program.
func (s StepDef) Shell() bool { return s.Provider == "shell" }

// Step is the step named name.
func (d *Def) Step(name string) (*StepDef, bool) {
	for i := range d.Steps {
		if d.Steps[i].Name == name {
			return &d.Steps[i], true
		}
	}
	return nil, false
}

type rawDef struct {
	Vars      map[string]string `toml:"vars"`
	MaxItems  *int              `toml:"max_items"`
	MaxOutput *int64            `toml:"max_output_bytes"`
	Steps     []rawStep         `toml:"steps"`
}

type rawStep struct {
	Name        string            `toml:"name"`
	Role        string            `toml:"role"`
	Provider    string            `toml:"provider"`
	Model       string            `toml:"model"`
	Prompt      string            `toml:"prompt"`
	Argv        []string          `toml:"argv"`
	Outputs     map[string]string `toml:"outputs"`
	ForEach     string            `toml:"for_each"`
	MaxParallel *int              `toml:"max_parallel"`
	When        string            `toml:"when"`
	Identity    string            `toml:"identity"`
	OnFailure   string            `toml:"on_failure"`
	After       []string          `toml:"after"`
}

var (
	nameRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`) })
	stepRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`) })
	outputRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`) })
)

// ValidName checks a workflow's name (its file's base name).
func ValidName(name string) error {
	if !nameRE().MatchString(name) {
		return fmt.Errorf("workflow name %q: use lower-case letters, digits, . _ - (at most 64, starting with a letter or digit)", name)
	}
	return nil
}

// Parse reads one workflow file's text; name is the workflow's (the file's base name),
// file names it in messages. Every problem is reported at once, each at its line.
func Parse(name, file string, src []byte) (*Def, error) {
	if err := ValidName(name); err != nil {
		return nil, strictfile.Errors{{File: file, Msg: err.Error()}}
	}
	if len(src) > MaxFile {
		return nil, strictfile.Errors{{File: file, Msg: fmt.Sprintf("file is %d bytes, over the %d-byte limit", len(src), MaxFile)}}
	}
	var raw rawDef
	doc, err := strictfile.Decode(file, src, &raw)
	if doc == nil {
		return nil, err
	}
	d := &Def{Name: name, File: file, Vars: raw.Vars, MaxItems: DefaultMaxItems, MaxOutput: DefaultMaxOutput}
	for k := range raw.Vars {
		if !outputRE().MatchString(k) {
			doc.Add(strictfile.Key("vars", k), "vars: %q: a name is letters, digits and _ (not starting with a digit)", k)
		}
	}
	if raw.MaxItems != nil {
		if *raw.MaxItems < 1 || *raw.MaxItems > MaxMaxItems {
			doc.Add("max_items", "max_items = %d: between 1 and %d", *raw.MaxItems, MaxMaxItems)
		} else {
			d.MaxItems = *raw.MaxItems
		}
	}
	if raw.MaxOutput != nil {
		if *raw.MaxOutput < 2 || *raw.MaxOutput > MaxMaxOutput {
			doc.Add("max_output_bytes", "max_output_bytes = %d: between 2 and %d", *raw.MaxOutput, MaxMaxOutput)
		} else {
			d.MaxOutput = *raw.MaxOutput
		}
	}
	switch {
	case len(raw.Steps) == 0:
		doc.Add("", "a workflow needs at least one [[steps]] entry")
	case len(raw.Steps) > MaxSteps:
		doc.Add("steps", "%d steps: at most %d", len(raw.Steps), MaxSteps)
		raw.Steps = raw.Steps[:MaxSteps]
	}
	index := map[string]int{}
	for i, rs := range raw.Steps {
		key := fmt.Sprintf("steps[%d]", i)
		if !stepRE().MatchString(rs.Name) {
			doc.Add(key+".name", "step name %q: use lower-case letters, digits and _ (starting with a letter), at most 64", rs.Name)
		} else if _, dup := index[rs.Name]; dup {
			doc.Add(key+".name", "step %q is named twice", rs.Name)
		} else {
			index[rs.Name] = i
		}
		d.Steps = append(d.Steps, parseStep(doc, key, rs))
	}
	// References: every template and expression names declared vars, declared steps
	// and their declared outputs; `item` only where there is one.
	for i := range d.Steps {
		st := &d.Steps[i]
		key := fmt.Sprintf("steps[%d]", i)
		needs := map[string]bool{}
		for _, a := range raw.Steps[i].After {
			if _, ok := index[a]; !ok {
				doc.Add(key+".after", "after: no step named %q", a)
				continue
			}
			needs[a] = true
		}
		check := func(field string, refs []ref, err error) {
			if err != nil {
				doc.Add(key+"."+field, "%s: %v", field, err)
				return
			}
			for _, r := range refs {
				if msg := d.checkRef(st, field, r); msg != "" {
					doc.Add(key+"."+field, "%s: %s", field, msg)
				} else if r.root == "steps" && len(r.parts) > 0 {
					needs[r.parts[0]] = true
				}
			}
		}
		if st.When != "" {
			refs, err := exprRefs(st.When)
			check("when", refs, err)
		}
		if st.ForEach != "" {
			refs, err := exprRefs(st.ForEach)
			check("for_each", refs, err)
		}
		if st.Prompt != "" {
			refs, err := templateRefs(st.Prompt)
			check("prompt", refs, err)
		}
		for _, a := range st.Argv {
			refs, err := templateRefs(a)
			check("argv", refs, err)
		}
		if needs[st.Name] {
			doc.Add(key, "step %s reads its own outputs: a step reads only other steps'", st.Name)
			delete(needs, st.Name)
		}
		for n := range needs {
			st.Needs = append(st.Needs, n)
		}
		sort.Strings(st.Needs)
	}
	if cyc := cycle(d); cyc != nil {
		doc.Add(fmt.Sprintf("steps[%d]", index[cyc[0]]), "steps wait for each other in a cycle: %s", strings.Join(cyc, " → "))
	}
	if err := doc.Err(); err != nil {
		return nil, err
	}
	return d, nil
}

func parseStep(doc *strictfile.Doc, key string, rs rawStep) StepDef {
	st := StepDef{Name: rs.Name, Role: rs.Role, Provider: rs.Provider, Model: rs.Model, Prompt: rs.Prompt, Argv: rs.Argv,
		Outputs: rs.Outputs, ForEach: strings.TrimSpace(rs.ForEach), When: strings.TrimSpace(rs.When), Identity: rs.Identity,
		OnFailure: rs.OnFailure, MaxParallel: DefaultParallel}
	switch {
	case rs.Provider == "shell":
		if len(rs.Argv) == 0 {
			doc.Add(key+".argv", `a shell step needs argv: the program and its arguments, e.g. argv = ["sh", "-c", "…"]`)
		}
		if rs.Role != "" || rs.Model != "" || rs.Prompt != "" {
			doc.Add(key+".provider", "a shell step runs argv: role, model and prompt are for agents")
		}
	case rs.Role == "" && rs.Provider == "":
		doc.Add(key, `step %s needs role = "NAME", or provider (and model) with a prompt, or provider = "shell" with argv`, rs.Name)
	case rs.Role == "" && rs.Prompt == "":
		doc.Add(key+".prompt", "step %s: an agent step without a role needs a prompt", rs.Name)
	}
	if len(rs.Argv) > 0 && rs.Provider != "shell" {
		doc.Add(key+".argv", `argv is for provider = "shell" steps`)
	}
	if len(rs.Argv) > 4096 {
		doc.Add(key+".argv", "argv has %d items: at most 4096", len(rs.Argv))
	}
	if len(rs.Prompt) > maxTemplateLength {
		doc.Add(key+".prompt", "prompt is %d bytes: at most %d", len(rs.Prompt), maxTemplateLength)
	}
	for name, typ := range rs.Outputs {
		if !outputRE().MatchString(name) {
			doc.Add(key+".outputs", "output %q: a name is letters, digits and _ (not starting with a digit)", name)
		}
		if !slices.Contains(outputTypes, typ) {
			doc.Add(key+".outputs", "output %s = %q: a type is one of %s", name, typ, strings.Join(outputTypes, ", "))
		}
	}
	if rs.MaxParallel != nil {
		if *rs.MaxParallel < 1 || *rs.MaxParallel > MaxParallel {
			doc.Add(key+".max_parallel", "max_parallel = %d: between 1 and %d", *rs.MaxParallel, MaxParallel)
		} else {
			st.MaxParallel = *rs.MaxParallel
		}
		if rs.ForEach == "" {
			doc.Add(key+".max_parallel", "max_parallel bounds a for_each: this step has none")
		}
	}
	switch rs.OnFailure {
	case "":
		st.OnFailure = "stop"
	case "stop", "continue":
	default:
		doc.Add(key+".on_failure", `on_failure = %q: "stop" (the default) or "continue"`, rs.OnFailure)
	}
	if rs.Identity != "" && !nameRE().MatchString(rs.Identity) {
		doc.Add(key+".identity", "identity %q: not a name", rs.Identity)
	}
	return st
}

// checkRef says what is wrong with reference r in field of step st ("" for nothing).
func (d *Def) checkRef(st *StepDef, field string, r ref) string {
	switch r.root {
	case "vars":
		if len(r.parts) == 0 {
			return ""
		}
		if _, ok := d.Vars[r.parts[0]]; !ok {
			return fmt.Sprintf("vars.%s is not declared: add it to [vars] (a value given with --var replaces the default)", r.parts[0])
		}
	case "steps":
		if len(r.parts) == 0 {
			return ""
		}
		o, ok := d.Step(r.parts[0])
		if !ok {
			return fmt.Sprintf("no step named %q", r.parts[0])
		}
		if len(r.parts) > 1 {
			if _, ok := o.Outputs[r.parts[1]]; !ok {
				return fmt.Sprintf("step %s declares no output %q (its outputs: %s)", o.Name, r.parts[1], outputList(o.Outputs))
			}
		}
	case "item":
		if st.ForEach == "" || field == "for_each" || field == "when" {
			return "item is the element of a for_each: only a for_each step's prompt and argv have one"
		}
	}
	return ""
}

func outputList(o map[string]string) string {
	if len(o) == 0 {
		return "none"
	}
	var ks []string
	for k := range o {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

// cycle is one cycle of steps waiting for each other (first step repeated at the end),
// or nil.
func cycle(d *Def) []string {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack []string
	var found []string
	var visit func(n string) bool
	visit = func(n string) bool {
		color[n] = grey
		stack = append(stack, n)
		st, _ := d.Step(n)
		for _, m := range st.Needs {
			if _, ok := d.Step(m); !ok {
				continue
			}
			switch color[m] {
			case grey:
				i := slices.Index(stack, m)
				found = append(slices.Clone(stack[i:]), m)
				return true
			case white:
				if visit(m) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[n] = black
		return false
	}
	for _, st := range d.Steps {
		if color[st.Name] == white && visit(st.Name) {
			return found
		}
	}
	return nil
}

// Dirs are where workflow files are looked for, in order: the repository's
// .orcr/workflows, then $XDG_CONFIG_HOME/orcr/workflows.
func Dirs(repo string) []string {
	var out []string
	if repo != "" {
		out = append(out, filepath.Join(repo, ".orcr", "workflows"))
	}
	return append(out, UserDir())
}

// UserDir is $XDG_CONFIG_HOME/orcr/workflows (~/.config when unset).
func UserDir() string {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "orcr", "workflows")
}

// ErrNoWorkflow is what Load returns for a name no directory has.
var ErrNoWorkflow = errors.New("no such workflow")

// Load finds workflow name in repo's directories and parses it.
func Load(ctx context.Context, repo, name string) (*Def, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	var tried []string
	for _, dir := range Dirs(repo) {
		file := filepath.Join(dir, name+".toml")
		src, err := regfile.ReadMax(ctx, file, MaxFile)
		if errors.Is(err, fs.ErrNotExist) {
			tried = append(tried, file)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", file, err)
		}
		return Parse(name, file, src)
	}
	return nil, fmt.Errorf("%w %q: looked for %s", ErrNoWorkflow, name, strings.Join(tried, " and "))
}

// Found is one workflow file of List: its parsed Def, or why it does not parse.
type Found struct {
	Name string
	File string
	Def  *Def
	Err  error
}

// List reads every workflow file of repo's directories; a name in the repository
// hides the same name in the user's directory.
func List(ctx context.Context, repo string) []Found {
	seen := map[string]bool{}
	var out []Found
	for _, dir := range Dirs(repo) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			name, ok := strings.CutSuffix(e.Name(), ".toml")
			if !ok || e.IsDir() || seen[name] || ValidName(name) != nil {
				continue
			}
			seen[name] = true
			file := filepath.Join(dir, e.Name())
			f := Found{Name: name, File: file}
			src, err := regfile.ReadMax(ctx, file, MaxFile)
			if err != nil {
				f.Err = err
			} else {
				f.Def, f.Err = Parse(name, file, src)
			}
			out = append(out, f)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

package early

import (
	"path"
	"strings"
)

// Command is a command line the fast path answers: one request and how to print its
// result.
type Command struct {
	Method string // agent.get, agent.run or agent.list
	// Get is agent.get's params, Run agent.run's, List agent.list's (the others nil).
	Get  *GetParams
	Run  *RunParams
	List *ListParams
	// JSON prints the result as the API sent it (--json).
	JSON bool
	// Explain is agent get's --explain: why the state is what it is. The fast path
	// prints it for an agent with no sandbox; a sandbox's policy is asked of the
	// server by the full command line.
	Explain bool
}

// GetParams are agent.get's params (wire.TargetParams).
type GetParams struct {
	Target string `json:"target"`
}

// ListParams are agent.list's params (wire.ListParams) for `orcr agent ls [GLOB]`:
// display rows, a page at a time.
type ListParams struct {
	Glob  string `json:"glob,omitempty"`
	Table bool   `json:"table"`
	Limit int    `json:"limit"`
	After string `json:"after,omitempty"`
}

// listPage is how many agents one agent.list page holds (wire.ListPage).
const listPage = 2000

// RunParams are the fields of agent.run's params (wire.RunParams) that the flags the
// fast path takes set, with wire.RunParams's JSON names.
type RunParams struct {
	Path     string            `json:"path"`
	Provider string            `json:"provider,omitempty"`
	Model    string            `json:"model,omitempty"`
	Argv     []string          `json:"argv,omitempty"`
	Cwd      string            `json:"cwd,omitempty"`
	Env      map[string]string `json:"env,omitempty"`
	Prompt   string            `json:"prompt,omitempty"`
	Priority int               `json:"priority,omitempty"`
	Keep     bool              `json:"keep,omitempty"`
	Worktree string            `json:"worktree,omitempty"`
	Role     string            `json:"role,omitempty"`
	Vars     map[string]string `json:"vars,omitempty"`
	Account  string            `json:"account,omitempty"`
	Identity string            `json:"identity,omitempty"`
	MCP      string            `json:"mcp,omitempty"`
}

// runStrings are agent run's string flags the fast path takes, each as it is set.
var runStrings = map[string]func(p *RunParams, v string){
	"provider": func(p *RunParams, v string) { p.Provider = v },
	"model":    func(p *RunParams, v string) { p.Model = v },
	"prompt":   func(p *RunParams, v string) { p.Prompt = v },
	"worktree": func(p *RunParams, v string) { p.Worktree = v },
	"role":     func(p *RunParams, v string) { p.Role = v },
	"account":  func(p *RunParams, v string) { p.Account = v },
	"identity": func(p *RunParams, v string) { p.Identity = v },
	"mcp":      func(p *RunParams, v string) { p.MCP = v },
	"cwd":      func(p *RunParams, v string) { p.Cwd = v },
	"priority": nil, // parsed below
	"env":      nil, // repeatable K=V
	"var":      nil,
}

// Parse decides whether the fast path answers args (os.Args): only the exact forms
// below, each of which the full command line parses into the same request. Anything
// else — another command, a flag it does not take, a value that starts with "-", a
// flag given twice, "--help" — is not ok, and the full command line runs.
//
//	orcr agent get [--json] [--explain] ID|PATH   (each flag at most once, anywhere)
//	orcr agent ls [GLOB]
//	orcr agent run [FLAG…] PATH [--] [ARGV…]      (FLAG: --provider --model --prompt --worktree
//	    --role --account --identity --mcp --cwd --priority --env --var, each as
//	    --F V or --F=V; --keep, --json)
//
// getenv and getwd are the process's (ORCR_ID decides whether agent run sends the
// current directory, as the full command line does).
func Parse(args []string, getenv func(string) string, getwd func() (string, error)) (Command, bool) {
	if len(args) < 3 || args[1] != "agent" || getenv("ORCR_FAST") == "0" {
		return Command{}, false
	}
	switch args[2] {
	case "get":
		return parseGet(args[3:])
	case "run":
		return parseRun(args[3:], getenv, getwd)
	case "ls":
		rest := args[3:]
		if len(rest) > 1 || len(rest) == 1 && !plainWord(rest[0]) {
			return Command{}, false
		}
		p := &ListParams{Table: true, Limit: listPage}
		if len(rest) == 1 {
			p.Glob = rest[0]
		}
		return Command{Method: "agent.list", List: p}, true
	}
	return Command{}, false
}

func parseGet(rest []string) (Command, bool) {
	c := Command{Method: "agent.get"}
	target := ""
	for _, a := range rest {
		switch {
		case a == "--json" && !c.JSON:
			c.JSON = true
		case a == "--explain" && !c.Explain:
			c.Explain = true
		case plainWord(a) && target == "":
			target = a
		default:
			return Command{}, false
		}
	}
	if target == "" {
		return Command{}, false
	}
	c.Get = &GetParams{Target: target}
	return c, true
}

// plainWord is an argument no command line parser reads as anything but itself: not
// empty, not a flag, not a word urfave/cli gives a meaning (help).
func plainWord(a string) bool {
	return strings.TrimSpace(a) != "" && !dashed(a) && a != "help" && a != "h"
}

// dashed is an argument urfave/cli may take for a flag: one that starts with "-" once
// leading space is trimmed (it reads " -x" as the flag -x).
func dashed(a string) bool {
	t := strings.TrimSpace(a)
	return t != "" && t[0] == '-'
}

func parseRun(rest []string, getenv func(string) string, getwd func() (string, error)) (Command, bool) {
	c := Command{Method: "agent.run"}
	p := &RunParams{}
	seen := map[string]bool{}
	cwdSet := false
	i := 0
	for ; i < len(rest); i++ {
		a := rest[i]
		if !strings.HasPrefix(a, "--") {
			break
		}
		name, val, hasVal := strings.Cut(a[2:], "=")
		switch name {
		case "keep", "json":
			if hasVal || seen[name] {
				return Command{}, false
			}
			seen[name] = true
			if name == "keep" {
				p.Keep = true
			} else {
				c.JSON = true
			}
			continue
		}
		set, known := runStrings[name]
		if !known || (seen[name] && name != "env" && name != "var") {
			return Command{}, false
		}
		seen[name] = true
		if !hasVal {
			if i+1 >= len(rest) || !valueWord(rest[i+1]) {
				return Command{}, false
			}
			i++
			val = rest[i]
		}
		switch name {
		case "priority":
			n, ok := smallInt(val)
			if !ok {
				return Command{}, false
			}
			p.Priority = n
		case "env", "var":
			k, v, ok := strings.Cut(val, "=")
			// urfave/cli splits a slice flag's value at commas; a key the full
			// command line refuses gets its error there.
			if !ok || k == "" || strings.ContainsAny(val, ",") || strings.TrimSpace(val) != val {
				return Command{}, false
			}
			m := &p.Env
			if name == "var" {
				m = &p.Vars
			}
			if *m == nil {
				*m = map[string]string{}
			}
			(*m)[k] = v
		case "cwd":
			cwdSet = val != ""
			set(p, val)
		default:
			set(p, val)
		}
	}
	if i >= len(rest) || !plainWord(rest[i]) {
		return Command{}, false
	}
	p.Path = rest[i]
	argv := rest[i+1:]
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
		if len(argv) > 0 && argv[0] == "--" {
			// urfave/cli drops the first "--" and agent run a second one.
			return Command{}, false
		}
	} else {
		for _, a := range argv {
			if a == "" || dashed(a) {
				return Command{}, false
			}
		}
	}
	if len(argv) > 0 {
		p.Argv = append([]string(nil), argv...)
	}
	switch {
	case cwdSet:
		// filepath.Abs, with package path's Clean and Join (the same on unix).
		if !path.IsAbs(p.Cwd) {
			wd, err := getwd()
			if err != nil {
				return Command{}, false
			}
			p.Cwd = path.Join(wd, p.Cwd)
		}
		p.Cwd = path.Clean(p.Cwd)
	case getenv("ORCR_ID") == "":
		p.Cwd, _ = getwd()
	}
	c.Run = p
	return c, true
}

// valueWord is a flag's value given as the next argument that every parser takes as
// the value.
func valueWord(a string) bool { return !dashed(a) }

// smallInt reads a decimal integer as urfave/cli's int flag does, only in the plain
// form (no sign but "-", no leading zero, no base prefix, no underscores), within
// agent.run's bound on a priority.
func smallInt(s string) (int, bool) {
	neg := strings.HasPrefix(s, "-")
	d := strings.TrimPrefix(s, "-")
	if d == "" || len(d) > 7 || (d[0] == '0' && len(d) > 1) || (neg && d == "0") {
		return 0, false
	}
	n := 0
	for _, r := range d {
		if r < '0' || r > '9' {
			return 0, false
		}
		n = n*10 + int(r-'0')
	}
	if n > 1_000_000 {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

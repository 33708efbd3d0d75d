package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"0orcr/fast"

	acctapi "orcr/accounts/api"
	"orcr/core/wire"
	"orcr/internal/regfile"
)

func (app *app) agentCommand() *cli.Command {
	return &cli.Command{
		Name:  "agent",
		Usage: "spawn, list, message, await, read and stop agents",
		Commands: append([]*cli.Command{
			{
				Name: "run", Usage: "spawn an agent", ArgsUsage: "PATH [-- ARGV…]",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "provider", Usage: "claude|codex|opencode|pi|shell (default shell with argv)"},
					&cli.StringFlag{Name: "model"},
					&cli.StringFlag{Name: "cwd", Usage: "working directory (default: current)"},
					&cli.StringSliceFlag{Name: "env", Usage: "K=V added to the agent's environment (repeatable)"},
					&cli.StringFlag{Name: "prompt", Usage: "initial prompt"},
					&cli.StringFlag{Name: "prompt-file", Usage: "read the initial prompt from a file"},
					&cli.IntFlag{Name: "priority", Usage: "queue priority (higher first)"},
					&cli.BoolFlag{Name: "keep", Usage: "never stop it for being idle"},
					&cli.StringFlag{Name: "worktree", Usage: "run in a git worktree on BRANCH"},
					&cli.StringFlag{Name: "role", Usage: "spawn from role R ($XDG_CONFIG_HOME/orcr/roles/R.toml)"},
					&cli.StringSliceFlag{Name: "var", Usage: "K=V for the role's prompt template (repeatable)"},
					&cli.StringFlag{Name: "account", Usage: "run on this account of the provider (a label from [[accounts.<provider>]]); admission waits for it"},
					&cli.StringFlag{Name: "identity", Usage: "act as identity NAME ($XDG_CONFIG_HOME/orcr/identities/NAME): its AGENTS.md and memory"},
					&cli.StringFlag{Name: "mcp", Usage: "give it orcr's MCP server at scope self, read or act (as a role's mcp); its MCP sessions are capped there"},
					&cli.IntFlag{Name: "spawn-max-children", Value: -1, DefaultText: "unbounded", Usage: "it may run at most N children at once from its pane"},
					&cli.IntFlag{Name: "spawn-max-depth", Value: -1, DefaultText: "unbounded", Usage: "what it spawns may be at most N levels below it (0: it spawns nothing)"},
					&cli.StringSliceFlag{Name: "spawn-providers", Usage: "it may spawn only these providers (comma-separated)"},
					&cli.StringSliceFlag{Name: "spawn-roles", Usage: "it may spawn only from these roles (comma-separated)"},
					&cli.FloatFlag{Name: "spawn-budget-usd", Value: -1, DefaultText: "unbounded", Usage: "it spawns nothing once it and the agents under it cost USD"},
					&cli.StringFlag{Name: "node", Usage: "run it on this node (orcr node ls); its --cwd is then the node's"},
					&cli.StringFlag{Name: "wait", Usage: "wait until STATE (done|idle|blocked|exited|settled); bare --wait means settled"},
					&cli.StringFlag{Name: "sandbox", Usage: "confine it with Landlock: bare --sandbox (on) or --sandbox=off (unconfined, also for a role's or a run's sandbox)"},
					&cli.StringSliceFlag{Name: "sandbox-rw", Usage: "with --sandbox: one more read-write folder (repeatable; ~ is $HOME)"},
					&cli.StringSliceFlag{Name: "sandbox-rox", Usage: "with --sandbox: one more read-execute folder (repeatable)"},
					&cli.IntSliceFlag{Name: "sandbox-port", Usage: "with --sandbox: one more TCP port it may connect to (repeatable)"},
					jsonFlag(),
				},
				Action: func(ctx context.Context, c *cli.Command) error { return app.agentRun(ctx, c) },
			},
			{
				Name: "ls", Usage: "list agents (ended ones too; --state live hides them)", ArgsUsage: "[GLOB]",
				Flags: []cli.Flag{&cli.BoolFlag{Name: "all", Usage: "every record, also superseded ones"},
					&cli.StringSliceFlag{Name: "state", Usage: "only agents in these states, comma-separated: " + stateHelp},
					&cli.StringFlag{Name: "node", Usage: "only agents on this node (local: this machine's)"},
					jsonFlag()},
				Action: func(ctx context.Context, c *cli.Command) error {
					cl := service(ctx)
					states, err := parseStates(c.StringSlice("state"))
					if err != nil {
						return err
					}
					p := wire.ListParams{Glob: c.Args().First(), All: c.Bool("all"), States: states, Node: c.String("node")}
					if c.Bool("json") {
						as, err := wire.ListAgents(ctx, cl, p)
						if err != nil {
							return err
						}
						if as == nil {
							as = []wire.Agent{}
						}
						return printJSON(app.out, wire.ListResult{Agents: as})
					}
					t, err := listTable(ctx, cl, p)
					if err != nil {
						return err
					}
					printTable(app.out, t)
					return nil
				},
			},
			{
				Name: "get", Usage: "one agent", ArgsUsage: "ID|PATH",
				Flags: []cli.Flag{jsonFlag(), &cli.BoolFlag{Name: "explain", Usage: "say which signal decided the state, and how the role resolved"}},
				Action: func(ctx context.Context, c *cli.Command) error {
					cl := service(ctx)
					aRes, err := wire.Call(ctx, cl, wire.AgentGet, wire.TargetParams{Target: c.Args().First()})
					a := aRes.Agent
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(app.out, wire.AgentResult{Agent: a})
					}
					printAgent(app.out, a, c.Bool("explain"))
					if c.Bool("explain") {
						printSandbox(ctx, app.out, a)
					}
					return nil
				},
			},
			{
				Name: "send", Usage: "type TEXT and press enter", ArgsUsage: "TARGET TEXT",
				Description: "An agent waiting on a prompt (a permission, a question, a plan) gets no text: typed there it\n" +
					"would answer the prompt. The send is refused with agent_blocked; answer with orcr agent answer\n" +
					"(--deny --text WHY sends your text as the reason), or press keys yourself with --keys.\n" +
					"TEXT is typed as text only: control characters and escape sequences in it are dropped (a tab\n" +
					"becomes a space, a carriage return a newline), so pasted logs cannot press keys; name keys with --keys.",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "no-enter", Usage: "type without pressing enter"},
					&cli.StringSliceFlag{Name: "keys", Usage: "named keys to press: enter,esc,tab,up,ctrl-c,…"},
				},
				Action: func(ctx context.Context, c *cli.Command) error {
					cl := service(ctx)
					text := strings.Join(c.Args().Tail(), " ")
					err := wire.Do(ctx, cl, wire.AgentSend, wire.SendParams{Target: c.Args().First(), Text: text,
						Enter: !c.Bool("no-enter") && text != "", Keys: c.StringSlice("keys")})
					if wire.CodeOf(err) == wire.CodeAgentBlocked {
						// Scripts match the stable code, as with agent answer.
						return fmt.Errorf("%w [%s]", err, wire.CodeAgentBlocked)
					}
					return err
				},
			},
			app.agentAnswerCommand(),
			app.agentResumeCommand(),
			app.agentDiffCommand(),
			{
				Name: "read", Usage: "screen text, last message or transcript", ArgsUsage: "TARGET",
				Flags: []cli.Flag{
					&cli.IntFlag{Name: "lines", Usage: "last N lines including scrollback"},
					&cli.BoolFlag{Name: "last-message", Usage: "the assistant's last message"},
					&cli.BoolFlag{Name: "transcript", Usage: "the native transcript"},
					&cli.BoolFlag{Name: "ansi", Usage: "keep the screen's colours (SGR sequences)"},
					jsonFlag(),
				},
				Action: func(ctx context.Context, c *cli.Command) error {
					cl := service(ctx)
					r, err := wire.Call(ctx, cl, wire.AgentRead, wire.ReadParams{Target: c.Args().First(), Lines: int(c.Int("lines")),
						LastMessage: c.Bool("last-message"), Transcript: c.Bool("transcript"), ANSI: c.Bool("ansi")})
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(app.out, r)
					}
					fmt.Fprintln(app.out, strings.TrimRight(r.Text, "\n"))
					return nil
				},
			},
			{
				Name: "wait", Usage: "wait until every matching agent reaches a state", ArgsUsage: "GLOB",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "until", Value: "settled", Usage: "done|idle|blocked|exited|settled"},
					&cli.DurationFlag{Name: "timeout", Usage: "give up after this long (exit 3)"},
					jsonFlag(),
				},
				Action: func(ctx context.Context, c *cli.Command) error {
					d, err := positiveDuration(c, "timeout")
					if err != nil {
						return err
					}
					return app.agentWait(ctx, c.Args().First(), c.String("until"), d, c.Bool("json"))
				},
			},
			{
				Name: "kill", Usage: "stop every running agent matching GLOB (more than one asks first, or needs --yes)", ArgsUsage: "GLOB",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "dry-run", Usage: "list what would be stopped"},
					&cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "kill every match without asking (needed when GLOB matches more than one agent and stdin is not a terminal)"},
					jsonFlag(),
				},
				Action: func(ctx context.Context, c *cli.Command) error {
					return app.agentKill(ctx, c.Args().First(), c.Bool("dry-run"), c.Bool("yes"), c.Bool("json"))
				},
			},
			{
				Name: "attach", Usage: "take over the real TUI; detach returns (ctrl-] on the embedded host)", ArgsUsage: "TARGET",
				Action: func(ctx context.Context, c *cli.Command) error { return app.agentAttach(ctx, c.Args().First()) },
			},
		}, app.agentAgainCommands()...),
	}
}

func (app *app) agentRun(ctx context.Context, c *cli.Command) error {
	args := c.Args().Slice()
	if len(args) == 0 {
		return fmt.Errorf("agent run needs a PATH, e.g. orcr agent run demo/hello -- sh")
	}
	p := wire.RunParams{Path: args[0], Argv: args[1:], Provider: c.String("provider"), Model: c.String("model"),
		Prompt: c.String("prompt"), Priority: int(c.Int("priority")), Keep: c.Bool("keep"), Worktree: c.String("worktree"),
		Account: c.String("account"), Node: c.String("node")}
	if len(p.Argv) > 0 && p.Argv[0] == "--" {
		p.Argv = p.Argv[1:]
	}
	if f := c.String("prompt-file"); f != "" {
		b, err := regfile.Read(f)
		if err != nil {
			return fmt.Errorf("read prompt file: %w", err)
		}
		p.Prompt = string(b)
	}
	if cwd := c.String("cwd"); cwd != "" && p.Node != "" {
		if !filepath.IsAbs(cwd) {
			return fmt.Errorf("--cwd %q: on a node give an absolute path of the node", cwd)
		}
		p.Cwd = cwd
	} else if p.Node != "" {
		// The node's own directory: this one may not exist there.
	} else if cwd != "" {
		abs, err := filepath.Abs(cwd)
		if err != nil {
			return fmt.Errorf("cwd: %w", err)
		}
		p.Cwd = abs
	} else if os.Getenv("ORCR_ID") == "" {
		p.Cwd, _ = os.Getwd()
	}
	p.Role = c.String("role")
	p.Identity = c.String("identity")
	p.MCP = c.String("mcp")
	sp, err := spawnFlags(c)
	if err != nil {
		return err
	}
	p.Spawn = sp
	for _, kv := range c.StringSlice("var") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("--var %q: use KEY=VALUE", kv)
		}
		if p.Vars == nil {
			p.Vars = map[string]string{}
		}
		p.Vars[k] = v
	}
	for _, kv := range c.StringSlice("env") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("--env %q: use KEY=VALUE", kv)
		}
		if p.Env == nil {
			p.Env = map[string]string{}
		}
		p.Env[k] = v
	}
	sb, err := sandboxFlags(c)
	if err != nil {
		return err
	}
	p.Sandbox = sb
	cl := service(ctx)
	if w := loginWarning(ctx, cl, p); w != "" {
		fmt.Fprintln(app.err, "orcr: warning: "+w)
	}
	aRes, err := wire.Call(ctx, cl, wire.AgentRun, p)
	a := aRes.Agent
	if err != nil {
		return err
	}
	for _, n := range a.RoleNotes {
		if strings.HasPrefix(n, "warning: ") {
			fmt.Fprintln(app.err, "orcr: "+n)
		}
	}
	if w := c.String("wait"); w != "" {
		return app.agentWait(ctx, a.ID, w, 0, c.Bool("json"))
	}
	if c.Bool("json") {
		return printJSON(app.out, wire.AgentResult{Agent: a})
	}
	fmt.Fprintf(app.out, "%s %s %s\n", a.ID, a.Path, a.State)
	return nil
}

func (app *app) agentWait(ctx context.Context, glob, until string, timeout time.Duration, asJSON bool) error {
	cl := service(ctx)
	secs := 0
	if timeout > 0 {
		secs = int((timeout + time.Second - 1) / time.Second)
	}
	r, err := wire.Call(ctx, cl, wire.AgentWait, wire.WaitParams{Glob: glob, Until: until, TimeoutSeconds: secs})
	if err != nil {
		return err
	}
	if asJSON {
		if err := printJSON(app.out, r); err != nil {
			return err
		}
	} else {
		for _, a := range r.Agents {
			fmt.Fprintf(app.out, "%s\t%s%s\n", a.Path, a.State, exitSuffix(a))
		}
	}
	if r.TimedOut {
		return exitErr{code: ExitTimeout, msg: fmt.Sprintf("timed out after %s waiting for %s to be %s", timeout, glob, until)}
	}
	return nil
}

// stateGroups are the names `--state` takes beside the states themselves: the
// dashboard's filters (needs-me, working, ended) and live, what is not ended.
var stateGroups = map[string][]wire.State{
	"ended": {wire.StateExited, wire.StateKilled, wire.StateFailed, wire.StateLost},
	"live":  {wire.StateQueued, wire.StateStarting, wire.StateIdle, wire.StateWorking, wire.StateBlocked, wire.StateDone, wire.StateHibernated},
	// needs-me is the dashboard's `f` filter of that name (ui/find.go), the same states.
	// (Its "working" filter is not a group here: `working` names the state itself.)
	"needs-me": {wire.StateBlocked, wire.StateDone, wire.StateFailed, wire.StateLost},
}

const stateHelp = "queued, starting, idle, working, blocked, done, exited, killed, failed, lost, hibernated, " +
	"or ended (exited, killed, failed, lost), live (the rest), needs-me (blocked, done, failed, lost)"

// parseStates reads --state values (each may hold several, comma-separated) into the
// states the server filters on; nil when none were given.
func parseStates(vals []string) ([]wire.State, error) {
	var out []wire.State
	add := func(s wire.State) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, v := range vals {
		for _, w := range strings.Split(v, ",") {
			w = strings.ToLower(strings.TrimSpace(w))
			switch {
			case w == "":
			case stateGroups[w] != nil:
				for _, s := range stateGroups[w] {
					add(s)
				}
			case slices.Contains(wire.AllStates, wire.State(w)):
				add(wire.State(w))
			default:
				return nil, fmt.Errorf("--state %s: not a state; use %s", w, stateHelp)
			}
		}
	}
	return out, nil
}

// listTable is `agent ls`'s table: the server renders the rows (like kubectl's
// server-side printing), a fraction of the agents' JSON at 1,000 agents.
func listTable(ctx context.Context, s wire.Transport, p wire.ListParams) (*wire.Table, error) {
	return wire.ListTable(ctx, s, p)
}

// loginWarning is what `agent run` says up front when the provider's login is missing
// (fast.LoginWarning, which the fast path's agent run says too).
func loginWarning(ctx context.Context, cl wire.Transport, p wire.RunParams) string {
	return fast.LoginWarning(p.Provider, p.Account, p.Env, func() ([]fast.Account, bool) {
		r, err := wire.Call(ctx, cl, acctapi.AccountList, wire.Empty{})
		if err != nil {
			return nil, false
		}
		out := make([]fast.Account, len(r.Accounts))
		for i, a := range r.Accounts {
			out[i] = fast.Account{Provider: a.Provider, Label: a.Label, PerToken: a.PerToken, LoggedIn: a.LoggedIn, Problem: a.Problem}
		}
		return out, true
	})
}

// spawnFlags is the --spawn-* flags' policy (nil when none is given).
func spawnFlags(c *cli.Command) (*wire.SpawnPolicy, error) {
	var sp wire.SpawnPolicy
	for _, f := range []struct {
		name string
		to   **int
	}{{"spawn-max-children", &sp.MaxChildren}, {"spawn-max-depth", &sp.MaxDepth}} {
		if c.IsSet(f.name) {
			n := int(c.Int(f.name))
			if n < 0 {
				return nil, fmt.Errorf("--%s %d: give 0 or more", f.name, n)
			}
			*f.to = &n
		}
	}
	if c.IsSet("spawn-budget-usd") {
		v := c.Float("spawn-budget-usd")
		if err := wire.CheckFloat("agent run", "--spawn-budget-usd", v, 0, wire.MaxUSD); err != nil {
			return nil, err
		}
		sp.BudgetUSD = &v
	}
	sp.Providers = splitList(c.StringSlice("spawn-providers"))
	sp.Roles = splitList(c.StringSlice("spawn-roles"))
	if sp.Empty() {
		return nil, nil
	}
	return &sp, nil
}

// splitList is a repeatable flag's values with commas also splitting.
func splitList(vs []string) []string {
	var out []string
	for _, v := range vs {
		for _, x := range strings.Split(v, ",") {
			if x = strings.TrimSpace(x); x != "" {
				out = append(out, x)
			}
		}
	}
	return out
}

package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"0orcr/fast"

	"orcr/core/wire"
	roleapi "orcr/roles/api"
)

// Roles and history (DESIGN §12).

func (app *app) roleCommand() *cli.Command {
	return &cli.Command{
		Name:  "role",
		Usage: "role templates ($XDG_CONFIG_HOME/orcr/roles/NAME.toml)",
		Commands: []*cli.Command{
			{
				Name: "ls", Usage: "list roles", Flags: []cli.Flag{jsonFlag()},
				Action: func(ctx context.Context, c *cli.Command) error {
					rsRes, err := wire.Call(ctx, service(ctx), roleapi.RoleList, wire.Empty{})
					rs := rsRes.Roles
					if err != nil {
						return err
					}
					if c.Bool("json") {
						if rs == nil {
							rs = []roleapi.Role{}
						}
						return printJSON(app.out, roleapi.RoleListResult{Roles: rs})
					}
					if len(rs) == 0 {
						_, err := fmt.Fprintln(app.out, "no roles; write one as $XDG_CONFIG_HOME/orcr/roles/NAME.toml (providers = [\"claude:sonnet\"], prompt = \"…\")")
						return err
					}
					tw := newTabWriter(app.out)
					for _, r := range rs {
						fmt.Fprintf(tw, "%s\t%s\n", r.Name, roleSummary(r))
					}
					return tw.Flush()
				},
			},
			{
				Name: "show", Usage: "one role: every value and where it came from", ArgsUsage: "NAME",
				Flags: []cli.Flag{jsonFlag()},
				Action: func(ctx context.Context, c *cli.Command) error {
					if c.Args().First() == "" {
						return fmt.Errorf("role show needs a NAME; list them with: orcr role ls")
					}
					r, err := wire.Call(ctx, service(ctx), roleapi.RoleGet, roleapi.RoleNameParams{Name: c.Args().First()})
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(app.out, r)
					}
					printRole(app.out, r.Role)
					return nil
				},
			},
		},
	}
}

// roleSummary is `role ls`'s line: the chain, budget and timeouts.
func roleSummary(r roleapi.Role) string {
	if r.Error != "" {
		first, _, _ := strings.Cut(r.Error, "\n")
		return "BROKEN: " + first
	}
	parts := []string{strings.Join(r.Providers, " → ")}
	if r.BudgetUSD > 0 {
		parts = append(parts, fmt.Sprintf("$%g", r.BudgetUSD))
	}
	if r.MaxTurns > 0 {
		parts = append(parts, fmt.Sprintf("%d turns", r.MaxTurns))
	}
	if r.SoftTimeoutSeconds > 0 {
		parts = append(parts, "soft "+shortDur(r.SoftTimeoutSeconds))
	}
	if r.HardTimeoutSeconds > 0 {
		parts = append(parts, "hard "+shortDur(r.HardTimeoutSeconds))
	}
	return strings.Join(parts, "  ")
}

func shortDur(secs int) string { return fast.ShortDur(secs) }

func printRole(w io.Writer, r roleapi.Role) {
	tw := newTabWriter(w)
	src := func(k string) string { return r.Sources[k] }
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\t(%s)\n", k, v, src(k)) }
	fmt.Fprintf(tw, "role\t%s\t(%s)\n", r.Name, r.File)
	row("providers", strings.Join(r.Providers, " → "))
	row("prompt", fmt.Sprintf("%q", r.Prompt))
	if len(r.Vars) > 0 {
		fmt.Fprintf(tw, "vars\t%s\t(--var K=V; path and role are given)\n", strings.Join(r.Vars, ", "))
	}
	row("system_prompt", fmt.Sprintf("%q", r.SystemPrompt))
	row("skills", strings.Join(r.Skills, ", "))
	var env []string
	for k, v := range r.Env {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	row("env", strings.Join(env, " "))
	row("worktree", r.Worktree)
	row("keep", fmt.Sprint(r.Keep))
	row("priority", fmt.Sprint(r.Priority))
	row("budget_usd", fmt.Sprint(r.BudgetUSD))
	if action := r.BudgetAction; action != "" || r.BudgetUSD > 0 {
		if action == "" {
			action = "stop"
		}
		row("budget_action", action)
	}
	row("max_turns", fmt.Sprint(r.MaxTurns))
	row("soft_timeout", (time.Duration(r.SoftTimeoutSeconds) * time.Second).String())
	row("hard_timeout", (time.Duration(r.HardTimeoutSeconds) * time.Second).String())
	if r.Identity != "" {
		row("identity", r.Identity)
	}
	if !r.Spawn.Empty() {
		row("spawn", r.Spawn.String())
	}
	tw.Flush()
}

func (app *app) historyCommand() *cli.Command {
	return &cli.Command{
		Name: "history", Usage: "finished agents: role, duration, tokens, cost, result", ArgsUsage: "[GLOB]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "since", Usage: "only those ended within D (e.g. 24h, 7d)"},
			&cli.IntFlag{Name: "limit", Usage: "only the newest N"},
			jsonFlag(),
		},
		Action: func(ctx context.Context, c *cli.Command) error {
			p := roleapi.AgentHistoryParams{Glob: c.Args().First(), Text: !c.Bool("json")}
			if s := c.String("since"); s != "" {
				d, err := roleapi.ParseSince(s)
				if err != nil {
					return err
				}
				p.SinceSeconds = int(d / time.Second)
			}
			limit := int(c.Int("limit"))
			if limit < 0 {
				return fmt.Errorf("--limit must not be negative")
			}
			// The history comes a page at a time and each text page is printed as it
			// arrives: the first lines show at once, and no answer holds the whole
			// history (each page is laid out to the whole table's widths).
			all := []roleapi.AgentHistoryEntry{}
			err := historyPages(ctx, service(ctx), p, limit, func(r roleapi.AgentHistoryResult) error {
				if c.Bool("json") {
					all = append(all, r.Entries...)
					return nil
				}
				_, err := io.WriteString(app.out, r.Text)
				return err
			})
			if err != nil || !c.Bool("json") {
				return err
			}
			return printJSON(app.out, roleapi.AgentHistoryResult{Entries: all})
		},
	}
}

// historyPage is how many entries the CLI's first history.list answer holds: about
// 100 KB of text, so the first lines print in a few milliseconds at any length; the
// later pages hold historyPageMore (about 1 MB), so a long history costs few round
// trips (pages of 500 made `orcr history` over 10,000 entries 15 % slower in all).
const (
	historyPage     = 500
	historyPageMore = 5000
)

// historyPages asks for the history a page at a time (at most limit entries in all
// when limit > 0) and hands each page to take.
func historyPages(ctx context.Context, svc wire.Transport, p roleapi.AgentHistoryParams, limit int, take func(roleapi.AgentHistoryResult) error) error {
	size := historyPage
	for {
		p.Limit = size
		if limit > 0 {
			p.Limit = min(size, limit)
		}
		size = historyPageMore
		r, err := wire.Call(ctx, svc, roleapi.AgentHistory, p)
		if err != nil {
			return err
		}
		if err := take(r); err != nil {
			return err
		}
		if limit > 0 {
			if limit -= len(r.Entries) + historyLines(r.Text); limit <= 0 {
				return nil
			}
		}
		if r.Next == "" {
			return nil
		}
		if r.Next == p.After {
			return fmt.Errorf("history.list did not move past %q; narrow it with a GLOB or --since", r.Next)
		}
		p.After = r.Next
	}
}

// historyLines counts the entries of a text page (its lines but the header).
func historyLines(text string) int {
	n := strings.Count(text, "\n")
	if strings.HasPrefix(text, roleapi.HistoryColumns[0]) {
		n--
	}
	return n
}

func (app *app) agentResumeCommand() *cli.Command {
	return &cli.Command{
		Name: "resume", Usage: "bring an ended or hibernated agent back by its session", ArgsUsage: "TARGET",
		Flags: []cli.Flag{&cli.StringFlag{Name: "prompt", Usage: "the first message after resuming"}, jsonFlag()},
		Action: func(ctx context.Context, c *cli.Command) error {
			if c.Args().First() == "" {
				return fmt.Errorf("agent resume needs a TARGET: an id, an id prefix or a path")
			}
			aRes, err := wire.Call(ctx, service(ctx), wire.AgentResume, wire.ResumeParams{Target: c.Args().First(), Prompt: c.String("prompt")})
			a := aRes.Agent
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(app.out, wire.AgentResult{Agent: a})
			}
			from := ""
			if a.ResumedFrom != "" {
				from = " (continues " + shortID(a.ResumedFrom) + ")"
			}
			fmt.Fprintf(app.out, "%s %s %s%s\n", a.ID, a.Path, a.State, from)
			return nil
		},
	}
}

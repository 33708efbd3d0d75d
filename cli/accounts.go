package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	acctapi "orcr/accounts/api"
	"orcr/core/wire"
)

// account ls, budget set/ls/rm, usage --select/--history (DESIGN §10).

func (app *app) accountCommand() *cli.Command {
	return &cli.Command{
		Name:  "account",
		Usage: "accounts per provider and their usage windows",
		Commands: []*cli.Command{{
			Name: "ls", Usage: "accounts with each window's use, reset and what it holds",
			Flags: []cli.Flag{jsonFlag()},
			Action: func(ctx context.Context, c *cli.Command) error {
				r, err := wire.Call(ctx, service(ctx), acctapi.AccountList, wire.Empty{})
				if err != nil {
					return err
				}
				if c.Bool("json") {
					return printJSON(app.out, r)
				}
				for _, a := range r.Accounts {
					fmt.Fprintln(app.out, accountLine(a))
				}
				return nil
			},
		}},
	}
}

// accountLine is one account: "claude/work  5h 63% (resets 14:10)  weekly 41%  weekly opus 97% ▲".
func accountLine(a acctapi.Account) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-16s", a.Provider+"/"+a.Label)
	switch {
	case a.Problem != "":
		b.WriteString("  skipped: " + a.Problem)
		return b.String()
	case a.PerToken:
		b.WriteString("  per-token, no windows")
	case len(a.Windows) == 0:
		b.WriteString("  no readings yet")
	}
	for _, w := range a.Windows {
		name := w.Window
		if w.Family != "" {
			name += " " + w.Family
		}
		fmt.Fprintf(&b, "  %s %.0f%%", name, w.UsedPct)
		if w.ResetsAt != nil && w.State != "reset" {
			fmt.Fprintf(&b, " (resets %s)", w.ResetsAt.Local().Format("Jan 2 15:04"))
		}
		switch w.State {
		case "exhausted":
			b.WriteString(" FULL")
		case "throttled":
			b.WriteString(" ▲")
		case "reset":
			b.WriteString(" (reset)")
		}
		if w.Held > 0 {
			fmt.Fprintf(&b, " holds %d", w.Held)
		}
	}
	if a.Live > 0 {
		fmt.Fprintf(&b, "  %d live", a.Live)
	}
	return b.String()
}

func (app *app) usageSelect(ctx context.Context, p acctapi.SelectParams, asJSON bool) error {
	r, err := wire.Call(ctx, service(ctx), acctapi.UsageSelect, p)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(app.out, r)
	}
	if r.Account != "" {
		fmt.Fprintf(app.out, "→ %s (%s)\n", r.Account, r.Reason)
	} else {
		s := "→ waits: " + r.Reason
		if !r.RetryAt.IsZero() {
			s += " (next look " + r.RetryAt.Local().Format("Jan 2 15:04") + ")"
		}
		fmt.Fprintln(app.out, s)
	}
	for _, c := range r.Accounts {
		mark := "no "
		if c.OK {
			mark = "ok "
		}
		fmt.Fprintf(app.out, "  %s %s\n", mark, c.Why)
	}
	return nil
}

func (app *app) usageHistory(ctx context.Context, p acctapi.HistoryParams, asJSON bool) error {
	if asJSON {
		all := acctapi.HistoryResult{Peaks: []acctapi.WindowPeak{}}
		err := usageHistoryPages(ctx, p, func(ks []acctapi.WindowPeak) error {
			all.Peaks = append(all.Peaks, ks...)
			return nil
		})
		if err != nil {
			return err
		}
		return printJSON(app.out, all)
	}
	header := true
	// Each page is printed as it arrives, so the client holds one page at a time.
	return usageHistoryPages(ctx, p, func(ks []acctapi.WindowPeak) error {
		tw := newTabWriter(app.out)
		if header {
			fmt.Fprintln(tw, "ACCOUNT\tWINDOW\tRESETS\tPEAK\tPEAK AT")
			header = false
		}
		printPeaks(tw, ks)
		return tw.Flush()
	})
}

// usageHistoryPage is how many peaks one usage.history answer holds.
const usageHistoryPage = 1000

// usageHistoryPages reads usage.history a page at a time, handing each page to take, as
// `orcr agent ls` pages agent.list.
func usageHistoryPages(ctx context.Context, p acctapi.HistoryParams, take func([]acctapi.WindowPeak) error) error {
	p.Limit = usageHistoryPage
	for {
		r, err := wire.Call(ctx, service(ctx), acctapi.UsageHistory, p)
		if err != nil {
			return err
		}
		if err := take(r.Peaks); err != nil {
			return err
		}
		if r.Next == "" {
			return nil
		}
		if r.Next == p.After {
			return fmt.Errorf("usage.history did not move past %q; filter with --provider or --account instead", r.Next)
		}
		p.After = r.Next
	}
}

func printPeaks(tw io.Writer, ks []acctapi.WindowPeak) {
	for _, k := range ks {
		name := k.Window
		if k.Family != "" {
			name += " " + k.Family
		}
		reset := "-"
		if k.ResetsAt != nil {
			reset = k.ResetsAt.Local().Format("2006-01-02 15:04")
		}
		fmt.Fprintf(tw, "%s/%s\t%s\t%s\t%.0f%%\t%s\n", k.Provider, k.Account, name, reset, k.PeakPct, k.PeakAt.Local().Format("2006-01-02 15:04"))
	}
}

func (app *app) budgetCommand() *cli.Command {
	return &cli.Command{
		Name:  "budget",
		Usage: "bound the cost or tokens of every agent under a glob",
		Commands: []*cli.Command{{
			Name: "set", Usage: "set a budget: orcr budget set 'review/**' --usd 5 [--action hold|stop]", ArgsUsage: "GLOB",
			Flags: []cli.Flag{jsonFlag(), &cli.FloatFlag{Name: "usd"}, &cli.IntFlag{Name: "tokens"},
				&cli.StringFlag{Name: "action", Value: "hold", Usage: "hold: new spawns under it wait; stop: also wrap up and stop the live ones"}},
			Action: func(ctx context.Context, c *cli.Command) error {
				if c.Args().Len() != 1 {
					return fmt.Errorf("budget set needs one GLOB, e.g. orcr budget set 'review/**' --usd 5")
				}
				p := acctapi.BudgetSetParams{Glob: c.Args().First(), Action: c.String("action")}
				if c.IsSet("usd") {
					v := c.Float("usd")
					p.USD = &v
				}
				if c.IsSet("tokens") {
					v := int64(c.Int("tokens"))
					p.Tokens = &v
				}
				bRes, err := wire.Call(ctx, service(ctx), acctapi.BudgetSet, p)
				b := bRes.Budget
				if err != nil {
					return err
				}
				if c.Bool("json") {
					return printJSON(app.out, acctapi.BudgetResult{Budget: b})
				}
				fmt.Fprintln(app.out, budgetLine(b))
				return nil
			},
		}, {
			Name: "ls", Usage: "budgets and what their subtrees spent",
			Flags: []cli.Flag{jsonFlag()},
			Action: func(ctx context.Context, c *cli.Command) error {
				bsRes, err := wire.Call(ctx, service(ctx), acctapi.BudgetList, wire.Empty{})
				bs := bsRes.Budgets
				if err != nil {
					return err
				}
				if c.Bool("json") {
					return printJSON(app.out, acctapi.BudgetListResult{Budgets: bs})
				}
				if len(bs) == 0 {
					fmt.Fprintln(app.out, "no budgets")
				}
				for _, b := range bs {
					fmt.Fprintln(app.out, budgetLine(b))
				}
				return nil
			},
		}, {
			Name: "rm", Usage: "remove a budget (spawns it held are admitted again)", ArgsUsage: "GLOB",
			Action: func(ctx context.Context, c *cli.Command) error {
				if c.Args().Len() != 1 {
					return fmt.Errorf("budget rm needs one GLOB (see orcr budget ls)")
				}
				return wire.Do(ctx, service(ctx), acctapi.BudgetRemove, acctapi.BudgetGlobParams{Glob: c.Args().First()})
			},
		}},
	}
}

func budgetLine(b acctapi.Budget) string {
	var bound string
	if b.USD != nil {
		bound = fmt.Sprintf("$%.2f of $%.2f", b.SpentUSD, *b.USD)
	} else if b.Tokens != nil {
		bound = fmt.Sprintf("%d of %d tokens", b.SpentTokens, *b.Tokens)
	}
	s := fmt.Sprintf("%-24s %-6s %s  (%d agents)", b.Glob, b.Action, bound, b.Agents)
	if b.Role != "" {
		s += "  role " + b.Role
	}
	if b.Reached && b.ReachedAt != nil {
		s += "  REACHED " + b.ReachedAt.Local().Format(time.DateTime)
	}
	return s
}

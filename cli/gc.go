package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"orcr/core/wire"
)

// queuePriorityCommand is `orcr queue priority TARGET --to N | --by N`: a queued
// agent's priority set or moved (like renice), its queue position re-ranked at once.
func (app *app) queuePriorityCommand() *cli.Command {
	return &cli.Command{
		Name:      "priority",
		Usage:     "change a queued agent's priority (--to N sets it, --by N adds to it; negative lowers)",
		ArgsUsage: "TARGET",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "to", Usage: "the new priority"},
			&cli.IntFlag{Name: "by", Usage: "add this to the priority (negative lowers it)"},
			jsonFlag(),
		},
		Action: func(ctx context.Context, c *cli.Command) error {
			p := wire.PriorityParams{Target: c.Args().First()}
			if c.IsSet("to") == c.IsSet("by") {
				return fmt.Errorf("give --to N (set the priority) or --by N (change it), one of them")
			}
			if c.IsSet("to") {
				v := int(c.Int("to"))
				p.To = &v
			} else if p.By = int(c.Int("by")); p.By == 0 {
				return fmt.Errorf("--by 0 changes nothing; give a positive number to raise the priority, a negative one to lower it")
			}
			res, err := wire.Call(ctx, service(ctx), wire.QueuePriority, p)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(app.out, res.Agent)
			}
			fmt.Fprintf(app.out, "%s: priority %d, queue position %d\n", res.Agent.Path, res.Agent.Priority, res.Agent.QueuePos)
			return nil
		},
	}
}

// gcCommand is `orcr gc [--dry-run]`.
func (app *app) gcCommand() *cli.Command {
	return &cli.Command{
		Name:  "gc",
		Usage: "close ended panes, stop long-idle agents, prune old records (gc.* rules)",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "dry-run", Usage: "say what would be collected and by which rule"}, jsonFlag()},
		Action: func(ctx context.Context, c *cli.Command) error {
			cl := service(ctx)
			r, err := wire.Call(ctx, cl, wire.GCRun, wire.GCParams{DryRun: c.Bool("dry-run")})
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(app.out, r)
			}
			rule := func(s int) string {
				if s <= 0 {
					return "off"
				}
				return (time.Duration(s) * time.Second).String()
			}
			fmt.Fprintf(app.out, "rules: exited_grace %s, idle_after %s, retain %s\n",
				rule(r.ExitedGraceSeconds), rule(r.IdleAfterSeconds), rule(r.RetainSeconds))
			if len(r.Actions) == 0 {
				fmt.Fprintln(app.out, "nothing to collect")
				return nil
			}
			verb := "did"
			if r.DryRun {
				verb = "would"
			}
			tw := newTabWriter(app.out)
			fmt.Fprintf(tw, "%s\tRULE\tPATH\tDETAIL\n", strings.ToUpper(verb))
			for _, a := range r.Actions {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", a.Action, a.Rule, dash(a.Path), a.Detail)
			}
			return tw.Flush()
		},
	}
}

// queueCapsCommand is `orcr queue caps --global N --provider claude=3`.
func (app *app) queueCapsCommand() *cli.Command {
	return &cli.Command{
		Name:  "caps",
		Usage: "change admission caps now (until the server restarts or reloads its config)",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "global", Usage: "global cap (0: unlimited)"},
			&cli.StringSliceFlag{Name: "provider", Usage: "PROVIDER=N per-provider cap (0 removes it; repeatable)"},
			&cli.IntFlag{Name: "min-free-mb", Usage: "hold admission while free memory is below this (0: off)"},
			&cli.DurationFlag{Name: "aging", Usage: "waiting time worth one priority level (0: off)"},
			jsonFlag(),
		},
		Action: func(ctx context.Context, c *cli.Command) error {
			var p wire.CapsParams
			if c.IsSet("global") {
				v := int(c.Int("global"))
				p.Global = &v
			}
			if c.IsSet("min-free-mb") {
				v := int(c.Int("min-free-mb"))
				p.MinFreeMB = &v
			}
			if c.IsSet("aging") {
				d, err := positiveDuration(c, "aging")
				if err != nil {
					return err
				}
				v := int(d / time.Second)
				p.AgingSeconds = &v
			}
			for _, kv := range c.StringSlice("provider") {
				k, v, ok := strings.Cut(kv, "=")
				n, err := strconv.Atoi(v)
				if !ok || k == "" || err != nil {
					return fmt.Errorf("--provider %q: use PROVIDER=N, e.g. --provider claude=3", kv)
				}
				if p.Provider == nil {
					p.Provider = map[string]int{}
				}
				p.Provider[k] = n
			}
			if p.Global == nil && p.MinFreeMB == nil && p.AgingSeconds == nil && p.Provider == nil {
				return fmt.Errorf("nothing to change: give --global, --provider, --min-free-mb or --aging")
			}
			if _, err := wire.Call(ctx, service(ctx), wire.QueueCaps, p); err != nil {
				return err
			}
			return app.queue(ctx, c.Bool("json"))
		},
	}
}

package cli

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v3"

	"orcr/core/wire"
)

// agentAgainCommands are `agent restart` and `agent fork`: an agent's spec started again
// (the server builds it from the stored record, env values included).
func (app *app) agentAgainCommands() []*cli.Command {
	done := func(c *cli.Command, a wire.Agent, what string) error {
		if c.Bool("json") {
			return printJSON(app.out, wire.AgentResult{Agent: a})
		}
		fmt.Fprintf(app.out, "%s %s %s (%s)\n", a.ID, a.Path, a.State, what)
		return nil
	}
	return []*cli.Command{
		{
			Name: "restart", Usage: "stop an agent if it runs and start it again on its path with the same spec", ArgsUsage: "TARGET",
			Flags: []cli.Flag{jsonFlag()},
			Action: func(ctx context.Context, c *cli.Command) error {
				if c.NArg() != 1 {
					return fmt.Errorf("usage: orcr agent restart TARGET (an id, an id prefix or a path)")
				}
				res, err := wire.Call(ctx, service(ctx), wire.AgentRestart, wire.TargetParams{Target: c.Args().First()})
				if err != nil {
					return err
				}
				return done(c, res.Agent, "restarted")
			},
		},
		{
			Name: "fork", Usage: "start an agent's spec again on a new path", ArgsUsage: "TARGET NEWPATH",
			Flags: []cli.Flag{jsonFlag()},
			Action: func(ctx context.Context, c *cli.Command) error {
				if c.NArg() != 2 {
					return fmt.Errorf("usage: orcr agent fork TARGET NEWPATH, e.g. orcr agent fork demo/a demo/a2")
				}
				res, err := wire.Call(ctx, service(ctx), wire.AgentFork, wire.ForkParams{Target: c.Args().Get(0), Path: c.Args().Get(1)})
				if err != nil {
					return err
				}
				return done(c, res.Agent, "forked from "+c.Args().Get(0))
			},
		},
		{
			Name: "rename", Usage: "move an agent to another path (same id, pane and history)", ArgsUsage: "TARGET NEWPATH",
			Flags: []cli.Flag{jsonFlag()},
			Action: func(ctx context.Context, c *cli.Command) error {
				if c.NArg() != 2 {
					return fmt.Errorf("usage: orcr agent rename TARGET NEWPATH, e.g. orcr agent rename demo/a demo/b")
				}
				res, err := wire.Call(ctx, service(ctx), wire.AgentRename, wire.RenameParams{Target: c.Args().Get(0), Path: c.Args().Get(1)})
				if err != nil {
					return err
				}
				return done(c, res.Agent, "renamed from "+c.Args().Get(0))
			},
		},
	}
}

package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/urfave/cli/v3"

	"orcr/core/wire"
)

// agentDiffCommand is `orcr agent diff TARGET`: what the agent changed in its working
// tree, against the commit its branch started from (agent.diff).
func (app *app) agentDiffCommand() *cli.Command {
	return &cli.Command{
		Name: "diff", Usage: "git diff of the agent's worktree against its base", ArgsUsage: "TARGET",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "max-bytes", Usage: "at most this much diff (default 1 MiB)"},
			jsonFlag(),
		},
		Action: func(ctx context.Context, c *cli.Command) error {
			if c.Args().First() == "" {
				return fmt.Errorf("agent diff needs a TARGET: an id, an id prefix or a path")
			}
			r, err := wire.Call(ctx, service(ctx), wire.AgentDiff, wire.DiffParams{Target: c.Args().First(), MaxBytes: int(c.Int("max-bytes"))})
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(app.out, r)
			}
			fmt.Fprint(app.out, r.Text)
			for _, f := range r.Untracked {
				fmt.Fprintln(app.out, "untracked: "+f)
			}
			if r.Truncated {
				fmt.Fprintln(app.out, "… truncated: see `git -C "+r.Dir+" diff "+r.Base+"` for all of it")
			}
			if strings.TrimSpace(r.Text) == "" && len(r.Untracked) == 0 {
				fmt.Fprintf(app.out, "no changes in %s against %s (%s)\n", r.Dir, r.BaseName, r.Base[:min(len(r.Base), 12)])
			}
			return nil
		},
	}
}

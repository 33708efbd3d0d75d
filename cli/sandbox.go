package cli

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v3"

	"orcr/sandbox/confine"
)

// sandboxCommand is `orcr sandbox exec --policy FILE -- CMD…`, the launcher orcr puts
// in front of a confined agent's command in its pane (DESIGN §16), and `orcr sandbox
// abi`, what this kernel offers.
func (app *app) sandboxCommand() *cli.Command {
	return &cli.Command{
		Name:  "sandbox",
		Usage: "Landlock confinement of agents: the launcher orcr runs in a confined agent's pane",
		Commands: []*cli.Command{
			{
				Name:      "exec",
				Usage:     "restrict this process to a policy with Landlock, then exec the command (it and all it starts stay confined)",
				ArgsUsage: "--policy FILE -- CMD [ARGS…]",
				Flags:     []cli.Flag{&cli.StringFlag{Name: "policy", Required: true, Usage: "the policy file (JSON) the server wrote"}},
				Action: func(ctx context.Context, c *cli.Command) error {
					// Exec returns only when nothing was exec'd: the agent must not run
					// unconfined, so this is the end of the pane's program.
					err := confine.Exec(c.String("policy"), c.Args().Slice(), app.err)
					return exitErr{code: 126, msg: "sandbox refused to start the agent: " + err.Error()}
				},
			},
			{
				Name:  "abi",
				Usage: "print the Landlock ABI this kernel offers (or why there is none)",
				Action: func(ctx context.Context, c *cli.Command) error {
					abi, err := confine.KernelABI()
					if err != nil {
						return err
					}
					_, err = fmt.Fprintf(app.out, "landlock ABI %d (orcr applies up to %d)\n", abi, confine.MaxKnownABI)
					return err
				},
			},
		},
	}
}

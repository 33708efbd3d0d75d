package cli

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v3"

	"orcr/config"
	"orcr/mcp/install"
)

// installCommand is `orcr install PROVIDER [--mcp] [--remove]` (DESIGN §17): orcr's
// skills into the user's own agent CLI. It needs no server.
func (app *app) installCommand() *cli.Command {
	return &cli.Command{
		Name:      "install",
		Usage:     "add orcr's skills (orcr-plan, orcr-run, orcr-status) to your own agent: " + strings.Join(install.Names, ", ") + "; --mcp also registers `orcr mcp`",
		ArgsUsage: "PROVIDER",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "mcp", Usage: "also register `orcr mcp` in the provider's MCP config"},
			&cli.BoolFlag{Name: "remove", Usage: "undo what orcr install did, restoring every file it changed"},
		},
		Action: func(ctx context.Context, c *cli.Command) error {
			if c.Args().Len() != 1 {
				return fmt.Errorf("usage: orcr install PROVIDER [--mcp] [--remove] (PROVIDER: %s)", strings.Join(install.Names, ", "))
			}
			bin, err := os.Executable()
			if err != nil {
				return fmt.Errorf("find this orcr's path: %w", err)
			}
			o := install.Options{Provider: c.Args().First(), MCP: c.Bool("mcp"), Bin: bin, Home: config.Home(), Env: os.Getenv}
			var rep install.Report
			if c.Bool("remove") {
				rep, err = install.Remove(o)
			} else {
				rep, err = install.Install(o)
			}
			for _, l := range rep.Lines {
				fmt.Fprintln(app.out, l)
			}
			return err
		},
	}
}

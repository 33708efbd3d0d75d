package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/urfave/cli/v3"

	mcpapi "orcr/mcp/api"
	"orcr/mcp/tools"
)

// mcpCommand is `orcr mcp`: the stdio MCP server an agent's program runs as its child
// (DESIGN §17). It is a client of the socket like every command here: it dials with
// the caller's ORCR_ID, so the server verifies which agent it serves.
func (app *app) mcpCommand() *cli.Command {
	return &cli.Command{
		Name:  "mcp",
		Usage: "serve orcr's tools over MCP on stdin/stdout (--scope self|read|act; default self inside an agent's pane, read outside)",
		Description: "Register it with an MCP client as the command `orcr mcp` (`orcr install PROVIDER --mcp` does it).\n" +
			"self: act only on your own subtree and read your lineage; read: see every agent, change nothing; act: act on every agent.\n" +
			"A scope can be narrowed, never widened: a role's `mcp` caps the agents it starts.",
		Flags: []cli.Flag{&cli.StringFlag{Name: "scope", Usage: "self, read or act"}},
		// A scope that is none of the three is the caller's mistake, said before the
		// server is dialled (not "server not running" when none runs).
		Before: func(ctx context.Context, c *cli.Command) (context.Context, error) {
			if s := c.String("scope"); s != "" && !slices.Contains(mcpapi.Scopes, s) {
				return ctx, fmt.Errorf("--scope %q: use %s", s, strings.Join(mcpapi.Scopes, ", "))
			}
			return app.mustConnect(ctx, c)
		},
		Action: func(ctx context.Context, c *cli.Command) error {
			srv, err := tools.New(ctx, tools.Options{Transport: service(ctx), Scope: c.String("scope"), Version: version()})
			if err != nil {
				return err
			}
			return srv.Serve(ctx, io.NopCloser(app.in), nopWriteCloser{app.out})
		},
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

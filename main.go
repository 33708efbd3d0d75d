// Command orcr runs many coding agents as real interactive TUIs in panes it owns, and
// gives one small surface to spawn, message, await, read and stop them. This file is
// the urfave/cli command tree; the other files of package main wire the server
// (server.go) and implement the commands as thin clients of core.Service.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v3"

	"orcr/core/wire"
)

// Exit codes of DESIGN §3.
const (
	exitOK      = 0
	exitError   = 1
	exitMissing = 2
	exitTimeout = 3
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	app := NewApp(os.Stdin, os.Stdout, os.Stderr)
	err := app.Run(ctx, normalizeArgs(os.Args))
	os.Exit(exitCode(err, os.Stderr))
}

// exitCode prints err (if any) and maps it to the exit codes of DESIGN §3.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	var ec exitErr
	if errors.As(err, &ec) {
		if ec.msg != "" {
			fmt.Fprintln(stderr, "orcr: "+ec.msg)
		}
		return ec.code
	}
	fmt.Fprintln(stderr, "orcr: "+err.Error())
	switch wire.CodeOf(err) {
	case wire.CodeMissingProgram:
		return exitMissing
	case wire.CodeTimeout:
		return exitTimeout
	}
	return exitError
}

// exitErr carries an explicit exit code.
type exitErr struct {
	code int
	msg  string
}

func (e exitErr) Error() string { return e.msg }

// normalizeArgs lets `--wait` stand alone (meaning --wait=settled) before a "--".
func normalizeArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if a == "--wait" && (i+1 >= len(args) || !isWaitState(args[i+1])) {
			a = "--wait=settled"
		}
		out = append(out, a)
	}
	return out
}

func isWaitState(s string) bool {
	switch s {
	case "done", "idle", "blocked", "exited", "settled":
		return true
	}
	return false
}

// NewApp builds the command tree. Tests call it with their own streams.
func NewApp(stdin io.Reader, stdout, stderr io.Writer) *cli.Command {
	io := &streams{in: stdin, out: stdout, err: stderr}
	return &cli.Command{
		Name:      "orcr",
		Usage:     "run many coding agents as real TUIs in panes orcr owns",
		Reader:    stdin,
		Writer:    stdout,
		ErrWriter: stderr,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "serve", Usage: "run the server headless (same as `orcr serve`)"},
		},
		ExitErrHandler: func(context.Context, *cli.Command, error) {},
		Action: func(ctx context.Context, c *cli.Command) error {
			if c.Bool("serve") {
				return runServe(ctx, io)
			}
			if c.Args().Len() > 0 {
				return fmt.Errorf("unknown command %q; see `orcr --help`", c.Args().First())
			}
			return runDashboard(ctx, io)
		},
		Commands: []*cli.Command{
			{
				Name:  "serve",
				Usage: "run the server headless for scripts and remote use",
				Action: func(ctx context.Context, c *cli.Command) error {
					return runServe(ctx, io)
				},
			},
			agentCommand(io),
			{
				Name:   "top",
				Usage:  "live agent tree in the terminal (no full screen)",
				Flags:  []cli.Flag{&cli.BoolFlag{Name: "once", Usage: "print the tree once and exit"}},
				Action: func(ctx context.Context, c *cli.Command) error { return runTop(ctx, io, c.Bool("once")) },
			},
			{
				Name:     "queue",
				Usage:    "queued and running agents, with the caps",
				Flags:    []cli.Flag{jsonFlag()},
				Action:   func(ctx context.Context, c *cli.Command) error { return runQueue(ctx, io, c.Bool("json")) },
				Commands: []*cli.Command{queueCapsCommand(io)},
			},
			{
				Name:  "usage",
				Usage: "tokens and cost by provider, model and window",
				Flags: []cli.Flag{jsonFlag(), &cli.StringFlag{Name: "provider"}},
				Action: func(ctx context.Context, c *cli.Command) error {
					return runUsage(ctx, io, c.String("provider"), c.Bool("json"))
				},
			},
			scheduleCommand(io),
			gcCommand(io),
			{
				Name:   "doctor",
				Usage:  "host, providers, integrations: found / missing + fix",
				Flags:  []cli.Flag{jsonFlag()},
				Action: func(ctx context.Context, c *cli.Command) error { return runDoctor(ctx, io, c.Bool("json")) },
			},
			{
				Name:  "api",
				Usage: "the socket API",
				Commands: []*cli.Command{{
					Name: "schema", Usage: "print the JSON Schema of every method and event",
					Action: func(ctx context.Context, c *cli.Command) error { return printJSON(io.out, wire.Schema()) },
				}},
			},
			{
				Name:      "hook",
				Usage:     "report a provider hook to the server (run by agents' hook settings)",
				ArgsUsage: "PROVIDER EVENT",
				Hidden:    true,
				Action: func(ctx context.Context, c *cli.Command) error {
					return runHook(ctx, io, c.Args().Get(0), c.Args().Get(1))
				},
			},
		},
	}
}

type streams struct {
	in       io.Reader
	out, err io.Writer
}

func jsonFlag() cli.Flag { return &cli.BoolFlag{Name: "json", Usage: "print the API result unchanged"} }

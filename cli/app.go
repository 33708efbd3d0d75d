// Package cli is orcr's command line: the urfave/cli command tree, its output
// formatting and attach. It is a thin client: every command reaches the server through
// wire.Transport (the socket client, or an engine a test hands it), and it imports no
// store, host or adapter package. What only the server's own process can do (serve,
// the dashboard hosting a server in-process, doctor's look at the machine, the body of
// `orcr hook`) it gets from the daemon as the Daemon funcs main passes in.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"orcr/internal/buildinfo"
	"os"

	"github.com/urfave/cli/v3"

	acctapi "orcr/accounts/api"
	"orcr/config"
	"orcr/core"
	"orcr/core/socket"
	"orcr/core/wire"
)

// Exit codes of DESIGN §3.
const (
	ExitOK      = 0
	ExitError   = 1
	ExitMissing = 2
	ExitTimeout = 3
)

// Options is what the command tree runs with.
type Options struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Connect returns the transport the commands use. Nil dials the server's socket
	// (ORCR_SOCKET, else $ORCR_HOME/orcr.sock) as the agent named by ORCR_ID; a test
	// may hand in the in-process transport over an engine instead. A returned transport that is an io.Closer is
	// closed when the command ends.
	Connect func(ctx context.Context) (wire.Transport, error)
	// Daemon provides what runs in the server's own process.
	Daemon Daemon
}

// Daemon is what the command line needs from the server side, injected by main so
// this package stays a client. A nil func makes its command say it is not built in.
type Daemon struct {
	// Serve runs the headless server until ctx ends.
	Serve func(ctx context.Context, stderr io.Writer) error
	// Dashboard opens the dashboard: connected to a running server, else hosting one.
	Dashboard func(ctx context.Context, stderr io.Writer) error
	// Probe looks at this machine for doctor: hosts, the host serve would choose, and
	// each provider's programs. It starts nothing.
	Probe func(ctx context.Context, cfg config.Config) Probe
	// Hook is the body of `orcr hook PROVIDER EVENT` (adapters/hook.Run); report
	// delivers the hook to the server.
	Hook func(ctx context.Context, provider, event string, stdin io.Reader, stdout io.Writer,
		env func(string) string, report func(context.Context, wire.HookParams) error) error
}

// Probe is doctor's view of this machine, as the daemon's host discovery sees it.
type Probe struct {
	Hosts []HostStatus `json:"hosts"`
	// Host is the host `orcr serve` would use, HostWhy why; when no host can be used
	// (an explicit host or a configured herdr binary is missing), Host is "" and
	// HostErr says what serve would refuse with.
	Host      string                `json:"host"`
	HostWhy   string                `json:"hostWhy"`
	HostErr   string                `json:"hostError,omitempty"`
	Providers []core.ProviderStatus `json:"providers"`
	// Accounts are the configured accounts (or each provider's implicit one) and
	// whether each is logged in; AccountsErr says why the config's accounts are refused.
	Accounts    []acctapi.Account `json:"accounts"`
	AccountsErr string            `json:"accountsError,omitempty"`
	// Caps are the admission caps serve would start with (config over the machine's
	// defaults), each with its origin; doctor shows the running server's instead.
	Caps *wire.QueueResult `json:"caps,omitempty"`
	// Shell is whether the panes' shell finds orcr on its PATH.
	Shell ShellStatus `json:"shell"`
}

// ShellStatus is what the user's login shell ($SHELL -l, as agents' tool shells run
// it) says of `command -v orcr`.
type ShellStatus struct {
	Shell string `json:"shell"`
	// Found: the shell names an orcr, at Path; Other: not this one. Bin is the orcr
	// that briefs call (ORCR_BIN).
	Found bool   `json:"found"`
	Path  string `json:"path,omitempty"`
	Other bool   `json:"other,omitempty"`
	Bin   string `json:"bin"`
	// Err says why the shell could not be asked.
	Err string `json:"error,omitempty"`
}

// HostStatus is one host's availability as doctor shows it.
type HostStatus struct {
	Name   string `json:"name"`
	Found  bool   `json:"found"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// Run runs the command line with args (os.Args) and returns the process exit code.
func Run(ctx context.Context, args []string, o Options) int {
	args = normalizeArgs(args)
	root := NewApp(o)
	pruneTo(root, args)
	return ExitCode(root.Run(ctx, args), o.Stderr)
}

// ExitCode prints err (if any) and maps it to the exit codes of DESIGN §3.
func ExitCode(err error, stderr io.Writer) int {
	if err == nil {
		return ExitOK
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
		return ExitMissing
	case wire.CodeTimeout:
		return ExitTimeout
	}
	return ExitError
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
		if a == "--sandbox" {
			a = "--sandbox=on" // a bare --sandbox asks for one; --sandbox=off for none
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

// app is one command tree's shared state: its streams and how it reaches the server.
type app struct {
	in       io.Reader
	out, err io.Writer
	connect  func(ctx context.Context) (wire.Transport, error)
	daemon   Daemon
}

// NewApp builds the command tree. Tests call it with their own streams and transport.
func NewApp(o Options) *cli.Command {
	app := &app{in: o.Stdin, out: o.Stdout, err: o.Stderr, connect: o.Connect, daemon: o.Daemon}
	if app.in == nil {
		app.in = os.Stdin
	}
	if app.out == nil {
		app.out = os.Stdout
	}
	if app.err == nil {
		app.err = os.Stderr
	}
	if app.connect == nil {
		app.connect = dialSocket
	}
	root := &cli.Command{
		Name:      "orcr",
		Usage:     "run many coding agents as real TUIs in panes orcr owns",
		Reader:    app.in,
		Writer:    app.out,
		ErrWriter: app.err,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "serve", Usage: "run the server headless (same as `orcr serve`)"},
			httpFlag(),
		},
		ExitErrHandler: func(context.Context, *cli.Command, error) {},
		Action: func(ctx context.Context, c *cli.Command) error {
			ctx = withHTTP(ctx, c)
			if c.Bool("serve") {
				return app.serve(ctx)
			}
			if c.Args().Len() > 0 {
				return unknownCommand(c, c.Args().First())
			}
			if app.daemon.Dashboard == nil {
				return notBuiltIn("the dashboard")
			}
			return app.daemon.Dashboard(ctx, app.err)
		},
	}
	// The commands that talk to a running server: each dials it once, in its Before.
	clients := []*cli.Command{
		app.agentCommand(),
		{
			Name:      "top",
			Usage:     "live agent tree in the terminal, redrawn in place (no full screen); ended agents are counted, not shown",
			ArgsUsage: "[GLOB]",
			Flags: []cli.Flag{&cli.BoolFlag{Name: "once", Usage: "print the tree once and exit"},
				&cli.BoolFlag{Name: "ended", Usage: "show ended agents too (exited, killed, failed, lost)"}},
			Action: func(ctx context.Context, c *cli.Command) error {
				return app.top(ctx, topOptions{glob: c.Args().First(), once: c.Bool("once"), ended: c.Bool("ended")})
			},
		},
		{
			Name:     "queue",
			Usage:    "queued and running agents, with the caps",
			Flags:    []cli.Flag{jsonFlag()},
			Action:   func(ctx context.Context, c *cli.Command) error { return app.queue(ctx, c.Bool("json")) },
			Commands: []*cli.Command{app.queueCapsCommand(), app.queuePriorityCommand()},
		},
		{
			Name:  "usage",
			Usage: "tokens and cost by provider, account, model and window; --select: which account a spawn gets; --history: past windows at their peaks",
			Flags: []cli.Flag{jsonFlag(), &cli.StringFlag{Name: "provider"},
				&cli.BoolFlag{Name: "select", Usage: "say which account a spawn now would get, and why (needs --provider)"},
				&cli.StringFlag{Name: "model", Usage: "with --select: the spawn's model (its family decides model-scoped windows)"},
				&cli.IntFlag{Name: "priority", Usage: "with --select: the spawn's priority"},
				&cli.StringFlag{Name: "account", Usage: "with --select or --history: one account"},
				&cli.BoolFlag{Name: "history", Usage: "one row per past window at its peak"}},
			Action: func(ctx context.Context, c *cli.Command) error {
				if err := checkProvider(ctx, service(ctx), c.String("provider")); err != nil {
					return err
				}
				switch {
				case c.Bool("select"):
					return app.usageSelect(ctx, acctapi.SelectParams{Provider: c.String("provider"), Model: c.String("model"),
						Priority: int(c.Int("priority")), Account: c.String("account")}, c.Bool("json"))
				case c.Bool("history"):
					return app.usageHistory(ctx, acctapi.HistoryParams{Provider: c.String("provider"), Account: c.String("account")}, c.Bool("json"))
				}
				return app.usage(ctx, c.String("provider"), c.Bool("json"))
			},
		},
		app.accountCommand(),
		app.budgetCommand(),
		app.scheduleCommand(),
		app.nodeCommand(),
		app.runCommand(),
		app.listenerCommand(),
		app.gcCommand(),
		app.roleCommand(),
		app.historyCommand(),
		app.catalogCommand(),
		app.planCommand(),
		app.workflowCommand(),
		app.webCommand(),
		app.mcpCommand(),
	}
	for _, c := range clients {
		app.needsServer(c, app.mustConnect)
	}
	doctor := &cli.Command{
		Name:   "doctor",
		Usage:  "host, providers, integrations: found / missing + fix",
		Flags:  []cli.Flag{jsonFlag()},
		Action: func(ctx context.Context, c *cli.Command) error { return app.doctor(ctx, c.Bool("json")) },
	}
	// doctor reports on a server when one runs, and on the machine either way.
	app.needsServer(doctor, app.mayConnect)
	root.Commands = append([]*cli.Command{{
		Name:   "serve",
		Usage:  "run the server headless for scripts and remote use",
		Flags:  []cli.Flag{httpFlag()},
		Action: func(ctx context.Context, c *cli.Command) error { return app.serve(withHTTP(ctx, c)) },
	}}, clients...)
	root.Commands = append(root.Commands,
		doctor,
		&cli.Command{
			Name:  "api",
			Usage: "the socket API",
			Commands: []*cli.Command{{
				Name: "schema", Usage: "print the JSON Schema of every method and event",
				Action: func(ctx context.Context, c *cli.Command) error { return printJSON(app.out, wire.Schema()) },
			}},
		},
		&cli.Command{
			Name:      "hook",
			Usage:     "report a provider hook to the server (run by agents' hook settings)",
			ArgsUsage: "PROVIDER EVENT",
			Hidden:    true,
			Action: func(ctx context.Context, c *cli.Command) error {
				return app.hook(ctx, c.Args().Get(0), c.Args().Get(1))
			},
		},
		app.installCommand(),
		app.sandboxCommand(),
		app.completionCommand(),
		app.completeCommand(o),
		&cli.Command{
			Name:  "version",
			Usage: "print orcr's version",
			Action: func(ctx context.Context, c *cli.Command) error {
				_, err := fmt.Fprintln(app.out, "orcr version "+version())
				return err
			},
		},
	)
	root.Version = version()
	quietUsageErrors(root)
	mindArgs(root)
	return root
}

// version is the module version, or the VCS revision a source build records.
func version() string { return buildinfo.Version() }

// quietUsageErrors makes a bad flag or argument one line that names the help to read,
// as kubectl does, instead of "Incorrect Usage" plus the whole help page on stderr
// followed by the same error again.
func quietUsageErrors(c *cli.Command) {
	if c.OnUsageError == nil {
		c.OnUsageError = func(_ context.Context, c *cli.Command, err error, _ bool) error {
			return fmt.Errorf("%w; see `%s --help`", err, c.FullName())
		}
	}
	for _, sub := range c.Commands {
		quietUsageErrors(sub)
	}
}

func (app *app) serve(ctx context.Context) error {
	if app.daemon.Serve == nil {
		return notBuiltIn("the server")
	}
	return app.daemon.Serve(ctx, app.err)
}

func notBuiltIn(what string) error {
	return fmt.Errorf("%s is not built into this program; run the orcr binary", what)
}

func jsonFlag() cli.Flag { return &cli.BoolFlag{Name: "json", Usage: "print the API result unchanged"} }

// SocketPath is the server socket a client uses: the one of the agent it runs inside
// (ORCR_SOCKET), else the home's.
func SocketPath() string {
	if s := os.Getenv("ORCR_SOCKET"); s != "" {
		return s
	}
	return socket.SocketPath(config.Home())
}

// dialSocket connects to the running server as the agent named by ORCR_ID, if any.
func dialSocket(ctx context.Context) (wire.Transport, error) {
	return socket.Dial(ctx, SocketPath(), os.Getenv("ORCR_ID"))
}

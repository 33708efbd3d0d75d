package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/urfave/cli/v3"

	"orcr/core/wire"
	sbapi "orcr/sandbox/api"
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

// sandboxFlags is agent run's --sandbox[=on|off], --sandbox-rw, --sandbox-rox and
// --sandbox-port; nil when none was given (the role's or the run's choice stands).
func sandboxFlags(c *cli.Command) (*wire.Sandbox, error) {
	mode := ""
	if c.IsSet("sandbox") {
		switch strings.ToLower(c.String("sandbox")) {
		case "on", "true", "1", "yes":
			mode = wire.SandboxOn
		case "off", "false", "0", "no":
			mode = wire.SandboxOff
		default:
			return nil, fmt.Errorf("--sandbox=%s: use --sandbox (on) or --sandbox=off", c.String("sandbox"))
		}
	}
	rw, rox := c.StringSlice("sandbox-rw"), c.StringSlice("sandbox-rox")
	var ports []int
	for _, p := range c.IntSlice("sandbox-port") {
		ports = append(ports, int(p))
	}
	widen := len(rw)+len(rox)+len(ports) > 0
	if widen && mode == wire.SandboxOff {
		return nil, fmt.Errorf("--sandbox-rw, --sandbox-rox and --sandbox-port widen a sandbox; --sandbox=off has none")
	}
	if mode == "" && !widen {
		return nil, nil
	}
	if mode == "" {
		mode = wire.SandboxOn
	}
	return &wire.Sandbox{Mode: mode, RW: rw, ROX: rox, Ports: ports}, nil
}

// landlockStatus is the running server's Landlock (its kernel is the one agents run
// on), else this machine's.
func landlockStatus(ctx context.Context) sbapi.SandboxState {
	if cl := service(ctx); cl != nil {
		if st, err := wire.Call(ctx, cl, sbapi.SandboxStatus, wire.Empty{}); err == nil {
			return st
		}
	}
	abi, err := confine.KernelABI()
	st := sbapi.SandboxState{ABI: abi}
	if err != nil {
		st.Error = err.Error()
	}
	return st
}

func landlockLine(st sbapi.SandboxState) string {
	if st.Error != "" {
		return "sandbox  no Landlock: " + st.Error + " — agents asking for --sandbox (and run coders) are refused; [run] sandbox = \"off\" runs coders unconfined"
	}
	line := fmt.Sprintf("sandbox  Landlock ABI %d", st.ABI)
	switch {
	case st.ABI >= 6:
		line += " (files, TCP connect, signals and abstract sockets confined)"
	case st.ABI >= 4:
		line += " (files and TCP connect confined)"
	default:
		line += " (files confined; the network is not: TCP connect needs ABI 4)"
	}
	if st.MaxABI > 0 && st.MaxABI < st.ABI {
		line += fmt.Sprintf("; capped at %d by ORCR_SANDBOX_MAX_ABI", st.MaxABI)
	}
	return line
}

// printSandbox is agent get --explain's sandbox section.
func printSandbox(ctx context.Context, out io.Writer, a wire.Agent) {
	if a.Sandbox == nil {
		return
	}
	w := newTabWriter(out)
	defer w.Flush()
	if !a.Sandbox.On() {
		fmt.Fprintln(w, "sandbox\toff (asked for: unconfined)")
		return
	}
	ex, err := wire.Call(ctx, service(ctx), sbapi.SandboxExplain, sbapi.SandboxExplainParams{Target: a.ID})
	if err != nil {
		fmt.Fprintf(w, "sandbox\ton (the policy cannot be shown: %v)\n", err)
		return
	}
	if ex.Applied != nil {
		net := "TCP connect confined"
		if !ex.Applied.Net {
			net = "network NOT confined (ABI < 4)"
		}
		by := "by the launcher"
		if ex.Applied.InProcess {
			by = "by the server, no launcher (pty host)"
		}
		fmt.Fprintf(w, "sandbox\ton: Landlock ABI %d of the kernel's %d, %s; applied %s\n", ex.Applied.ABI, ex.Applied.KernelABI, net, by)
		for _, x := range ex.Applied.Warnings {
			fmt.Fprintf(w, "  warning\t%s\n", x)
		}
	} else {
		fmt.Fprintln(w, "sandbox\ton (the launcher has not reported yet)")
	}
	if p := ex.Policy; p != nil {
		fmt.Fprintf(w, "  rw\t%s\n", strings.Join(p.RW, " "))
		fmt.Fprintf(w, "  rox\t%s\n", strings.Join(p.ROX, " "))
		fmt.Fprintf(w, "  ro\t%s\n", strings.Join(p.RO, " "))
		var ports []string
		for _, n := range p.Ports {
			ports = append(ports, fmt.Sprint(n))
		}
		fmt.Fprintf(w, "  connect\tTCP %s; orcr's socket %s\n", strings.Join(ports, ","), p.Socket)
		for _, n := range p.Notes {
			fmt.Fprintf(w, "  note\t%s\n", n)
		}
	}
	if d := ex.LastDenial; d != nil {
		fmt.Fprintf(w, "  refused last\t%s %s by %s (pid %d) at %s (the kernel's audit log)\n", d.Access, d.Object, d.Comm, d.PID,
			d.When.Local().Format("15:04:05"))
	} else if ex.Audit == "" {
		fmt.Fprintln(w, "  refused last\tnothing in the kernel's audit log")
	}
	if ex.Audit != "" {
		fmt.Fprintf(w, "  audit\tnot read: %s; what its screen showed stands in\n", ex.Audit)
	}
	if len(ex.Refused) == 0 {
		fmt.Fprintln(w, "  refused\tnothing seen on its screen")
	}
	for _, r := range ex.Refused {
		fmt.Fprintf(w, "  refused\t%s (on its screen)\n", r)
	}
}

// SandboxExec is `orcr sandbox exec --policy FILE -- CMD…` parsed by hand, for main's
// fast path, and `orcr sandbox exec --await SOCKET --server PID [--prepare POLICY]`, the spare launcher the
// tmux host keeps waiting (confine.Await; only this shape has it): ok is false for any other shape (help, a flag it does not know), which
// then goes through the command tree. It returns only when nothing was exec'd.
func SandboxExec(args []string, stderr io.Writer) (code int, ok bool) {
	var policy string
	switch {
	case (len(args) == 4 || len(args) == 6 && args[4] == "--prepare") && args[0] == "--await" && args[2] == "--server":
		// A spare launcher (confine.Await), which the tmux host starts before it is
		// needed; --prepare names a policy like its launch's, built ahead.
		server, err := strconv.Atoi(args[3])
		if err != nil || server <= 0 {
			return 0, false
		}
		prepare := ""
		if len(args) == 6 {
			prepare = args[5]
		}
		err = confine.Await(args[1], server, prepare, confine.AwaitIdle, stderr)
		if errors.Is(err, confine.ErrAwaitEnded) {
			return 0, true
		}
		return ExitCode(exitErr{code: 126, msg: "sandbox refused to start the agent: " + err.Error()}, stderr), true
	case len(args) >= 3 && args[0] == "--policy" && args[2] == "--":
		policy, args = args[1], args[3:]
	case len(args) >= 2 && strings.HasPrefix(args[0], "--policy=") && args[1] == "--":
		policy, args = strings.TrimPrefix(args[0], "--policy="), args[2:]
	default:
		return 0, false
	}
	err := confine.Exec(policy, args, stderr)
	return ExitCode(exitErr{code: 126, msg: "sandbox refused to start the agent: " + err.Error()}, stderr), true
}

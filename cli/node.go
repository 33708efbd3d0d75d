package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"orcr/core/wire"
	nodeapi "orcr/nodes/api"
)

// nodeCommand is `orcr node add|ls|show|drain|rm` (DESIGN §14).
func (app *app) nodeCommand() *cli.Command {
	return &cli.Command{
		Name:  "node",
		Usage: "machines agents run on, reached over SSH",
		Commands: []*cli.Command{
			{
				Name: "add", Usage: "register a machine: user@host[:port] or a Host alias of ~/.ssh/config", ArgsUsage: "NAME DESTINATION",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "identity-file", Usage: "the SSH key to sign with (besides ssh-agent's)"},
					&cli.IntFlag{Name: "max-agents", Usage: "this node's cap on live agents (0: none of its own)"},
					&cli.BoolFlag{Name: "accept-new-host-key", Usage: "accept a host key never seen (kept in orcr's own known_hosts); a changed key is still refused"},
					&cli.StringSliceFlag{Name: "account", Usage: "an account whose login exists on the node (repeatable)"},
					&cli.StringSliceFlag{Name: "label", Usage: "a label roles and runs may ask for (repeatable)"},
					jsonFlag(),
				},
				Action: func(ctx context.Context, c *cli.Command) error { return app.nodeAdd(ctx, c) },
			},
			{
				Name: "ls", Usage: "the nodes: state, agents/cap, free memory, version, last seen", Flags: []cli.Flag{jsonFlag()},
				Action: func(ctx context.Context, c *cli.Command) error { return app.nodeLs(ctx, c.Bool("json")) },
			},
			{
				Name: "show", Usage: "one node in full", ArgsUsage: "NAME", Flags: []cli.Flag{jsonFlag()},
				Action: func(ctx context.Context, c *cli.Command) error {
					name, err := oneNode(c, "show")
					if err != nil {
						return err
					}
					r, err := wire.Call(ctx, service(ctx), nodeapi.Show, nodeapi.NameParams{Name: name})
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(app.out, r)
					}
					writeNode(app.out, r.Node, time.Now())
					return nil
				},
			},
			{
				Name: "drain", Usage: "place no new agents on a node; the ones there finish", ArgsUsage: "NAME",
				Flags: []cli.Flag{&cli.BoolFlag{Name: "undo", Usage: "place agents on it again"}, jsonFlag()},
				Action: func(ctx context.Context, c *cli.Command) error {
					name, err := oneNode(c, "drain")
					if err != nil {
						return err
					}
					r, err := wire.Call(ctx, service(ctx), nodeapi.Drain, nodeapi.DrainParams{Name: name, Undo: c.Bool("undo")})
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(app.out, r)
					}
					if c.Bool("undo") {
						fmt.Fprintf(app.out, "node %s takes agents again (%s)\n", name, r.Node.State)
					} else {
						fmt.Fprintf(app.out, "node %s is drained: no new agents; %d still there\n", name, r.Node.Agents)
					}
					return nil
				},
			},
			{
				Name: "rm", Usage: "forget a node; one with live agents is refused unless --force", ArgsUsage: "NAME",
				Flags: []cli.Flag{&cli.BoolFlag{Name: "force", Usage: "remove it even with live agents, marking them lost (drain it first to let them end)"}, jsonFlag()},
				Action: func(ctx context.Context, c *cli.Command) error {
					name, err := oneNode(c, "rm")
					if err != nil {
						return err
					}
					r, err := wire.Call(ctx, service(ctx), nodeapi.Rm, nodeapi.RmParams{Name: name, Force: c.Bool("force")})
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(app.out, r)
					}
					fmt.Fprintf(app.out, "removed node %s\n", name)
					if len(r.Lost) > 0 {
						fmt.Fprintf(app.out, "%d agents marked lost: %s\n", len(r.Lost), strings.Join(r.Lost, ", "))
					}
					return nil
				},
			},
		},
	}
}

func oneNode(c *cli.Command, verb string) (string, error) {
	if c.Args().Len() != 1 {
		return "", fmt.Errorf("node %s needs one NAME, e.g. orcr node %s big", verb, verb)
	}
	return c.Args().First(), nil
}

func (app *app) nodeAdd(ctx context.Context, c *cli.Command) error {
	args := c.Args().Slice()
	if len(args) != 2 {
		return fmt.Errorf("node add needs NAME and DESTINATION, e.g. orcr node add big ci@10.0.0.7 (or a Host alias of ~/.ssh/config)")
	}
	max := c.Int("max-agents")
	if max < 0 {
		return fmt.Errorf("--max-agents %d: give 0 (no cap of its own) or more", max)
	}
	r, err := wire.Call(ctx, service(ctx), nodeapi.Add, nodeapi.AddParams{Name: args[0], SSH: args[1],
		IdentityFile: c.String("identity-file"), MaxAgents: int(max), AcceptNewHostKey: c.Bool("accept-new-host-key"),
		Accounts: c.StringSlice("account"), Labels: c.StringSlice("label")})
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(app.out, r)
	}
	n := r.Node
	fmt.Fprintf(app.out, "node %s: %s@%s:%d, %s\n", n.Name, n.User, n.Addr, n.Port, n.State)
	if n.Error != "" {
		fmt.Fprintf(app.err, "node %s: %s (orcr keeps trying; orcr node rm %s to forget it)\n", n.Name, n.Error, n.Name)
	}
	if n.Warning != "" {
		fmt.Fprintf(app.err, "node %s: warning: %s\n", n.Name, n.Warning)
	}
	return nil
}

func (app *app) nodeLs(ctx context.Context, asJSON bool) error {
	r, err := wire.Call(ctx, service(ctx), nodeapi.List, wire.Empty{})
	if err != nil {
		return err
	}
	if asJSON {
		if r.Nodes == nil {
			r.Nodes = []nodeapi.Node{}
		}
		return printJSON(app.out, r)
	}
	if len(r.Nodes) == 0 {
		fmt.Fprintln(app.out, "no nodes — add one with: orcr node add NAME user@host")
		return nil
	}
	now := time.Now()
	tw := newTabWriter(app.out)
	fmt.Fprintln(tw, "NAME\tSTATE\tAGENTS/CAP\tFREE MEM\tLANDLOCK\tVERSION\tLAST SEEN")
	for _, n := range r.Nodes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n.Name, n.State, agentsCap(n), freeMem(n), landlockCell(n), dash(n.Version), lastSeen(n.LastSeen, now))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// Why a node is not up, under the table (as kubectl describe would say it).
	for _, n := range r.Nodes {
		if n.Error != "" && n.State != nodeapi.StateUp && n.State != nodeapi.StateDraining {
			fmt.Fprintf(app.out, "%s: %s\n", n.Name, n.Error)
		}
		if n.Warning != "" {
			fmt.Fprintf(app.out, "%s: warning: %s\n", n.Name, n.Warning)
		}
	}
	return nil
}

func agentsCap(n nodeapi.Node) string {
	cp := "-"
	if n.MaxAgents > 0 {
		cp = fmt.Sprint(n.MaxAgents)
	}
	return fmt.Sprintf("%d/%s", n.Agents, cp)
}

func freeMem(n nodeapi.Node) string {
	if n.TotalMB <= 0 {
		return "-"
	}
	return fmt.Sprintf("%d MB", n.FreeMB)
}

// landlockCell is the node's Landlock ABI as node ls shows it: "ABI 7", "none" (no
// sandboxed agent is placed there), "-" while not heard or not said.
func landlockCell(n nodeapi.Node) string {
	switch {
	case n.Landlock == nil:
		return "-"
	case n.Landlock.ABI < 1:
		return "none"
	}
	return fmt.Sprintf("ABI %d", n.Landlock.ABI)
}

// landlockLineOf is the node's Landlock as node show says it ("" : nothing heard yet).
func landlockLineOf(n nodeapi.Node) string {
	const off = ": agents that ask for a sandbox are not placed here"
	switch {
	case n.Landlock != nil && n.Landlock.ABI >= 1:
		return fmt.Sprintf("ABI %d", n.Landlock.ABI)
	case n.Landlock != nil && n.Landlock.Error != "":
		return "none (" + n.Landlock.Error + ")" + off
	case n.Landlock != nil:
		return "none" + off
	case n.Version != "":
		return "not reported (its orcr does not say)" + off
	}
	return ""
}

func lastSeen(t *time.Time, now time.Time) string {
	if t == nil {
		return "never"
	}
	d := now.Sub(*t).Round(time.Second)
	if d < time.Second {
		return "now"
	}
	return d.String() + " ago"
}

func writeNode(w io.Writer, n nodeapi.Node, now time.Time) {
	fmt.Fprintf(w, "node %s (%s)\n", n.Name, n.Source)
	fmt.Fprintf(w, "  ssh:        %s → %s@%s:%d\n", n.SSH, n.User, n.Addr, n.Port)
	if n.IdentityFile != "" {
		fmt.Fprintf(w, "  key:        %s\n", n.IdentityFile)
	}
	fmt.Fprintf(w, "  state:      %s\n", n.State)
	if n.Error != "" {
		fmt.Fprintf(w, "  error:      %s\n", n.Error)
	}
	if n.RetryAt != nil {
		in := n.RetryAt.Sub(now).Round(time.Second)
		when := "now"
		if in > 0 {
			when = "in " + in.String()
		}
		fmt.Fprintf(w, "  retrying:   %d attempts failed; next %s (its agents are unreachable, not lost)\n", n.Attempts, when)
	}
	if n.Gap != "" {
		fmt.Fprintf(w, "  gap:        %s\n", n.Gap)
	}
	if n.Warning != "" {
		fmt.Fprintf(w, "  warning:    %s\n", n.Warning)
	}
	fmt.Fprintf(w, "  agents/cap: %s\n", agentsCap(n))
	if n.TotalMB > 0 {
		fmt.Fprintf(w, "  memory:     %d MB free of %d MB\n", n.FreeMB, n.TotalMB)
	}
	if n.Version != "" {
		fmt.Fprintf(w, "  orcr:       %s (%s/%s)\n", n.Version, n.OS, n.Arch)
	}
	if l := landlockLineOf(n); l != "" {
		fmt.Fprintf(w, "  landlock:   %s\n", l)
	}
	if len(n.Accounts) > 0 {
		fmt.Fprintf(w, "  accounts:   %s\n", strings.Join(n.Accounts, ", "))
	}
	if len(n.Labels) > 0 {
		fmt.Fprintf(w, "  labels:     %s\n", strings.Join(n.Labels, ", "))
	}
	if n.Draining {
		fmt.Fprintln(w, "  draining:   yes (orcr node drain --undo "+n.Name+" to place agents again)")
	}
	fmt.Fprintf(w, "  last seen:  %s\n", lastSeen(n.LastSeen, now))
}

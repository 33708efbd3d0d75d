package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"orcr/core"
	"orcr/core/wire"
	"orcr/internal/regfile"
	listenapi "orcr/listen/api"
)

// listenerCommand is `orcr listener ls|show|enable|disable|put|rm`.
func (app *app) listenerCommand() *cli.Command {
	nameArg := func(c *cli.Command, verb string) (string, error) {
		if c.Args().Len() != 1 {
			return "", fmt.Errorf("listener %s needs one NAME (see orcr listener ls)", verb)
		}
		return c.Args().First(), nil
	}
	enable := func(on bool, verb string) func(ctx context.Context, c *cli.Command) error {
		return func(ctx context.Context, c *cli.Command) error {
			name, err := nameArg(c, verb)
			if err != nil {
				return err
			}
			lRes, err := wire.Call(ctx, service(ctx), listenapi.ListenerEnable, listenapi.ListenerEnableParams{Name: name, Enabled: &on})
			l := lRes.Listener
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(app.out, listenapi.ListenerResult{Listener: l})
			}
			fmt.Fprintf(app.out, "listener %s %s\n", name, l.State)
			return nil
		}
	}
	return &cli.Command{
		Name:  "listener",
		Usage: "listeners: GitHub and shell sources that start agents or draft plans (files in ~/.config/orcr/listeners)",
		Commands: []*cli.Command{
			{
				Name: "ls", Usage: "list listeners: last and next poll, fires, held events, state", Flags: []cli.Flag{jsonFlag()},
				Action: func(ctx context.Context, c *cli.Command) error { return app.listenerLs(ctx, c.Bool("json")) },
			},
			{
				Name: "show", Usage: "a listener's config, cursors, last error and rate limits", ArgsUsage: "NAME",
				Flags: []cli.Flag{jsonFlag()},
				Action: func(ctx context.Context, c *cli.Command) error {
					name, err := nameArg(c, "show")
					if err != nil {
						return err
					}
					return app.listenerShow(ctx, name, c.Bool("json"))
				},
			},
			{Name: "enable", Usage: "enable a listener (one backing off after failures tries again now)", ArgsUsage: "NAME", Flags: []cli.Flag{jsonFlag()}, Action: enable(true, "enable")},
			{Name: "disable", Usage: "disable a listener (it keeps its cursors)", ArgsUsage: "NAME", Flags: []cli.Flag{jsonFlag()}, Action: enable(false, "disable")},
			{
				Name: "put", Usage: "write a listener document through the API (stored by the server)", ArgsUsage: "NAME FILE|-",
				Flags: []cli.Flag{jsonFlag()},
				Action: func(ctx context.Context, c *cli.Command) error {
					if c.Args().Len() != 2 {
						return fmt.Errorf("listener put needs NAME and a FILE (or - for stdin)")
					}
					var b []byte
					var err error
					if f := c.Args().Get(1); f == "-" {
						b, err = io.ReadAll(io.LimitReader(os.Stdin, 1<<20))
					} else {
						b, err = regfile.Read(f)
					}
					if err != nil {
						return err
					}
					lRes, err := wire.Call(ctx, service(ctx), listenapi.ListenerPut, listenapi.ListenerPutParams{Name: c.Args().First(), Document: string(b)})
					l := lRes.Listener
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(app.out, listenapi.ListenerResult{Listener: l})
					}
					fmt.Fprintf(app.out, "listener %s: %s, %s\n", l.Name, l.Source, l.State)
					return nil
				},
			},
			{
				Name: "rm", Usage: "remove a listener written through the API", ArgsUsage: "NAME",
				Action: func(ctx context.Context, c *cli.Command) error {
					name, err := nameArg(c, "rm")
					if err != nil {
						return err
					}
					if err := wire.Do(ctx, service(ctx), listenapi.ListenerRemove, listenapi.ListenerNameParams{Name: name}); err != nil {
						return err
					}
					fmt.Fprintf(app.out, "removed listener %s\n", name)
					return nil
				},
			},
		},
	}
}

func (app *app) listenerLs(ctx context.Context, asJSON bool) error {
	lsRes, err := wire.Call(ctx, service(ctx), listenapi.ListenerList, wire.Empty{})
	ls := lsRes.Listeners
	if err != nil {
		return err
	}
	if asJSON {
		if ls == nil {
			ls = []listenapi.Listener{}
		}
		return printJSON(app.out, listenapi.ListenerListResult{Listeners: ls})
	}
	if len(ls) == 0 {
		fmt.Fprintln(app.out, "no listeners — add a file to ~/.config/orcr/listeners/NAME.toml (see orcr listener --help)")
		return nil
	}
	tw := newTabWriter(app.out)
	fmt.Fprintln(tw, "NAME\tSOURCE\tLAST POLL\tNEXT\tFIRED\tHELD\tSTATE")
	now := time.Now()
	for _, l := range ls {
		fmt.Fprintln(tw, strings.Join(listenapi.Row(l, now), "\t"))
	}
	return tw.Flush()
}

func (app *app) listenerShow(ctx context.Context, name string, asJSON bool) error {
	lRes, err := wire.Call(ctx, service(ctx), listenapi.ListenerGet, listenapi.ListenerNameParams{Name: name})
	l := lRes.Listener
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(app.out, listenapi.ListenerResult{Listener: l})
	}
	now := time.Now()
	w := app.out
	row := listenapi.Row(l, now)
	fmt.Fprintf(w, "name:       %s\n", l.Name)
	from := "written through the API"
	if l.Origin == "file" {
		from = l.File
	}
	fmt.Fprintf(w, "from:       %s\n", from)
	fmt.Fprintf(w, "state:      %s\n", row[6])
	if l.Error != "" {
		fmt.Fprintf(w, "error:      %s\n", l.Error)
	}
	if l.Source != "" {
		src := l.Source
		if len(l.Repos) > 0 {
			src += " " + strings.Join(l.Repos, ", ")
		}
		if cmd := l.Command; cmd != "" {
			if strings.ContainsAny(cmd, "\n\t\r") {
				cmd = strconv.Quote(cmd)
			}
			src += ": " + cmd
		}
		fmt.Fprintf(w, "source:     %s\n", src)
		fmt.Fprintf(w, "interval:   %s\n", core.FormatSpan(time.Duration(l.IntervalSeconds)*time.Second))
		fmt.Fprintf(w, "action:     %s\n", l.Action)
	}
	fmt.Fprintf(w, "last poll:  %s\n", row[2])
	fmt.Fprintf(w, "next poll:  %s\n", row[3])
	if l.Failures > 0 && l.NextPoll != nil && l.State == "enabled" {
		fmt.Fprintf(w, "back-off:   %d failed in a row; next attempt at %s (orcr listener enable %s tries now)\n",
			l.Failures, l.NextPoll.Local().Format("15:04:05"), l.Name)
	}
	fmt.Fprintf(w, "fired:      %d\n", l.Fires)
	fmt.Fprintf(w, "held:       %d", l.Held)
	if len(l.HeldIDs) > 0 {
		ids := l.HeldIDs
		more := ""
		if len(ids) > 5 {
			// HeldIDs names at most the oldest 100; Held counts them all.
			ids, more = ids[:5], fmt.Sprintf(" … %d more", max(l.Held, len(l.HeldIDs))-5)
		}
		fmt.Fprintf(w, " (%s%s)", strings.Join(ids, ", "), more)
	}
	fmt.Fprintln(w)
	if l.Failed > 0 {
		// Events set aside for good: recorded with the reason, never retried.
		at := ""
		if l.FailedAt != nil {
			at = ", " + core.FormatSpan(now.Sub(*l.FailedAt)) + " ago"
		}
		fmt.Fprintf(w, "failed:     %d event(s), not retried (last%s: %s)\n", l.Failed, at, l.LastFailed)
	}
	if l.LastError != "" {
		at := ""
		if l.ErrorAt != nil {
			at = " (" + core.FormatSpan(now.Sub(*l.ErrorAt)) + " ago)"
		}
		fmt.Fprintf(w, "last error: %s%s\n", l.LastError, at)
	}
	if len(l.RateLimits) > 0 {
		fmt.Fprintln(w, "rate limits:")
		for _, r := range l.RateLimits {
			text := fmt.Sprintf("%d per %s (%d used", r.Max, r.Per, r.Used)
			if r.NextAt != nil {
				text += ", next at " + r.NextAt.Local().Format("15:04")
			}
			fmt.Fprintf(w, "  %s)\n", text)
		}
	}
	if len(l.Cursor) > 0 {
		fmt.Fprintln(w, "cursors:")
		for _, k := range sortedStrings(l.Cursor) {
			fmt.Fprintf(w, "  %s: %s\n", k, l.Cursor[k])
		}
	}
	if l.Document != "" {
		fmt.Fprintln(w, "document:")
		for _, line := range strings.Split(strings.TrimRight(l.Document, "\n"), "\n") {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
	return nil
}

func sortedStrings(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

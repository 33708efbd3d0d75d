package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	qrcode "github.com/skip2/go-qrcode"
	"github.com/urfave/cli/v3"

	"orcr/core/wire"
	webapi "orcr/web/api"
)

// webCommand is `orcr web pair` and `orcr web token new|ls|rm` (DESIGN §15).
func (app *app) webCommand() *cli.Command {
	return &cli.Command{
		Name:  "web",
		Usage: "the web cockpit: pair a browser, make and revoke tokens (serve with orcr serve --http ADDR)",
		Commands: []*cli.Command{
			{
				Name:  "pair",
				Usage: "print a one-time URL and its QR code; opening it logs that browser in",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "scope", Value: webapi.ScopeAct, Usage: "the browser's scope: read | act"},
					&cli.DurationFlag{Name: "ttl", Usage: "how long the browser stays paired (default 30 days)"},
					&cli.BoolFlag{Name: "no-qr", Usage: "print the URL only"},
					jsonFlag(),
				},
				// No server: `orcr serve` alone, as the usual message says, would not do.
				Before: func(ctx context.Context, c *cli.Command) (context.Context, error) {
					ctx, err := app.mustConnect(ctx, c)
					if err != nil && wire.AsError(err).Code == wire.CodeUnavailable {
						return ctx, fmt.Errorf("%w; to pair a browser, start it with the web gateway: orcr serve --http 127.0.0.1:7070", err)
					}
					return ctx, err
				},
				Action: func(ctx context.Context, c *cli.Command) error { return app.webPair(ctx, c) },
			},
			{
				Name:  "token",
				Usage: "bearer tokens for scripts and apps",
				Commands: []*cli.Command{
					{
						Name: "new", Usage: "make a token; it is printed once, on the last line",
						Flags: []cli.Flag{
							&cli.StringFlag{Name: "scope", Usage: "read (no method that changes anything) | act", Required: true},
							&cli.StringFlag{Name: "ttl", Usage: "lifetime: 30d, 12h, 90m (default: until removed)"},
							&cli.StringFlag{Name: "name", Usage: "a name for ls and rm (default token-N)"},
							jsonFlag(),
						},
						Action: func(ctx context.Context, c *cli.Command) error { return app.webTokenNew(ctx, c) },
					},
					{
						Name: "ls", Usage: "tokens and paired browsers (never their secrets)", Flags: []cli.Flag{jsonFlag()},
						Action: func(ctx context.Context, c *cli.Command) error { return app.webTokenLs(ctx, c.Bool("json")) },
					},
					{
						Name: "rm", Usage: "revoke a token or a paired browser", ArgsUsage: "NAME",
						Action: func(ctx context.Context, c *cli.Command) error {
							name := c.Args().First()
							if name == "" {
								return fmt.Errorf("web token rm needs a NAME; see orcr web token ls")
							}
							if err := wire.Do(ctx, service(ctx), webapi.TokenRemove, webapi.TokenNameParams{Name: name}); err != nil {
								return err
							}
							fmt.Fprintf(app.out, "revoked %s\n", name)
							return nil
						},
					},
				},
			},
		},
	}
}

// parseTTL reads a lifetime: Go's durations plus days ("30d").
func parseTTL(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	if d, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		if _, err := fmt.Sscanf(d, "%d", &n); err != nil || n <= 0 || fmt.Sprint(n) != d {
			return 0, fmt.Errorf("--ttl %q: a number of days (30d) or a duration (12h, 90m)", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("--ttl %q: a number of days (30d) or a duration (12h, 90m)", s)
	}
	return d, nil
}

func (app *app) webTokenNew(ctx context.Context, c *cli.Command) error {
	ttl, err := parseTTL(c.String("ttl"))
	if err != nil {
		return err
	}
	// A gateway beyond loopback waits for the first token: say when this one started it.
	before, stErr := wire.Call(ctx, service(ctx), webapi.Status, wire.Empty{})
	res, err := wire.Call(ctx, service(ctx), webapi.TokenNew, webapi.TokenNewParams{
		Name: c.String("name"), Scope: c.String("scope"), TTLSeconds: int64(ttl / time.Second)})
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(app.out, res)
	}
	if stErr == nil && before.Listen == "" && before.Error != "" {
		if after, err := wire.Call(ctx, service(ctx), webapi.Status, wire.Empty{}); err == nil {
			if after.Listen != "" {
				fmt.Fprintf(app.out, "the web gateway now serves on %s (pair a browser: orcr web pair)\n", after.URL)
			} else if after.Error != "" {
				fmt.Fprintf(app.err, "orcr: warning: the web gateway still does not serve: %s\n", after.Error)
			}
		}
	}
	exp := "never expires"
	if res.Token.ExpiresAt != nil {
		exp = "expires " + res.Token.ExpiresAt.Local().Format("2006-01-02 15:04")
	}
	fmt.Fprintf(app.out, "token %s (%s scope, %s); it is shown this once:\n", res.Token.Name, res.Token.Scope, exp)
	fmt.Fprintln(app.out, res.Secret)
	return nil
}

func (app *app) webTokenLs(ctx context.Context, asJSON bool) error {
	res, err := wire.Call(ctx, service(ctx), webapi.TokenList, wire.Empty{})
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(app.out, res)
	}
	if len(res.Tokens) == 0 {
		fmt.Fprintln(app.out, "no web tokens and no paired browsers (orcr web token new, orcr web pair)")
		return nil
	}
	tw := tabwriter.NewWriter(app.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tSCOPE\tCREATED\tEXPIRES\tLAST USED\tDEVICE")
	when := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.Local().Format("2006-01-02 15:04")
	}
	for _, t := range res.Tokens {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Name, t.Kind, t.Scope, when(&t.CreatedAt), when(t.ExpiresAt), when(t.LastUsed), t.Device)
	}
	return tw.Flush()
}

func (app *app) webPair(ctx context.Context, c *cli.Command) error {
	res, err := wire.Call(ctx, service(ctx), webapi.Pair, webapi.PairParams{Scope: c.String("scope"),
		TTLSeconds: int64(c.Duration("ttl") / time.Second)})
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(app.out, res)
	}
	if res.Warning != "" {
		fmt.Fprintf(app.err, "orcr: warning: %s\n", res.Warning)
	}
	if !c.Bool("no-qr") {
		q, err := qrcode.New(res.URL, qrcode.Medium)
		if err != nil {
			return fmt.Errorf("QR code: %w", err)
		}
		fmt.Fprint(app.out, qrHalfBlocks(q.Bitmap()))
	}
	fmt.Fprintf(app.out, "open within %s, once (it logs that browser in):\n%s\n",
		time.Until(res.ExpiresAt).Round(time.Minute), res.URL)
	return nil
}

// qrHalfBlocks draws a QR bitmap with two rows per line of half blocks, dark on
// light whatever the terminal's colours (a phone camera needs the quiet zone light).
func qrHalfBlocks(bm [][]bool) string {
	var b strings.Builder
	for y := 0; y < len(bm); y += 2 {
		b.WriteString("\x1b[30;47m")
		for x := range bm[y] {
			top := bm[y][x]
			bot := y+1 < len(bm) && bm[y+1][x]
			switch {
			case top && bot:
				b.WriteString("█")
			case top:
				b.WriteString("▀")
			case bot:
				b.WriteString("▄")
			default:
				b.WriteString(" ")
			}
		}
		b.WriteString("\x1b[0m\n")
	}
	return b.String()
}

// httpFlag is --http ADDR of `orcr serve` and the dashboard: the web gateway's
// address, over the config's [http] listen.
func httpFlag() cli.Flag {
	return &cli.StringFlag{Name: "http", Usage: "serve the web cockpit on ADDR too (127.0.0.1:7070; beyond loopback needs a token: orcr web token new)"}
}

func withHTTP(ctx context.Context, c *cli.Command) context.Context {
	if a := c.String("http"); a != "" {
		return webapi.WithListen(ctx, a)
	}
	return ctx
}

package cli

import (
	"context"
	"io"

	"orcr/core/wire"

	"github.com/urfave/cli/v3"
)

// Every command that talks to the server gets its transport the same way: a Before hook
// dials once per invocation and puts the transport on the command's context, the
// command's After closes it, and the action takes it with service(ctx). A command
// group and its subcommand may both carry the hook; the second finds the transport
// already there, so `queue caps` (which then prints the queue) still dials once.

type serviceKey struct{}

// needsServer gives cmd and every command under it that has an action before as its
// Before hook (a group without one keeps showing its help with no server running),
// and cmd the After that closes the transport.
func (app *app) needsServer(cmd *cli.Command, before cli.BeforeFunc) {
	cmd.After = app.disconnect
	var walk func(c *cli.Command)
	walk = func(c *cli.Command) {
		if c.Action != nil && c.Before == nil {
			// A command that brings its own (`run done` waits for a server
			// that is restarting) keeps it.
			c.Before = before
		}
		for _, sub := range c.Commands {
			walk(sub)
		}
	}
	walk(cmd)
}

// mustConnect dials the server; a command that needs one fails when it does not
// answer (the error says how to start it).
func (app *app) mustConnect(ctx context.Context, c *cli.Command) (context.Context, error) {
	if service(ctx) != nil {
		return ctx, nil
	}
	s, err := app.connect(ctx)
	if err != nil {
		return ctx, err
	}
	return context.WithValue(ctx, serviceKey{}, s), nil
}

// mayConnect dials the server when one answers and goes on without one otherwise.
func (app *app) mayConnect(ctx context.Context, c *cli.Command) (context.Context, error) {
	if service(ctx) != nil {
		return ctx, nil
	}
	if s, err := app.connect(ctx); err == nil {
		return context.WithValue(ctx, serviceKey{}, s), nil
	}
	return ctx, nil
}

// disconnect closes the transport the Before hook opened. It runs as the outermost
// client command's After, which sees the context its subcommands' Before returned.
func (app *app) disconnect(ctx context.Context, c *cli.Command) error {
	if cl, ok := service(ctx).(io.Closer); ok {
		cl.Close()
	}
	return nil
}

// service is the transport the command's Before hook put on ctx (nil without one).
func service(ctx context.Context) wire.Transport {
	s, _ := ctx.Value(serviceKey{}).(wire.Transport)
	return s
}

package cli

import (
	"context"
	"io"
	"os"

	"orcr/core/socket"
	"orcr/core/wire"
)

// hook is `orcr hook PROVIDER EVENT`, run by agents' hook settings: it reports the
// payload as the agent named by ORCR_ID and never blocks or fails the agent. Unlike
// the other commands it dials only when it has something to report, inside the
// report's own deadline, and a missing server is not an error.
func (app *app) hook(ctx context.Context, provider, event string) error {
	if app.daemon.Hook == nil {
		return notBuiltIn("orcr hook")
	}
	connect := app.connect
	if hs := os.Getenv("ORCR_HOOK_SOCKET"); hs != "" {
		// On a node (DESIGN §14) ORCR_SOCKET reaches the coordinator; the hooks go to
		// the node's own server, which watches the pane.
		connect = func(ctx context.Context) (wire.Transport, error) { return socket.Dial(ctx, hs, os.Getenv("ORCR_ID")) }
	}
	return app.daemon.Hook(ctx, provider, event, app.in, app.out, os.Getenv, func(ctx context.Context, p wire.HookParams) error {
		s, err := connect(ctx)
		if err != nil {
			return err
		}
		if c, ok := s.(io.Closer); ok {
			defer c.Close()
		}
		return wire.Do(ctx, s, wire.HookReport, p)
	})
}

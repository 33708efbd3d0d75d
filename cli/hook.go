package cli

import (
	"context"
	"io"
	"os"

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
	return app.daemon.Hook(ctx, provider, event, app.in, app.out, os.Getenv, func(ctx context.Context, p wire.HookParams) error {
		s, err := app.connect(ctx)
		if err != nil {
			return err
		}
		if c, ok := s.(io.Closer); ok {
			defer c.Close()
		}
		return wire.Do(ctx, s, wire.HookReport, p)
	})
}

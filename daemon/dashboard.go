package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"orcr/config"
	"orcr/core/socket"
	"orcr/core/wire"
	"orcr/ui"
)

// Dashboard opens the full-screen dashboard. When a server already runs for this
// ORCR_HOME it connects to it; otherwise it hosts the server in-process (which also
// serves the socket, so the CLI works from other shells meanwhile).
func Dashboard(ctx context.Context, stderr io.Writer) error {
	cfg, err := config.Load(config.DefaultPath())
	if err != nil {
		return err
	}
	self, _ := os.Executable()
	opts := ui.Options{Theme: cfg.UI.Theme, UserThemes: cfg.Themes, Keymap: cfg.UI.Keymap,
		KeyOverrides: cfg.Keys, Self: self}

	if cl, err := socket.Dial(ctx, socket.SocketPath(config.Home()), ""); err == nil {
		defer cl.Close()
		opts.Mode = "connected"
		opts.Logger = newLogger(config.Home())
		_, err := ui.Run(ctx, cl, opts)
		return err
	} else if !errors.Is(err, wire.ErrUnavailable) {
		return err
	}
	if socket.Held(config.Home()) {
		return fmt.Errorf("a server holds %s but does not answer on its socket; check `orcr doctor` or stop it", config.Home())
	}
	s, err := startServer(ctx)
	if err != nil {
		return err
	}
	opts.Mode = "in-process"
	opts.Logger = s.log
	opts.EmbeddedHost = s.host.Name() == "pty"
	// The dashboard calls the server's own handlers in-process, as the caller
	// InProcess (nothing to verify); the socket serves the same table to other shells.
	ip, err := socket.NewInProcess(s.methods)
	if err != nil {
		s.close(context.Background())
		return err
	}
	choice, err := ui.Run(ctx, ip, opts)
	if err == nil && choice == ui.QuitKeepInBackground {
		res, err := handOff(context.Background(), s) // closes s
		if err != nil {
			return fmt.Errorf("keep agents running: %w", err)
		}
		what := "agents keep"
		if res.Panes == 1 {
			what = "agent keeps"
		}
		fmt.Fprintf(stderr, "orcr: %d %s running under a background orcr serve (pid %d) on %s; `orcr` reconnects, `orcr agent ls` lists them\n",
			res.Panes, what, res.PID, res.Socket)
		return nil
	}
	s.close(context.Background())
	return err
}

package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"orcr/config"
	"orcr/core/socket"
	"orcr/core/wire"
	"orcr/ui"
	webapi "orcr/web/api"
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
		KeyOverrides: cfg.Keys, Self: self, Notify: notifyOptions(cfg.Notify, os.Getenv, exec.LookPath),
		InTmux: os.Getenv("TMUX") != ""}

	for {
		cl, err := dialServer(ctx, config.Home(), serverStartWait, stderr)
		if err != nil {
			return err
		}
		if cl != nil {
			defer cl.Close()
			if a, ok := webapi.ListenFrom(ctx); ok {
				httpNote(ctx, cl, a, stderr)
			}
			opts.Mode = "connected"
			opts.Logger = newLogger(config.Home())
			_, err := ui.Run(ctx, cl, opts)
			return err
		}
		s, err := startServer(ctx)
		if errors.Is(err, socket.ErrLocked) {
			continue // an `orcr serve` took the home between the dial and the lock: wait for it
		}
		if err != nil {
			return err
		}
		return runInProcess(ctx, s, opts, stderr)
	}
}

// httpNote tells a user who asked the dashboard for --http ADDR while a server
// already runs that the flag is for a server this command starts, and where the
// running one serves the gateway, if it does.
func httpNote(ctx context.Context, cl wire.Transport, addr string, stderr io.Writer) {
	st, err := wire.Call(ctx, cl, webapi.Status, wire.Empty{})
	if err != nil || st.Listen == addr {
		return
	}
	where := "does not serve the web gateway"
	if st.Listen != "" {
		where = "serves the web gateway on " + st.Listen
	}
	fmt.Fprintf(stderr, "orcr: a server already runs for %s and %s; --http %s applies to a server this command starts (stop it, then `orcr serve --http %s` or `orcr --http %s`)\n",
		config.Home(), where, addr, addr, addr)
}

// serverStartWait is how long the dashboard waits for a server that holds the home
// but does not answer yet (it is opening its store and reconciling its panes).
const serverStartWait = 60 * time.Second

// dialServer connects to the home's server. With no server at all it returns nil (the
// dashboard then hosts one); a server still starting — it holds the home's lock but
// its socket does not answer yet — is waited for, saying so once on stderr, for up to
// wait.
func dialServer(ctx context.Context, home string, wait time.Duration, stderr io.Writer) (*socket.Client, error) {
	start := time.Now()
	said := false
	for {
		cl, err := socket.Dial(ctx, socket.SocketPath(home), "")
		if err == nil {
			return cl, nil
		}
		if !errors.Is(err, wire.ErrUnavailable) {
			return nil, err
		}
		if !socket.Held(home) {
			return nil, nil
		}
		if time.Since(start) > wait {
			return nil, fmt.Errorf("a server holds %s but has not answered on its socket for %s; check `orcr doctor` or stop it", home, wait)
		}
		if !said {
			fmt.Fprintf(stderr, "orcr: waiting for the orcr server starting on %s (ctrl+c to stop waiting)\n", home)
			said = true
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// runInProcess runs the dashboard over a server it hosts, and on quit either hands its
// agents to a background server or closes it.
func runInProcess(ctx context.Context, s *server, opts ui.Options, stderr io.Writer) error {
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
		fmt.Fprintln(stderr, keptText(res, opts.EmbeddedHost))
		return nil
	}
	s.close(context.Background())
	return err
}

// keptText is the line printed once a quitting dashboard has handed its server's work
// to a background orcr serve.
func keptText(res handedOff, embedded bool) string {
	if embedded {
		what := "agents keep"
		if res.Panes == 1 {
			what = "agent keeps"
		}
		return fmt.Sprintf("orcr: %d %s running under a background orcr serve (pid %d) on %s; `orcr` reconnects, `orcr agent ls` lists them",
			res.Panes, what, res.PID, res.Socket)
	}
	return fmt.Sprintf("orcr: a background orcr serve (pid %d) on %s keeps the agents, listeners, schedules and runs going; `orcr` reconnects, `kill %d` stops it",
		res.PID, res.Socket, res.PID)
}

// notifyOptions turns [notify] into the dashboard's options, choosing how a desktop
// notification reaches the user: notify-send when it is installed and a desktop
// session is there to show it, else the terminal's own sequence — OSC 777 on the
// terminals known to take it (VTE, foot, urxvt, WezTerm), OSC 9 on the rest.
func notifyOptions(n config.Notify, getenv func(string) string, lookPath func(string) (string, error)) ui.NotifyOptions {
	o := ui.NotifyOptions{Off: map[string]bool{}, NoBell: !config.On(n.Bell), NoDesktop: !config.On(n.Desktop), OSC: n.OSC}
	for k, on := range n.Kinds() {
		if !on {
			o.Off[k] = true
		}
	}
	if getenv("DISPLAY") != "" || getenv("WAYLAND_DISPLAY") != "" || getenv("DBUS_SESSION_BUS_ADDRESS") != "" {
		if p, err := lookPath("notify-send"); err == nil {
			o.NotifySend = p
		}
	}
	if o.OSC == "" {
		o.OSC = "9"
		term := getenv("TERM")
		if getenv("VTE_VERSION") != "" || getenv("TERM_PROGRAM") == "WezTerm" || strings.HasPrefix(term, "foot") || strings.Contains(term, "rxvt") {
			o.OSC = "777"
		}
	}
	return o
}

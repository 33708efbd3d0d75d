// Command fakeherdr is a TEST-ONLY stand-in for the `herdr` binary. It implements the
// subset of herdr's command line orcr uses, on top of the herdrtest server:
//
//	fakeherdr --version                         prints "herdr 0.8.0"
//	fakeherdr [--session NAME] server           headless server in the foreground
//	fakeherdr integration install|uninstall T   records/removes integration T
//	fakeherdr integration status                "claude: current (v7) (<path>)" lines
//	fakeherdr [--session NAME] session stop     server.stop over the socket
//
// Socket paths follow herdr's rules (reference §1.1): --session beats
// HERDR_SOCKET_PATH beats HERDR_SESSION; the config dir is $XDG_CONFIG_HOME/herdr or
// $HOME/.config/herdr. Integrations are recorded under <config>/fakeherdr/integrations
// instead of the agents' own config dirs, so tests never touch a real ~/.claude.
// FAKEHERDR_PROTOCOL=N makes the server report protocol N (to test refusal).
// Point ORCR_HERDR_BIN at a build of this program in end-to-end tests.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"orcr/herdr/herdrtest"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func configDir() string {
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "herdr")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".config", "herdr")
}

func integrationDir() string { return filepath.Join(configDir(), "fakeherdr", "integrations") }

func run(args []string) int {
	session := ""
	var rest []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--session" && i+1 < len(args):
			session = args[i+1]
			i++
		case strings.HasPrefix(a, "--session="):
			session = strings.TrimPrefix(a, "--session=")
		case a == "--version" || a == "-V":
			fmt.Println("herdr " + herdrtest.Version)
			return 0
		default:
			rest = append(rest, a)
		}
	}
	sock := socketPath(session)
	if len(rest) == 0 {
		fmt.Fprintln(os.Stderr, "fakeherdr: the TUI client is not implemented; use `server`")
		return 2
	}
	switch rest[0] {
	case "version":
		fmt.Println("herdr " + herdrtest.Version)
		return 0
	case "server":
		return serve(sock)
	case "integration":
		return integration(rest[1:])
	case "session":
		if len(rest) >= 2 && rest[1] == "stop" {
			if len(rest) >= 3 {
				sock = herdrtest.SocketPath(configDir(), rest[2])
			}
			return stop(sock)
		}
	}
	fmt.Fprintf(os.Stderr, "fakeherdr: unsupported command %q\n", strings.Join(rest, " "))
	return 2
}

// socketPath applies herdr's precedence: --session > HERDR_SOCKET_PATH > HERDR_SESSION.
func socketPath(session string) string {
	if session != "" {
		return herdrtest.SocketPath(configDir(), session)
	}
	if p := os.Getenv("HERDR_SOCKET_PATH"); p != "" {
		return p
	}
	return herdrtest.SocketPath(configDir(), os.Getenv("HERDR_SESSION"))
}

func serve(sock string) int {
	opts := herdrtest.Options{SocketPath: sock, IntegrationDir: integrationDir()}
	if v := os.Getenv("FAKEHERDR_PROTOCOL"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fakeherdr: FAKEHERDR_PROTOCOL must be a number")
			return 2
		}
		opts.Protocol = n
	}
	srv, err := herdrtest.Start(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "herdr server (fake) %s listening on %s\n", herdrtest.Version, sock)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case <-sig:
		_ = srv.Close()
	case <-srv.Done():
	}
	return 0
}

func integration(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: herdr integration install|uninstall|status [target]")
		return 2
	}
	switch args[0] {
	case "install", "uninstall":
		if len(args) < 2 {
			fmt.Fprintf(os.Stderr, "usage: herdr integration %s <target>\n", args[0])
			return 2
		}
		target := strings.ReplaceAll(args[1], "-", "_")
		if args[0] == "uninstall" {
			_ = os.Remove(filepath.Join(integrationDir(), target))
			fmt.Printf("removed %s integration\n", args[1])
			return 0
		}
		if err := herdrtest.RecordIntegration(integrationDir(), target); err != nil {
			fmt.Fprintf(os.Stderr, "error: integration_install_failed: %v\n", err)
			return 1
		}
		fmt.Printf("installed %s integration (%s)\n", args[1], filepath.Join(integrationDir(), target))
		return 0
	case "status":
		for _, t := range []string{"claude", "codex", "opencode", "pi"} {
			path := filepath.Join(integrationDir(), t)
			switch v := herdrtest.IntegrationRecorded(integrationDir(), t); {
			case v == 0:
				fmt.Printf("%s: not installed\n", t)
			case v < herdrtest.IntegrationVersion:
				fmt.Printf("%s: outdated (v%d < v%d) (%s)\n", t, v, herdrtest.IntegrationVersion, path)
			default:
				fmt.Printf("%s: current (v%d) (%s)\n", t, v, path)
			}
		}
		return 0
	}
	fmt.Fprintf(os.Stderr, "fakeherdr: unsupported integration command %q\n", args[0])
	return 2
}

func stop(sock string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		fmt.Fprintf(os.Stderr, "herdr server is not running (%v)\n", err)
		return 1
	}
	defer c.Close()
	_, _ = c.Write([]byte(`{"id":"stop","method":"server.stop","params":{}}` + "\n"))
	var resp map[string]json.RawMessage
	if err := json.NewDecoder(c).Decode(&resp); err != nil {
		fmt.Fprintln(os.Stderr, errors.New("no reply to server.stop"))
		return 1
	}
	return 0
}

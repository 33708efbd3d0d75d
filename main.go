// Command orcr runs many coding agents as real interactive TUIs in panes it owns, and
// gives one small surface to spawn, message, await, read and stop them. The command
// line is package cli, a client of the server; package daemon is the server's wiring.
package main

import (
	_ "0orcr/fast" // commands answered before the rest is initialised (fast/doc.go)

	"context"
	"os"
	"os/signal"
	"syscall"

	"orcr/cli"
	"orcr/daemon"
)

func main() {
	if len(os.Args) > 2 && os.Args[1] == "sandbox" && os.Args[2] == "exec" {
		// The launcher of every confined agent's pane: straight to the exec, without
		// building the command tree (`orcr sandbox exec --help` still gets it).
		if code, ok := cli.SandboxExec(os.Args[3:], os.Stderr); ok {
			os.Exit(code)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args, cli.Options{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Daemon: daemon.Entries()})
	stop()
	os.Exit(code)
}

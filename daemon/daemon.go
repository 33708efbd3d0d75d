// Package daemon wires orcr's server: it opens the store, discovers and starts the
// host (one discovery, shared with `orcr doctor`), builds the providers and the
// engine, serves the socket, hands embedded-host panes to a background server when
// the dashboard quits with "keep", reloads the config on SIGHUP, and hosts the
// dashboard's in-process server. It is the only package that imports the
// implementations (store, hosts, adapters); the command line (package cli) gets what
// it needs from here as the funcs of cli.Daemon.
package daemon

import (
	"orcr/adapters/hook"
	"orcr/cli"
)

// Entries are the daemon's entry points for the command line.
func Entries() cli.Daemon {
	return cli.Daemon{Serve: Serve, Dashboard: Dashboard, Probe: Probe, Hook: hook.Run}
}

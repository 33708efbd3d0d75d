// Package fast is the start of the orcr binary for the commands a user runs most: it
// answers them before the rest of the binary's packages are initialised.
//
// Go initialises packages one at a time, each after the packages it imports, and among
// the packages ready to be initialised always the one whose import path sorts first
// (the Go spec, "Package initialization", since Go 1.21). This package's module path,
// 0orcr/fast, sorts before every other import path in the binary ("0" before any letter),
// and it imports only the standard library, so its init runs right after the few
// standard packages it needs, before any of the server's, the dashboard's or their
// libraries' inits (badger, bubbletea, the MCP SDK, x/crypto/ssh, ...). A command it
// handles is answered from that init and the process exits; anything else returns
// from the init and the whole binary runs as before.
//
// It is a module of its own (replaced in orcr's go.mod with ./fast) because every
// package of the module orcr has a path that starts with "orcr/", which sorts after
// the libraries'. It cannot import orcr's packages (they would pull the libraries'
// inits in first); `go test ./...` at the repository's root does not reach it, so
// scripts/test tests it on its own.
//
// Which standard packages it imports matters as much: a package is initialised only
// when it is the first ready one by path, so while fast waits for a standard package
// whose path sorts after "github.com" (os, strings, syscall, time — unavoidable) the
// libraries that are ready by then run their inits first. Those are a few leaf
// packages (11 with init work); text/tabwriter or path/filepath, which sort after
// "orcr/", would let 170 of the libraries' and orcr's packages in first, so it lays
// out columns itself (table.go) and joins paths with package path.
//
// The plainest `orcr agent run` (no --json, no --provider) is answered earlier still,
// by package early (fast/early), which imports no encoding/json: this package waits
// for it, and 30 more packages' inits (the FIPS crypto packages, encoding/gob) ran
// before this one answered. early also holds Parse and the connection, which fast uses.
//
// It answers `orcr agent get [--json] [--explain] ID|PATH` and `orcr agent run [FLAGS] PATH [--]
// ARGV…` for the flags Parse takes, and `orcr agent ls [GLOB]`; nothing when ORCR_FAST=0. What it prints is
// what the full command line prints: agent get's text printer is WriteAgent on both
// paths (cli's printAgent calls it), --json is the API's result indented as
// cli's printJSON indents it, and an agent.get it cannot answer (no server, an error,
// a reply it cannot read) is left to the full command line, which makes the call
// again and words the error. An agent.run is sent once: after it went out, the fast
// path prints whatever came back, the server's error as cli.ExitCode prints it.
package fast

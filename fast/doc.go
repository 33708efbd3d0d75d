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
package fast

// Command floor is the start-up floor of the one orcr binary: it links every package
// orcr links (main's own call into cli.Run sits behind a condition the compiler cannot
// decide, so the linker keeps the same code), yet its main returns at once. Its cost
// against an empty Go program is the runtime and page faults of a binary this size plus
// every package's init; against `orcr --version`, what orcr's own main does.
package main

import (
	"context"
	"os"

	"orcr/cli"
	"orcr/daemon"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "--really-run-orcr" {
		os.Exit(cli.Run(context.Background(), os.Args[1:], cli.Options{Stdin: os.Stdin, Stdout: os.Stdout,
			Stderr: os.Stderr, Daemon: daemon.Entries()}))
	}
}

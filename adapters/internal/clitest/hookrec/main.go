// Command hookrec stands in for the orcr binary in adapter tests that run a real CLI
// before the engine exists: invoked as `hookrec hook <provider> <event>`, it runs the
// real hook.Run and, instead of sending hook.report over the socket, appends the
// report as one JSON line to the file named by $ORCR_HOOKREC. $ORCR_HOOKREC_SLOW names
// an event whose report waits 500 ms first, as a hook of a loaded machine would.
package main

import (
	"context"
	"encoding/json"
	"os"
	"time"

	"orcr/adapters/hook"
	"orcr/core/wire"
)

func main() {
	if len(os.Args) < 4 || os.Args[1] != "hook" {
		os.Exit(2)
	}
	report := func(ctx context.Context, p wire.HookParams) error {
		if slow := os.Getenv("ORCR_HOOKREC_SLOW"); slow != "" && slow == os.Args[3] {
			time.Sleep(500 * time.Millisecond)
		}
		b, err := json.Marshal(p)
		if err != nil {
			return err
		}
		f, err := os.OpenFile(os.Getenv("ORCR_HOOKREC"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.Write(append(b, '\n'))
		return err
	}
	if err := hook.Run(context.Background(), os.Args[2], os.Args[3], os.Stdin, os.Stdout, os.Getenv, report); err != nil {
		os.Exit(1)
	}
}

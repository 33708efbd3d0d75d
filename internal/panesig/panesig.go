// Package panesig gives the programs a process starts in terminals it owns (panes) the
// default dispositions of the signals a terminal delivers, whatever this process was
// started with — as a terminal multiplexer does for its panes.
package panesig

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// once guards RestoreIgnored. The package does nothing when it is initialised (orcr's
// fast commands answer before most packages are: fast.TestFastPathRunsBeforeTheLibraries).
var once sync.Once

// RestoreIgnored makes the programs this process starts from now on begin with default
// SIGINT, SIGQUIT and SIGHUP even when the process was started with them ignored
// (nohup, `orcr serve &` in a script, a test binary run in a script's background job):
// ignored signals survive exec, and a pane's program would shrug off ctrl-c and
// hangups. A caught signal is reset to default by exec, so catching (and dropping)
// them fixes the panes while this process keeps not reacting to them.
func RestoreIgnored() {
	once.Do(func() {
		// Nobody reads sink: the signals are dropped, as they were when ignored.
		sink := make(chan os.Signal, 1)
		for _, sig := range []os.Signal{syscall.SIGINT, syscall.SIGQUIT, syscall.SIGHUP} {
			if signal.Ignored(sig) {
				signal.Notify(sink, sig)
			}
		}
	})
}

// Package api is what the clients (cli, ui) know of the listeners feature (DESIGN
// §11) beside the wire: how a listener is shown.
package api

import (
	"fmt"
	"time"

	"orcr/core"
)

// Row is a listener's line in `orcr listener ls` and the dashboard: NAME SOURCE
// LAST-POLL NEXT FIRED HELD STATE.
func Row(l Listener, now time.Time) []string {
	last, next := "never", "-"
	if l.LastPoll != nil {
		last = core.FormatSpan(now.Sub(*l.LastPoll)) + " ago"
	}
	if l.NextPoll != nil && l.State == "enabled" {
		next = "now"
		if d := l.NextPoll.Sub(now); d >= time.Second {
			next = core.FormatSpan(d)
		}
	}
	state := l.State
	if state == "enabled" && l.LastError != "" && l.Failures > 0 {
		state = fmt.Sprintf("failing (%d)", l.Failures)
	}
	return []string{l.Name, core.Dash(l.Source), last, next, fmt.Sprint(l.Fires), fmt.Sprint(l.Held), state}
}

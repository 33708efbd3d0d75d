// Package rows formats the features' records as the rows of their tables, for the
// command line and the dashboard alike (one copy of each row): listeners and finished
// agents. It is display code beside the kernel, which formats only agents
// (core.TableRow); it imports the features' api packages, never a feature.
package rows

import (
	"fmt"
	"strconv"
	"time"

	"orcr/core"
	listenapi "orcr/listen/api"
	roleapi "orcr/roles/api"
)

// Listener is a listener's line in `orcr listener ls` and the dashboard: NAME
// SOURCE LAST-POLL NEXT FIRED HELD STATE.
func Listener(l listenapi.Listener, now time.Time) []string {
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

// HistoryColumns are the columns of `orcr history`.
var HistoryColumns = []string{"ENDED", "PATH", "ROLE", "PROVIDER", "MODEL", "DURATION", "TOKENS", "COST", "RESULT"}

// History is a finished agent's line in `orcr history` and the dashboard's history
// view, as the columns of HistoryColumns.
func History(e roleapi.AgentHistoryEntry, now time.Time) []string {
	tokens := "-"
	if e.Tokens > 0 {
		tokens = core.HumanCount(e.Tokens)
	}
	cost := "-"
	if e.CostUSD != nil {
		cost = "$" + strconv.FormatFloat(*e.CostUSD, 'f', 2, 64)
	}
	res := e.Result
	if len(res) > 60 {
		res = res[:57] + "..."
	}
	return []string{core.FormatAge(now.Sub(e.EndedAt)) + " ago", e.Path, core.Dash(e.Role), e.Provider, core.Dash(e.Model),
		(time.Duration(e.DurationSeconds) * time.Second).String(), tokens, cost, res}
}

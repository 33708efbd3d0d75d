// Package api is what the clients (cli, ui) know of the roles feature (DESIGN §12)
// beside the wire: how a finished agent is shown in the history.
package api

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"orcr/core"
)

// HistoryColumns are the columns of `orcr history`.
var HistoryColumns = []string{"ENDED", "PATH", "ROLE", "PROVIDER", "MODEL", "DURATION", "TOKENS", "COST", "RESULT"}

// HistoryRow is a finished agent's line in `orcr history` and the dashboard's history
// view, as the columns of HistoryColumns.
func HistoryRow(e AgentHistoryEntry, now time.Time) []string {
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

// ParseSince reads the --since of `orcr history` (and the dashboard's history filter):
// a Go duration or a number of days ("7d").
func ParseSince(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		var days int
		if _, err := fmt.Sscanf(n, "%d", &days); err == nil && days > 0 && fmt.Sprint(days) == n {
			return time.Duration(days) * 24 * time.Hour, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("--since %q: use a duration such as 24h, 90m or 7d", s)
	}
	return d, nil
}

package core

import (
	"fmt"
	"time"

	"orcr/core/wire"
)

// Display formatting shared by every terminal surface (CLI tables, top, server-side
// table rows), so an agent reads the same everywhere.

// TableColumns are the columns of `orcr agent ls`.
var TableColumns = []string{"PATH", "STATE", "PROVIDER", "MODEL", "AGE", "TOKENS", "COST", "ID"}

// TableRow renders one agent as the columns of TableColumns.
func TableRow(a wire.Agent, now time.Time) []string {
	state := string(a.State)
	if a.State == wire.StateQueued && a.QueuePos > 0 {
		state = fmt.Sprintf("queued#%d", a.QueuePos)
	}
	state += ExitSuffix(a)
	return []string{a.Path, state, a.Provider, Dash(a.Model), FormatAge(now.Sub(a.CreatedAt)),
		FormatTokens(a.Usage), FormatCost(a), ShortID(a.ID)}
}

// ExitSuffix is " (exit N)" for agents with an exit code.
func ExitSuffix(a wire.Agent) string {
	if a.ExitCode != nil {
		return fmt.Sprintf(" (exit %d)", *a.ExitCode)
	}
	return ""
}

// Dash shows "-" for an empty value.
func Dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// ShortID is the first 13 characters of an id (the UUIDv7 time part), enough to be
// unique in practice and accepted as a target prefix.
func ShortID(id string) string {
	if len(id) > 13 {
		return id[:13]
	}
	return id
}

// FormatAge is a compact age: 42s, 5m, 3h, 2d.
func FormatAge(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// FormatTokens is "in/out" with input including cache reads and writes, or "-".
func FormatTokens(u wire.Usage) string {
	if u.InputTokens+u.OutputTokens+u.CacheReadTokens+u.CacheWriteTokens == 0 {
		return "-"
	}
	return HumanCount(u.InputTokens+u.CacheReadTokens+u.CacheWriteTokens) + "/" + HumanCount(u.OutputTokens)
}

// HumanCount is 950, 12.3k, 4.1M.
func HumanCount(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprintf("%d", n)
}

// FormatCost is "$0.12", "unpriced" for tokens of an unknown model, or "-".
func FormatCost(a wire.Agent) string {
	if a.Usage.CostUSD != nil {
		return fmt.Sprintf("$%.2f", *a.Usage.CostUSD)
	}
	if a.Provider == "shell" || FormatTokens(a.Usage) == "-" {
		return "-"
	}
	return "unpriced"
}

// FormatSpan is a short span with two units: 40s, 1m20s, 2h5m, 3d4h.
func FormatSpan(d time.Duration) string {
	d = d.Round(time.Second)
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		m, s := int(d/time.Minute), int(d%time.Minute/time.Second)
		if s == 0 {
			return fmt.Sprintf("%dm", m)
		}
		return fmt.Sprintf("%dm%ds", m, s)
	case d < 48*time.Hour:
		h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
		if m == 0 {
			return fmt.Sprintf("%dh", h)
		}
		return fmt.Sprintf("%dh%dm", h, m)
	}
	return fmt.Sprintf("%dd%dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}

// ListenerRow is a listener's line in `orcr listener ls` and the dashboard: NAME
// SOURCE LAST-POLL NEXT FIRED HELD STATE.
func ListenerRow(l wire.Listener, now time.Time) []string {
	last, next := "never", "-"
	if l.LastPoll != nil {
		last = FormatSpan(now.Sub(*l.LastPoll)) + " ago"
	}
	if l.NextPoll != nil && l.State == "enabled" {
		next = "now"
		if d := l.NextPoll.Sub(now); d >= time.Second {
			next = FormatSpan(d)
		}
	}
	state := l.State
	if state == "enabled" && l.LastError != "" && l.Failures > 0 {
		state = fmt.Sprintf("failing (%d)", l.Failures)
	}
	return []string{l.Name, Dash(l.Source), last, next, fmt.Sprint(l.Fires), fmt.Sprint(l.Held), state}
}

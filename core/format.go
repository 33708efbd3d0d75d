package core

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"0orcr/fast"
	"orcr/core/wire"
)

// Display formatting shared by every surface (CLI tables, `orcr top`, `orcr usage`,
// server-side table rows and the dashboard), so an agent reads the same everywhere.
// Tokens are always "in/out" (input counting cache reads and writes); a cost is
// "$0.12", "unpriced" when tokens were used on a model without a price, and "-" when
// nothing was used. Never "$0.00" for an unknown price.

// TableColumns are the columns of `orcr agent ls`. WAITS-ON, free text of any
// length, comes last so the fixed columns stay aligned and in their places.
var TableColumns = []string{"PATH", "STATE", "PROVIDER", "MODEL", "AGE", "TOKENS", "COST", "ID", "WAITS-ON"}

// TableRow renders one agent as the columns of TableColumns.
func TableRow(a wire.Agent, now time.Time) []string {
	state := string(a.State)
	if a.State == wire.StateQueued && a.QueuePos > 0 {
		state = fmt.Sprintf("queued#%d", a.QueuePos)
	}
	state += ExitSuffix(a)
	if a.Unreachable && !a.State.Terminal() {
		state = "unreachable"
	}
	return []string{a.Path, state, a.Provider, Dash(a.Model), FormatAge(now.Sub(a.CreatedAt)),
		FormatTokens(a.Usage), FormatCost(a), ShortID(a.ID), Dash(WaitsOn(a))}
}

// withNodeColumn adds a NODE column after STATE when some agent listed runs on a node
// (DESIGN §14): "local" for this machine's. With no node in the list it stays hidden.
func withNodeColumn(t *wire.Table, as []wire.Agent) {
	any := false
	for _, a := range as {
		if a.Node != "" {
			any = true
			break
		}
	}
	if !any {
		return
	}
	t.Columns = append(append(append([]string{}, t.Columns[:2]...), "NODE"), t.Columns[2:]...)
	for i, a := range as {
		n := a.Node
		if n == "" {
			n = "local"
		}
		r := t.Rows[i]
		t.Rows[i] = append(append(append([]string{}, r[:2]...), n), r[2:]...)
	}
}

// WaitsOn is what a blocked agent waits for, on one line of at most 60 characters:
// "permission: Bash(rm -rf build)", "question: Proceed? [y/N]", "limit: resets 15:04
// UTC"; "" for an agent that waits on nobody.
func WaitsOn(a wire.Agent) string {
	b := a.Blocked
	if a.State != wire.StateBlocked || b == nil {
		return ""
	}
	what := b.Detail
	if what == "" {
		what = b.Question
	}
	if b.ResetsAt != nil {
		what = strings.TrimSpace(what + " resets " + b.ResetsAt.UTC().Format("15:04 UTC"))
	}
	what = strings.Join(strings.Fields(what), " ")
	if r := []rune(what); len(r) > 60 {
		what = string(r[:59]) + "…"
	}
	kind := b.Kind
	if kind == "" {
		kind = "input"
	}
	if what == "" {
		return kind
	}
	return kind + ": " + what
}

// ExitSuffix is " (exit N)" for agents with an exit code.
func ExitSuffix(a wire.Agent) string {
	if a.ExitCode != nil {
		return fmt.Sprintf(" (exit %d)", *a.ExitCode)
	}
	return ""
}

// Failed reports whether an agent ended in failure: it could not start, or its process
// exited with a code other than 0. Surfaces colour such agents as failures.
func Failed(a wire.Agent) bool {
	return a.State == wire.StateFailed || a.ExitCode != nil && *a.ExitCode != 0
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

// FormatAge is a compact age: 42s, 5m, 3h, 2d. A negative duration (an instant already
// passed, a clock step) is 0s.
func FormatAge(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return strconv.Itoa(int(d.Seconds())) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d.Minutes())) + "m"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d.Hours())) + "h"
	}
	return strconv.Itoa(int(d.Hours()/24)) + "d"
}

// FormatTokens is "in/out" with input including cache reads and writes, or "-".
func FormatTokens(u wire.Usage) string { return TotalOf(u).Tokens() }

// FormatCost is the cost of one agent: "$0.12", "unpriced" for tokens of a model with
// no price, or "-" when it used no tokens.
func FormatCost(a wire.Agent) string { return TotalOf(a.Usage).Cost() }

// FormatUsageCost is FormatCost for a usage row or any other wire.Usage.
func FormatUsageCost(u wire.Usage) string { return TotalOf(u).Cost() }

// HumanCount is a count in at most four characters: 950, 9.5k, 26k, 999k, 1.2M, 15M.
// Three significant digits are enough to compare agents at a glance and keep "in/out"
// narrow enough for a tree column; --json has the exact numbers.
func HumanCount(n int64) string {
	var b [8]byte
	return string(appendCount(b[:0], n))
}

// appendCount appends HumanCount(n) to dst. The dashboard formats these for every
// visible row of every frame, so they are built without fmt.
func appendCount(dst []byte, n int64) []byte { return fast.AppendCount(dst, n) }

// FormatUSD is "$0.12", or "$123" from $100 up, where cents no longer matter.
func FormatUSD(usd float64) string {
	var b [16]byte
	return string(appendUSD(b[:0], usd))
}

func appendUSD(dst []byte, usd float64) []byte {
	if math.Abs(usd) < 0.005 {
		usd = 0 // no "-0.00" from sums that went up and down
	}
	prec := 2
	if usd >= 100 {
		prec = 0
	}
	return strconv.AppendFloat(append(dst, '$'), usd, 'f', prec, 64)
}

// Total sums usage over agents for display: tree roll-ups, per-provider lines. It
// counts how many agents had a price and how many used tokens without one, so a sum
// can say that part of it is unknown instead of passing it off as complete. Totals
// can be subtracted again, so a roll-up can follow one agent's change without a
// recount.
type Total struct {
	In, Out  int64   // input tokens (with cache reads and writes) and output tokens
	USD      float64 // the summed cost of the priced agents
	Priced   int     // agents with a cost
	Unpriced int     // agents that used tokens on a model without a price
}

// TotalOf is the Total of one agent's (or one row's) usage.
func TotalOf(u wire.Usage) Total {
	t := Total{In: u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens, Out: u.OutputTokens}
	used := t.In+t.Out > 0
	switch {
	case u.CostUSD != nil && (used || *u.CostUSD > 0):
		t.USD, t.Priced = *u.CostUSD, 1
	case used:
		t.Unpriced = 1
	}
	return t
}

// Add adds o to t.
func (t *Total) Add(o Total) {
	t.In += o.In
	t.Out += o.Out
	t.USD += o.USD
	t.Priced += o.Priced
	t.Unpriced += o.Unpriced
}

// Sub takes o (added before) out of t again.
func (t *Total) Sub(o Total) {
	t.In -= o.In
	t.Out -= o.Out
	t.USD -= o.USD
	t.Priced -= o.Priced
	t.Unpriced -= o.Unpriced
}

// Tokens is "in/out" (e.g. 26k/500), or "-" when no tokens were used.
func (t Total) Tokens() string {
	if t.In+t.Out <= 0 {
		return "-"
	}
	var b [16]byte
	return string(appendCount(append(appendCount(b[:0], t.In), '/'), t.Out))
}

// Cost is "$4.20"; "$4.20+" when some of the agents used tokens without a price (the
// sum covers only the priced ones); "unpriced" when none had a price; "-" when
// nothing was used.
func (t Total) Cost() string {
	switch {
	case t.Priced > 0 && t.Unpriced > 0:
		var b [16]byte
		return string(append(appendUSD(b[:0], t.USD), '+'))
	case t.Priced > 0:
		return FormatUSD(t.USD)
	case t.Unpriced > 0:
		return "unpriced"
	}
	return "-"
}

// FormatEstimate is a plan estimate as people write it: 20m, 1h30m, 2h; "-" for none.
func FormatEstimate(seconds int) string {
	if seconds <= 0 {
		return "-"
	}
	d := time.Duration(seconds) * time.Second
	h, m := int(d.Hours()), int(d.Minutes())%60
	switch {
	case h == 0 && m == 0:
		return fmt.Sprintf("%ds", seconds)
	case h == 0:
		return fmt.Sprintf("%dm", m)
	case m == 0:
		return fmt.Sprintf("%dh", h)
	}
	return fmt.Sprintf("%dh%dm", h, m)
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

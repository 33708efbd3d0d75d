package ui

import (
	"fmt"
	"sort"
	"strings"

	"orcr/core"
	"orcr/core/wire"
)

// readingLines draws a provider's limit readings: a bar per account and window (5h,
// weekly, per model family), its axis ending at the limit itself, with the reset
// time and how many queued agents the window holds (read off the queue's reasons,
// which the accounts gate words as "<provider>/<account> <window> …").
func readingLines(c *common, rs []wire.LimitReading, gw int, queue []wire.QueueEntry) []string {
	st := &c.styles
	sort.Slice(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if a.Account != b.Account {
			return a.Account < b.Account
		}
		if a.Window != b.Window {
			return a.Window < b.Window
		}
		return a.Family < b.Family
	})
	var out []string
	acct := "\x00"
	for _, r := range rs {
		if r.Account != acct {
			acct = r.Account
			if acct != "" {
				out = append(out, "  "+st.Bold.Render(acct))
			}
		}
		name := r.Window
		if r.Family != "" {
			name += " " + r.Family
		}
		reset := r.ResetsAt != nil && !r.ResetsAt.After(c.now)
		used := r.UsedPct
		if reset {
			used = 0 // the window has reset since this reading
		}
		indent, nameW := "  ", 7 // readings of no account (older servers) keep the flat layout
		if acct != "" {
			indent, nameW = "    ", 13
		}
		line := indent + fit(name, nameW) + gauge(c, used/100, gw, r.LimitHit && !reset) + st.Text.Render(fmt.Sprintf(" %3.0f%%", used))
		switch {
		case reset:
			line += st.Muted.Render(" reset")
		case r.LimitHit || r.UsedPct >= 100:
			line += " " + st.Danger.Render("LIMIT")
		}
		if r.ResetsAt != nil && !reset {
			line += st.Muted.Render(" resets " + r.ResetsAt.UTC().Format("Jan 2 15:04") + " (in " + core.FormatAge(r.ResetsAt.Sub(c.now)) + ")")
		}
		prefix := r.Provider + "/" + r.Account + " " + name + " "
		held := 0
		for _, e := range queue {
			if strings.HasPrefix(e.Waiting, prefix) {
				held++
			}
		}
		if held > 0 {
			line += " " + st.Danger.Render(fmt.Sprintf("holds %d", held))
		}
		out = append(out, line)
	}
	return out
}

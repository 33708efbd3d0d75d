package queue

import (
	"sort"
	"testing"
	"time"

	"orcr/core/wire"
)

// phaseStats summarises, from the event log, how long agents spent between admission
// and launch and between launch and the recorded exit.
func phaseStats(t testing.TB, evs []wire.Event) {
	type ph struct{ start, work, end time.Time }
	m := map[string]*ph{}
	for _, ev := range evs {
		if ev.Event != wire.EventAgentState || ev.Agent == nil {
			continue
		}
		p := m[ev.Agent.ID]
		if p == nil {
			p = &ph{}
			m[ev.Agent.ID] = p
		}
		switch {
		case ev.To == wire.StateStarting:
			p.start = ev.At
		case ev.To == wire.StateWorking && p.work.IsZero():
			p.work = ev.At
		case ev.To.Terminal():
			p.end = ev.At
		}
	}
	// Admission lag: from an exit to the next admission, while agents still wait.
	var lag []time.Duration
	var lastEnd time.Time
	for _, ev := range evs {
		if ev.Event != wire.EventAgentState || ev.Agent == nil {
			continue
		}
		switch {
		case ev.To.Terminal():
			if lastEnd.IsZero() {
				lastEnd = ev.At
			}
		case ev.To == wire.StateStarting && !lastEnd.IsZero():
			lag = append(lag, ev.At.Sub(lastEnd))
			lastEnd = time.Time{}
		}
	}
	var launch, run []time.Duration
	for _, p := range m {
		if !p.start.IsZero() && !p.work.IsZero() {
			launch = append(launch, p.work.Sub(p.start))
		}
		if !p.work.IsZero() && !p.end.IsZero() {
			run = append(run, p.end.Sub(p.work))
		}
	}
	q := func(d []time.Duration) string {
		if len(d) == 0 {
			return "-"
		}
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[len(d)/2].Round(time.Millisecond).String() + " p90 " + d[len(d)*9/10].Round(time.Millisecond).String()
	}
	t.Logf("exit→next admission median %s; admitted→launched median %s; launched→exit recorded median %s", q(lag), q(launch), q(run))
}

package listen

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Limiter keeps a listener's rate limits as rolling windows over its dispatch times: a
// dispatch at t counts against a window of length per until t+per. A dispatch must fit
// under every window. It is a value the tick owns; the times are what the store keeps.
type Limiter struct {
	limits []RateLimit
	times  []time.Time // ascending, pruned to the longest window
}

// NewLimiter starts from the stored dispatch times (any order).
func NewLimiter(limits []RateLimit, times []time.Time) *Limiter {
	l := &Limiter{limits: slices.Clone(limits), times: slices.Clone(times)}
	slices.SortFunc(l.times, time.Time.Compare)
	return l
}

func (l *Limiter) longest() time.Duration {
	var d time.Duration
	for _, r := range l.limits {
		d = max(d, r.Per)
	}
	return d
}

func (l *Limiter) prune(now time.Time) {
	cut := now.Add(-l.longest())
	i := 0
	for i < len(l.times) && !l.times[i].After(cut) {
		i++
	}
	l.times = l.times[i:]
}

// inWindow is how many dispatches count against a window of length per at now.
func (l *Limiter) inWindow(per time.Duration, now time.Time) []time.Time {
	cut := now.Add(-per)
	i, _ := slices.BinarySearchFunc(l.times, cut, func(t, c time.Time) int {
		if t.After(c) {
			return 1
		}
		return -1
	})
	return l.times[i:]
}

// Allow says whether one more dispatch at now fits under every window.
func (l *Limiter) Allow(now time.Time) bool {
	for _, r := range l.limits {
		if len(l.inWindow(r.Per, now)) >= r.Max {
			return false
		}
	}
	return true
}

// Record counts a dispatch at now.
func (l *Limiter) Record(now time.Time) {
	l.prune(now)
	i, _ := slices.BinarySearchFunc(l.times, now, time.Time.Compare)
	l.times = slices.Insert(l.times, i, now)
}

// NextAt is the earliest time a dispatch fits (now when it fits already): the latest,
// over the full windows, of the moment enough of their dispatches have aged out.
func (l *Limiter) NextAt(now time.Time) time.Time {
	at := now
	for _, r := range l.limits {
		w := l.inWindow(r.Per, now)
		if len(w) >= r.Max {
			free := w[len(w)-r.Max].Add(r.Per)
			if free.After(at) {
				at = free
			}
		}
	}
	return at
}

// Times returns the dispatch times still inside the longest window, for the store.
func (l *Limiter) Times(now time.Time) []time.Time {
	l.prune(now)
	return slices.Clone(l.times)
}

// Standing is where one window stands.
type Standing struct {
	RateLimit
	Used   int
	NextAt time.Time // zero when the window has room
}

// String reads "5 per 1h (5 used, next at 21:12)"; the time is in now's location.
func (s Standing) String() string {
	out := fmt.Sprintf("%d per %s (%d used", s.Max, s.Text, s.Used)
	if !s.NextAt.IsZero() {
		out += ", next at " + s.NextAt.Format("15:04")
	}
	return out + ")"
}

// Standings reports every window at now.
func (l *Limiter) Standings(now time.Time) []Standing {
	out := make([]Standing, 0, len(l.limits))
	for _, r := range l.limits {
		if r.Text == "" {
			r.Text = FormatPeriod(r.Per)
		}
		w := l.inWindow(r.Per, now)
		s := Standing{RateLimit: r, Used: len(w)}
		if len(w) >= r.Max {
			s.NextAt = w[len(w)-r.Max].Add(r.Per).In(now.Location())
		}
		out = append(out, s)
	}
	return out
}

// Describe joins the standings: "5 per 1h (2 used); 20 per day (9 used)".
func (l *Limiter) Describe(now time.Time) string {
	var parts []string
	for _, s := range l.Standings(now) {
		parts = append(parts, s.String())
	}
	return strings.Join(parts, "; ")
}

package accounts

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	acctapi "orcr/accounts/api"
	"orcr/core/wire"
)

// Readings. Each (account, window, model family) is a series: its newest reading, the
// samples of the last 30 minutes (the burn rate), and one record per window at its
// peak (at most 240 windows: 6 months of 5-hour windows at full use is far more,
// weekly ones ~4.6 years; the oldest go first). Stored in bucket "acct.windows" under
// provider/account/window/family.

const (
	bucketWindows = "acct.windows"
	historyMax    = 240
	burnSpan      = 30 * time.Minute
	// minBurnSpan is the least time between samples that gives a burn rate.
	minBurnSpan = 5 * time.Minute
	// clockSlack is how far back a reading may be stamped before it counts as a
	// clock jump (readings from two agents arrive slightly out of order).
	clockSlack = time.Minute
)

type sample struct {
	at  time.Time
	pct float64
}

type series struct {
	cur     wire.LimitReading
	samples []sample
	peaks   []acctapi.WindowPeak // oldest first
}

type seriesRecord struct {
	V     int                  `json:"v"`
	Cur   wire.LimitReading    `json:"cur"`
	Peaks []acctapi.WindowPeak `json:"peaks"`
}

// windowSpan is a window's length, used when a limit hit does not say when it resets.
func windowSpan(w string) time.Duration {
	if w == "weekly" {
		return 7 * 24 * time.Hour
	}
	return 5 * time.Hour
}

// readingOf decodes an event's reading (a struct in process, a JSON object over the
// socket or from the store).
func readingOf(v any) (wire.LimitReading, error) {
	var r wire.LimitReading
	if x, ok := v.(wire.LimitReading); ok {
		return x, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("reading %s: %w", b, err)
	}
	return r, nil
}

// validReading refuses what cannot be a reading: it is kept out and logged, and
// never makes an account exhausted.
func validReading(r wire.LimitReading) error {
	switch {
	case r.Provider == "":
		return fmt.Errorf("no provider")
	case r.Window != "5h" && r.Window != "weekly":
		return fmt.Errorf("window %q is neither 5h nor weekly", r.Window)
	case math.IsNaN(r.UsedPct) || math.IsInf(r.UsedPct, 0) || r.UsedPct < 0 || r.UsedPct > 1000:
		return fmt.Errorf("used %v%% out of range", r.UsedPct)
	case r.ObservedAt.IsZero():
		return fmt.Errorf("no observation time")
	}
	return nil
}

// Observe takes one reading (from the event stream, or the poller).
func (s *Service) Observe(r wire.LimitReading) {
	if err := validReading(r); err != nil {
		s.log.Warn("accounts: reading kept out", "provider", r.Provider, "account", r.Account, "window", r.Window, "err", err)
		return
	}
	s.mu.Lock()
	rec, ok := s.observeLocked(r)
	s.mu.Unlock()
	if ok {
		s.persist(rec)
	}
	s.kick()
}

func (s *Service) observeLocked(r wire.LimitReading) (wire.LimitReading, bool) {
	acct := s.accountLocked(r.Provider, r.Account)
	if acct == nil && r.Account == "" && len(s.accts[r.Provider]) == 1 {
		acct = s.accts[r.Provider][0]
		r.Account = acct.spec.Label
	}
	if acct == nil {
		s.log.Warn("accounts: reading of an unknown account kept out", "provider", r.Provider, "account", r.Account)
		return r, false
	}
	if !s.lastSeen.IsZero() && r.ObservedAt.Before(s.lastSeen.Add(-clockSlack)) {
		// The clock went back (or an old reading arrived late): burn rates measured
		// across the jump are meaningless, so they start over. The reading stands.
		s.log.Warn("accounts: clock jumped back; burn rates start over", "was", s.lastSeen, "now", r.ObservedAt)
		for _, as := range s.accts {
			for _, a := range as {
				for _, se := range a.series {
					se.samples = nil
				}
			}
		}
		s.lastSeen = r.ObservedAt
	}
	if r.ObservedAt.After(s.lastSeen) {
		s.lastSeen = r.ObservedAt
	}
	if r.ResetsAt == nil && r.LimitHit {
		t := r.ObservedAt.Add(windowSpan(r.Window))
		r.ResetsAt = &t
	}
	k := seriesKey{r.Window, r.Family}
	se := acct.series[k]
	if se == nil {
		se = &series{}
		acct.series[k] = se
	}
	se.add(r)
	s.gen++
	return r, true
}

// add folds r into the series: a new window (its reset moved on) starts a new peak
// record and new burn samples.
func (se *series) add(r wire.LimitReading) {
	n := len(se.peaks)
	newWindow := n == 0 || sameWindow(se.peaks[n-1].ResetsAt, r.ResetsAt) == false
	if newWindow {
		se.samples = nil
		se.peaks = append(se.peaks, acctapi.WindowPeak{Provider: r.Provider, Account: r.Account,
			Window: r.Window, Family: r.Family, ResetsAt: r.ResetsAt, PeakPct: r.UsedPct, PeakAt: r.ObservedAt})
		if len(se.peaks) > historyMax {
			se.peaks = append(se.peaks[:0], se.peaks[len(se.peaks)-historyMax:]...)
		}
	} else if p := &se.peaks[n-1]; r.UsedPct > p.PeakPct {
		p.PeakPct, p.PeakAt = r.UsedPct, r.ObservedAt
		if p.ResetsAt == nil {
			p.ResetsAt = r.ResetsAt
		}
	}
	se.cur = r
	se.samples = append(se.samples, sample{r.ObservedAt, r.UsedPct})
	cut := 0
	for cut < len(se.samples) && r.ObservedAt.Sub(se.samples[cut].at) > burnSpan {
		cut++
	}
	se.samples = se.samples[cut:]
}

// sameWindow: two readings are of one window when their resets are within 10
// minutes (a provider rounds them), or either does not say.
func sameWindow(a, b *time.Time) bool {
	if a == nil || b == nil {
		return true
	}
	d := a.Sub(*b)
	return d < 10*time.Minute && d > -10*time.Minute
}

// burn is the rise in percent per hour over the samples (0 when too few or falling).
func (se *series) burn() float64 {
	if len(se.samples) < 2 {
		return 0
	}
	first, last := se.samples[0], se.samples[len(se.samples)-1]
	span := last.at.Sub(first.at)
	if span < minBurnSpan || last.pct <= first.pct {
		return 0
	}
	return (last.pct - first.pct) / span.Hours()
}

func seriesID(r wire.LimitReading) string {
	return r.Provider + "/" + r.Account + "/" + r.Window + "/" + r.Family
}

// persist writes the series of r.
func (s *Service) persist(r wire.LimitReading) {
	if s.store == nil {
		return
	}
	s.mu.Lock()
	var rec seriesRecord
	if a := s.accountLocked(r.Provider, r.Account); a != nil {
		if se := a.series[seriesKey{r.Window, r.Family}]; se != nil {
			rec = seriesRecord{V: 1, Cur: se.cur, Peaks: append([]acctapi.WindowPeak(nil), se.peaks...)}
		}
	}
	s.mu.Unlock()
	if rec.V == 0 {
		return
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.store.Put(ctx, bucketWindows, seriesID(r), b); err != nil {
		s.log.Warn("accounts: store window", "err", err)
	}
}

// load reads the stored series and budgets. Series of accounts no longer configured
// stay in the store (a label may come back) but are not shown.
func (s *Service) load(ctx context.Context) error {
	if s.store == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.store.Scan(ctx, bucketWindows, func(key string, v []byte) bool {
		var rec seriesRecord
		if err := json.Unmarshal(v, &rec); err != nil || rec.V != 1 {
			s.log.Warn("accounts: stored window unreadable, skipped", "key", key, "err", err)
			return true
		}
		a := s.accountLocked(rec.Cur.Provider, rec.Cur.Account)
		if a == nil {
			return true
		}
		se := &series{cur: rec.Cur, peaks: rec.Peaks}
		a.series[seriesKey{rec.Cur.Window, rec.Cur.Family}] = se
		if rec.Cur.ObservedAt.After(s.lastSeen) {
			s.lastSeen = rec.Cur.ObservedAt
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("accounts: load windows: %w", err)
	}
	return s.loadBudgetsLocked(ctx)
}

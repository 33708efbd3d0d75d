package accounts

import (
	"context"
	"sort"
	"strings"

	acctapi "orcr/accounts/api"
	"orcr/core/wire"
)

// The views: account ls, usage --select, usage --history.

// providerOrder lists providers with accounts, in a stable order.
func (s *Service) providerOrderLocked() []string {
	ps := make([]string, 0, len(s.accts))
	for p := range s.accts {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	return ps
}

// Accounts serves its socket method (methods.go).
func (s *Service) Accounts(ctx context.Context) (acctapi.AccountListResult, error) {
	// What each window holds now is read off the queue's reasons, which this gate wrote.
	var waiting []string
	if s.k != nil {
		if q, err := s.k.Queue(ctx); err == nil {
			for _, e := range q.Entries {
				waiting = append(waiting, e.Waiting)
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.opts.Settings
	res := acctapi.AccountListResult{Mode: st.Mode, Headroom: st.Headroom, Accounts: []acctapi.Account{}}
	now := s.now()
	for _, p := range s.providerOrderLocked() {
		live := s.liveLocked(p)
		for _, a := range s.accts[p] {
			wa := acctapi.Account{Provider: p, Label: a.spec.Label, Implicit: a.implicit, ConfigDir: a.spec.ConfigDir,
				Home: a.spec.Home, PerToken: a.perToken, LoggedIn: a.loggedIn, Problem: a.problem,
				Live: live[a.spec.Label], Windows: []acctapi.Window{}}
			for k := range a.spec.Env {
				wa.EnvKeys = append(wa.EnvKeys, k)
			}
			sort.Strings(wa.EnvKeys)
			for k, se := range a.series {
				w := acctapi.Window{Window: k.window, Family: k.family, UsedPct: se.cur.UsedPct, ResetsAt: se.cur.ResetsAt,
					ObservedAt: se.cur.ObservedAt, BurnPctPerHour: se.burn(), State: "ok"}
				if w.ResetsAt != nil && !w.ResetsAt.After(now) {
					w.UsedPct, w.State = 0, "reset"
				} else {
					wv := WindowView{Window: k.window, Family: k.family, UsedPct: w.UsedPct, ResetsAt: w.ResetsAt, Burn: w.BurnPctPerHour}
					v := View{Now: now, Policy: st.Policy, Provider: p}
					if ok, _, _, _ := judge(&v, &AccountView{Label: a.spec.Label, Windows: []WindowView{wv}}, Request{Family: k.family, Priority: st.HoldBelow - 1}); !ok {
						w.State = "throttled"
					}
					if w.UsedPct >= 100 {
						w.State = "exhausted"
					}
				}
				prefix := p + "/" + a.spec.Label + " " + windowName(WindowView{Window: k.window, Family: k.family}) + " "
				for _, why := range waiting {
					if strings.HasPrefix(why, prefix) {
						w.Held++
					}
				}
				wa.Windows = append(wa.Windows, w)
			}
			sort.Slice(wa.Windows, func(i, j int) bool {
				x, y := wa.Windows[i], wa.Windows[j]
				if x.Window != y.Window {
					return x.Window < y.Window
				}
				return x.Family < y.Family
			})
			res.Accounts = append(res.Accounts, wa)
		}
	}
	return res, nil
}

// Select serves its socket method (methods.go): the decision a spawn now would get.
func (s *Service) Select(ctx context.Context, p acctapi.SelectParams) (acctapi.SelectResult, error) {
	if p.Provider == "" {
		return acctapi.SelectResult{}, wire.Errorf(wire.CodeInvalidParams, "--select needs --provider")
	}
	if err := s.CheckSpawn(ctx, wire.RunParams{Provider: p.Provider, Account: p.Account}); err != nil {
		return acctapi.SelectResult{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.accts[p.Provider]) == 0 {
		return acctapi.SelectResult{Reason: p.Provider + " has no accounts: every spawn runs on the user's own setup", Accounts: []acctapi.Choice{}}, nil
	}
	d := Decide(s.viewLocked(p.Provider, s.now()), Request{Family: Family(p.Model), Priority: p.Priority, Pin: p.Account})
	return acctapi.SelectResult{Account: d.Account, Reason: d.Reason, RetryAt: d.RetryAt, Accounts: d.Choices}, nil
}

// History serves its socket method (methods.go): every series' windows at their peaks,
// newest first.
func (s *Service) History(_ context.Context, p acctapi.HistoryParams) (acctapi.HistoryResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	res := acctapi.HistoryResult{Peaks: []acctapi.WindowPeak{}}
	for _, prov := range s.providerOrderLocked() {
		if p.Provider != "" && prov != p.Provider {
			continue
		}
		for _, a := range s.accts[prov] {
			if p.Account != "" && a.spec.Label != p.Account {
				continue
			}
			keys := make([]seriesKey, 0, len(a.series))
			for k := range a.series {
				keys = append(keys, k)
			}
			sort.Slice(keys, func(i, j int) bool {
				if keys[i].window != keys[j].window {
					return keys[i].window < keys[j].window
				}
				return keys[i].family < keys[j].family
			})
			for _, k := range keys {
				pk := a.series[k].peaks
				for i := len(pk) - 1; i >= 0; i-- {
					res.Peaks = append(res.Peaks, pk[i])
				}
			}
		}
	}
	return res, nil
}

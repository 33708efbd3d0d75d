package accounts

import (
	"context"
	"strings"
	"time"

	"orcr/core/wire"
)

// The gate: admission asks it about each queued agent the caps would let start
// (Admit), tells it which it admitted (Place) and asks for an account's environment at
// launch (AccountEnv). Admit and Place run under the engine's lock: they answer from
// memory, and an answer is cached for the rest of a pass (until anything that could
// change it happens, or a second passes), so a queue of thousands costs a map lookup
// per agent.

type cacheKey struct {
	provider, family, pin string
	high                  bool // priority ≥ hold_below
}

type cached struct {
	key   cacheKey
	d     Decision
	until time.Time
}

// cacheFor is how long a decision stands when nothing changes (resets and burn rates
// move with the clock).
const cacheFor = time.Second

// Admit implements core.Gate: budgets first, then the account windows.
func (s *Service) Admit(_ context.Context, a wire.Agent) (bool, string, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if why := s.budgetHoldLocked(a.Path); why != "" {
		return false, why, time.Time{}
	}
	if len(s.accts[a.Provider]) == 0 {
		return true, "", time.Time{}
	}
	d := s.decideLocked(a.Provider, Request{Family: Family(a.Model), Priority: a.Priority, Pin: a.Account})
	if d.Account == "" {
		return false, d.Reason, d.RetryAt
	}
	return true, "", time.Time{}
}

// Place implements core.Placer: the account a just-admitted agent runs on.
func (s *Service) Place(_ context.Context, a wire.Agent) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.accts[a.Provider]) == 0 {
		return ""
	}
	d := s.decideLocked(a.Provider, Request{Family: Family(a.Model), Priority: a.Priority, Pin: a.Account})
	if d.Account == "" {
		return ""
	}
	s.seq++
	acct := s.accountLocked(a.Provider, d.Account)
	acct.lastUsed = s.seq
	in := s.agents[a.ID]
	if in == nil {
		in = &agentInfo{provider: a.Provider, path: a.Path, model: a.Model, created: a.CreatedAt, resumedFrom: a.ResumedFrom}
		s.agents[a.ID] = in
		s.addLocked(a.ID, in, 1)
	}
	s.setLiveLocked(in, true, d.Account)
	s.gen++
	return d.Account
}

// Chosen is the account Place would give a now, without placing it: "" when its
// provider has no accounts or no account can take it. The nodes' placer asks it
// (under the engine's lock, as Admit is) to look for a machine that has that account.
func (s *Service) Chosen(a wire.Agent) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.accts[a.Provider]) == 0 {
		return ""
	}
	return s.decideLocked(a.Provider, Request{Family: Family(a.Model), Priority: a.Priority, Pin: a.Account}).Account
}

// AccountEnv implements core.Placer: CLAUDE_CONFIG_DIR or CODEX_HOME, then the
// account's extra env.
func (s *Service) AccountEnv(a wire.Agent) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	acct := s.accountLocked(a.Provider, a.Account)
	if acct == nil || acct.implicit {
		return nil
	}
	return accountEnv(acct.spec)
}

func accountEnv(sp Spec) map[string]string {
	env := map[string]string{}
	if sp.ConfigDir != "" {
		env["CLAUDE_CONFIG_DIR"] = sp.ConfigDir
	}
	if sp.Home != "" {
		env["CODEX_HOME"] = sp.Home
	}
	for k, v := range sp.Env {
		env[k] = v
	}
	return env
}

// CheckSpawn implements core.SpawnChecker: --account must name a configured account.
// It also matches the spawn's path against the budgets' globs, here and once, so that
// Admit (under the engine's lock) only looks the answers up.
func (s *Service) CheckSpawn(_ context.Context, p wire.RunParams) error {
	if p.Path != "" {
		s.warm(p.Path)
	}
	if p.Account == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	prov := p.Provider
	if prov == "" {
		prov = "shell"
	}
	if s.accountLocked(prov, p.Account) == nil {
		if len(s.accts[prov]) == 0 {
			return wire.Errorf(wire.CodeUnknownAccount, "%s has no accounts; drop --account", prov)
		}
		return wire.Errorf(wire.CodeUnknownAccount, "no %s account %q; configured: %s", prov, p.Account, s.labelsLocked(prov))
	}
	return nil
}

// Held says why no account of provider could take work of model at priority now, or
// "" when one could (or the provider has no accounts): a role's fallback asks it
// before it settles on a provider (DESIGN §12), so a chain skips a provider whose
// every account is held, with each account's reason.
func (s *Service) Held(provider, model string, priority int, pin string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.accts[provider]) == 0 {
		return ""
	}
	d := s.decideLocked(provider, Request{Family: Family(model), Priority: priority, Pin: pin})
	if d.Account != "" {
		return ""
	}
	whys := make([]string, 0, len(d.Choices))
	for _, c := range d.Choices {
		whys = append(whys, c.Why)
	}
	if len(whys) == 0 {
		whys = append(whys, d.Reason)
	}
	return "every account held — " + strings.Join(whys, "; ")
}

// decideLocked is Decide over the current state, cached.
func (s *Service) decideLocked(provider string, r Request) Decision {
	now := s.now()
	k := cacheKey{provider: provider, family: r.Family, pin: r.Pin, high: r.Priority >= s.opts.Settings.HoldBelow}
	// A pass asks about few distinct keys, one after another: a short list compared
	// by value beats hashing three strings per queued agent.
	if s.cacheGen != s.gen {
		s.cacheList, s.cacheGen = s.cacheList[:0], s.gen
	}
	for i := range s.cacheList {
		if c := &s.cacheList[i]; c.key == k && now.Before(c.until) {
			return c.d
		}
	}
	if !k.high {
		r.Priority = s.opts.Settings.HoldBelow - 1
	} else {
		r.Priority = s.opts.Settings.HoldBelow
	}
	d := Decide(s.viewLocked(provider, now), r)
	for i := range s.cacheList {
		if s.cacheList[i].key == k {
			s.cacheList[i] = cached{key: k, d: d, until: now.Add(cacheFor)}
			return d
		}
	}
	if len(s.cacheList) >= 256 {
		s.cacheList = s.cacheList[:0]
	}
	s.cacheList = append(s.cacheList, cached{key: k, d: d, until: now.Add(cacheFor)})
	return d
}

// viewLocked builds a provider's View.
func (s *Service) viewLocked(provider string, now time.Time) View {
	v := View{Now: now, Policy: s.opts.Settings.Policy, Provider: provider}
	live := s.liveLocked(provider)
	for _, a := range s.accts[provider] {
		av := AccountView{Label: a.spec.Label, Problem: a.problem, PerToken: a.perToken,
			Live: live[a.spec.Label], LastUsed: a.lastUsed}
		for k, se := range a.series {
			av.Windows = append(av.Windows, WindowView{Window: k.window, Family: k.family,
				UsedPct: se.cur.UsedPct, ResetsAt: se.cur.ResetsAt, Burn: se.burn()})
		}
		v.Accounts = append(v.Accounts, av)
	}
	return v
}

// liveLocked is the live agents per account of a provider.
func (s *Service) liveLocked(provider string) map[string]int { return s.live[provider] }

// setLiveLocked records that agent in now is (or is not) live on account, keeping the
// per-account counts.
func (s *Service) setLiveLocked(in *agentInfo, live bool, account string) {
	if in.live == live && in.account == account {
		return
	}
	counted := in.live && in.account != "" || live && account != ""
	if in.live && in.account != "" {
		s.live[in.provider][in.account]--
	}
	in.live, in.account = live, account
	if live && account != "" {
		if s.live[in.provider] == nil {
			s.live[in.provider] = map[string]int{}
		}
		s.live[in.provider][account]++
	}
	// Only the per-account counts feed a decision: an agent on no account (a shell
	// program, a provider without accounts) going live or ending changes none, and so
	// wakes neither admission nor the resume loop (one wake per spawn in a spawn loop).
	if counted {
		s.gen++
	}
}

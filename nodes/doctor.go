package nodes

import (
	"context"
	"fmt"
	"sort"
	"time"

	acctapi "orcr/accounts/api"
	"orcr/core/wire"
	nodeapi "orcr/nodes/api"
)

// What `orcr doctor` says of each node (node.check): the link's state is the SSH and
// tmux check (a link is up only when sshd let us in, tmux is there and the home is
// writable; else its error says which failed and how to fix it), the hello's binary
// the version check, and node.facts, asked of the node's server over the link, its
// providers and accounts.

// factsFresh is how long a server's facts answer for: Detect runs each CLI's --version.
const factsFresh = time.Minute

// checkWait bounds the node.facts call of one check.
const checkWait = 30 * time.Second

// accountLister is what node.facts asks the accounts feature.
type accountLister interface {
	Accounts(ctx context.Context) (acctapi.AccountListResult, error)
}

// facts is this server's providers and accounts, detected at most once per factsFresh.
func (s *Service) facts(ctx context.Context) nodeapi.FactsResult {
	s.factsMu.Lock()
	defer s.factsMu.Unlock()
	if !s.factsAt.IsZero() && time.Since(s.factsAt) < factsFresh {
		return s.factsLast
	}
	r := nodeapi.FactsResult{Providers: []nodeapi.ProviderFact{}, Accounts: []string{}}
	for _, p := range s.opts.Providers {
		st := p.Detect(ctx)
		r.Providers = append(r.Providers, nodeapi.ProviderFact{Name: p.Name(), Found: st.Found, Version: st.Version, Fix: st.Fix})
	}
	if s.k != nil {
		if al, ok := lookupAccounts(s); ok {
			if res, err := al.Accounts(ctx); err == nil {
				for _, a := range res.Accounts {
					r.Accounts = append(r.Accounts, a.Provider+"/"+a.Label)
				}
			}
		}
	}
	sort.Strings(r.Accounts)
	s.factsAt, s.factsLast = time.Now(), r
	return r
}

// Check is one node as doctor checks it.
func (s *Service) Check(ctx context.Context, name string) (nodeapi.CheckResult, error) {
	v, err := s.Show(ctx, name)
	if err != nil {
		return nodeapi.CheckResult{}, err
	}
	r := nodeapi.CheckResult{Node: v, Problems: []string{}}
	s.mu.Lock()
	l := s.nodes[name].link
	s.mu.Unlock()
	if l == nil || (v.State != nodeapi.StateUp && v.State != nodeapi.StateDraining) {
		why := v.Error
		if why == "" {
			why = "the link is being made"
		}
		r.Problems = append(r.Problems, fmt.Sprintf("not reachable (%s): %s", v.State, why))
		return r, nil
	}
	l.mu.Lock()
	theirs, foreign := l.hello.Binary, l.ours == ""
	l.mu.Unlock()
	ours, err := s.selfSum()
	if err != nil {
		return r, err
	}
	if v.Warning != "" {
		r.Problems = append(r.Problems, v.Warning)
	}
	if why := cannotConfine(v.Landlock); why != "" {
		// landlock.go: placement gives it no agent that asks for a sandbox.
		r.Problems = append(r.Problems, why+": agents that ask for a sandbox (a run's coders, by default) are not placed on it")
	}
	r.SameBinary = theirs == ours
	if !r.SameBinary && !foreign {
		r.Problems = append(r.Problems, fmt.Sprintf("its server runs orcr %s, not this binary (%s): it is replaced once its %d agents end", v.Version, Version(), v.Agents))
	}
	tr, err := l.transport()
	if err != nil {
		r.Problems = append(r.Problems, err.Error())
		return r, nil
	}
	cctx, cancel := context.WithTimeout(ctx, checkWait)
	defer cancel()
	f, err := wire.Call(cctx, tr, nodeapi.Facts, wire.Empty{})
	if err != nil {
		r.Problems = append(r.Problems, "its providers and accounts: "+err.Error())
		return r, nil
	}
	r.Facts = &f
	found := 0
	for _, p := range f.Providers {
		if p.Found && p.Name != "shell" {
			found++
		}
	}
	if len(f.Providers) > 0 && found == 0 {
		r.Problems = append(r.Problems, "no agent CLI is installed there (claude, codex, opencode, pi): only shell agents can run on it")
	}
	for _, want := range v.Accounts {
		if !hasFact(f.Accounts, want) {
			r.Problems = append(r.Problems, fmt.Sprintf("account %s is listed for the node but its server has no such account (add it to the node's [[accounts]])", want))
		}
	}
	return r, nil
}

// hasFact says whether the node's accounts (provider/label) have want ("work" or
// "claude/work").
func hasFact(accounts []string, want string) bool {
	for _, a := range accounts {
		if a == want {
			return true
		}
		if _, label, ok := cutLast(a); ok && label == want {
			return true
		}
	}
	return false
}

func cutLast(s string) (string, string, bool) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '/' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

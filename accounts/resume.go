package accounts

import (
	"sort"
	"time"

	acctapi "orcr/accounts/api"
	"orcr/core/wire"
)

// Resume after a reset (DESIGN §10): an agent blocked on a usage limit whose reset
// time has passed is told to continue the provider's own way (claude and codex both
// take a plain "continue" typed into the session), one agent every resume_stagger so
// a fleet does not hit the fresh window all at once. Each block is resumed once; a
// new limit block (a later reset) is resumed again after its own reset.

// ContinueText is what a limit-blocked agent is sent after the reset.
const ContinueText = "continue"

// resumeSlack is how long after the stated reset an agent is resumed (the
// provider's clock and ours differ by a little, and a minute-granular reset time
// is rounded).
const resumeSlack = 2 * time.Second

func (s *Service) resumeLoop() {
	defer s.wg.Done()
	var next time.Time // the earliest the next resume may go
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		id, wait := s.dueResume(next)
		if id != "" {
			s.resume(id)
			next = s.now().Add(s.opts.Settings.ResumeStagger)
			continue
		}
		if wait <= 0 || wait > time.Minute {
			wait = time.Minute // the clock may jump; look again
		}
		timer.Reset(wait)
		select {
		case <-s.ctx.Done():
			return
		case <-s.wake:
		case <-timer.C:
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// dueResume returns the agent to resume now (the one whose reset passed first), or
// how long until one is due.
func (s *Service) dueResume(notBefore time.Time) (string, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	type cand struct {
		id string
		at time.Time
	}
	var due []cand
	var soonest time.Time
	for id, in := range s.agents {
		b := in.blocked
		if b == nil || b.ResetsAt == nil || in.resumed.Equal(*b.ResetsAt) {
			continue
		}
		at := b.ResetsAt.Add(resumeSlack)
		if at.After(now) {
			if soonest.IsZero() || at.Before(soonest) {
				soonest = at
			}
			continue
		}
		due = append(due, cand{id, at})
	}
	if len(due) == 0 {
		if soonest.IsZero() {
			return "", 0
		}
		return "", soonest.Sub(now)
	}
	if now.Before(notBefore) {
		return "", notBefore.Sub(now)
	}
	sort.Slice(due, func(i, j int) bool {
		if !due[i].at.Equal(due[j].at) {
			return due[i].at.Before(due[j].at)
		}
		return due[i].id < due[j].id
	})
	in := s.agents[due[0].id]
	in.resumed = *in.blocked.ResetsAt
	return due[0].id, 0
}

func (s *Service) resume(id string) {
	s.mu.Lock()
	acct := ""
	if in := s.agents[id]; in != nil {
		acct = in.account
	}
	s.mu.Unlock()
	if err := s.typeLine(id, ContinueText); err != nil {
		s.log.Warn("accounts: resume after reset", "id", id, "err", err)
		return
	}
	s.log.Info("accounts: resumed after reset", "id", id, "account", acct)
	if s.k != nil {
		a, err := s.k.Get(s.ctx, id)
		ev := wire.Event{Event: acctapi.EventAccountResumed, At: s.now(), Data: map[string]any{"account": acct}}
		if err == nil {
			a.LastScreen = ""
			ev.Agent = &a
		}
		if _, err := s.k.Publish(s.ctx, ev); err != nil {
			s.log.Warn("accounts: publish resume", "err", err)
		}
	}
}

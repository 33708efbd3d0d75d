package run

import (
	"fmt"
	"strings"
	"time"
)

// The lead's inbox (DESIGN §8 "Waking the lead"), all of it inside Step. Every
// ALead a rule emits is put in the run's Inbox (a run without a lead tells the user
// instead). When the lead is idle and no batch is on its way, deliver sends the
// whole inbox as one message (ADeliver); the batch counts as taken up when the
// lead's next turn starts (FLeadWorking). Not taken up, it is sent again every
// LeadResend while the lead is idle, LeadAttempts times, then the user is told. The
// lead's idleness comes in as facts (FLeadTurn, FLeadIdle, FLeadWorking), so the
// check "idle and nothing on its way" and the write "a batch is on its way" are one
// step under the run's one lock.

// inbox takes this step's ALead actions into the inbox, or to the user.
func (s *stepper) inbox() {
	n := len(s.out)
	for _, a := range s.out[:n] {
		if a.Kind != ALead {
			continue
		}
		if s.r.Lead {
			s.r.Inbox = append(s.r.Inbox, a.Text)
			continue
		}
		s.emit(Action{Kind: ANotify, Text: forUser(a.Text)})
	}
}

// deliver sends the inbox to the lead when it is due (see above).
func (s *stepper) deliver() {
	r := &s.r
	if !r.Lead || len(r.Inbox) == 0 {
		return
	}
	prev := r.LeadSent
	if prev != nil {
		if prev.Told || s.now.Before(prev.At.Add(LeadResend)) {
			return
		}
		if prev.Tries > LeadAttempts {
			prev.Told = true
			s.cancel(TimerLeadResend, "")
			s.emit(Action{Kind: ANotify, Text: fmt.Sprintf("the lead of run %s has not taken up %d messages after %d re-sends: look at it with `orcr agent attach runs/%s/lead`",
				r.Name, len(r.Inbox), LeadAttempts, r.Name)})
			return
		}
	}
	if !r.LeadIdle {
		return
	}
	tries, before := 1, time.Time{}
	if prev != nil {
		tries, before = prev.Tries+1, prev.At
	}
	r.LeadSent = &LeadSend{N: len(r.Inbox), At: s.now, Tries: tries}
	s.after(TimerLeadResend, "", s.now.Add(LeadResend))
	text := "orcr run " + r.Name + ": " + forAgent(strings.Join(r.Inbox, " | ")) + " — act with `" + Bin + " run dispatch|answer|retry|hold " + r.Name + " …`, then stop."
	s.emit(Action{Kind: ADeliver, Text: text, Until: before})
}

// leadWorking takes in the start of a turn of the lead: a batch sent before it is
// taken up.
func (s *stepper) leadWorking(f Fact) {
	s.r.LeadIdle = false
	ls := s.r.LeadSent
	if ls == nil || f.TurnAt.Before(ls.At) {
		return
	}
	s.r.Inbox = append([]string(nil), s.r.Inbox[min(ls.N, len(s.r.Inbox)):]...)
	s.r.LeadSent = nil
	s.cancel(TimerLeadResend, "")
}

// leadUnsent takes back a batch that was not typed (a prompt is up on the lead): it
// is not counted as a try, and goes when the lead is idle again.
func (s *stepper) leadUnsent(f Fact) {
	s.r.LeadIdle = false
	ls := s.r.LeadSent
	if ls == nil {
		return
	}
	if ls.Tries <= 1 {
		s.r.LeadSent = nil
		s.cancel(TimerLeadResend, "")
		return
	}
	ls.Tries--
	ls.At = f.Until
	s.after(TimerLeadResend, "", ls.At.Add(LeadResend))
}

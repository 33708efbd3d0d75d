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

// leadLost takes in a lead that ended while the run needs it: it is restarted once,
// with the plan (its prompt), where the run is and every message it has not taken
// up (they count as on their way until the new lead's first turn starts), and the
// user is told. Ended again, it is not restarted: the user is the lead from then on
// (what the lead would hear comes as notifications).
func (s *stepper) leadLost(f Fact) {
	r := &s.r
	if !r.Lead || r.Stopped || r.Finish == "done" {
		s.note("the lead ended (%s); the run needs none now", orNone(f.Text))
		return
	}
	how := f.Text
	if how == "" {
		how = "it ended"
	}
	if r.LeadRestarts >= 1 && !f.OK {
		r.Lead, r.LeadIdle, r.LeadSent = false, false, nil
		s.cancel(TimerLeadResend, "")
		msgs := r.Inbox
		r.Inbox = nil
		text := fmt.Sprintf("the lead of run %s ended again (%s) and is not restarted: you are the lead now; what it would hear comes to you. See `orcr run status %s`.", r.Name, how, r.Name)
		if len(msgs) > 0 {
			text += " Not taken up: " + forUser(strings.Join(msgs, " | "))
		}
		s.emit(Action{Kind: ANotify, Text: text})
		return
	}
	if !f.OK {
		r.LeadRestarts++
	}
	r.LeadIdle = false
	r.LeadSent = nil
	s.cancel(TimerLeadResend, "")
	if n := len(r.Inbox); n > 0 {
		// The messages go in the new lead's prompt: on their way, taken up when
		// its first turn starts, sent again as a batch if it does not start one.
		r.LeadSent = &LeadSend{N: n, At: s.now, Tries: 1}
		s.after(TimerLeadResend, "", s.now.Add(LeadResend))
	}
	s.emit(Action{Kind: AStartLead, Text: s.restartText(how)})
	s.emit(Action{Kind: ANotify, Text: fmt.Sprintf("the lead of run %s ended (%s); restarted once with the plan, the run's state and %d message(s) it had not taken up. `orcr agent attach runs/%s/lead` to look at it.",
		r.Name, how, len(r.Inbox), r.Name)})
}

// leadResumed takes in the run's self lead back under a new id (the user resumed
// the session the run never restarts): it is the lead again — also when a second end
// had made the user the lead — with a fresh restart, and is told where the run is and
// every message it has not taken up (on their way until its next turn starts).
func (s *stepper) leadResumed(f Fact) {
	r := &s.r
	if r.Stopped || r.Finish == "done" {
		s.note("the lead is back (%s); the run needs none now", orNone(f.Text))
		return
	}
	r.Lead, r.LeadRestarts, r.LeadIdle, r.LeadSent = true, 0, false, nil
	s.cancel(TimerLeadResend, "")
	if n := len(r.Inbox); n > 0 {
		r.LeadSent = &LeadSend{N: n, At: s.now, Tries: 1}
		s.after(TimerLeadResend, "", s.now.Add(LeadResend))
	}
	s.emit(Action{Kind: AStartLead, Text: s.restartText(f.Text)})
}

// restartText is what a restarted lead must know: that it is one, where every
// milestone is, and the messages it has not taken up.
func (s *stepper) restartText(how string) string {
	r := &s.r
	var b strings.Builder
	fmt.Fprintf(&b, "You are the lead of orcr run %s again: the previous lead's session ended (%s). Where the run is now:", r.Name, how)
	for _, m := range r.Milestones {
		fmt.Fprintf(&b, " %s %s", m.ID, m.State)
		if m.Coder != "" {
			fmt.Fprintf(&b, " (%s)", m.Coder)
		}
		if m.Reason != "" {
			fmt.Fprintf(&b, " (%s)", m.Reason)
		}
		b.WriteString(";")
	}
	if len(r.Inbox) > 0 {
		b.WriteString(" Messages for you not taken up yet: " + strings.Join(r.Inbox, " | ") + ".")
	}
	fmt.Fprintf(&b, " Act on them with `%s run dispatch|answer|retry|hold %s …` (`%s run status %s` shows everything), then stop.", Bin, r.Name, Bin, r.Name)
	return b.String()
}

package run

import (
	"slices"
	"time"
)

// Timed rules (doc.go "Adding a rule"). Every rule that waits for time — a ready
// milestone starting by itself, a bench ending, the lead's batch sent again — is one
// Timer in the run: Step sets it (s.after) when the rule's wait begins and cancels it
// when the wait is moot; the autopilot arms one clock for the earliest (NextWake)
// and feeds FTick when it rings; Step then fires every timer that is due, by its
// rule's name, through timerRules. The timers are part of the run record, so they
// outlive a restart: the restarted autopilot arms the clock from the record, and a
// timer that came due while the server was down fires on the first fact after.

// Timer is one timed rule waiting: rule Rule about Key (a milestone, a coder, "" for
// the run) fires at At.
type Timer struct {
	Rule string    `json:"rule"`
	Key  string    `json:"key,omitempty"`
	At   time.Time `json:"at"`
}

// Timer rules.
const (
	TimerAutoStart  = "auto-start"  // a ready milestone nobody dispatched starts (Key: milestone)
	TimerBenchEnd   = "bench-end"   // a benched coder can take work again (Key: coder)
	TimerLeadResend = "lead-resend" // the lead's batch, not taken up, goes again (Key: "")
)

// timerRules says what each timer does when it fires. A rule looks at the run as it
// is then: a timer whose wait became moot does nothing.
var timerRules = map[string]func(s *stepper, key string){
	TimerAutoStart: func(s *stepper, key string) {
		if m := s.ms(key); m != nil && m.State == Ready && !m.Want && !s.r.Stopped {
			m.Want = true
			s.note("%s started by itself: ready for %s and not dispatched", m.ID, AutoStartAfter)
		}
	},
	// The bench's end and the lead's re-send need nothing of their own: the coder is
	// free again for assign, and deliver sends again when the batch is due.
	TimerBenchEnd:   func(*stepper, string) {},
	TimerLeadResend: func(*stepper, string) {},
}

// after sets timer rule about key to fire at at (replacing one set before).
func (s *stepper) after(rule, key string, at time.Time) {
	s.cancel(rule, key)
	s.r.Timers = append(s.r.Timers, Timer{Rule: rule, Key: key, At: at})
}

// cancel drops timer rule about key, if it is set.
func (s *stepper) cancel(rule, key string) {
	s.r.Timers = slices.DeleteFunc(s.r.Timers, func(t Timer) bool { return t.Rule == rule && t.Key == key })
}

// fire runs every timer due at s.now, in the order they come due.
func (s *stepper) fire() {
	var due []Timer
	s.r.Timers = slices.DeleteFunc(s.r.Timers, func(t Timer) bool {
		if s.now.Before(t.At) {
			return false
		}
		due = append(due, t)
		return true
	})
	slices.SortStableFunc(due, func(a, b Timer) int { return a.At.Compare(b.At) })
	for _, t := range due {
		if rule := timerRules[t.Rule]; rule != nil {
			rule(s, t.Key)
		}
	}
}

// migrateTimers gives a run stored before timers existed the auto-start timers of
// its ready milestones (the only timer whose wait is not visible otherwise).
func (s *stepper) migrateTimers() {
	for i := range s.r.Milestones {
		m := &s.r.Milestones[i]
		if m.State != Ready || m.Want || m.ReadyAt.IsZero() {
			continue
		}
		if !slices.ContainsFunc(s.r.Timers, func(t Timer) bool { return t.Rule == TimerAutoStart && t.Key == m.ID }) {
			s.after(TimerAutoStart, m.ID, m.ReadyAt.Add(AutoStartAfter))
		}
	}
}

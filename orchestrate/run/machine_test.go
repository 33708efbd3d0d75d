package run

import (
	"slices"
	"strings"
	"testing"
	"time"

	"orcr/planning"
)

// TestTransitionTable walks the milestone state machine: every state has its row,
// every move a row lists is taken by to (and accounts the time spent), and every
// move a row does not list is refused — the milestone stays where it was and Step
// fails with the reason.
func TestTransitionTable(t *testing.T) {
	for _, from := range States {
		if _, ok := transitions[from]; !ok {
			t.Errorf("%s has no row in the transition table", from)
		}
		for _, to := range States {
			if to == from {
				continue
			}
			s := &stepper{r: Run{Name: "demo", Milestones: []Milestone{{ID: "M1", State: from, StateAt: t0}}}, now: t0.Add(time.Minute)}
			m := &s.r.Milestones[0]
			s.to(m, to)
			allowed := slices.Contains(transitions[from], to)
			switch {
			case allowed && (s.err != nil || m.State != to || m.Spent[from] != 60):
				t.Errorf("%s → %s is in the table but was not taken: %v, now %s", from, to, s.err, m.State)
			case !allowed && (s.err == nil || m.State != from):
				t.Errorf("%s → %s is not in the table but was taken (now %s)", from, to, m.State)
			case !allowed && !strings.Contains(s.err.Error(), "M1 cannot go from "+string(from)+" to "+string(to)):
				t.Errorf("refusal %q", s.err)
			}
		}
	}
	// Every state is reachable from planned, and merged from every state but the
	// ends a person decides on.
	seen := map[State]bool{Planned: true}
	for changed := true; changed; {
		changed = false
		for from := range seen {
			for _, to := range transitions[from] {
				if !seen[to] {
					seen[to], changed = true, true
				}
			}
		}
	}
	for _, st := range States {
		if !seen[st] {
			t.Errorf("%s cannot be reached from planned", st)
		}
	}
}

// TestIllegalMoveFailsTheStep: a rule that moves a milestone where the table does
// not let it go fails Step, which leaves the run as it was.
func TestIllegalMoveFailsTheStep(t *testing.T) {
	g := newRig(t, 1, false, "A::small")
	g.r.Milestones[0].State = Merged // a follow-up goes to fixing; a merged one cannot be asked
	before := g.r.clone()
	s := &stepper{r: g.r.clone(), now: g.now}
	s.to(&s.r.Milestones[0], Asking)
	if s.err == nil {
		t.Fatal("merged → asking was taken")
	}
	// Through Step: a follow-up on a merged milestone is legal and taken.
	r, _, err := Step(g.r, Fact{Kind: FFollowUp, M: "A", Text: "one more"}, g.now)
	if err != nil || r.Milestones[0].State != Fixing || before.Milestones[0].State != Merged {
		t.Fatalf("follow-up: %v, %s", err, r.Milestones[0].State)
	}
}

// TestBeginCreatesTheBranchFirst: a run started by a server asks for feature/NAME
// at the base's tip and the lead's start first, puts what the lead must hear in its
// inbox, and gives no coder work until the branch is there.
func TestBeginCreatesTheBranchFirst(t *testing.T) {
	p, err := planning.Parse([]byte(planText("M1::small", "M2:M1:small")), planning.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, out, err := Begin("demo", p, 2, false, true, "base0", t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 2 || out[0] != (Action{Kind: ABranch, Head: "base0"}) || out[1].Kind != AStartLead || r.Feature != "" {
		t.Fatalf("first actions %+v, feature %q", out, r.Feature)
	}
	// The lead's prompt names M1 as ready; the inbox does not say it again.
	if len(r.Inbox) != 0 || !strings.Contains(LeadPrompt(Record{Run: r}), "M1 ready") {
		t.Fatalf("inbox %q", r.Inbox)
	}
	g := &rig{t: t, r: r, now: t0}
	g.step(Fact{Kind: FDispatch, M: "M1"})
	g.hasNo(ABrief)
	g.step(Fact{Kind: FBranched, Head: "f0"})
	if g.r.Feature != "f0" || g.has(ABrief, "M1").Coder == "" {
		t.Fatalf("after the branch: feature %q, actions %v", g.r.Feature, g.out)
	}
	// Created again (the action performed again after a restart): a note.
	g.step(Fact{Kind: FBranched, Head: "f0"})
	g.has(ANote, "")
	// Without a lead, what the lead would hear goes to the user.
	r, out, _ = Begin("demo", p, 2, false, false, "base0", t0)
	if len(r.Inbox) != 0 || slices.ContainsFunc(out, func(a Action) bool { return a.Kind == AStartLead }) ||
		!slices.ContainsFunc(out, func(a Action) bool { return a.Kind == ANotify && strings.Contains(a.Text, "orcr run dispatch demo M1") }) {
		t.Fatalf("no lead: inbox %q, actions %+v", r.Inbox, out)
	}
}

// TestLeadInboxInStep: the lead's inbox, batching, delivery and re-sends are Step's:
// a batch goes when the lead is idle, once; it is taken up when the lead's next turn
// starts; not taken up, it goes again every LeadResend (a timer), LeadAttempts
// times, then the user is told once; a batch that could not be typed is not a try.
func TestLeadInboxInStep(t *testing.T) {
	p, _ := planning.Parse([]byte(planText("A::small", "B::small")), planning.Options{})
	r, _, _ := Begin("demo", p, 1, false, true, "base0", t0)
	// Two messages for the lead (its prompt had the first ready ones; these stand
	// for any that came after).
	r.Inbox = []string{readyText("demo", "A"), readyText("demo", "B")}
	g := &rig{t: t, r: r, now: t0}
	g.step(Fact{Kind: FBranched, Head: "f0"})
	g.hasNo(ADeliver) // the lead is not idle yet
	g.step(Fact{Kind: FLeadIdle})
	d := g.has(ADeliver, "")
	if !strings.Contains(d.Text, "A is ready") || !strings.Contains(d.Text, "B is ready") || g.r.LeadSent == nil || g.r.LeadSent.N != 2 {
		t.Fatalf("batch %q, sent %+v", d.Text, g.r.LeadSent)
	}
	// Another fact while the batch is on its way: nothing is sent twice.
	g.step(Fact{Kind: FLeadIdle})
	g.hasNo(ADeliver)
	// A prompt was up: not typed, not a try; it goes when the lead is idle again.
	g.step(Fact{Kind: FLeadUnsent, Until: d.Until})
	if g.r.LeadSent != nil {
		t.Fatalf("unsent batch still counted: %+v", g.r.LeadSent)
	}
	g.step(Fact{Kind: FLeadIdle})
	g.has(ADeliver, "")
	// Taken up: the next turn started after it was sent.
	g.step(Fact{Kind: FLeadWorking, TurnAt: g.now})
	if len(g.r.Inbox) != 0 || g.r.LeadSent != nil || slices.ContainsFunc(g.r.Timers, func(t Timer) bool { return t.Rule == TimerLeadResend }) {
		t.Fatalf("after the lead took it up: inbox %q, sent %+v, timers %+v", g.r.Inbox, g.r.LeadSent, g.r.Timers)
	}
	// The lead stops taking anything up: re-sent on the timer LeadAttempts times,
	// then the user is told, once.
	g.step(Fact{Kind: FHold, M: "A", Text: "wait"})
	g.step(Fact{Kind: FLeadTurn, TurnAt: g.now})
	g.has(ADeliver, "")
	sends := 1
	for i := 0; i < LeadAttempts+2; i++ {
		wake := g.r.NextWake(g.now)
		if wake.IsZero() {
			break
		}
		g.now = wake.Add(-time.Second)
		g.step(Fact{Kind: FTick})
		for _, a := range g.out {
			switch a.Kind {
			case ADeliver:
				sends++
			case ANotify:
				if !strings.Contains(a.Text, "has not taken up 1 messages after 3 re-sends") {
					t.Fatalf("notify %q", a.Text)
				}
				sends += 100
			}
		}
	}
	if sends != 1+LeadAttempts+100 || !g.r.LeadSent.Told {
		t.Fatalf("sends %d, sent %+v", sends, g.r.LeadSent)
	}
	if w := g.r.NextWake(g.now); !w.IsZero() && slices.ContainsFunc(g.r.Timers, func(t Timer) bool { return t.Rule == TimerLeadResend }) {
		t.Fatalf("still waking for the lead at %v", w)
	}
}

// TestReviewVerdictOnce: the reviewer's verdict carries the end of its turn; fed
// twice (the event again after a restart), it is applied once. Before, a verdict
// with no verdict line fed twice held a milestone that should get its retry.
func TestReviewVerdictOnce(t *testing.T) {
	g := newRig(t, 1, true, "A::small")
	g.build("A", "h1")
	g.step(Fact{Kind: FChecked, M: "A", Head: "h1", OK: true})
	g.state("A", Reviewing)
	turn := g.now
	silent := Fact{Kind: FReviewed, M: "A", Head: "h1", Verdict: &Verdict{}, TurnAt: turn}
	g.step(silent)
	g.has(AReview, "A") // asked once more
	g.step(silent)
	g.state("A", Reviewing)
	g.hasNo(AReview)
	g.step(Fact{Kind: FReviewed, M: "A", Head: "h1", Verdict: &Verdict{Decision: "approve"}, TurnAt: turn.Add(time.Minute)})
	g.state("A", Merging)
}

// TestTimersSurviveTheRecord: timers are run state: a run stored with its timers
// (JSON, as the record keeps it) fires them after a "restart"; a run stored before
// timers existed gets its ready milestones' auto-start back.
func TestTimersSurviveTheRecord(t *testing.T) {
	g := newRig(t, 1, false, "A::small")
	if w := g.r.NextWake(t0); !w.Equal(t0.Add(AutoStartAfter)) {
		t.Fatalf("next wake %v", w)
	}
	old := g.r.clone()
	old.Timers = nil // a record from before timers
	r, out, err := Step(old, Fact{Kind: FTick}, t0.Add(AutoStartAfter))
	if err != nil || r.Milestones[0].State != Building || !slices.ContainsFunc(out, func(a Action) bool { return a.Kind == ABrief }) {
		t.Fatalf("old record: %v %s %v", err, r.Milestones[0].State, out)
	}
}

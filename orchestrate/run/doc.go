// Package run owns orchestration runs (DESIGN §8 "Run" to "Durability"): the run
// record and its per-milestone state machine (a pure function of the run and one new
// fact, Step), the run's append-only event log in the store, the git side (feature and
// milestone branches, worktrees, checks, the squash merge by compare-and-swap), the
// reviewer's output parser, and the restart re-derivation that checks the stored run
// against the git refs.
//
// Step does no I/O: every side effect is an Action the caller performs after the fact
// and the new run are stored, and every outcome of an action comes back as a Fact. So
// the autopilot is safe to kill at any point, and the machine is tested exhaustively
// without agents, git or a clock. All of a run's bookkeeping is Step's: creating
// feature/NAME (ABranch, after the record is stored; FBranched), starting the lead
// (AStartLead), the lead's inbox, its batches and their re-sends (step_lead.go), the
// reviewer's verdict (FReviewed, taken in once by the end of the reviewer's turn),
// and every timed rule (timer.go). The Service only observes (agents' events, git)
// and performs.
//
// Where things are:
//
//   - types.go: the run, its facts and actions;
//   - machine.go: the milestone states and the moves allowed between them, in one
//     table; stepper.to is the one place a milestone's state changes;
//   - step.go, step_plan.go, step_lead.go: the rules, one function per fact;
//   - timer.go: timed rules;
//   - store.go: the log and the record (intent before effect, outcome after);
//   - pilot.go, agents.go, service.go: the Service that feeds facts and performs
//     actions; reconcile.go: what a restart finds.
//
// # Adding a rule
//
// A rule is: what it waits for (a fact, or time), what it keeps (fields of Run or
// Milestone, so it survives a restart), what it does (actions), and a test in
// step_test.go that feeds facts to Step — no agents, git or clock needed. A rule
// that waits for time is a timer: Step sets it, the Service arms one clock for the
// run's first timer and feeds FTick when it rings, and Step fires what is due. That
// is the one mechanism for every timed rule (a ready milestone's auto-start, a
// bench's end, the lead's re-send ×3); no rule keeps a clock of its own, and none
// lives in the Service, where a crash would lose it.
//
// Worked example: "a coder idle 20 minutes without commits gets one nudge".
//
// What it keeps. The nudge is given once per milestone: a field on Milestone,
// `Nudged bool`. The instant is a timer, not a field.
//
// When the wait begins and ends. It begins when a coder gets the milestone: in
// assign, after s.to(m, back), the rule sets its timer (NudgeAfter = 20 *
// time.Minute beside the other timings in types.go, TimerNudge = "nudge" beside the
// other rules in timer.go):
//
//	s.after(TimerNudge, m.ID, s.now.Add(NudgeAfter))
//
// Every fact from the coder that shows work (FDone, FTurnEnded with commits)
// restarts it with the same call; s.to leaving Building or Fixing cancels it with
// s.cancel(TimerNudge, m.ID), as the auto-start timer is cancelled when a milestone
// leaves Ready.
//
// What it does. One entry in timerRules, which looks at the run as it is when the
// timer fires (a wait that became moot does nothing):
//
//	TimerNudge: func(s *stepper, key string) {
//		m := s.ms(key)
//		if m == nil || m.Nudged || m.Coder == "" || m.State != Building && m.State != Fixing {
//			return
//		}
//		m.Nudged = true
//		s.emit(Action{Kind: ASendCoder, M: m.ID, Coder: m.Coder,
//			Text: "No commits for 20 minutes on " + m.ID + ": commit what you have, or `" + Bin + " run ask " + m.ID + " \"…\"` if you are stuck."})
//	},
//
// The action goes through the outbox like every other: stored with the step, typed
// into the coder by the Service, recorded as done after. A rule that moves a
// milestone does so with s.to, and the move must be in the transition table
// (machine.go), or the step fails and the run stays as it was.
//
// "Without commits" is a fact, not a look at git from the rule: the Service stamps a
// coder's FDone and FTurnEnded with what git says (Commits, Head), and the rule reads
// what those facts left in the milestone. Step never asks git or the clock.
//
// The test: newRig, dispatch M1 (the coder is briefed), step FTick at t0 + 20 min
// and find exactly one ASendCoder; step FTick at 40 min and find none; a milestone
// whose coder reported done before 20 min gets none. Since the timer is part of the
// run, it survives a restart (TestTimersSurviveTheRecord).
package run

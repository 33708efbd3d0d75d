package run

import (
	"context"
	"fmt"

	"orcr/core/wire"
	planapi "orcr/orchestrate/api"
)

// LeadSelf as a run's (or its plan's) lead makes the calling agent the lead (DESIGN
// §17): the user's own session, started under orcr, is woken with the run's event
// batches exactly as a lead orcr started, but the run never starts, restarts or stops
// it.
const LeadSelf = "self"

// selfLeadOf is the id of the agent that leads a run by --lead self: the caller when
// run start asked for it (fromCaller), else the plan's own self lead, which must still
// run.
func (s *Service) selfLeadOf(ctx context.Context, fromCaller bool, plan planapi.Plan) (string, error) {
	if fromCaller {
		caller, err := s.k.CallerAgent(ctx)
		if err != nil {
			return "", err
		}
		if caller == nil {
			return "", wire.Errorf(wire.CodeNotAllowed,
				"--lead self makes the calling agent the run's lead, and this caller runs in no orcr agent's pane: start your agent under orcr (`orcr agent run me --provider claude`) and start the run from inside it, or give --lead PROVIDER[:MODEL]")
		}
		return caller.ID, nil
	}
	a, err := s.k.Get(ctx, plan.LeadID)
	if err != nil || !a.State.Live() {
		return "", wire.Errorf(wire.CodeNotAllowed,
			"plan %s is led by the session %s (--lead self), which is not running: start the run from inside a running session with --lead self, or give --lead PROVIDER[:MODEL]",
			plan.Name, orDefault(plan.LeadPath, plan.LeadID))
	}
	return a.ID, nil
}

// indexSelfLead remembers rec's self lead, so its events (at its own path, not
// runs/NAME/lead) reach the run.
func (s *Service) indexSelfLead(rec Record) {
	if rec.SelfLead == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.selfLeads == nil {
		s.selfLeads = map[string]string{}
	}
	s.selfLeads[rec.SelfLead] = rec.Run.Name
}

// selfLedRun is the run agent id leads by --lead self.
func (s *Service) selfLedRun(id string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name, ok := s.selfLeads[id]
	return name, ok
}

// startSelfLead is AStartLead of a run led by --lead self: the session is recorded as
// the lead and told what a lead does (the first prompt, or where the run is after a
// restart). A session that no longer runs is not started: the user hears it.
func (s *Service) startSelfLead(ctx context.Context, rec Record, restart string) error {
	name := rec.Run.Name
	a, err := s.k.Get(ctx, rec.SelfLead)
	if err != nil || !a.State.Live() {
		s.notify(ctx, name, "", fmt.Sprintf("the lead of run %s is your session %s (--lead self), which is not running: resume it (`orcr agent resume %s`) and it gets the run's messages again; until then they wait (`orcr run status %s`)",
			name, orDefault(a.Path, rec.SelfLead), orDefault(a.Path, rec.SelfLead), name))
		return nil
	}
	if rec.Agents["lead"] != a.ID {
		if err := s.recordAgent(ctx, name, "lead", a.ID, s.now()); err != nil {
			return err
		}
	}
	text := LeadPrompt(rec)
	if restart != "" {
		text = restart
	}
	if err := s.send(ctx, name, "lead", text); err != nil {
		// A prompt is up on the session: the run's first batch tells it again.
		s.log.Info("runs: the self lead did not take its prompt", "run", name, "err", err)
	}
	return nil
}

// resumedSelfLead follows a run's self lead into its resumed session: `orcr agent
// resume` (of a session that ended, or went while the server was down) gives it a new
// agent with a new id, ResumedFrom the old. The run's record and index then name the
// new id, so its events reach the run; when it waits for input (onAgent) the run makes
// it the lead again (FLeadResumed).
func (s *Service) resumedSelfLead(ctx context.Context, a wire.Agent) (string, bool) {
	if a.ResumedFrom == "" {
		return "", false
	}
	name, ok := s.selfLedRun(a.ResumedFrom)
	if !ok {
		return "", false
	}
	rec, err := s.runs.Update(ctx, name, func(r *Record) {
		if r.SelfLead == a.ResumedFrom {
			r.SelfLead = a.ID
		}
	})
	if err != nil || rec.SelfLead != a.ID {
		return "", false
	}
	s.mu.Lock()
	delete(s.selfLeads, a.ResumedFrom)
	s.selfLeads[a.ID] = name
	s.mu.Unlock()
	s.log.Info("runs: the self lead was resumed; the run follows it", "run", name, "from", a.ResumedFrom, "id", a.ID)
	return name, true
}

// selfLeadBack feeds FLeadResumed when a is the run's self lead under an id the run
// has not made its lead yet, waiting for input, and no start of the lead is on its way.
func (s *Service) selfLeadBack(ctx context.Context, rec Record, a wire.Agent) bool {
	if rec.SelfLead != a.ID || rec.Agents["lead"] == a.ID || a.State != wire.StateDone && a.State != wire.StateIdle {
		return false
	}
	for _, p := range rec.Outbox {
		if p.Action.Kind == AStartLead {
			return true
		}
	}
	s.feed(ctx, rec.Run.Name, Fact{Kind: FLeadResumed, Text: fmt.Sprintf("your session %s was resumed as %s", orDefault(a.Path, a.ID), a.ID)})
	return true
}

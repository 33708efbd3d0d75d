package orchestrate

import (
	"context"
	"errors"
	"fmt"

	"orcr/core/wire"
	planapi "orcr/orchestrate/api"
	"orcr/planning"
)

// LeadSelf as a plan's lead makes the calling agent the lead (DESIGN §17): the user's
// own session, started under orcr, writes .orcr/plans/NAME.md itself; the plan follows
// its turns as it follows a lead it started (each turn end reads the file), sends it
// rejections and parse errors, and never starts, restarts or stops it.
const LeadSelf = "self"

// planSelfLed records plan p with the caller as its lead. A file already written and
// valid makes it drafted at once; otherwise it is drafting until a turn of the caller
// ends with a file that parses.
func (s *Service) planSelfLed(ctx context.Context, p planapi.PlanNewParams, repo string, cat *planning.Catalog) (planapi.Plan, error) {
	caller, err := s.k.CallerAgent(ctx)
	if err != nil {
		return planapi.Plan{}, err
	}
	if caller == nil {
		return planapi.Plan{}, wire.Errorf(wire.CodeNotAllowed,
			"--lead self makes the calling agent the plan's lead, and this caller runs in no orcr agent's pane: start your agent under orcr (`orcr agent run me --provider claude`) and run `orcr plan new` from inside it, or give --lead PROVIDER[:MODEL] for orcr to start a lead (or --lead none for a file you wrote)")
	}
	r, err := NewRecord(p.Name, p.Request, repo, LeadSelf, s.now())
	if err != nil {
		return planapi.Plan{}, wire.Errorf(wire.CodeInvalidParams, "%v", err)
	}
	r.LeadID, r.LeadPath = caller.ID, caller.Path
	// Turn ends before this one are not the plan's.
	r.LeadTurnAt = caller.StateAt
	r.event(s.now(), "lead", fmt.Sprintf("%s leads it (--lead self)", caller.Path))
	if f := ReadPlanFile(r.File, planning.Options{Name: r.Name, Catalog: cat}); f.OK() {
		r.State, r.FileHash = PlanDrafted, f.Hash
		r.event(s.now(), "drafted", fmt.Sprintf("%d milestones, written by %s", f.Milestones, caller.Path))
	}
	if err := s.plans.Create(ctx, r); err != nil {
		if errors.Is(err, ErrPlanExists) {
			return planapi.Plan{}, wire.Errorf(wire.CodeNameTaken, "%v", err)
		}
		return planapi.Plan{}, err
	}
	s.indexSelfLead(r)
	if r.State == PlanDrafted {
		s.stamp(r.Name, r.File)
	}
	s.publish(ctx, Record{Name: r.Name}, r, "")
	return r.Wire(), nil
}

// indexSelfLead remembers r's self lead, so its events (at its own path, not
// plans/NAME/lead) reach the plan.
func (s *Service) indexSelfLead(r Record) {
	if r.Lead != LeadSelf || r.LeadID == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.selfLeads == nil {
		s.selfLeads = map[string]string{}
	}
	s.selfLeads[r.LeadID] = r.Name
}

// selfLedPlan is the plan agent id leads by --lead self.
func (s *Service) selfLedPlan(id string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name, ok := s.selfLeads[id]
	return name, ok
}

// resumedSelfLead follows a plan's self lead into its resumed session: `orcr agent
// resume` gives the session a new agent with a new id, ResumedFrom the old. The plan
// then names the new agent as its lead (so its turn ends are read, a pending message
// reaches it, and `run start` from outside finds the lead running), and the index
// follows.
func (s *Service) resumedSelfLead(ctx context.Context, a wire.Agent) (string, bool) {
	if a.ResumedFrom == "" {
		return "", false
	}
	name, ok := s.selfLedPlan(a.ResumedFrom)
	if !ok {
		return "", false
	}
	r, err := s.plans.Update(ctx, name, func(r *Record) {
		if r.Lead == LeadSelf && r.LeadID == a.ResumedFrom {
			r.LeadID, r.LeadPath = a.ID, a.Path
		}
	})
	if err != nil || r.LeadID != a.ID {
		return "", false
	}
	s.mu.Lock()
	delete(s.selfLeads, a.ResumedFrom)
	s.selfLeads[a.ID] = name
	s.mu.Unlock()
	s.log.Info("plans: the self lead was resumed; the plan follows it", "plan", name, "from", a.ResumedFrom, "id", a.ID)
	return name, true
}

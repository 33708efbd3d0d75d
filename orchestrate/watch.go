package orchestrate

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"orcr/core/wire"
	planapi "orcr/orchestrate/api"
	"orcr/planning"
)

// What the plan service watches: its leads' state changes (a turn that ends reads the
// file, a turn that starts takes up a rejection) and the files of plans a person may
// edit (drafted, approved, failed).

// cursorBucket keeps the seq of the last lead event handled, so a restart resumes the
// subscription there instead of replaying the whole log.
const cursorBucket = "planwatch"

func (s *Service) cursor(ctx context.Context) (uint64, error) {
	b, err := s.st.Get(ctx, cursorBucket, "seq")
	if errors.Is(err, wire.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("plans: read cursor: %w", err)
	}
	n, _ := strconv.ParseUint(string(b), 10, 64)
	return n, nil
}

func (s *Service) followLeads(ctx context.Context, evs <-chan wire.Event) {
	defer s.wg.Done()
	for ev := range evs {
		if ev.Event != wire.EventAgentState || ev.Agent == nil {
			continue
		}
		name, ok := planOfLead(ev.Agent.Path)
		if !ok {
			if name, ok = s.selfLedPlan(ev.Agent.ID); !ok {
				if name, ok = s.resumedSelfLead(ctx, *ev.Agent); !ok {
					continue
				}
			}
		}
		if r, err := s.plans.Get(ctx, name); err == nil {
			s.onLead(ctx, r, *ev.Agent)
		}
		if err := s.st.Put(ctx, cursorBucket, "seq", []byte(strconv.FormatUint(ev.Seq, 10))); err != nil && ctx.Err() == nil {
			s.log.Warn("plans: store cursor", "err", err)
		}
	}
}

// planOfLead is NAME of "plans/NAME/lead".
func planOfLead(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, "plans/")
	if !ok {
		return "", false
	}
	name, ok := strings.CutSuffix(rest, "/lead")
	return name, ok && planning.ValidPlanName(name) == nil
}

// reconcile brings plan r up to date with its lead as it is now, at start.
func (s *Service) reconcile(ctx context.Context, r Record) {
	if r.LeadID == "" && (r.State == PlanDrafting || r.State == PlanRejected) {
		// Recorded, but the server stopped before the lead started: start it now.
		s.deliver(ctx, r, r.Pending)
		return
	}
	a, err := s.k.Get(ctx, r.LeadID)
	if err != nil {
		if r.Pending != "" {
			s.deliver(ctx, r, r.Pending) // the lead is gone: a new one takes the message
		}
		return
	}
	s.onLead(ctx, r, a)
}

// onLead handles plan r's lead being in a's state.
func (s *Service) onLead(ctx context.Context, r Record, a wire.Agent) {
	if a.ID != r.LeadID {
		return // an earlier lead of the plan
	}
	switch {
	case a.State == wire.StateWorking && r.Pending != "":
		// A message still pending has not reached the lead (a prompt refused it,
		// agent_blocked): this turn is not the one taking it up.
		return
	case a.State == wire.StateWorking:
		old := r
		next, actions, err := s.plans.Apply(ctx, r.Name, TurnStarted{}, s.now())
		if err != nil {
			s.log.Warn("plans: turn started", "plan", r.Name, "err", err)
			return
		}
		s.publish(ctx, old, next, "")
		s.act(ctx, next, actions)
		return
	case a.State == wire.StateDone || a.State.Terminal():
		r = s.turnEnded(ctx, r, a)
	}
	if r.Pending != "" && (a.State == wire.StateDone || a.State == wire.StateIdle || a.State.Terminal()) {
		s.deliver(ctx, r, r.Pending)
	}
}

// turnEnded reads the plan file once per turn end of the lead and steps the plan.
func (s *Service) turnEnded(ctx context.Context, r Record, a wire.Agent) Record {
	cat, _ := s.catalog()
	old := r
	next, actions, err := s.plans.Change(ctx, r.Name, func(r Record) (Record, []Action, error) {
		if r.LeadID != a.ID || !a.StateAt.After(r.LeadTurnAt) {
			return r, nil, errSeen
		}
		f := ReadPlanFile(r.File, planning.Options{Name: r.Name, Catalog: cat})
		n, acts, err := Step(r, TurnEnded{File: f}, s.now())
		n.LeadTurnAt = a.StateAt
		return n, acts, err
	})
	if errors.Is(err, errSeen) {
		return next
	}
	if err != nil {
		s.log.Warn("plans: turn ended", "plan", r.Name, "err", err)
		return r
	}
	s.stamp(next.Name, next.File)
	s.publish(ctx, old, next, notifyText(actions))
	return next
}

var errSeen = errors.New("turn end handled already")

// act performs a step's actions: a message for the lead is delivered (it is the
// record's Pending already); a notification is in the plan.state event.
func (s *Service) act(ctx context.Context, r Record, actions []Action) Record {
	for _, a := range actions {
		switch a.Kind {
		case ActSendLead:
			r = s.deliver(ctx, r, a.Text)
		case ActStopLead:
			s.stopLead(ctx, r)
		}
	}
	return r
}

// stopLead ends plan r's lead agent, unless it has ended already.
func (s *Service) stopLead(ctx context.Context, r Record) {
	if r.LeadID == "" || r.Lead == LeadSelf {
		return
	}
	if a, err := s.k.Get(ctx, r.LeadID); err != nil || a.State.Terminal() {
		return
	}
	if _, err := s.k.Kill(ctx, wire.KillParams{Glob: r.LeadID}); err != nil {
		s.log.Warn("plans: stop the lead", "plan", r.Name, "err", err)
	}
}

// deliver sends text to r's lead, or starts the lead again at its path when it has
// ended (its prompt, then the message), and clears Pending once done. Empty text
// with no lead starts the lead with its prompt alone. A lead that cannot take input
// yet (queued, starting) keeps the message pending until its next state.
func (s *Service) deliver(ctx context.Context, r Record, text string) Record {
	a, err := s.k.Get(ctx, r.LeadID)
	switch {
	case r.LeadID != "" && err == nil && (a.State == wire.StateQueued || a.State == wire.StateStarting):
		return r
	case r.LeadID != "" && err == nil && a.State.Live():
		// The kernel's send presses enter once the text shows and again while no
		// turn starts (core/submit.go), which claude needs for a long message.
		if err := s.k.Send(ctx, wire.SendParams{Target: a.ID, Text: flatten(text), Enter: true}); err != nil {
			// Pending stays; a lead waiting on a prompt (agent_blocked) gets it once
			// its turn is over (onLead), never typed into the prompt.
			s.log.Warn("plans: send to lead", "plan", r.Name, "err", err)
			return r
		}
		next, err := s.plans.Update(ctx, r.Name, func(x *Record) {
			if x.Pending == text {
				x.Pending = ""
			}
		})
		if err != nil {
			return r
		}
		return next
	}
	if r.Lead == LeadSelf {
		// The user's own session is never started by the plan: the message waits
		// (Pending) until it runs again under orcr.
		return r
	}
	cat, err := s.catalog()
	if err != nil {
		s.log.Warn("plans: restart lead", "plan", r.Name, "err", err)
		return r
	}
	prompt, err := s.leadPrompt(r, cat)
	if err != nil {
		s.log.Warn("plans: restart lead", "plan", r.Name, "err", err)
		return r
	}
	if text != "" {
		prompt += "\n\n## Since then\n\n"
		if statFile(r.File).exists {
			prompt += "A draft of this plan is in " + r.File + " already; read it first.\n\n"
		}
		prompt += text + "\n"
	}
	next, err := s.startLead(ctx, r, prompt)
	if err != nil {
		s.log.Warn("plans: restart lead", "plan", r.Name, "err", err)
		return r
	}
	return next
}

// flatten puts a message on one line: typed into a TUI, a newline would submit it
// half written. Blank lines become " — ", other line breaks a space.
func flatten(text string) string {
	var paras []string
	for _, p := range strings.Split(strings.TrimSpace(text), "\n\n") {
		if p = strings.Join(strings.Fields(p), " "); p != "" {
			paras = append(paras, p)
		}
	}
	return strings.Join(paras, " — ")
}

func notifyText(actions []Action) string {
	var out []string
	for _, a := range actions {
		if a.Kind == ActNotify {
			out = append(out, a.Text)
		}
	}
	return strings.Join(out, "\n")
}

// pollFiles looks at the files of plans a person may edit, and steps a plan whose
// file changed.
func (s *Service) pollFiles(ctx context.Context) {
	defer s.wg.Done()
	t := time.NewTicker(s.o.Poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		recs, err := s.plans.List(ctx)
		if err != nil {
			continue
		}
		for _, r := range recs {
			if r.State == PlanDrafted || r.State == PlanApproved || r.State == PlanFailed {
				s.checkFile(ctx, r)
			}
		}
	}
}

// checkFile reads r's file when it changed since last looked at (size and
// modification time; every write of a file changes the latter) and steps the plan
// with it.
func (s *Service) checkFile(ctx context.Context, r Record) Record {
	st := statFile(r.File)
	s.mu.Lock()
	seen, ok := s.stamps[r.Name]
	s.stamps[r.Name] = st
	s.mu.Unlock()
	if ok && seen == st {
		return r
	}
	cat, _ := s.catalog()
	old := r
	next, actions, err := s.plans.Change(ctx, r.Name, func(r Record) (Record, []Action, error) {
		return Step(r, FileChanged{File: ReadPlanFile(r.File, planning.Options{Name: r.Name, Catalog: cat})}, s.now())
	})
	if err != nil {
		return r
	}
	s.publish(ctx, old, next, notifyText(actions))
	return next
}

// publish tells subscribers what a step changed: plan.state for a new state or a fix
// round, plan.edited for a change of the file a person may have made.
func (s *Service) publish(ctx context.Context, old, next Record, notify string) {
	if len(next.Events) == 0 {
		return
	}
	last := next.Events[len(next.Events)-1]
	if len(old.Events) > 0 && old.Events[len(old.Events)-1] == last && old.State == next.State {
		return // nothing happened
	}
	data := map[string]any{"name": next.Name, "state": string(next.State), "kind": last.Kind, "text": last.Text}
	if notify != "" {
		data["notify"] = notify
	}
	kind := planapi.EventPlanState
	switch {
	case old.State == next.State && (last.Kind == "edited" || last.Kind == "missing" || last.Kind == "restored" ||
		(last.Kind == "invalid" && next.State != PlanDrafting)):
		kind = planapi.EventPlanEdited
		data["hash"], data["approvedHash"] = next.FileHash, next.ApprovedHash
	default:
		data["from"] = string(old.State)
	}
	if _, err := s.k.Publish(ctx, wire.Event{Event: kind, At: s.now(), Rule: "plan." + last.Kind, Data: data}); err != nil {
		s.log.Warn("plans: publish", "plan", next.Name, "err", err)
	}
}

package run

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"orcr/internal/regfile"
	"orcr/planning"
)

// Watching the plan file of each open run (step_plan.go says what an edit does). A
// poll, not fsnotify: editors replace files in ways a watch loses, and a stat of a
// few files every PlanPoll costs nothing.

func (s *Service) pollPlans() {
	defer s.wg.Done()
	t := time.NewTicker(s.o.PlanPoll)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		recs, err := s.runs.List(s.ctx)
		if err != nil {
			continue
		}
		for _, rec := range recs {
			s.checkPlan(s.ctx, rec)
		}
	}
}

// checkPlan feeds FPlanEdited when rec's plan file is not the one the run last took
// in; it returns the record after it and whether it did.
func (s *Service) checkPlan(ctx context.Context, rec Record) (Record, bool) {
	if rec.Run.Stopped || rec.Finished || rec.PlanFile == "" {
		return rec, false
	}
	f, src, ok := planFact(rec, s.followed(rec))
	if !ok {
		return rec, false
	}
	if f.Text == "" {
		// The run follows this plan now. The copy is written before the fact, so a
		// crash in between finds the file newer than the run and takes it in again.
		if err := s.keepPlan(rec.Run.Name, src); err != nil {
			s.log.Warn("runs: keep plan", "run", rec.Run.Name, "err", err)
			return rec, false
		}
	}
	next, err := s.apply(ctx, rec.Run.Name, f)
	if err != nil {
		s.log.Warn("runs: plan edited", "run", rec.Run.Name, "err", err)
		return rec, false
	}
	return next, true
}

// planFact reads rec's plan file and returns the fact of its edit, if it changed
// since the run last took it in; prev is the plan the run followed until now (nil
// when it has none), for what an edit changed that the run does not keep.
func planFact(rec Record, prev *planning.Plan) (Fact, []byte, bool) {
	seen := rec.Run.PlanHash
	if seen == "" {
		seen = rec.PlanHash
	}
	src, err := regfile.Read(rec.PlanFile)
	if err != nil {
		if seen == "missing" {
			return Fact{}, nil, false
		}
		return Fact{Kind: FPlanEdited, Hash: "missing", Text: fmt.Sprintf("%s cannot be read (%v); put it back", rec.PlanFile, err)}, nil, true
	}
	h := planning.HashBytes(src)
	if h == seen {
		return Fact{}, nil, false
	}
	f := Fact{Kind: FPlanEdited, Hash: h}
	p, err := planning.Parse(src, planning.Options{File: rec.PlanFile, Name: rec.Run.Name})
	if err != nil {
		f.Text = err.Error()
		return f, src, true
	}
	for _, m := range p.Milestones {
		it := PlanItem{ID: m.ID, Title: m.Title, Depends: m.Depends, Tier: m.Tier, Estimate: m.Estimate, Was: m.Estimate}
		if pm := planned(prev, m.ID); pm != nil {
			it.Was = pm.Estimate
		}
		f.Plan = append(f.Plan, it)
	}
	if p.Check != "" && p.Check != rec.Check && !rec.CheckFlag {
		f.Check = p.Check
	}
	if p.Mode != "" && p.Mode != rec.Mode {
		f.Mode = p.Mode
	}
	return f, src, true
}

// PlanCopy is where the autopilot keeps the plan run name follows:
// $ORCR_HOME/runs/NAME/plan.md.
func PlanCopy(home, name string) string {
	return filepath.Join(home, "runs", name, "plan.md")
}

// keepPlan writes the plan the run follows (whole or not at all).
func (s *Service) keepPlan(name string, src []byte) error {
	path := PlanCopy(s.o.Home, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	// Never through a link at the name: files under ORCR_HOME are opened O_NOFOLLOW (§13).
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(src)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

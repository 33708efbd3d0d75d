package orchestrate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"orcr/core"
	"orcr/core/wire"

	"orcr/internal/regfile"
	planapi "orcr/orchestrate/api"
	"orcr/planning"
)

// The plan service (DESIGN §8 "Plan"): the feature beside the kernel that serves
// plan.* and catalog.get. It keeps plan records in its own bucket (Plans), starts
// each plan's lead as a normal agent through the kernel, watches the
// lead's events and the plan file, and steps the pure state machine (Step) with what
// it sees. Every step is stored before its side effect (a message to the lead is the
// record's Pending until sent), so a restarted server re-derives everything from the
// store and the lead agents' states.

// ServiceOptions configure a Service; Start hands it the kernel and its buckets.
type ServiceOptions struct {
	// Detect reports whether a provider's program is installed (and how to install
	// it); nil counts every provider as installed.
	Detect func(ctx context.Context, provider string) core.ProviderStatus
	// CatalogPath is the user's catalog.toml ("" for the embedded default alone);
	// TemplatePath the user's lead prompt template ("" for the default). Both are
	// read on use, so an edit needs no restart.
	CatalogPath  string
	TemplatePath string
	Logger       *slog.Logger
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
	// Poll is how often the files of drafted, approved and failed plans are looked at
	// (default 2 s).
	Poll time.Duration
}

// Service serves plan.* and catalog.get (methods.go).
type Service struct {
	o     ServiceOptions
	k     core.Kernel  // set by Start
	st    core.Buckets // the feature's buckets, set by Start
	plans *Plans       // over st, set by Start
	log   *slog.Logger

	mu     sync.Mutex
	stamps map[string]fileStamp // name → the plan file as last looked at
	// selfLeads are the plans led by --lead self, by their lead agent's id.
	selfLeads map[string]string

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

var ()

// NewService builds the plan service; Start begins watching.
func NewService(o ServiceOptions) (*Service, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Poll <= 0 {
		o.Poll = 2 * time.Second
	}
	return &Service{o: o, log: o.Logger, stamps: map[string]fileStamp{}}, nil
}

func (s *Service) now() time.Time { return s.o.Now().UTC() }

// PlanNew serves its socket method (methods.go): it records the plan, then starts its lead.
func (s *Service) PlanNew(ctx context.Context, p planapi.PlanNewParams) (planapi.Plan, error) {
	if err := planning.ValidPlanName(p.Name); err != nil {
		return planapi.Plan{}, wire.Errorf(wire.CodeInvalidParams, "%v", err)
	}
	repo, err := repoRoot(ctx, p.Repo)
	if err != nil {
		return planapi.Plan{}, err
	}
	if old, err := s.plans.Get(ctx, p.Name); err == nil {
		return planapi.Plan{}, wire.Errorf(wire.CodeNameTaken, "plan %s exists already (%s, %s): pick another name",
			p.Name, old.State, old.File)
	}
	cat, err := s.catalog()
	if err != nil {
		return planapi.Plan{}, err
	}
	if p.Lead == LeadNone {
		return s.planFromFile(ctx, p, repo, cat)
	}
	if p.Lead == LeadSelf {
		return s.planSelfLed(ctx, p, repo, cat)
	}
	lead, err := s.pickLead(ctx, cat, p.Lead)
	if err != nil {
		return planapi.Plan{}, err
	}
	r, err := NewRecord(p.Name, p.Request, repo, lead, s.now())
	if err != nil {
		return planapi.Plan{}, wire.Errorf(wire.CodeInvalidParams, "%v", err)
	}
	prompt, err := s.leadPrompt(r, cat)
	if err != nil {
		return planapi.Plan{}, err
	}
	if err := s.plans.Create(ctx, r); err != nil {
		if errors.Is(err, ErrPlanExists) {
			return planapi.Plan{}, wire.Errorf(wire.CodeNameTaken, "%v", err)
		}
		return planapi.Plan{}, err
	}
	r, err = s.startLead(ctx, r, prompt)
	if err != nil {
		// Nothing started: the name is free again.
		_ = s.plans.Delete(ctx, p.Name)
		return planapi.Plan{}, err
	}
	s.publish(ctx, Record{Name: r.Name}, r, "")
	return r.Wire(), nil
}

// planFromFile records a plan a person wrote (`--lead none`): no lead starts; the file
// must exist and parse, and the plan is drafted at once, ready to approve.
func (s *Service) planFromFile(ctx context.Context, p planapi.PlanNewParams, repo string, cat *planning.Catalog) (planapi.Plan, error) {
	r, err := NewRecord(p.Name, p.Request, repo, LeadNone, s.now())
	if err != nil {
		return planapi.Plan{}, wire.Errorf(wire.CodeInvalidParams, "%v", err)
	}
	f := ReadPlanFile(r.File, planning.Options{Name: r.Name, Catalog: cat})
	switch {
	case f.Missing:
		return planapi.Plan{}, wire.Errorf(wire.CodeInvalidParams,
			"plan %s has no lead, so its file must be there: write %s first (or give a lead: --lead claude)", p.Name, r.File)
	case !f.OK():
		return planapi.Plan{}, wire.Errorf(wire.CodeInvalidParams, "plan %s: %s does not parse:\n%s", p.Name, r.File, strings.Join(f.Errors, "\n"))
	}
	r.State, r.FileHash = PlanDrafted, f.Hash
	r.event(s.now(), "drafted", fmt.Sprintf("%d milestones, written by hand (no lead)", f.Milestones))
	if err := s.plans.Create(ctx, r); err != nil {
		if errors.Is(err, ErrPlanExists) {
			return planapi.Plan{}, wire.Errorf(wire.CodeNameTaken, "%v", err)
		}
		return planapi.Plan{}, err
	}
	s.stamp(r.Name, r.File)
	s.publish(ctx, Record{Name: r.Name}, r, "")
	return r.Wire(), nil
}

// Plans serves its socket method (methods.go).
func (s *Service) Plans(ctx context.Context) ([]planapi.Plan, error) {
	recs, err := s.plans.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]planapi.Plan, len(recs))
	for i, r := range recs {
		out[i] = r.Wire()
	}
	return out, nil
}

// PlanGet serves its socket method (methods.go). It looks at the file first, so an edit made
// a moment ago (orcr plan edit) is seen and recorded before the answer.
func (s *Service) PlanGet(ctx context.Context, name string) (planapi.PlanGetResult, error) {
	r, err := s.plans.Get(ctx, name)
	if err != nil {
		return planapi.PlanGetResult{}, err
	}
	if r.State != PlanDrafting && r.State != PlanRejected {
		r = s.checkFile(ctx, r)
	}
	cat, _ := s.catalog() // a broken user catalog is reported by catalog.get; check without it
	return planView(r, cat), nil
}

// PlanApprove serves its socket method (methods.go): the file as it is now is what is approved.
func (s *Service) PlanApprove(ctx context.Context, name string) (planapi.Plan, error) {
	cat, _ := s.catalog()
	var file FileState
	old, _ := s.plans.Get(ctx, name)
	r, actions, err := s.plans.Change(ctx, name, func(r Record) (Record, []Action, error) {
		file = ReadPlanFile(r.File, planning.Options{Name: r.Name, Catalog: cat})
		return Step(r, Approve{File: file}, s.now())
	})
	if err != nil {
		return planapi.Plan{}, requestError(err, file)
	}
	s.stamp(r.Name, r.File)
	s.publish(ctx, old, r, "")
	r = s.act(ctx, r, actions)
	return r.Wire(), nil
}

// PlanReject serves its socket method (methods.go): the reason goes to the lead.
func (s *Service) PlanReject(ctx context.Context, p planapi.PlanRejectParams) (planapi.Plan, error) {
	old, _ := s.plans.Get(ctx, p.Name)
	r, actions, err := s.plans.Apply(ctx, p.Name, Reject{Reason: p.Reason}, s.now())
	if err != nil {
		return planapi.Plan{}, requestError(err, FileState{})
	}
	s.publish(ctx, old, r, "")
	r = s.act(ctx, r, actions)
	return r.Wire(), nil
}

// requestError gives a refused user request its API code.
func requestError(err error, file FileState) error {
	var we *wire.Error
	switch {
	case errors.As(err, &we):
		return err
	case errors.Is(err, ErrTransition):
		return wire.Errorf(wire.CodeNotAllowed, "%v", err)
	case len(file.Errors) > 0 || file.Missing:
		return wire.Errorf(wire.CodePlanInvalid, "%v", err)
	}
	return wire.Errorf(wire.CodeInvalidParams, "%v", err)
}

// Catalog serves its socket method (methods.go).
func (s *Service) Catalog(ctx context.Context) (planapi.CatalogResult, error) {
	c, err := s.catalog()
	if err != nil {
		return planapi.CatalogResult{}, err
	}
	var table bytes.Buffer
	if err := planning.WriteTable(&table, c); err != nil {
		return planapi.CatalogResult{}, err
	}
	res := planapi.CatalogResult{Table: table.String(), Models: make([]planapi.CatalogModel, len(c.Models))}
	for i, m := range c.Models {
		res.Models[i] = planapi.CatalogModel{Provider: m.Provider, ID: m.ID, Reasoning: m.Reasoning, Coding: m.Coding,
			Architecture: m.Architecture, InstructionFollowing: m.InstructionFollowing, ToolUse: m.ToolUse,
			Planning: m.Planning, Speed: m.Speed, Context: m.Context, Premium: m.Premium, Tier: c.Qualifies(m)}
	}
	for _, t := range c.Tiers {
		res.Tiers = append(res.Tiers, planapi.CatalogTier{Name: t.Name, Min: t.Min.ByKey(), MinContext: t.MinContext})
	}
	return res, nil
}

// catalog loads the catalog now; a broken user file is an error naming its lines.
func (s *Service) catalog() (*planning.Catalog, error) {
	c, err := planning.Load(planning.DefaultFS, s.o.CatalogPath)
	if err != nil {
		return nil, wire.Errorf(wire.CodeInvalidParams, "catalog: %v", err)
	}
	return c, nil
}

// leadPrompt renders the lead's prompt for r.
func (s *Service) leadPrompt(r Record, cat *planning.Catalog) (string, error) {
	t, err := LoadLeadTemplate(s.o.TemplatePath)
	if err != nil {
		return "", wire.Errorf(wire.CodeInvalidParams, "%v", err)
	}
	lp, err := NewLeadPrompt(r, cat)
	if err != nil {
		return "", err
	}
	out, err := RenderLeadPrompt(t, lp)
	if err != nil {
		return "", wire.Errorf(wire.CodeInvalidParams, "%v", err)
	}
	return out, nil
}

// fileStamp is what a cheap look at a file sees; a change means read it again.
type fileStamp struct {
	exists bool
	size   int64
	mod    time.Time
}

func statFile(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{exists: true, size: fi.Size(), mod: fi.ModTime()}
}

// stamp notes the file of plan name as seen now.
func (s *Service) stamp(name, path string) {
	st := statFile(path)
	s.mu.Lock()
	s.stamps[name] = st
	s.mu.Unlock()
}

// planView is plan.get's answer for r: the record and the file as it is now.
func planView(r Record, cat *planning.Catalog) planapi.PlanGetResult {
	res := planapi.PlanGetResult{Plan: r.Wire(), Milestones: []planapi.PlanMilestone{}, Problems: []planapi.PlanProblem{}}
	b, err := regfile.Read(r.File)
	switch {
	case errors.Is(err, os.ErrNotExist):
		res.Missing = true
		res.Problems = append(res.Problems, planapi.PlanProblem{Code: planning.CodeUnreadable,
			Message: fmt.Sprintf("%s does not exist: the lead has not written it yet, or it was deleted", r.File)})
		return res
	case err != nil:
		res.Problems = append(res.Problems, planapi.PlanProblem{Code: planning.CodeUnreadable, Message: fmt.Sprintf("cannot read %s: %v", r.File, err)})
		return res
	}
	if len(b) <= maxSource {
		res.Source = string(b)
	}
	p, perr := planning.Parse(b, planning.Options{File: filepath.Base(r.File), Name: r.Name, Catalog: cat})
	res.Check, res.Mode, res.Premium = p.Check, p.Mode, p.Premium
	var es planning.Errors
	if errors.As(perr, &es) {
		for _, e := range es {
			res.Problems = append(res.Problems, planapi.PlanProblem{Line: e.Line, Code: e.Code, Message: e.Error()})
		}
	}
	for _, m := range p.Milestones {
		res.Milestones = append(res.Milestones, milestoneWire(m))
	}
	return res
}

// maxSource bounds the plan text plan.get returns; a larger file is not a plan.
const maxSource = 1 << 20

package orchestrate

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"orcr/core"
	"orcr/core/wire"
	planapi "orcr/orchestrate/api"
	"orcr/planning"
)

// repoRoot is the top folder of the git repository dir is in; the plan lives there
// (.orcr/plans) and the lead runs there.
func repoRoot(ctx context.Context, dir string) (string, error) {
	if dir == "" || !filepath.IsAbs(dir) {
		return "", wire.Errorf(wire.CodeInvalidParams, "repo %q must be an absolute path to a folder of a git repository", dir)
	}
	out, err := exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "--show-toplevel").CombinedOutput()
	if err != nil {
		if _, lerr := exec.LookPath("git"); lerr != nil {
			return "", wire.Errorf(wire.CodeMissingProgram, "plans need git, which is not installed: apt-get install git (or brew install git)")
		}
		return "", wire.Errorf(wire.CodeNotARepo, "%s is not inside a git repository: run `git init` there, or pass --repo with a repository's folder", dir)
	}
	return filepath.Clean(strings.TrimSpace(string(out))), nil
}

// pickLead resolves --lead ("", "provider" or "provider:model") to "provider:model",
// LeadNone as a plan's lead: a person wrote the plan file; no lead agent runs.
const LeadNone = "none"

// checking that the provider's program is installed.
func (s *Service) pickLead(ctx context.Context, cat *planning.Catalog, want string) (string, error) {
	seen := map[string]bool{} // Detect may run the program: once per provider
	installed := func(p string) bool {
		found, ok := seen[p]
		if !ok {
			found = s.detect(ctx, p).Found
			seen[p] = found
		}
		return found
	}
	if want == "" {
		if ms := cat.Pick(planning.TierHigh, false, installed); len(ms) > 0 {
			return ms[0].Ref(), nil
		}
		// Nothing high-tier is installed: name what to install for the best one.
		if ms := cat.Pick(planning.TierHigh, false, nil); len(ms) > 0 {
			return "", s.missing(ctx, ms[0].Provider, "the plan's lead (a high-tier model: "+ms[0].Ref()+")")
		}
		return "", wire.Errorf(wire.CodeInvalidParams, "no model of the catalog qualifies for tier high: name a lead with --lead PROVIDER:MODEL")
	}
	provider, model, _ := strings.Cut(want, ":")
	if !slices.Contains(planning.KnownProviders, provider) {
		return "", wire.Errorf(wire.CodeUnknownProvider, "lead %q: provider %q is not one of %s", want, provider, strings.Join(planning.KnownProviders, ", "))
	}
	if !installed(provider) {
		return "", s.missing(ctx, provider, "the plan's lead")
	}
	if model != "" {
		return provider + ":" + model, nil // the user's choice, in the catalog or not
	}
	onlyThis := func(p string) bool { return p == provider }
	if ms := cat.Pick(planning.TierHigh, false, onlyThis); len(ms) > 0 {
		return ms[0].Ref(), nil
	}
	if ms := cat.Pick(planning.TierHigh, true, onlyThis); len(ms) > 0 {
		return ms[0].Ref(), nil
	}
	return "", wire.Errorf(wire.CodeInvalidParams, "lead %q: no %s model of the catalog qualifies for tier high; name one with --lead %s:MODEL", want, provider, provider)
}

// detect reports whether provider's program is installed.
func (s *Service) detect(ctx context.Context, provider string) core.ProviderStatus {
	if s.o.Detect == nil {
		return core.ProviderStatus{Name: provider, Found: true}
	}
	return s.o.Detect(ctx, provider)
}

// missing is the exit-2 error for a provider that is not installed.
func (s *Service) missing(ctx context.Context, provider, what string) error {
	fix := s.detect(ctx, provider).Fix
	if fix == "" {
		fix = "see `orcr doctor`"
	}
	return wire.Errorf(wire.CodeMissingProgram, "%s runs on %s, which is not installed: %s (or choose another with --lead PROVIDER[:MODEL])", what, provider, fix)
}

// leadArgv is what the lead's provider needs to write its plan file without asking
// (DESIGN §8 Autonomy): claude's acceptEdits mode accepts file edits in the working
// folder (the repository) and prompts for anything else; it is allowed to root,
// unlike bypassPermissions. Other providers get their defaults.
func leadArgv(provider string) []string {
	switch provider {
	case "claude":
		return []string{"--permission-mode", "acceptEdits"}
	}
	return nil
}

// startLead starts r's lead at its path with prompt and records the agent.
func (s *Service) startLead(ctx context.Context, r Record, prompt string) (Record, error) {
	provider, model, _ := strings.Cut(r.Lead, ":")
	a, err := s.k.Run(ctx, wire.RunParams{Path: r.LeadPath, Provider: provider, Model: model,
		Cwd: r.Repo, Prompt: prompt, Argv: leadArgv(provider)})
	if err != nil {
		return r, fmt.Errorf("start the lead of plan %s: %w", r.Name, err)
	}
	return s.plans.Update(ctx, r.Name, func(x *Record) {
		x.LeadID, x.LeadTurnAt, x.Pending = a.ID, time.Time{}, ""
		x.event(s.now(), "lead", fmt.Sprintf("%s started on %s", a.Path, r.Lead))
	})
}

// Wire is the record as the API shows it.
func (r Record) Wire() planapi.Plan {
	p := planapi.Plan{Name: r.Name, Request: r.Request, Repo: r.Repo, File: r.File, LeadID: r.LeadID,
		LeadPath: r.LeadPath, Lead: r.Lead, State: string(r.State), Rounds: r.Rounds, FixRounds: r.FixRounds,
		Reason: r.Reason, FileHash: r.FileHash, ApprovedHash: r.ApprovedHash, Errors: slices.Clone(r.Errors),
		CreatedAt: r.Created, UpdatedAt: r.Updated, Events: make([]planapi.PlanEvent, len(r.Events))}
	if p.Errors == nil {
		p.Errors = []string{}
	}
	for i, e := range r.Events {
		p.Events[i] = planapi.PlanEvent{At: e.At, Kind: e.Kind, Text: e.Text}
	}
	return p
}

// milestoneWire is the milestone as the API shows it.
func milestoneWire(m *planning.Milestone) planapi.PlanMilestone {
	w := planapi.PlanMilestone{ID: m.ID, Title: m.Title, Line: m.Line, Depends: nonNil(m.Depends), Tier: m.Tier,
		Needs: nonNil(m.Needs), ModelWhy: m.ModelWhy, EstimateSeconds: int(m.Estimate.Seconds()), Model: m.Model,
		State: m.State, Goal: m.Goal.Text, Acceptance: m.Acceptance.Text, Checks: make([]planapi.PlanCheck, len(m.Checks))}
	for i, c := range m.Checks {
		w.Checks[i] = planapi.PlanCheck{Line: c.Line, Done: c.Done, Text: c.Text}
	}
	return w
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return slices.Clone(s)
}

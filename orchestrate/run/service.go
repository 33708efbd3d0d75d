package run

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"orcr/core"
	"orcr/core/wire"

	"orcr/internal/regfile"
	planapi "orcr/orchestrate/api"
	runapi "orcr/orchestrate/run/api"
	"orcr/planning"
)

// The autopilot (DESIGN §8): the feature beside the kernel that serves run.*. It keeps
// runs in its own buckets (Runs), starts the lead, coders and reviewer as ordinary
// agents through the kernel's AgentService, follows their events, and performs what
// Step asks for. It spends no model on waiting: between facts it sleeps.

// PullRequest is what finish asks the GitHub side to open.
type PullRequest struct {
	Repo        string // the repository's folder
	Remote      string // the remote's URL
	Head, Base  string // branches
	Title, Body string
}

// Options configure a Service; Home is required. Start hands it the kernel and its
// buckets.
type Options struct {
	Home string // ORCR_HOME: worktrees live under it
	// Bin is the absolute path of the running orcr: the texts typed into the run's
	// agents call it ("" leaves them calling "$ORCR_BIN").
	Bin string
	// CatalogPath is the user's catalog.toml ("" for the embedded default alone).
	CatalogPath string
	// Available reports whether a provider's program is installed; nil: all are.
	Available func(provider string) bool
	// OpenPR opens a pull request and returns its URL; nil when no GitHub client is
	// wired (finish then says so).
	OpenPR func(ctx context.Context, pr PullRequest) (string, error)
	// GitEnv is added to every git command (tests set an identity).
	GitEnv []string
	Logger *slog.Logger
	Now    func() time.Time
	// NoSandbox runs coders unconfined ([run] sandbox = "off"); by default each coder
	// is confined with Landlock to its worktree (DESIGN §16).
	NoSandbox bool
	// MCP gives the run's agents orcr's MCP server at this scope ([run] mcp; DESIGN
	// §17), through the same resolver as a role's mcp.
	MCP string
	// PlanPoll is how often the plan files of open runs are looked at for edits
	// (default 2 s; `run status` looks at once).
	PlanPoll time.Duration
}

// Service serves its socket method (methods.go).
type Service struct {
	o    Options
	k    core.Kernel  // set by Start
	st   core.Buckets // the feature's buckets, set by Start
	runs *Runs        // over st, set by Start
	log  *slog.Logger

	mu       sync.Mutex
	inflight map[string]bool        // "run/ref" of pending actions being performed
	timers   map[string]*time.Timer // per run: the next tick
	coderMu  map[string]*sync.Mutex // "run/coder": messages to one agent in order
	stopped  map[string]bool        // agent ids the autopilot stopped itself
	// busySent is when a message went to a coder ("run/coder") that was working.
	busySent map[string]time.Time
	// blocked is what a run's agent ("run/who") waits for the user on (a permission
	// or a question: "permission Bash(python3 x.py)"), as its last state said, for
	// the run's view; it is not stored: a restart reads it from the agents again.
	blocked map[string]string
	// selfLeads are the runs led by --lead self, by their lead agent's id.
	selfLeads map[string]string
	// shared names the runs in shared mode: their coders work in this machine's one
	// checkout, so StaysHere keeps them here (asked under the engine's lock, where the
	// store is not read).
	shared sync.Map

	// starting serialises RunStart: two `run start NAME` at once both passed the "exists
	// already" check and the second failed with git's raw "branch already exists".
	starting sync.Mutex

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewService builds the autopilot; Start resumes the runs in the store.
func NewService(o Options) (*Service, error) {
	if o.Home == "" {
		return nil, errors.New("runs need the home")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.PlanPoll <= 0 {
		o.PlanPoll = 2 * time.Second
	}
	return &Service{o: o, log: o.Logger, inflight: map[string]bool{},
		timers: map[string]*time.Timer{}, coderMu: map[string]*sync.Mutex{}, stopped: map[string]bool{},
		busySent: map[string]time.Time{}, blocked: map[string]string{}}, nil
}

func (s *Service) now() time.Time { return s.o.Now().UTC() }

func (s *Service) git(dir string) Git { return Git{Dir: dir, Env: s.o.GitEnv} }

// resume brings rec up to date with git and the agents, then performs its outbox.
func (s *Service) resume(ctx context.Context, rec Record) {
	name := rec.Run.Name
	obs, err := s.observe(ctx, rec)
	if err != nil {
		// Guessing from refs that could not be read would hold every milestone.
		s.log.Warn("runs: resume: read the refs", "run", name, "err", err)
	} else {
		for _, f := range Reconcile(rec, obs, rec.Turns) {
			if f.Kind == FTurnEnded {
				if a, err := s.k.Get(ctx, rec.Agents[f.Coder]); err == nil {
					f.Text = a.LastMessage
				}
			}
			s.feed(ctx, name, f)
		}
	}
	// Who waits on a prompt now (the event that said so went to the server before).
	for who, id := range rec.Agents {
		if a, err := s.k.Get(ctx, id); err == nil {
			s.noteBlocked(name, who, a)
		}
	}
	// What the lead and the reviewer did while no server watched (their events may
	// be gone): Step takes in each turn once.
	for _, who := range []string{"lead", "reviewer"} {
		if rec, err = s.runs.Get(ctx, name); err != nil || rec.Agents[who] == "" {
			continue
		}
		a, err := s.k.Get(ctx, rec.Agents[who])
		if who == "lead" && (err != nil || a.State.Terminal()) {
			// It ended while no server watched (or with the server): its end
			// event may be gone.
			s.leadEnded(ctx, rec, rec.Agents[who], "it ended while the server was down", true)
			continue
		}
		if err != nil {
			continue
		}
		if who == "lead" {
			s.onLead(ctx, rec, a)
		} else {
			s.onReviewer(ctx, rec, a)
		}
	}
	rec, err = s.runs.Get(ctx, name)
	if err != nil {
		s.log.Warn("runs: resume", "run", name, "err", err)
		return
	}
	for _, p := range rec.Outbox {
		s.perform(rec.Run.Name, p)
	}
	s.schedule(rec)
}

// observe reads the refs and the coders' agents for Reconcile.
func (s *Service) observe(ctx context.Context, rec Record) (Observed, error) {
	g := s.git(rec.Repo)
	o := Observed{Branches: map[string]string{}, Agents: map[string]AgentSeen{}}
	var err error
	if o.Feature, err = g.Rev(ctx, "refs/heads/"+FeatureBranch(rec.Run.Name)); err != nil {
		return o, err
	}
	brs, err := g.Branches(ctx, "orcr/"+rec.Run.Name+"/")
	if err != nil {
		return o, err
	}
	for b, sha := range brs {
		o.Branches[strings.TrimPrefix(b, "orcr/"+rec.Run.Name+"/")] = sha
	}
	if rec.Mode == "shared" {
		for _, m := range rec.Run.Milestones {
			if _, ok := o.Branches[m.ID]; !ok && m.State != Planned && m.State != Ready {
				o.Branches[m.ID] = "" // shared mode branches are made on first brief
			}
		}
	}
	for _, c := range rec.Run.Coders {
		if c.Gone {
			continue
		}
		a, err := s.k.Get(ctx, rec.Agents[c.Name])
		if err != nil || rec.Agents[c.Name] == "" {
			o.Agents[c.Name] = AgentSeen{}
			continue
		}
		// A queued coder is not lost: the queue survived the restart and admits it.
		o.Agents[c.Name] = AgentSeen{Exists: true, Live: a.State.Live() || a.State == wire.StateQueued,
			Idle: a.State == wire.StateDone || a.State == wire.StateIdle, TurnAt: a.StateAt}
	}
	if h := head(rec.Run.MergeQueue); h != "" {
		m, _ := rec.Run.Milestone(h)
		for _, p := range rec.Outbox {
			if p.Action.Kind == AAdvance && p.Action.M == h {
				if o.Advance, err = g.SquashCommit(ctx, p.Action.Base, p.Action.Head, s.commitMessage(rec, m), p.At); err != nil {
					// Not knowing the commit the advance makes, a moved ref is taken
					// for a hand's move (held with the reason), never for the advance.
					s.log.Warn("runs: resume: the pending advance's commit", "run", rec.Run.Name, "m", h, "err", err)
				}
			}
		}
	}
	return o, nil
}

// ---- the API ----

// RunStart serves its socket method (methods.go).
func (s *Service) RunStart(ctx context.Context, p runapi.RunStartParams) (runapi.RunView, error) {
	if err := planning.ValidPlanName(p.Name); err != nil {
		return runapi.RunView{}, wire.Errorf(wire.CodeInvalidParams, "%v", err)
	}
	s.starting.Lock()
	defer s.starting.Unlock()
	if old, err := s.runs.Get(ctx, p.Name); err == nil {
		switch {
		case p.Fresh && old.Run.Open():
			return runapi.RunView{}, wire.Errorf(wire.CodeInvalidParams, "run %s is under way: `orcr run stop %s` first, then `orcr run start %s --fresh`", p.Name, p.Name, p.Name)
		case p.Fresh:
			if err := s.discard(ctx, old); err != nil {
				return runapi.RunView{}, fmt.Errorf("run %s: remove the old run for --fresh: %w", p.Name, err)
			}
		case old.Run.Stopped && !old.Finished:
			// `run start` of a stopped run takes it up where it stopped.
			return s.request(ctx, p.Name, Fact{Kind: FResume})
		default:
			return runapi.RunView{}, wire.Errorf(wire.CodeInvalidParams, "run %s exists already (%s): see `orcr run status %s`, or start it anew with `orcr run start %s --fresh`",
				p.Name, s.view(old).State, p.Name, p.Name)
		}
	}
	plans, ok := core.Lookup[Plans](s.k, PlansCapability)
	if !ok {
		return runapi.RunView{}, wire.Errorf(wire.CodeInternal, "runs need the plans feature, and this server has none")
	}
	got, err := plans.PlanGet(ctx, p.Name)
	if err != nil {
		return runapi.RunView{}, err
	}
	plan := got.Plan
	if plan.State != planapi.StateApproved {
		return runapi.RunView{}, wire.Errorf(wire.CodeInvalidParams, "plan %s is %s: approve it first with `orcr plan approve %s`", p.Name, plan.State, p.Name)
	}
	src, err := regfile.Read(plan.File)
	if err != nil {
		return runapi.RunView{}, wire.Errorf(wire.CodeInvalidParams, "read plan %s: %v", p.Name, err)
	}
	if h := planning.HashBytes(src); h != plan.ApprovedHash {
		return runapi.RunView{}, wire.Errorf(wire.CodeInvalidParams, "plan %s changed after it was approved (%s): approve the new version first", p.Name, plan.File)
	}
	pl, err := planning.Parse(src, planning.Options{File: plan.File, Name: p.Name})
	if err != nil {
		return runapi.RunView{}, wire.Errorf(wire.CodeInvalidParams, "plan %s: %v", p.Name, err)
	}
	mode := pl.Mode
	if p.Mode != "" {
		mode = p.Mode
	}
	if mode != "worktree" && mode != "shared" {
		return runapi.RunView{}, wire.Errorf(wire.CodeInvalidParams, "mode %q: use worktree or shared", mode)
	}
	pl.Mode = mode
	check := pl.Check
	if p.Check != "" {
		check = p.Check
	}
	g := s.git(plan.Repo)
	base := p.Base
	if base == "" {
		if base, _ = g.CurrentBranch(ctx); base == "" {
			return runapi.RunView{}, wire.Errorf(wire.CodeInvalidParams, "%s has no branch checked out: name the base with --base", plan.Repo)
		}
	}
	if len(p.Nodes) > 0 {
		if mode == "shared" {
			return runapi.RunView{}, wire.Errorf(wire.CodeInvalidParams, "run %s: coders on nodes work in clones of their own; a shared run has one checkout (use --mode worktree)", p.Name)
		}
		if _, err := s.nodeGit(); err != nil {
			return runapi.RunView{}, err
		}
	}
	if mode == "shared" {
		if err := refuseDirty(ctx, g, plan.Repo); err != nil {
			return runapi.RunView{}, err
		}
	}
	s.noteMode(p.Name, mode)
	if err := g.ExcludeOrcr(ctx); err != nil {
		return runapi.RunView{}, fmt.Errorf("run %s: ignore .orcr/ in %s: %w", p.Name, plan.Repo, err)
	}
	checkout, _ := g.CurrentBranch(ctx)
	baseTip, err := g.Rev(ctx, base)
	if err != nil || baseTip == "" {
		return runapi.RunView{}, wire.Errorf(wire.CodeInvalidParams, "base branch %q not found in %s", base, plan.Repo)
	}
	existing, err := g.Rev(ctx, "refs/heads/"+FeatureBranch(p.Name))
	if err != nil {
		return runapi.RunView{}, fmt.Errorf("run %s: look for %s in %s: %w", p.Name, FeatureBranch(p.Name), plan.Repo, err)
	}
	if existing != "" {
		return runapi.RunView{}, wire.Errorf(wire.CodeInvalidParams, "%s exists already in %s: delete it or pick another plan name", FeatureBranch(p.Name), plan.Repo)
	}
	lead := p.Lead
	if lead == "" {
		lead = plan.Lead
	}
	var selfLead string
	if lead == LeadSelf {
		if selfLead, err = s.selfLeadOf(ctx, p.Lead == LeadSelf, plan); err != nil {
			return runapi.RunView{}, err
		}
	}
	now := s.now()
	r, initial, err := Begin(p.Name, pl, p.Coders, p.Reviewer != "", lead != "" && lead != "none", baseTip, now)
	if err != nil {
		return runapi.RunView{}, wire.Errorf(wire.CodeInvalidParams, "%v", err)
	}
	timeout := p.CheckTimeoutSeconds
	if timeout <= 0 {
		timeout = int(DefaultCheckTimeout / time.Second)
	}
	rec := Record{Run: r, Repo: plan.Repo, Base: base, PlanFile: plan.File, PlanHash: plan.ApprovedHash,
		Check: check, CheckFlag: p.Check != "", CheckTimeoutSeconds: timeout, Mode: mode, Checkout: checkout, Reviewer: p.Reviewer,
		Coder: p.Coder, CoderArgv: p.CoderArgv, Lead: lead, SelfLead: selfLead, Nodes: p.Nodes}
	if err := s.keepPlan(p.Name, src); err != nil {
		return runapi.RunView{}, fmt.Errorf("run %s: keep its plan: %w", p.Name, err)
	}
	// The record first: its outbox holds the branch's creation and the lead's start,
	// so a crash from here on leaves a run whose restart performs them.
	rec, err = s.runs.Create(ctx, rec, initial, now)
	if err != nil {
		return runapi.RunView{}, err
	}
	s.indexSelfLead(rec)
	s.publishEntry(ctx, rec.Run.Name, Entry{Seq: 1, At: now, Type: EntryStart, Text: "feature/" + p.Name + " from " + base})
	faultPoint(FaultBranch)
	// The branch now, before the answer: `run start` returns a run whose branch
	// exists (or says why it does not).
	for _, pe := range rec.Outbox {
		if pe.Action.Kind == ABranch {
			s.performNow(p.Name, pe)
		}
	}
	if rec, err = s.runs.Get(ctx, p.Name); err != nil {
		return runapi.RunView{}, err
	}
	if rec.Run.Feature == "" {
		return s.view(rec), fmt.Errorf("run %s: %s could not be created at %s (the server's log says why); the run waits for it: fix the repository and restart the server (`orcr serve`), which creates it", p.Name, FeatureBranch(p.Name), short(baseTip))
	}
	for _, pe := range rec.Outbox {
		s.perform(p.Name, pe)
	}
	s.schedule(rec)
	return s.view(rec), nil
}

// discard removes run rec for `run start --fresh`: its agents, worktrees, branches
// (feature/NAME too: the new run creates it again from the base), record and log.
func (s *Service) discard(ctx context.Context, rec Record) error {
	name := rec.Run.Name
	for who, id := range rec.Agents {
		if a, err := s.k.Get(ctx, id); err == nil && !a.State.Terminal() {
			s.stopAgent(ctx, rec, who)
		}
	}
	g := s.git(rec.Repo)
	if rec.Mode == "shared" {
		if cur, _ := g.CurrentBranch(ctx); strings.HasPrefix(cur, "orcr/"+name+"/") || cur == FeatureBranch(name) {
			if err := g.Checkout(ctx, orDefault(rec.Checkout, rec.Base)); err != nil {
				return err
			}
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(s.o.Home, "worktrees", "runs", name, "*"))
	for _, d := range dirs {
		if err := g.RemoveWorktree(ctx, d); err != nil {
			return err
		}
	}
	brs, err := g.Branches(ctx, "orcr/"+name+"/")
	if err != nil {
		return err
	}
	for b := range brs {
		if err := g.DeleteBranch(ctx, b); err != nil {
			return err
		}
	}
	if err := g.DeleteBranch(ctx, FeatureBranch(name)); err != nil {
		return err
	}
	return s.runs.Delete(ctx, name)
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// Runs serves its socket method (methods.go).
func (s *Service) Runs(ctx context.Context) ([]runapi.RunView, error) {
	recs, err := s.runs.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]runapi.RunView, len(recs))
	for i, r := range recs {
		out[i] = s.view(r)
	}
	return out, nil
}

// RunStatus serves its socket method (methods.go).
func (s *Service) RunStatus(ctx context.Context, name string) (runapi.RunView, error) {
	rec, err := s.runs.Get(ctx, name)
	if err != nil {
		return runapi.RunView{}, err
	}
	if next, changed := s.checkPlan(ctx, rec); changed {
		rec = next // an edit a moment ago is in the answer
	}
	return s.view(rec), nil
}

// RunEvents serves its socket method (methods.go).
func (s *Service) RunEvents(ctx context.Context, p runapi.RunEventsParams) ([]runapi.RunEntry, error) {
	if _, err := s.runs.Get(ctx, p.Name); err != nil {
		return nil, err
	}
	es, err := s.runs.Events(ctx, p.Name, p.After, p.Limit)
	if err != nil {
		return nil, err
	}
	out := make([]runapi.RunEntry, 0, len(es))
	for _, e := range es {
		out = append(out, entryView(e))
	}
	return out, nil
}

// RunStop serves its socket method (methods.go).
func (s *Service) RunStop(ctx context.Context, name string) (runapi.RunView, error) {
	return s.request(ctx, name, Fact{Kind: FStop})
}

// RunDispatch serves its socket method (methods.go).
func (s *Service) RunDispatch(ctx context.Context, p runapi.RunMilestonesParams) (runapi.RunView, error) {
	return s.each(ctx, runapi.MethodRunDispatch, p, func(m string) Fact { return Fact{Kind: FDispatch, M: m} })
}

// RunHold serves its socket method (methods.go).
func (s *Service) RunHold(ctx context.Context, p runapi.RunMilestonesParams) (runapi.RunView, error) {
	return s.each(ctx, runapi.MethodRunHold, p, func(m string) Fact { return Fact{Kind: FHold, M: m, Text: p.Reason} })
}

// RunRetry serves its socket method (methods.go).
func (s *Service) RunRetry(ctx context.Context, p runapi.RunMilestonesParams) (runapi.RunView, error) {
	return s.each(ctx, runapi.MethodRunRetry, p, func(m string) Fact { return Fact{Kind: FRetry, M: m, Tier: p.Tier} })
}

// RunAnswer serves its socket method (methods.go).
func (s *Service) RunAnswer(ctx context.Context, p runapi.RunTextParams) (runapi.RunView, error) {
	return s.request(ctx, p.Name, Fact{Kind: FAnswer, M: p.Milestone, Text: p.Text})
}

// RunFix serves its socket method (methods.go).
func (s *Service) RunFix(ctx context.Context, p runapi.RunTextParams) (runapi.RunView, error) {
	return s.request(ctx, p.Name, Fact{Kind: FFollowUp, M: p.Milestone, Text: p.Text})
}

// RunDone serves its socket method (methods.go): the caller must be a coder of a run.
func (s *Service) RunDone(ctx context.Context, p runapi.RunCallerParams) (runapi.RunMilestone, error) {
	return s.fromCaller(ctx, "done", p, func(coder string) Fact { return Fact{Kind: FDone, M: p.Milestone, Coder: coder, Call: p.Call} })
}

// RunAsk serves its socket method (methods.go).
func (s *Service) RunAsk(ctx context.Context, p runapi.RunCallerParams) (runapi.RunMilestone, error) {
	if strings.TrimSpace(p.Text) == "" {
		return runapi.RunMilestone{}, wire.Errorf(wire.CodeInvalidParams, "run ask %s: say what you need decided", p.Milestone)
	}
	return s.fromCaller(ctx, "ask", p, func(coder string) Fact {
		return Fact{Kind: FAsk, M: p.Milestone, Coder: coder, Text: p.Text, Call: p.Call}
	})
}

func (s *Service) fromCaller(ctx context.Context, op string, p runapi.RunCallerParams, fact func(coder string) Fact) (runapi.RunMilestone, error) {
	a, err := s.k.CallerAgent(ctx)
	if err != nil {
		return runapi.RunMilestone{}, err
	}
	name, who, ok := splitRunPath("")
	if a != nil {
		name, who, ok = splitRunPath(a.Path)
	}
	if a == nil || !ok || !strings.HasPrefix(who, "coder-") {
		return runapi.RunMilestone{}, wire.Errorf(wire.CodeCallerRefused,
			"`orcr run %s` works only inside a run's coder pane (an agent runs/NAME/coder-N); from elsewhere use `orcr run status`", op)
	}
	rec, err := s.runs.Get(ctx, name)
	if err != nil {
		return runapi.RunMilestone{}, err
	}
	if rec.Agents[who] != a.ID && briefPending(rec, who) {
		// The brief's agent can call before the brief recorded it: the kernel types
		// a brief as soon as the program is ready, which under load comes before the
		// spawn's answer and the record's write. Refused, a shell coder's `run done`
		// was lost and its run waited for ever; the call waits for the brief instead.
		if rec, err = s.awaitBrief(ctx, name, who, a.ID); err != nil {
			return runapi.RunMilestone{}, err
		}
	}
	if rec.Agents[who] != a.ID {
		return runapi.RunMilestone{}, wire.Errorf(wire.CodeCallerRefused, "%s is not the current agent of %s in run %s", a.ID, who, name)
	}
	if _, ok := rec.Run.Milestone(p.Milestone); !ok {
		return runapi.RunMilestone{}, wire.Errorf(wire.CodeNotFound, "run %s has no milestone %q", name, p.Milestone)
	}
	if op == "done" {
		if err := s.fetchFromNode(ctx, rec, who, *a, p.Milestone); err != nil {
			return runapi.RunMilestone{}, err
		}
	}
	f := fact(who)
	rec, err = s.apply(ctx, name, f)
	if err != nil {
		return runapi.RunMilestone{}, err
	}
	m, _ := rec.Run.Milestone(p.Milestone)
	if m.Coder != who {
		// A stale report: the work was taken from this coder (handed on, held) or
		// has moved past it. Step logged it as ignored; the caller hears why.
		with := ""
		if m.Coder != "" {
			with = " with " + m.Coder
		}
		return s.milestoneView(rec, s.followed(rec), m), wire.Errorf(wire.CodeInvalidParams, "%s of run %s is %s%s, not with you (%s) any more: your %s was ignored; see `orcr run status %s`",
			m.ID, name, m.State, with, who, op, name)
	}
	return s.milestoneView(rec, s.followed(rec), m), nil
}

// briefWaits counts the calls that waited for their brief (tests).
var briefWaits atomic.Int64

// briefWait bounds how long a coder's call waits for the brief that started it to
// record it (awaitBrief).
const briefWait = 30 * time.Second

// awaitBrief is run name's record once coder who's pending brief has recorded agent
// id, or has ended without (another agent recorded, the brief failed), or briefWait
// has passed: the caller then checks whose agent the record names.
func (s *Service) awaitBrief(ctx context.Context, name, who, id string) (Record, error) {
	briefWaits.Add(1)
	deadline := time.Now().Add(briefWait)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return Record{}, ctx.Err()
		case <-tick.C:
		}
		rec, err := s.runs.Get(ctx, name)
		if err != nil {
			return Record{}, err
		}
		if rec.Agents[who] == id || !briefPending(rec, who) || time.Now().After(deadline) {
			return rec, nil
		}
	}
}

// splitRunPath is NAME and WHO of "runs/NAME/WHO".
func splitRunPath(path string) (name, who string, ok bool) {
	rest, ok := strings.CutPrefix(path, "runs/")
	if !ok {
		return "", "", false
	}
	name, who, ok = strings.Cut(rest, "/")
	return name, who, ok && name != "" && who != "" && !strings.Contains(who, "/")
}

// each applies fact to every milestone p names, in order, and answers with the run's
// view once. A name given twice is acted on once (a second dispatch of the same
// milestone is at best a no-op, at worst a second refusal), and the list is bounded
// like on the wire, since in-process callers skip the socket's check: a 100,000-name
// dispatch used to step, log and render the whole run once per name.
func (s *Service) each(ctx context.Context, method string, p runapi.RunMilestonesParams, fact func(m string) Fact) (runapi.RunView, error) {
	if len(p.Milestones) == 0 {
		return runapi.RunView{}, wire.Errorf(wire.CodeInvalidParams, "name the milestones (e.g. M1 M2)")
	}
	if err := wire.CheckRanges(method, &p); err != nil {
		return runapi.RunView{}, err
	}
	var rec Record
	var errs []string
	seen := make(map[string]bool, len(p.Milestones))
	for _, m := range p.Milestones {
		if seen[m] {
			continue
		}
		seen[m] = true
		r, err := s.apply(ctx, p.Name, fact(m))
		if r.Run.Name != "" {
			rec = r
		}
		if err == nil {
			continue
		}
		var re *RefusedError
		var we *wire.Error
		if !errors.As(err, &re) && errors.As(err, &we) {
			return runapi.RunView{}, err // no such run, the store down: the same for every name
		}
		errs = append(errs, err.Error())
	}
	v := s.view(rec)
	if rec.Run.Name == "" {
		var err error
		if v, err = s.RunStatus(ctx, p.Name); err != nil {
			return runapi.RunView{}, err
		}
	}
	if len(errs) > 0 {
		return v, wire.Errorf(wire.CodeInvalidParams, "%s", strings.Join(errs, "\n"))
	}
	return v, nil
}

// request applies a request of the user or the lead; a refusal is the error, with a
// code the CLI turns into its message.
func (s *Service) request(ctx context.Context, name string, f Fact) (runapi.RunView, error) {
	rec, err := s.apply(ctx, name, f)
	if err != nil {
		var re *RefusedError
		if errors.As(err, &re) {
			return s.view(rec), wire.Errorf(wire.CodeInvalidParams, "%v", err)
		}
		var we *wire.Error
		if errors.As(err, &we) {
			return runapi.RunView{}, err
		}
		return s.view(rec), wire.Errorf(wire.CodeInvalidParams, "%v", err)
	}
	return s.view(rec), nil
}

// cursor is the seq of the last agent event handled, so a restart resumes there.
const cursorBucket = "runwatch"

func (s *Service) cursor(ctx context.Context) (uint64, error) {
	b, err := s.st.Get(ctx, cursorBucket, "seq")
	if errors.Is(err, wire.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("runs: read cursor: %w", err)
	}
	n, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("runs: read cursor %q: %w", b, err)
	}
	return n, nil
}

// refuseDirty refuses a shared-mode run in a repository with uncommitted changes: the
// coders work in that very tree, and the first coder's `git add -A` put the user's edited
// README and an untracked file into M1 on the branch `run finish` pushes. (Worktree mode
// leaves the user's tree alone, so it needs no such check.)
func refuseDirty(ctx context.Context, g Git, repo string) error {
	files, err := g.Dirty(ctx)
	if err != nil {
		return wire.Errorf(wire.CodeInvalidParams, "shared mode needs a clean working tree, and git status failed in %s: %v", repo, err)
	}
	if len(files) == 0 {
		return nil
	}
	shown := files
	if len(shown) > 10 {
		shown = append(shown[:10:10], fmt.Sprintf("… and %d more", len(files)-10))
	}
	return wire.Errorf(wire.CodeInvalidParams,
		"shared mode needs a clean working tree, and %s has uncommitted changes (a coder's `git add -A` would put them in a milestone):\n  %s\n"+
			"commit or stash them (git stash -u) and start again, or use --mode worktree, which leaves your tree untouched",
		repo, strings.Join(shown, "\n  "))
}

package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"orcr/core/wire"
	"orcr/internal/regfile"
	"orcr/planning"
)

// The run's agents: coders (runs/NAME/coder-N), the reviewer and the lead. Each is an
// ordinary orcr agent: attach to it, read it, steer it.

// Lead delivery (DESIGN §8 "Waking the lead").
const (
	LeadResend   = 5 * time.Minute
	LeadAttempts = 3 // re-sends before the user is told
)

// followed is the plan the run follows: the copy it keeps of the plan as approved or
// as last edited and taken in (planwatch.go), so an edit the run refused, or one it
// has not seen yet, changes no brief. A run from before the copy existed reads the
// plan file. Nil when neither reads as a plan. It reads and parses a file: a caller
// that needs several milestones reads it once.
func (s *Service) followed(rec Record) *planning.Plan {
	b, err := regfile.Read(PlanCopy(s.o.Home, rec.Run.Name))
	if err != nil {
		b, err = regfile.Read(rec.PlanFile)
	}
	if err != nil {
		return nil
	}
	p, _ := planning.Parse(b, planning.Options{})
	return p
}

// planMilestone is milestone id of the plan the run follows (nil when it has none).
func (s *Service) planMilestone(rec Record, id string) *planning.Milestone {
	return planned(s.followed(rec), id)
}

// planned is milestone id of plan p, nil-safe both ways.
func planned(p *planning.Plan, id string) *planning.Milestone {
	if p == nil {
		return nil
	}
	return p.Milestone(id)
}

// autonomy is the argv that lets an agent of provider work without prompts on what
// it needs and nothing else (DESIGN §8 "Autonomy"; agent-clis §8 for claude): edits
// accepted when it edits (coders, the lead), an allow-list of commands; anything else
// prompts and becomes a notification. No mode that is refused to root. The reviewer
// does not edit: its checkout is read-only only by file mode, which root ignores, so
// its edits prompt like anything else outside its list.
func autonomy(provider string, commands []string, edits bool) []string {
	switch provider {
	case "claude":
		argv := []string{"--allowedTools"}
		for _, c := range commands {
			argv = append(argv, "Bash("+c+":*)")
		}
		// --permission-mode after the list ends the variadic --allowedTools, so the
		// prompt that follows is not taken for one more tool. "default" is the
		// classic prompts, not 2.1.328's default auto mode (whose check needs
		// Anthropic's servers).
		mode := "acceptEdits"
		if !edits {
			mode = "default"
		}
		return append(argv, "--permission-mode", mode)
	case "codex":
		sandbox := "workspace-write"
		if !edits {
			sandbox = "read-only"
		}
		return []string{"--sandbox", sandbox, "--ask-for-approval", "on-request"}
	}
	return nil
}

// checkPrefix is the allow-list form of the check command: its first two words.
func checkPrefix(check string) string {
	f := strings.Fields(check)
	if len(f) > 2 {
		f = f[:2]
	}
	return strings.Join(f, " ")
}

// model picks provider and model for a coder of tier.
func (s *Service) model(rec Record, tier string) (provider, model string, err error) {
	if rec.Coder != "" {
		provider, model, _ = strings.Cut(rec.Coder, ":")
		return provider, model, nil
	}
	cat, err := planning.Load(planning.DefaultFS, s.o.CatalogPath)
	if err != nil {
		return "", "", err
	}
	picks := cat.Pick(tier, false, s.o.Available)
	if len(picks) == 0 {
		picks = cat.Pick(tier, true, s.o.Available)
	}
	if len(picks) == 0 {
		return "", "", fmt.Errorf("no installed model in the catalog qualifies for tier %s (see `orcr catalog`)", tier)
	}
	return picks[0].Provider, picks[0].ID, nil
}

// reviewTier is the tier a review of work of tier needs: judging work takes at least
// medium reasoning, whatever the work's own tier (a small milestone's reviewer is
// not a small model).
func reviewTier(tier string) string {
	if tier == "" || tier == "small" {
		return "medium"
	}
	return tier
}

// reviewModel is the model a reviewer named by its provider alone (`--reviewer
// claude`) runs: the catalog's pick of that provider for the review's tier
// (reviewTier), as a coder of the tier gets — not the CLI's default, which may be a model
// the catalog keeps for premium work. "" (the CLI's default) when the catalog has
// none of the provider.
func (s *Service) reviewModel(provider, tier string) string {
	cat, err := planning.Load(planning.DefaultFS, s.o.CatalogPath)
	if err != nil {
		s.log.Warn("runs: the catalog for the reviewer's model", "err", err)
		return ""
	}
	for _, premium := range []bool{false, true} {
		for _, m := range cat.Pick(tier, premium, nil) {
			if m.Provider == provider {
				return m.ID
			}
		}
	}
	return ""
}

// Brief is the coder's brief for milestone m: the goal and the acceptance, how to
// report, how to ask — never how to do it.
func Brief(run, dir string, m *planning.Milestone, extra string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "You are a coder of orcr run %s, building milestone %s: %s.\n\n", run, m.ID, m.Title)
	fmt.Fprintf(&b, "Work in %s (branch %s).\n\n", dir, MilestoneBranch(run, m.ID))
	fmt.Fprintf(&b, "Goal:\n%s\n\nAcceptance:\n%s\n\n", m.Goal.Text, m.Acceptance.Text)
	fmt.Fprintf(&b, "When it is done: commit everything (`git add -A && git commit -m \"%s: …\"`) and run `%s run done %s`. A check runs on your commits; its output comes back to you if it fails.\n", m.ID, Bin, m.ID)
	fmt.Fprintf(&b, "If you need a decision you cannot make from the goal: run `%s run ask %s \"your question\"` and stop; the answer comes back to you.\n", Bin, m.ID)
	if extra != "" {
		fmt.Fprintf(&b, "\n%s\n", extra)
	}
	return b.String()
}

// brief gives coder a.Coder milestone a.M: its worktree is made (from the feature
// tip), the coder's agent started in it with the brief as its prompt — a fresh agent
// per milestone, since an agent's folder is fixed at its start.
func (s *Service) brief(ctx context.Context, rec Record, p Pending) (*Fact, error) {
	a := p.Action
	name := rec.Run.Name
	m, _ := rec.Run.Milestone(a.M)
	pm := s.planMilestone(rec, a.M)
	if pm == nil {
		return nil, fmt.Errorf("milestone %s is not in %s any more", a.M, rec.PlanFile)
	}
	dir := s.workDir(rec, a.M)
	g := s.git(rec.Repo)
	if err := g.ExcludeOrcr(ctx); err != nil {
		return nil, fmt.Errorf("ignore .orcr/ in %s: %w", rec.Repo, err)
	}
	if rec.Mode == "shared" {
		if _, err := g.EnsureBranch(ctx, MilestoneBranch(name, a.M), rec.Run.Feature); err != nil {
			return nil, err
		}
		if err := g.Checkout(ctx, MilestoneBranch(name, a.M)); err != nil {
			return nil, err
		}
	} else if err := g.EnsureWorktree(ctx, dir, MilestoneBranch(name, a.M), rec.Run.Feature); err != nil {
		return nil, err
	}
	if len(m.Coders) > 1 || m.Author != "" {
		// Work handed on: a coder cut off during `git commit` leaves the index
		// locked, and nobody else writes in this worktree.
		g.at(dir).clearIndexLock(ctx)
	}
	node := rec.nodeOf(a.Coder)
	if node != "" {
		// A coder on a node works in a clone there, made from the milestone's branch.
		var err error
		if dir, err = s.cloneOnNode(ctx, rec, node, dir, a.M); err != nil {
			return nil, err
		}
	}
	text := Brief(name, dir, pm, a.Text)
	mu := s.coderLock(name, a.Coder)
	mu.Lock()
	defer mu.Unlock()
	if old, ok := s.coderAgent(ctx, rec, a.Coder); ok && old.State.Live() {
		// Started already by this very brief: the action is performed again after a
		// restart. The server may have died between the spawn and recording the
		// agent's id (then the recorded agent is not this one). A new brief for the
		// same milestone to the same coder (`run retry`) is no replay: it starts a
		// fresh agent with it.
		replay := rec.Agents[a.Coder] != old.ID || rec.Briefs[a.Coder] == p.Ref()
		// A coder admission placed on a node works in the clone made there from dir.
		same := old.Cwd == dir || node == "" && old.Node != "" && isCloneOf(old.Cwd, name, a.M)
		if replay && same && strings.Contains(old.Prompt, "milestone "+a.M+":") {
			if rec.Agents[a.Coder] != old.ID {
				if err := s.recordCoder(ctx, name, a.Coder, old.ID, strings.TrimSuffix(old.Provider+":"+old.Model, ":"), p.Ref(), old.CreatedAt); err != nil {
					return nil, err
				}
			}
			// A turn that ended while no server watched (its `run done` found none,
			// say) is fed now: no event will come for it, and Reconcile left this
			// coder to the brief.
			if (old.State == wire.StateDone || old.State == wire.StateIdle) && old.StateAt.After(rec.Turns[a.Coder]) {
				return &Fact{Kind: FTurnEnded, M: a.M, Coder: a.Coder, Text: old.LastMessage, TurnAt: old.StateAt}, nil
			}
			return nil, nil
		}
		s.stopID(ctx, name, old.ID)
	}
	provider, model, err := s.model(rec, a.Tier)
	if err != nil {
		return nil, err
	}
	rp := wire.RunParams{Path: AgentPath(name, a.Coder), Node: node, Provider: provider, Model: model, Cwd: dir, Prompt: text, Keep: true,
		Argv: autonomy(provider, []string{"git add", "git commit", "git status", "git diff", "git log", "git merge", "orcr run", s.bin() + " run", checkPrefix(rec.Check)}, true)}
	if provider == "shell" {
		rp.Argv = rec.CoderArgv
	}
	if !s.o.NoSandbox {
		rp.Sandbox = &wire.Sandbox{Mode: wire.SandboxOn}
	}
	ag, err := s.runAgent(ctx, rp)
	if err != nil {
		return nil, err
	}
	if beforeRecordCoder != nil {
		beforeRecordCoder(a.Coder)
	}
	return nil, s.recordCoder(ctx, name, a.Coder, ag.ID, strings.TrimSuffix(provider+":"+model, ":"), p.Ref(), s.now())
}

// beforeRecordCoder, set by tests, runs between a brief's spawn and the record of its
// agent (a server slow to write it).
var beforeRecordCoder func(who string)

// coderAgent is the live agent of coder who: the one recorded, else the newest at
// its path (started by a server that died before it recorded the id — when the
// coder moved to another milestone, the recorded one is its ended predecessor).
func (s *Service) coderAgent(ctx context.Context, rec Record, who string) (wire.Agent, bool) {
	if id := rec.Agents[who]; id != "" {
		if a, err := s.k.Get(ctx, id); err == nil && a.State.Live() {
			return a, true
		}
	}
	a, err := s.k.Get(ctx, AgentPath(rec.Run.Name, who))
	return a, err == nil && a.Path == AgentPath(rec.Run.Name, who)
}

// recordCoder records agent id as coder who's, on provider:model, started by brief
// ref and briefed at sent.
func (s *Service) recordCoder(ctx context.Context, name, who, id, model, ref string, sent time.Time) error {
	_, err := s.runs.Update(ctx, name, func(r *Record) {
		if r.Agents == nil {
			r.Agents = map[string]string{}
		}
		if r.Models == nil {
			r.Models = map[string]string{}
		}
		r.Agents[who] = id
		r.Models[who] = model
		if r.Briefs == nil {
			r.Briefs = map[string]string{}
		}
		r.Briefs[who] = ref
		r.Sent = setTime(r.Sent, who, sent)
	})
	return err
}

// clearIndexLock removes the index.lock of the worktree at g.Dir, if there is one.
func (g Git) clearIndexLock(ctx context.Context) {
	p, err := g.run(ctx, nil, "rev-parse", "--git-path", "index.lock")
	if err != nil || p == "" {
		return
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(g.Dir, p)
	}
	_ = os.Remove(p)
}

func setTime(m map[string]time.Time, k string, t time.Time) map[string]time.Time {
	if m == nil {
		m = map[string]time.Time{}
	}
	m[k] = t
	return m
}

// runAgent starts an agent, waiting out a path still held by the agent just stopped
// there. With [run] mcp the agent gets orcr's MCP server at that scope (the roles
// resolver gives it, as for a role's mcp), and a claude may call its tools unasked.
func (s *Service) runAgent(ctx context.Context, p wire.RunParams) (wire.Agent, error) {
	p.Prompt = s.toAgent(p.Prompt)
	if s.o.MCP != "" {
		p.MCP = s.o.MCP
		if p.Provider == "claude" && len(p.Argv) > 0 && p.Argv[0] == "--allowedTools" {
			p.Argv = slices.Insert(slices.Clone(p.Argv), 1, "mcp__orcr")
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		a, err := s.k.Run(ctx, p)
		if err == nil || !errors.Is(err, wire.ErrPathTaken) || time.Now().After(deadline) {
			return a, err
		}
		select {
		case <-ctx.Done():
			return a, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// send types text into the run agent who, on one line (a newline would submit half).
func (s *Service) send(ctx context.Context, name, who, text string) error {
	mu := s.coderLock(name, who)
	mu.Lock()
	defer mu.Unlock()
	rec, err := s.runs.Get(ctx, name)
	if err != nil {
		return err
	}
	id := rec.Agents[who]
	if id == "" {
		return wire.Errorf(wire.CodeNotFound, "%s of run %s has no agent", who, name)
	}
	now := s.now()
	prev, hadPrev := rec.Sent[who]
	if _, err := s.runs.Update(ctx, name, func(r *Record) { r.Sent = setTime(r.Sent, who, now) }); err != nil {
		return err
	}
	busy := false
	a, aerr := s.k.Get(ctx, id)
	if aerr == nil && a.State == wire.StateWorking {
		busy = true
		s.mu.Lock()
		s.busySent[name+"/"+who] = now
		s.mu.Unlock()
	}
	text = s.toAgent(text)
	if aerr != nil || !keepsLines(a.Provider) {
		text = flatten(text)
	}
	err = s.k.Send(ctx, wire.SendParams{Target: id, Text: text, Enter: true})
	if wire.CodeOf(err) == wire.CodeAgentBlocked {
		// The agent waits on a prompt and nothing was typed: the message is not the
		// last one it got, so a turn end before it goes in is not taken for a reply.
		if _, uerr := s.runs.Update(ctx, name, func(r *Record) {
			if !r.Sent[who].Equal(now) {
				return
			}
			if hadPrev {
				r.Sent[who] = prev
			} else {
				delete(r.Sent, who)
			}
		}); uerr != nil {
			s.log.Warn("runs: take back the send time", "run", name, "agent", who, "err", uerr)
		}
		if busy {
			s.mu.Lock()
			if s.busySent[name+"/"+who].Equal(now) {
				delete(s.busySent, name+"/"+who)
			}
			s.mu.Unlock()
		}
	}
	return err
}

// bin is how a text typed into an agent calls orcr: the absolute path of the
// running orcr, shell-quoted where it needs it; Bin when it is not known.
func (s *Service) bin() string {
	if s.o.Bin == "" {
		return Bin
	}
	return shellWord(s.o.Bin)
}

// toAgent is text for an agent: its calls of Bin call orcr by its path.
func (s *Service) toAgent(text string) string { return strings.ReplaceAll(text, Bin, s.bin()) }

// shellWord is p as one shell word: as is when it has only characters no shell
// treats specially, else in single quotes.
func shellWord(p string) string {
	if p != "" && strings.IndexFunc(p, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+,:@%", r))
	}) < 0 {
		return p
	}
	return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
}

// keepsLines says whether provider's CLI takes a message with its line breaks: claude
// gets a message as a bracketed paste (its adapter's Typing), so a failed check's
// output reaches it line by line as the check printed it. Others are typed key by
// key, where the first line break would submit the message cut short.
func keepsLines(provider string) bool { return provider == "claude" }

// flatten puts a message on one line: blank lines become " — ", other breaks spaces.
func flatten(text string) string {
	var paras []string
	for _, p := range strings.Split(strings.TrimSpace(text), "\n\n") {
		if p = strings.Join(strings.Fields(p), " "); p != "" {
			paras = append(paras, p)
		}
	}
	return strings.Join(paras, " — ")
}

func (s *Service) stopAgent(ctx context.Context, rec Record, who string) {
	if who == "lead" && rec.SelfLead != "" {
		return // the user's own session: the run never stops it
	}
	s.stopID(ctx, rec.Run.Name, rec.Agents[who])
}

// stopID stops agent id of run name, unless it has ended.
func (s *Service) stopID(ctx context.Context, name, id string) {
	if id == "" {
		return
	}
	if a, err := s.k.Get(ctx, id); err == nil && a.State.Terminal() {
		return
	}
	s.mu.Lock()
	s.stopped[id] = true
	s.mu.Unlock()
	if _, err := s.k.Kill(ctx, wire.KillParams{Glob: id}); err != nil {
		s.log.Warn("runs: stop agent", "run", name, "id", id, "err", err)
	}
}

// stoppedByUs reports an agent the autopilot stopped itself: its end is no vanishing.
func (s *Service) stoppedByUs(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped[id]
}

// ---- the reviewer ----

// ReviewPrompt asks the reviewer about one milestone.
func ReviewPrompt(run, dir, base string, m Milestone, pm *planning.Milestone) string {
	var b strings.Builder
	fmt.Fprintf(&b, "You review milestone %s (%s) of orcr run %s. The work is checked out read-only in %s.\n", m.ID, m.Title, run, dir)
	fmt.Fprintf(&b, "Read the change with `git diff %s...%s` there.\n\n", short40(base), short40(m.Checked))
	if pm != nil {
		fmt.Fprintf(&b, "Goal:\n%s\n\nAcceptance:\n%s\n\n", pm.Goal.Text, pm.Acceptance.Text)
	}
	b.WriteString("Do not change any file. End your answer with exactly one line `VERDICT: approve` or `VERDICT: changes`, and for each problem that must be fixed before merging one line `BLOCKER: file:line — what — why`.\n")
	return b.String()
}

func short40(h string) string { return h }

// review starts a fresh reviewer on milestone a.M at a.Head. The reviewer's agent
// id and the review it is on are recorded in one write after it started, so the
// end of a turn of the reviewer before (of another review) is never taken for this
// one's verdict. Performed again after a restart, it finds the reviewer it started
// and, when that one's turn ended while no server watched, returns its verdict.
func (s *Service) review(ctx context.Context, rec Record, a Action) (*Fact, error) {
	name := rec.Run.Name
	m, _ := rec.Run.Milestone(a.M)
	dir := ReviewDir(s.o.Home, name)
	if err := s.git(rec.Repo).ReviewCheckout(ctx, dir, a.Head); err != nil {
		return nil, err
	}
	text := ReviewPrompt(name, dir, rec.Run.Feature, m, s.planMilestone(rec, a.M))
	review := a.M + "@" + a.Head
	// Each review is a fresh reviewer agent, so the last message read at its turn's
	// end is this review's: a live reviewer's earlier verdict stays its last message
	// through a turn that says nothing, and silence is never approval.
	if old, ok := s.coderAgent(ctx, rec, "reviewer"); ok && old.State.Live() {
		if old.Prompt == s.toAgent(text) && (rec.Agents["reviewer"] != old.ID || rec.Reviewing == review) && a.Text != "retry" {
			// This review is under way or done: the action is performed again after
			// a restart (the server may have died before it recorded the agent).
			if rec.Agents["reviewer"] != old.ID || rec.Reviewing != review {
				if err := s.recordReviewer(ctx, name, old.ID, review, old.CreatedAt); err != nil {
					return nil, err
				}
			}
			if old.State == wire.StateDone && old.StateAt.After(rec.Run.ReviewTurn) {
				v := ParseReview(old.LastMessage)
				return &Fact{Kind: FReviewed, M: a.M, Head: a.Head, Verdict: &v, TurnAt: old.StateAt}, nil
			}
			return nil, nil
		}
		s.stopID(ctx, name, old.ID)
	}
	provider, model, _ := strings.Cut(rec.Reviewer, ":")
	if model == "" {
		m, _ := rec.Run.Milestone(a.M)
		model = s.reviewModel(provider, reviewTier(m.TierNow))
	}
	ag, err := s.runAgent(ctx, wire.RunParams{Path: AgentPath(name, "reviewer"), Provider: provider, Model: model, Cwd: dir,
		Prompt: text, Keep: true, Argv: autonomy(provider, []string{"git diff", "git log", "git show"}, false)})
	if err != nil {
		return nil, err
	}
	return nil, s.recordReviewer(ctx, name, ag.ID, review, s.now())
}

// recordReviewer records agent id as the reviewer, on review ("M1@<head>"), its
// prompt typed at sent.
func (s *Service) recordReviewer(ctx context.Context, name, id, review string, sent time.Time) error {
	_, err := s.runs.Update(ctx, name, func(r *Record) {
		if r.Agents == nil {
			r.Agents = map[string]string{}
		}
		r.Agents["reviewer"] = id
		r.Reviewing = review
		r.Sent = setTime(r.Sent, "reviewer", sent)
	})
	return err
}

// reviewFact is the verdict in the reviewer's turn end a, when it is one the run
// has not taken in: the reviewer on the run's review is done after its prompt.
func reviewFact(rec Record, a wire.Agent) (Fact, bool) {
	if a.State != wire.StateDone || rec.Reviewing == "" || a.ID != rec.Agents["reviewer"] ||
		!a.StateAt.After(rec.Sent["reviewer"]) || !a.StateAt.After(rec.Run.ReviewTurn) {
		return Fact{}, false
	}
	m, head, _ := strings.Cut(rec.Reviewing, "@")
	v := ParseReview(a.LastMessage)
	return Fact{Kind: FReviewed, M: m, Head: head, Verdict: &v, TurnAt: a.StateAt}, true
}

// onReviewer feeds the reviewer's verdict. The fact carries the turn's end, so Step
// applies it once however often it is fed (the event again after a restart, or
// resume finding the reviewer done); nothing is forgotten before it is logged.
func (s *Service) onReviewer(ctx context.Context, rec Record, a wire.Agent) {
	if f, ok := reviewFact(rec, a); ok {
		faultPoint(FaultReviewed)
		s.feed(ctx, rec.Run.Name, f)
	}
}

// ---- the lead ----

// LeadPrompt is the run lead's first prompt.
func LeadPrompt(rec Record) string {
	n := rec.Run.Name
	var ready []string
	for _, m := range rec.Run.Milestones {
		if m.State == Ready {
			ready = append(ready, m.ID)
		}
	}
	now := "Now: dispatch the milestones that are ready."
	if len(ready) > 0 {
		now = fmt.Sprintf("Now: %s ready: dispatch with `%s run dispatch %s %s` (this is the only message about them; nothing more comes until something changes).",
			strings.Join(ready, ", "), Bin, n, strings.Join(ready, " "))
	}
	return fmt.Sprintf(`You are the lead of orcr run %[1]s, which builds the approved plan %[2]s on branch feature/%[1]s.
An autopilot does everything between your decisions: coders, checks, review, merges. You decide what starts and what happens when something fails or a coder asks.
Commands (call orcr as written here: your shell's PATH may not have it): `+"`%[3]s run dispatch %[1]s M1 M2`"+` starts ready milestones; `+"`%[3]s run answer %[1]s M1 \"…\"`"+` answers a coder's question; `+"`%[3]s run retry %[1]s M1 --tier high`"+` retries a failed one; `+"`%[3]s run hold %[1]s M1`"+` holds one; `+"`%[3]s run status %[1]s`"+` shows where everything is.
The autopilot sends you what you must hear (ready, merged, asked, failed, all done) in one message at a time. Act on it with those commands, then stop and wait for the next message.
%[4]s`, n, rec.PlanFile, Bin, now)
}

// noLead reports a run whose lead is the user.
func noLead(rec Record) bool { return rec.Lead == "" || rec.Lead == "none" }

// startLead starts the lead (AStartLead). Performed again after a restart, it finds
// the lead it started (the server may have died before it recorded the id).
//
// restart, when set, restarts a lead that ended: what it must know (where the run
// is, the messages it has not taken up). Its session is resumed when the provider
// can; else a new lead starts with the first prompt and restart after it.
func (s *Service) startLead(ctx context.Context, rec Record, restart string) error {
	if noLead(rec) {
		return nil
	}
	if rec.SelfLead != "" {
		return s.startSelfLead(ctx, rec, restart)
	}
	if old, ok := s.coderAgent(ctx, rec, "lead"); ok && old.State.Live() {
		if rec.Agents["lead"] == old.ID {
			return nil
		}
		return s.recordAgent(ctx, rec.Run.Name, "lead", old.ID, old.CreatedAt)
	}
	if prev := rec.Agents["lead"]; restart != "" && prev != "" {
		ag, err := s.k.Resume(ctx, wire.ResumeParams{Target: prev, Prompt: flatten(s.toAgent(restart))})
		if err == nil {
			return s.recordAgent(ctx, rec.Run.Name, "lead", ag.ID, s.now())
		}
		s.log.Info("runs: the lead's session cannot be resumed; a new lead starts", "run", rec.Run.Name, "err", err)
	}
	prompt := LeadPrompt(rec)
	if restart != "" {
		prompt += "\n\n" + restart
	}
	provider, model, _ := strings.Cut(rec.Lead, ":")
	ag, err := s.runAgent(ctx, wire.RunParams{Path: AgentPath(rec.Run.Name, "lead"), Provider: provider, Model: model, Cwd: rec.Repo,
		Prompt: prompt, Keep: true, Argv: autonomy(provider, []string{"orcr run", s.bin() + " run", "git log", "git diff"}, true)})
	if err != nil {
		return err
	}
	return s.recordAgent(ctx, rec.Run.Name, "lead", ag.ID, s.now())
}

// leadEnded feeds the end of the run's lead (agent id; withServer: it went with the
// server, found so at restart) unless the autopilot ended
// it, the run is finished, or a start of the lead is on its way already.
func (s *Service) leadEnded(ctx context.Context, rec Record, id, how string, withServer bool) {
	if noLead(rec) || rec.Finished || rec.Run.Stopped || s.stoppedByUs(id) {
		return
	}
	for _, p := range rec.Outbox {
		if p.Action.Kind == AStartLead {
			return
		}
	}
	s.feed(ctx, rec.Run.Name, Fact{Kind: FLeadLost, Text: how, OK: withServer})
}

// recordAgent records agent id as the run's agent who, typed into at sent.
func (s *Service) recordAgent(ctx context.Context, name, who, id string, sent time.Time) error {
	_, err := s.runs.Update(ctx, name, func(r *Record) {
		if r.Agents == nil {
			r.Agents = map[string]string{}
		}
		r.Agents[who] = id
		r.Sent = setTime(r.Sent, who, sent)
	})
	return err
}

// leadFacts are the facts of the lead's state a (step_lead.go): its turn started
// (a batch sent before is taken up), its turn ended (the run learns whether it left
// ready work undispatched), or it waits for input. A state the run knows already
// feeds nothing.
func leadFacts(rec Record, a wire.Agent) []Fact {
	r := rec.Run
	switch {
	case a.State == wire.StateWorking:
		if r.LeadIdle || r.LeadSent != nil && !a.StateAt.Before(r.LeadSent.At) {
			return []Fact{{Kind: FLeadWorking, TurnAt: a.StateAt}}
		}
	case a.State == wire.StateDone && a.StateAt.After(r.LeadTurn) && a.StateAt.After(rec.Sent["lead"]):
		return []Fact{{Kind: FLeadTurn, TurnAt: a.StateAt, Until: rec.Sent["lead"]}}
	case (a.State == wire.StateDone || a.State == wire.StateIdle) && !r.LeadIdle:
		return []Fact{{Kind: FLeadIdle, TurnAt: a.StateAt}}
	}
	return nil
}

func (s *Service) onLead(ctx context.Context, rec Record, a wire.Agent) {
	for _, f := range leadFacts(rec, a) {
		s.feed(ctx, rec.Run.Name, f)
	}
}

// deliver types the inbox batch into the lead (ADeliver). A batch that cannot be
// typed — a prompt came up on the lead, or it is not idle after all — comes back
// as FLeadUnsent: not counted as a try, it goes when the lead is idle again.
func (s *Service) deliver(ctx context.Context, rec Record, a Action) (*Fact, error) {
	unsent := &Fact{Kind: FLeadUnsent, Until: a.Until}
	id := rec.Agents["lead"]
	if id == "" {
		return unsent, fmt.Errorf("run %s has no lead agent", rec.Run.Name)
	}
	if ag, err := s.k.Get(ctx, id); err != nil || ag.State != wire.StateDone && ag.State != wire.StateIdle {
		return unsent, err
	}
	err := s.send(ctx, rec.Run.Name, "lead", a.Text)
	if wire.CodeOf(err) == wire.CodeAgentBlocked {
		s.log.Info("runs: the lead waits on a prompt; its messages wait", "run", rec.Run.Name, "err", err)
		return unsent, nil
	}
	return nil, err
}

package run

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"orcr/core/wire"
	"orcr/planning"

	runapi "orcr/orchestrate/run/api"
)

// view is a run as the API shows it.
func (s *Service) view(rec Record) runapi.RunView {
	r := rec.Run
	v := runapi.RunView{Name: r.Name, Repo: rec.Repo, Base: rec.Base, Feature: FeatureBranch(r.Name), Tip: r.Feature,
		Check: rec.Check, Mode: rec.Mode, Reviewer: rec.Reviewer, Coders: r.maxCoders(), Inbox: slices.Clone(rec.Run.Inbox),
		Summary: rec.Summary, Created: rec.Created, Updated: rec.Updated, Seq: rec.Seq, PlanEdit: r.PlanNote, Milestones: []runapi.RunMilestone{}, Pool: []runapi.RunCoder{}}
	if v.Inbox == nil || rec.Finished || r.Stopped {
		// Nobody will take these up any more: a finished or stopped run waits
		// for no lead.
		v.Inbox = []string{}
	}
	for i, t := range v.Inbox {
		v.Inbox[i] = forUser(t) // read by a person at their own shell
	}
	switch {
	case rec.Finished:
		v.State = "finished"
	case r.Stopped:
		v.State = "stopped"
	case r.Finish == "checking":
		v.State = "finishing"
	case r.Finish != "":
		v.State = r.Finish
	case r.Open():
		v.State = "running"
	default:
		v.State = "waiting" // nothing moves without a decision (held, failed)
	}
	plan := s.followed(rec) // once for all milestones' estimates
	for _, m := range r.Milestones {
		v.Milestones = append(v.Milestones, s.milestoneView(rec, plan, m))
	}
	for _, c := range r.Coders {
		if c.Gone {
			continue
		}
		rc := runapi.RunCoder{Name: c.Name, Tier: c.Tier, Model: rec.Models[c.Name], Milestone: c.M}
		if c.BenchedUntil.After(s.now()) {
			t := c.BenchedUntil
			rc.BenchedUntil = &t
		}
		v.Pool = append(v.Pool, rc)
	}
	return v
}

// milestoneView is milestone m of rec as clients see it; plan is the plan the run
// follows (s.followed), for the estimate.
func (s *Service) milestoneView(rec Record, plan *planning.Plan, m Milestone) runapi.RunMilestone {
	v := runapi.RunMilestone{ID: m.ID, Title: m.Title, State: string(m.State), Tier: m.Tier, TierNow: m.TierNow,
		Coder: m.Coder, Rounds: runapi.Rounds(m.Rounds), Question: m.Question, Reason: m.Reason, Commit: m.Commit}
	who := m.Coder
	if who == "" {
		who = m.Author
	}
	v.Model = rec.Models[who]
	if !m.StartedAt.IsZero() {
		end := s.now()
		if m.State == Merged {
			end = m.MergedAt
		}
		v.ElapsedSeconds = int(end.Sub(m.StartedAt).Seconds())
	}
	if pm := planned(plan, m.ID); pm != nil {
		v.EstimateSeconds = int(pm.Estimate.Seconds())
	}
	v.Waits = waits(rec.Run, m, noLead(rec))
	if m.Coder != "" {
		if b := s.blockedOn(rec.Run.Name, m.Coder); b != "" {
			v.Waits = b
		}
	} else if m.State == Reviewing && head(rec.Run.ReviewQueue) == m.ID {
		if b := s.blockedOn(rec.Run.Name, "reviewer"); b != "" {
			v.Waits = b
		}
	}
	if w, says := undispatched(rec.Run.Name, m, noLead(rec), s.now()); says != "" {
		v.Waits, v.Undispatched = w, says
	}
	return v
}

// undispatched is what the view says of ready milestone m that a turn of the lead
// left undispatched (Passed): what it waits on, and one sentence of what happened and
// what to do. Both are "" for any other milestone.
func undispatched(run string, m Milestone, noLead bool, now time.Time) (waits, says string) {
	if m.State != Ready || m.Want || m.Passed.IsZero() || noLead {
		return "", ""
	}
	in := autoStartIn(m, now)
	return "the lead's dispatch: its turn ended without one (auto-start " + in + ")",
		fmt.Sprintf("%s ready, not dispatched: the lead's turn ended without `orcr run dispatch` (auto-start %s; `orcr run dispatch %s %s` to start it now)",
			m.ID, in, run, m.ID)
}

// autoStartIn says when ready milestone m starts by itself: "in 14m", rounded up to
// the minute, or "within a minute".
func autoStartIn(m Milestone, now time.Time) string {
	left := m.ReadyAt.Add(AutoStartAfter).Sub(now)
	if left <= time.Minute {
		return "within a minute"
	}
	return fmt.Sprintf("in %dm", int((left+time.Minute-1)/time.Minute))
}

// waits says what milestone m waits on, in words.
func waits(r Run, m Milestone, noLead bool) string {
	switch m.State {
	case Planned:
		var open []string
		for _, d := range m.Depends {
			if dm, ok := r.Milestone(d); !ok || dm.State != Merged {
				open = append(open, d)
			}
		}
		return strings.Join(open, ", ") + " to merge"
	case Ready:
		if m.Want && r.Shared {
			if o := (&stepper{r: r}).underWay(&m); o != "" {
				return o + " to merge (shared mode: one milestone at a time)"
			}
		}
		if m.Want {
			return "a free " + m.TierNow + " coder"
		}
		if noLead {
			return "your dispatch: `orcr run dispatch " + r.Name + " " + m.ID + "` (no lead; or " + AutoStartAfter.String() + " after ready)"
		}
		return "the lead's dispatch (or " + AutoStartAfter.String() + " after ready)"
	case Building, Fixing:
		if m.Coder == "" {
			return "a free " + m.TierNow + " coder"
		}
		return m.Coder
	case Asking:
		if m.Answered {
			return m.Coder + " to take up the answer"
		}
		return "an answer (`orcr run answer " + r.Name + " " + m.ID + " …`)"
	case Checking:
		return "the check"
	case Reviewing:
		if head(r.ReviewQueue) == m.ID {
			return "the reviewer"
		}
		return "its turn with the reviewer"
	case Merging:
		if head(r.MergeQueue) == m.ID {
			return "the merge"
		}
		return "its turn to merge after " + head(r.MergeQueue)
	case Benched, Escalated:
		return "a free " + m.TierNow + " coder"
	case Held, Failed:
		return "you or the lead: " + m.Reason
	}
	return ""
}

// Summary renders summary.md: per milestone the planned tier next to the model that
// did the work, estimate next to actual time, rounds, and where the time went.
func (s *Service) Summary(rec Record) string {
	var b strings.Builder
	r := rec.Run
	ms := "milestones"
	if len(r.Milestones) == 1 {
		ms = "milestone"
	}
	fmt.Fprintf(&b, "# Run %s\n\nfeature/%s from %s, %d %s; check `%s`.\n\n", r.Name, r.Name, rec.Base, len(r.Milestones), ms, rec.Check)
	b.WriteString("| milestone | state | tier planned | model used | estimate | elapsed | rounds (check/review/conflict) |")
	for _, c := range timeParts {
		b.WriteString(" " + c.name + " |")
	}
	b.WriteString("\n|---|---|---|---|---|---|---|" + strings.Repeat("---|", len(timeParts)) + "\n")
	now := s.now()
	plan := s.followed(rec)
	for _, m := range r.Milestones {
		var models []string
		for _, c := range m.Coders {
			if md := rec.Models[c]; md != "" && !slices.Contains(models, md) {
				models = append(models, md)
			}
		}
		est := "-"
		if pm := planned(plan, m.ID); pm != nil && pm.Estimate > 0 {
			est = pm.Estimate.String()
		}
		parts, elapsed := TimeSpent(m, now)
		tier := m.Tier
		if m.TierNow != m.Tier {
			tier += " → " + m.TierNow
		}
		fmt.Fprintf(&b, "| %s %s | %s | %s | %s | %s | %s | %d/%d/%d |",
			m.ID, m.Title, m.State, tier, orDash(strings.Join(models, ", ")), est, dur(elapsed),
			m.Rounds.Check, m.Rounds.Review, m.Rounds.Conflict)
		for _, p := range parts {
			b.WriteString(" " + dur(p) + " |")
		}
		b.WriteString("\n")
	}
	b.WriteString("\nelapsed: from the milestone's first ready to its merge (or now), the sum of the columns after the rounds: " +
		"waiting for dispatch (ready, or a fresh coder a tier up), building, checks (its checks and its merge), fix rounds, review, " +
		"waiting for an answer, waiting at a permission prompt (a coder's tool call for you to allow), benched on a usage limit, held or failed until retried.\n")
	return b.String()
}

// timeParts are the summary's time columns and the milestone states each is made
// of. Every state a milestone spends time in after its first ready is in exactly
// one column, so the columns add up to its elapsed time.
var timeParts = []struct {
	name   string
	states []State
}{
	{"waiting for dispatch", []State{Ready, Escalated}},
	{"building", []State{Building}},
	{"checks", []State{Checking, Merging}},
	{"fix rounds", []State{Fixing}},
	{"review", []State{Reviewing}},
	{"waiting for an answer", []State{Asking}},
	{"waiting at a permission prompt", []State{AtPrompt}},
	{"benched", []State{Benched}},
	{"held", []State{Held, Failed}},
}

// TimeSpent is where milestone m's time went, in seconds per timeParts column, and
// their sum, its elapsed time: from the state moves Step recorded (Spent, kept as
// each fact of the event log is applied), and the stint under way at now. Time
// planned (waiting for dependencies) and after the merge is not the milestone's.
func TimeSpent(m Milestone, now time.Time) (parts []float64, elapsed float64) {
	parts = make([]float64, len(timeParts))
	for i, c := range timeParts {
		for _, st := range c.states {
			sec := m.Spent[st]
			if m.State == st && now.After(m.StateAt) {
				sec += now.Sub(m.StateAt).Seconds()
			}
			parts[i] += sec
		}
	}
	// A wait at a permission prompt under way is taken out of the state it is in.
	if !m.PromptAt.IsZero() && now.After(m.PromptAt) {
		from := m.PromptAt
		if m.StateAt.After(from) {
			from = m.StateAt
		}
		if now.After(from) {
			d := now.Sub(from).Seconds()
			for i, c := range timeParts {
				switch {
				case slices.Contains(c.states, AtPrompt):
					parts[i] += d
				case slices.Contains(c.states, m.State):
					parts[i] -= d
				}
			}
		}
	}
	for _, p := range parts {
		elapsed += p
	}
	return parts, elapsed
}

func dur(sec float64) string {
	if sec <= 0 {
		return "-"
	}
	return (time.Duration(sec) * time.Second).Round(time.Second).String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (s *Service) writeSummary(ctx context.Context, rec Record) error {
	return s.writeSummaryText(ctx, rec, s.Summary(rec))
}

// writeSummaryText writes text as run rec's summary.md.
func (s *Service) writeSummaryText(ctx context.Context, rec Record, text string) error {
	path := SummaryFile(rec.Repo, rec.Run.Name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return err
	}
	_, err := s.runs.Update(ctx, rec.Run.Name, func(r *Record) { r.Summary = path })
	return err
}

// prTitle is the pull request's title: the request the plan was made for, as a
// reviewer of the pull request reads it (the run's name only when the plan has none).
func (s *Service) prTitle(rec Record) string {
	if p := s.followed(rec); p != nil {
		if r := firstLine(strings.TrimSpace(p.Request)); r != "" {
			return r
		}
	}
	return "orcr run " + rec.Run.Name
}

// RunFinish serves its socket method (methods.go): the run's agents stop, its worktrees and
// refs go (only feature/NAME stays), the branch is pushed when the repository has a
// remote, and a pull request is opened through GitHub with the summary as its body.
// What it did not do it says, with why.
func (s *Service) RunFinish(ctx context.Context, name string) (runapi.RunFinishResult, error) {
	rec, err := s.runs.Get(ctx, name)
	if err != nil {
		return runapi.RunFinishResult{}, err
	}
	if rec.Run.Open() || rec.Run.Finish == "checking" {
		return runapi.RunFinishResult{Run: s.view(rec)}, wire.Errorf(wire.CodeInvalidParams,
			"run %s is still under way (%s); finish it when all milestones are merged, or `orcr run stop %s` first", name, s.view(rec).State, name)
	}
	res := runapi.RunFinishResult{Done: []string{}, NotDone: []string{}}
	g := s.git(rec.Repo)
	for who, id := range rec.Agents {
		if a, err := s.k.Get(ctx, id); err == nil && !a.State.Terminal() {
			s.stopAgent(ctx, rec, who)
		}
	}
	res.Done = append(res.Done, "stopped the run's agents")
	// summary.md is written now, as the run ends, and the pull request's body is
	// this same text: the two are one document.
	body := s.Summary(rec)
	if err := s.writeSummaryText(ctx, rec, body); err != nil {
		res.NotDone = append(res.NotDone, "write the summary: "+err.Error())
	} else if next, err := s.runs.Get(ctx, name); err == nil {
		rec = next
	}
	dirs, _ := filepath.Glob(filepath.Join(s.o.Home, "worktrees", "runs", name, "*"))
	for _, d := range dirs {
		if err := g.RemoveWorktree(ctx, d); err != nil {
			res.NotDone = append(res.NotDone, "remove worktree "+d+": "+err.Error())
		}
	}
	os.Remove(filepath.Join(s.o.Home, "worktrees", "runs", name))
	if rec.Mode == "shared" {
		if cur, _ := g.CurrentBranch(ctx); strings.HasPrefix(cur, "orcr/"+name+"/") {
			back := rec.Checkout
			if back == "" {
				back = FeatureBranch(name)
			}
			g.run(ctx, nil, "checkout", "--quiet", back)
		}
	}
	brs, err := g.Branches(ctx, "orcr/"+name+"/")
	if err != nil {
		res.NotDone = append(res.NotDone, "list the milestone branches: "+err.Error())
	}
	for b := range brs {
		if err := g.DeleteBranch(ctx, b); err != nil {
			res.NotDone = append(res.NotDone, "delete branch "+b+": "+err.Error())
		}
	}
	res.Done = append(res.Done, fmt.Sprintf("removed %d worktrees and %d branches; only %s is left", len(dirs), len(brs), FeatureBranch(name)))
	remote := g.Remote(ctx, "origin")
	switch {
	case remote == "":
		res.NotDone = append(res.NotDone, "push: the repository has no remote \"origin\"", "pull request: nothing pushed")
	default:
		if err := g.Push(ctx, "origin", FeatureBranch(name)); err != nil {
			res.NotDone = append(res.NotDone, "push to origin: "+err.Error(), "pull request: nothing pushed")
			break
		}
		res.Done = append(res.Done, "pushed "+FeatureBranch(name)+" to origin ("+remote+")")
		if s.o.OpenPR == nil {
			res.NotDone = append(res.NotDone, "pull request: this server has no GitHub client")
			break
		}
		url, err := s.o.OpenPR(ctx, PullRequest{Repo: rec.Repo, Remote: remote, Head: FeatureBranch(name), Base: rec.Base,
			Title: s.prTitle(rec), Body: body})
		if err != nil {
			res.NotDone = append(res.NotDone, "pull request: "+err.Error())
			break
		}
		res.PRURL = url
		res.Done = append(res.Done, "opened "+url)
	}
	rec, err = s.runs.Update(ctx, name, func(r *Record) { r.Finished = true })
	if err != nil {
		return res, err
	}
	res.Run = s.view(rec)
	return res, nil
}

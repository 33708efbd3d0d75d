package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"orcr/core/wire"

	runapi "orcr/orchestrate/run/api"
)

// apply stamps a coder's fact with what git says about its branch, logs and steps it
// (Runs.Apply), publishes the entry, and performs the actions it asked for.
func (s *Service) apply(ctx context.Context, name string, f Fact) (Record, error) {
	rec, err := s.runs.Get(ctx, name)
	if err != nil {
		return Record{}, err
	}
	if (f.Kind == FDone || f.Kind == FTurnEnded) && f.Coder != "" {
		if f.M == "" {
			f.M = rec.Run.CoderOf(f.Coder)
		}
		if m, ok := rec.Run.Milestone(f.M); ok && m.Coder == f.Coder && readsWork(m, f.Kind) {
			w, err := s.git(rec.Repo).WorkOf(ctx, s.workDir(rec, f.M), MilestoneBranch(name, f.M), rec.Run.Feature)
			if err == nil {
				f.Head, f.Commits, f.Dirty = w.Head, w.Commits, w.Dirty
			} else {
				s.log.Warn("runs: look at the branch", "run", name, "m", f.M, "err", err)
			}
		}
	}
	rec, added, err := s.runs.Apply(ctx, name, f, s.now())
	s.publishEntry(ctx, name, Entry{Seq: rec.Seq, At: s.now(), Type: EntryFact, Fact: &f, Text: errText(err)})
	if err != nil {
		return rec, err
	}
	s.perform(name, added...)
	s.schedule(rec)
	return rec, nil
}

// readsWork says whether Step takes what git says about the branch from a coder's
// fact: the turn that called `run done` ends while the milestone is being checked,
// and Step ignores it, so it costs no git processes (it cost a status and a rev-list
// per milestone).
func readsWork(m Milestone, k FactKind) bool {
	working := m.State == Building || m.State == Fixing
	return working || k == FDone && m.State == Asking
}

// feed applies fact f to run name for the autopilot, which has nobody to answer:
// a failure (the store, a refusal) is logged.
func (s *Service) feed(ctx context.Context, name string, f Fact) {
	if _, err := s.apply(ctx, name, f); err != nil && ctx.Err() == nil {
		s.log.Warn("runs: fact", "run", name, "fact", f.Kind, "err", err)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// sharedOn checks out milestone m's branch in the repository's folder in shared
// mode, where its check and merge run: whatever else the folder was on, they must
// see m's work.
func (s *Service) sharedOn(ctx context.Context, rec Record, m string) error {
	if rec.Mode != "shared" {
		return nil
	}
	if ms, ok := rec.Run.Milestone(m); !ok || ms.State != Checking && ms.State != Merging {
		// A check or merge performed again after a restart, for a milestone that
		// has moved on: the folder is the next milestone's now.
		return fmt.Errorf("%w: %s is %s", errMoot, m, ms.State)
	}
	if err := s.git(rec.Repo).Checkout(ctx, MilestoneBranch(rec.Run.Name, m)); err != nil {
		return fmt.Errorf("check out %s in %s: %w", MilestoneBranch(rec.Run.Name, m), rec.Repo, err)
	}
	return nil
}

// errMoot is an action not performed because its milestone moved on.
var errMoot = errors.New("not performed: its milestone moved on")

// workDir is where milestone m is built: its worktree, or the repository itself in
// shared mode.
func (s *Service) workDir(rec Record, m string) string {
	if rec.Mode == "shared" {
		return rec.Repo
	}
	return WorktreeDir(s.o.Home, rec.Run.Name, m)
}

// perform runs pending actions in order on one goroutine (messages to agents keep
// their order); checks run on their own, since they take long and do not interfere.
func (s *Service) perform(name string, ps ...Pending) {
	var todo []Pending
	s.mu.Lock()
	for _, p := range ps {
		k := name + "/" + p.Ref()
		if !s.inflight[k] {
			s.inflight[k] = true
			todo = append(todo, p)
		}
	}
	s.mu.Unlock()
	if len(todo) == 0 || s.ctx == nil || s.ctx.Err() != nil {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for _, p := range todo {
			if p.Action.Kind == ACheck || p.Action.Kind == AFinalCheck || p.Action.Kind == AReview {
				s.wg.Add(1)
				go func() { defer s.wg.Done(); s.performOne(name, p) }()
				continue
			}
			s.performOne(name, p)
		}
	}()
}

// performNow performs pending action p on the caller's goroutine (unless it is
// being performed already).
func (s *Service) performNow(name string, p Pending) {
	if s.ctx == nil || s.ctx.Err() != nil {
		return
	}
	k := name + "/" + p.Ref()
	s.mu.Lock()
	busy := s.inflight[k]
	s.inflight[k] = true
	s.mu.Unlock()
	if !busy {
		s.performOne(name, p)
	}
}

func (s *Service) performOne(name string, p Pending) {
	ctx := s.ctx
	defer func() {
		s.mu.Lock()
		delete(s.inflight, name+"/"+p.Ref())
		s.mu.Unlock()
	}()
	outcome, err := s.do(ctx, name, p)
	if ctx.Err() != nil {
		return // shutting down: it stays pending and is performed after the restart
	}
	if p.Action.Kind == ASendCoder && wire.CodeOf(err) == wire.CodeAgentBlocked {
		// The coder waits on a prompt and nothing was typed: the message stays in
		// the outbox and goes once the coder is past the prompt (onAgent).
		s.log.Info("runs: the coder waits on a prompt; its message waits", "run", name, "coder", p.Action.Coder, "err", err)
		return
	}
	if err != nil {
		s.log.Warn("runs: action", "run", name, "action", p.Action.Kind, "m", p.Action.M, "err", err)
	}
	if outcome != nil {
		if _, aerr := s.apply(ctx, name, *outcome); aerr != nil {
			s.log.Warn("runs: outcome", "run", name, "fact", outcome.Kind, "err", aerr)
		}
	}
	if err != nil && p.Action.Kind == ABranch {
		// Nothing of the run can start without its branch: the action stays in the
		// outbox and the next server performs it again.
		return
	}
	if _, derr := s.runs.Did(ctx, name, p, errText(err), s.now()); derr != nil {
		s.log.Warn("runs: record action", "run", name, "err", derr)
	}
}

// do performs one action and returns the fact it led to, if any.
func (s *Service) do(ctx context.Context, name string, p Pending) (*Fact, error) {
	rec, err := s.runs.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	a := p.Action
	g := s.git(rec.Repo)
	if (a.Kind == ABrief || a.Kind == ASendCoder) && a.M != "" {
		// A message meant for the coder a milestone was with is not sent once the
		// work moved on (it was benched, the milestone held) before it went out.
		if m, ok := rec.Run.Milestone(a.M); !ok || m.Coder != a.Coder {
			return nil, fmt.Errorf("not sent: %s is no longer with %s", a.M, a.Coder)
		}
	}
	switch a.Kind {
	case ABrief:
		f, err := s.brief(ctx, rec, p)
		if err != nil {
			return &Fact{Kind: FCoderFault, Coder: a.Coder, Text: err.Error()}, err
		}
		return f, nil
	case ASendCoder:
		if err := s.send(ctx, name, a.Coder, a.Text); err != nil {
			if errors.Is(err, wire.ErrNotRunning) || errors.Is(err, wire.ErrNotFound) {
				return &Fact{Kind: FVanished, Coder: a.Coder}, err
			}
			return nil, err
		}
	case AStopCoder:
		s.stopAgent(ctx, rec, a.Coder)
	case ABenchCoder:
		s.notify(ctx, name, a.M, fmt.Sprintf("%s is benched until %s (%s)", a.Coder, a.Until.Format(time.Kitchen), a.Text))
	case ACheck:
		if err := s.sharedOn(ctx, rec, a.M); err != nil {
			return nil, err
		}
		res, err := RunCheck(ctx, s.workDir(rec, a.M), rec.Check, time.Duration(rec.CheckTimeoutSeconds)*time.Second, nil)
		if err != nil {
			return nil, err
		}
		return &Fact{Kind: FChecked, M: a.M, Head: a.Head, Merge: a.Merge, OK: res.OK, Text: res.Tail}, nil
	case AReview:
		return s.review(ctx, rec, a)
	case AMergeIn:
		if err := s.sharedOn(ctx, rec, a.M); errors.Is(err, errMoot) {
			return nil, err
		} else if err != nil {
			return &Fact{Kind: FHold, M: a.M, Text: err.Error()}, err
		}
		head, conflicts, err := g.MergeIn(ctx, s.workDir(rec, a.M), FeatureBranch(name), a.Base, fmt.Sprintf("Merge %s into %s", FeatureBranch(name), MilestoneBranch(name, a.M)))
		var me *MovedError
		var ee *EmptyError
		switch {
		case errors.As(err, &me):
			return &Fact{Kind: FMoved, M: a.M, Head: me.Got}, nil
		case errors.As(err, &ee):
			return &Fact{Kind: FHold, M: a.M, Text: fmt.Sprintf("the work of %s changes nothing on %s (%s has its files): nothing was merged. Look at %s, then `orcr run retry %s %s`",
				a.M, FeatureBranch(name), short(ee.Tip), MilestoneBranch(name, a.M), name, a.M)}, nil
		case err != nil:
			return &Fact{Kind: FHold, M: a.M, Text: "merging the feature tip failed: " + err.Error()}, err
		case len(conflicts) > 0:
			return &Fact{Kind: FConflict, M: a.M, Paths: conflicts}, nil
		}
		return &Fact{Kind: FMergedIn, M: a.M, Head: head}, nil
	case AAdvance:
		m, _ := rec.Run.Milestone(a.M)
		tip, err := g.Advance(ctx, FeatureBranch(name), a.Base, a.Head, s.commitMessage(rec, m), p.At)
		var me *MovedError
		switch {
		case errors.As(err, &me):
			return &Fact{Kind: FMoved, M: a.M, Head: me.Got}, nil
		case err != nil:
			return &Fact{Kind: FHold, M: a.M, Text: "advancing " + FeatureBranch(name) + " failed: " + err.Error()}, err
		}
		return &Fact{Kind: FAdvanced, M: a.M, Head: tip}, nil
	case ABranch:
		tip, err := g.EnsureBranch(ctx, FeatureBranch(name), a.Head)
		if err != nil {
			return nil, err
		}
		return &Fact{Kind: FBranched, Head: tip}, nil
	case AStartLead:
		return nil, s.startLead(ctx, rec, a.Text)
	case ADeliver:
		return s.deliver(ctx, rec, a)
	case ANotify:
		s.notify(ctx, name, a.M, a.Text)
	case AFinalCheck:
		dir := filepath.Join(s.o.Home, "worktrees", "runs", name, "_final")
		if err := g.detached(ctx, dir, a.Head); err != nil {
			return nil, err
		}
		res, err := RunCheck(ctx, dir, rec.Check, time.Duration(rec.CheckTimeoutSeconds)*time.Second, nil)
		if err != nil {
			return nil, err
		}
		return &Fact{Kind: FFinalCheck, OK: res.OK, Text: res.Tail}, nil
	case ASummary:
		if rec.Mode == "shared" && !rec.Run.Open() {
			// The run's work is done: the repository's folder goes back to the
			// branch the user had (a follow-up's brief checks out its own again).
			// Not after each merge: an advance performed again after a restart
			// would pull the folder from under the next milestone's coder.
			if err := g.Checkout(ctx, rec.Checkout); err != nil {
				s.log.Warn("runs: put the repository back on its branch", "run", name, "branch", rec.Checkout, "err", err)
			}
		}
		return nil, s.writeSummary(ctx, rec)
	}
	return nil, nil
}

// detached puts a writable detached worktree at dir on commit (the final check's).
func (g Git) detached(ctx context.Context, dir, commit string) error {
	worktreeMu.Lock()
	defer worktreeMu.Unlock()
	if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		_, err := g.at(dir).run(ctx, nil, "checkout", "--force", "--detach", commit)
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return err
	}
	_, _ = g.run(ctx, nil, "worktree", "prune")
	_, err := g.run(ctx, nil, "worktree", "add", "--detach", dir, commit)
	return err
}

// commitMessage is milestone m's commit on the feature branch, from the plan.
func (s *Service) commitMessage(rec Record, m Milestone) string {
	goal := ""
	if pm := s.planMilestone(rec, m.ID); pm != nil {
		goal = pm.Goal.Text
	}
	title := m.Title
	if m.FollowUp {
		title += " (follow-up)"
	}
	return CommitMessage(m.ID, title, goal)
}

// schedule arms run rec's one clock for its first timer (timer.go): when it rings,
// FTick lets Step fire what is due.
func (s *Service) schedule(rec Record) {
	now := s.now()
	at := rec.Run.NextWake(now)
	name := rec.Run.Name
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.timers[name]; t != nil {
		t.Stop()
		delete(s.timers, name)
	}
	if at.IsZero() || s.ctx == nil || s.ctx.Err() != nil {
		return
	}
	d := at.Sub(now)
	if d < 0 {
		d = 0
	}
	s.timers[name] = time.AfterFunc(d, func() {
		if s.ctx.Err() != nil {
			return
		}
		s.wg.Add(1)
		defer s.wg.Done()
		s.feed(s.ctx, name, Fact{Kind: FTick})
	})
}

// publishEntry tells subscribers about one log entry of a run.
func (s *Service) publishEntry(ctx context.Context, name string, e Entry) {
	v := entryView(e)
	data := map[string]any{"run": name, "seq": v.Seq, "type": v.Type, "kind": v.Kind, "m": v.M, "text": v.Text}
	if _, err := s.k.Publish(ctx, wire.Event{Event: runapi.EventRun, At: e.At, Data: data}); err != nil && ctx.Err() == nil {
		s.log.Warn("runs: publish", "run", name, "err", err)
	}
}

func (s *Service) notify(ctx context.Context, name, m, text string) {
	data := map[string]any{"run": name, "m": m, "text": text}
	if _, err := s.k.Publish(ctx, wire.Event{Event: runapi.EventRunNotify, At: s.now(), Data: data}); err != nil && ctx.Err() == nil {
		s.log.Warn("runs: notify", "run", name, "err", err)
	}
}

func entryView(e Entry) runapi.RunEntry {
	v := runapi.RunEntry{Seq: e.Seq, At: e.At, Type: e.Type, Text: e.Text}
	switch {
	case e.Fact != nil:
		v.Kind, v.M = string(e.Fact.Kind), e.Fact.M
		if v.M == "" && e.Fact.Coder != "" {
			v.M = e.Fact.Coder
		}
		if v.Text == "" {
			v.Text = factText(*e.Fact)
		}
		var notes []string
		for _, a := range e.Actions {
			if a.Kind == ANote || a.Kind == ALead && e.Fact.Kind == FPlanEdited && a.M == "" {
				notes = append(notes, a.Text)
			}
		}
		if len(notes) > 0 {
			v.Text = strings.TrimSpace(v.Text + " (" + strings.Join(notes, "; ") + ")")
		}
	case e.Type == EntryDid:
		v.Kind, v.M = e.Kind, e.Subject
		if v.Text != "" {
			v.Text = "failed: " + v.Text
			if e.What != "" {
				v.Text = e.What + " — " + v.Text
			}
		} else {
			v.Text = e.What
		}
	case e.Type == EntryStart:
		v.Kind = "start"
	}
	return v
}

// what is one line of what action a did, for the log's "did" row.
func (a Action) what() string {
	text := firstLine(strings.TrimSpace(a.Text))
	if r := []rune(text); len(r) > 160 {
		text = string(r[:159]) + "…"
	}
	switch a.Kind {
	case ABrief:
		return strings.TrimSpace("briefed " + a.Coder + " (" + a.Tier + ")")
	case ASendCoder:
		return "to " + a.Coder + ": " + text
	case AStopCoder:
		return strings.TrimSpace("stopped " + a.Coder + ": " + text)
	case ALead:
		return "for the lead: " + text
	case ADeliver:
		return "to the lead: " + text
	case AMergeIn, AAdvance, ACheck, AReview, AFinalCheck:
		if a.Head != "" {
			return "at " + short(a.Head)
		}
	}
	return text
}

func factText(f Fact) string {
	var parts []string
	if f.Coder != "" {
		parts = append(parts, "by "+f.Coder)
	}
	if f.Head != "" {
		parts = append(parts, "at "+short(f.Head))
	}
	switch f.Kind {
	case FChecked, FFinalCheck:
		switch note := checkNote(f.Text); {
		case f.OK:
			parts = append(parts, "passed")
		case note != "":
			parts = append(parts, "failed: "+note)
		default:
			parts = append(parts, "failed")
		}
	case FDone, FTurnEnded:
		parts = append(parts, fmt.Sprintf("%d commits", f.Commits))
		if f.Dirty {
			parts = append(parts, "uncommitted changes")
		}
	case FReviewed:
		if f.Verdict != nil {
			parts = append(parts, fmt.Sprintf("verdict %q, %d blockers", f.Verdict.Decision, len(f.Verdict.Blockers)))
		}
	case FConflict:
		parts = append(parts, "in "+strings.Join(f.Paths, ", "))
	case FAsk, FAnswer, FHold, FFollowUp, FCoderFault:
		parts = append(parts, firstLine(f.Text))
	case FPlanEdited:
		if f.Text != "" {
			parts = append(parts, "refused: "+firstLine(f.Text))
		} else {
			parts = append(parts, fmt.Sprintf("%d milestones", len(f.Plan)))
		}
	case FRetry:
		if f.Tier != "" {
			parts = append(parts, "tier "+f.Tier)
		}
	case FLimited:
		if !f.Until.IsZero() {
			parts = append(parts, "until "+f.Until.Format(time.RFC3339))
		}
	}
	return strings.Join(parts, ", ")
}

// ---- following the run's agents ----

func (s *Service) follow(evs <-chan wire.Event) {
	defer s.wg.Done()
	ctx := s.ctx
	for ev := range evs {
		if ev.Agent == nil {
			continue
		}
		name, who, ok := splitRunPath(ev.Agent.Path)
		if !ok {
			if name, ok = s.selfLedRun(ev.Agent.ID); !ok {
				if name, ok = s.resumedSelfLead(ctx, *ev.Agent); !ok {
					continue // not an agent of a run
				}
			}
			who = "lead"
		}
		if ev.Event == wire.EventAgentState {
			s.onAgent(ctx, name, who, *ev.Agent)
		}
		if ev.Seq > 0 {
			if err := s.st.Put(ctx, cursorBucket, "seq", []byte(strconv.FormatUint(ev.Seq, 10))); err != nil && ctx.Err() == nil {
				s.log.Warn("runs: store cursor", "err", err)
			}
		}
	}
}

func (s *Service) onAgent(ctx context.Context, name, who string, a wire.Agent) {
	rec, err := s.runs.Get(ctx, name)
	if err != nil || who == "lead" && s.selfLeadBack(ctx, rec, a) || rec.Agents[who] != a.ID {
		return
	}
	s.noteBlocked(name, who, a)
	s.notePrompt(ctx, rec, who, a)
	if a.State != wire.StateBlocked && a.State.Live() {
		// Messages a prompt held back (agent_blocked) go now that it is answered.
		for _, p := range rec.Outbox {
			if p.Action.Kind == ASendCoder && p.Action.Coder == who {
				s.perform(name, p)
			}
		}
	}
	if a.State == wire.StateBlocked && a.Blocked != nil && !(strings.HasPrefix(who, "coder-") && a.Blocked.Kind == wire.BlockedLimit) {
		// A prompt (or the lead's or reviewer's usage limit) waits for the user, who
		// hears about it; nothing else of the run waits (a coder's limit benches it).
		s.notify(ctx, name, rec.Run.CoderOf(who), fmt.Sprintf("%s of run %s waits for you: %s %s — answer it with `orcr agent answer %s …`",
			who, name, a.Blocked.Kind, a.Blocked.Detail, a.Path))
		return
	}
	switch {
	case who == "lead" && a.State.Terminal():
		s.leadEnded(ctx, rec, a.ID, "its agent "+string(a.State), false)
	case who == "lead":
		s.onLead(ctx, rec, a)
	case who == "reviewer":
		s.onReviewer(ctx, rec, a)
	case strings.HasPrefix(who, "coder-"):
		s.onCoder(ctx, rec, who, a)
	}
}

func (s *Service) onCoder(ctx context.Context, rec Record, who string, a wire.Agent) {
	name := rec.Run.Name
	switch {
	case a.State == wire.StateDone:
		if !a.StateAt.After(rec.Sent[who]) || !a.StateAt.After(rec.Turns[who]) {
			return // the end of a turn from before our last message, or seen already
		}
		if rec.Agents[who] != a.ID || briefPending(rec, who) {
			// The agent of the coder's previous brief (its milestone done, say,
			// and settling): a turn end counts for a milestone only once that
			// milestone's brief went to the agent that ended it.
			s.noteTurn(ctx, name, who, a.StateAt)
			return
		}
		if s.settling(ctx, name, who, a) {
			return
		}
		if m := rec.Run.CoderOf(who); m != "" {
			s.feed(ctx, name, Fact{Kind: FTurnEnded, M: m, Coder: who, Text: a.LastMessage, TurnAt: a.StateAt})
		} else {
			s.noteTurn(ctx, name, who, a.StateAt)
		}
	case a.State == wire.StateBlocked && a.Blocked != nil && a.Blocked.Kind == wire.BlockedLimit:
		f := Fact{Kind: FLimited, Coder: who}
		if a.Blocked.ResetsAt != nil {
			f.Until = *a.Blocked.ResetsAt
		}
		s.feed(ctx, name, f)
	case a.State.Terminal():
		if s.stoppedByUs(a.ID) || briefPending(rec, who) {
			// Stopped by the autopilot: a brief to come replaces it (the record of
			// who stopped it does not outlive a server killed mid-brief).
			return
		}
		if rec.Run.CoderOf(who) != "" {
			s.feed(ctx, name, Fact{Kind: FVanished, Coder: who})
		}
	}
}

// TurnSettle is how long the end of a turn during which a message was typed into the
// coder waits before it counts: claude 2.1.328 puts such a message into the turn under
// way ("The user sent a new message while you were working"), or, when the turn was
// ending, starts the next turn with it right after. Only a turn end that no new turn
// follows is the coder's answer (else a coder that called `run done` was told its
// turn ended without it).
var TurnSettle = 3 * time.Second

// settling defers the turn end a of coder who when the last message to it went while
// it worked; after TurnSettle it is handled unless a newer turn started.
func (s *Service) settling(ctx context.Context, name, who string, a wire.Agent) bool {
	k := name + "/" + who
	s.mu.Lock()
	at, busy := s.busySent[k]
	if busy {
		delete(s.busySent, k)
	}
	s.mu.Unlock()
	if !busy || a.StateAt.Before(at) || s.ctx == nil {
		return false
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		select {
		case <-s.ctx.Done():
			return // after a restart Reconcile finds the idle coder
		case <-time.After(TurnSettle):
		}
		now, err := s.k.Get(s.ctx, a.ID)
		rec, rerr := s.runs.Get(s.ctx, name)
		if err != nil || rerr != nil || now.State != wire.StateDone || !now.StateAt.Equal(a.StateAt) {
			return // a new turn took the message up; its own end is handled
		}
		s.onCoder(s.ctx, rec, who, now)
	}()
	return true
}

// noteBlocked keeps what agent who of run name waits for the user on, for the run's
// view: "coder-3 waits for you: Bash(python3 x.py)" rather than only "coder-3".
func (s *Service) noteBlocked(name, who string, a wire.Agent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := name + "/" + who
	if a.State != wire.StateBlocked || a.Blocked == nil {
		delete(s.blocked, k)
		return
	}
	what := strings.TrimSpace(a.Blocked.Detail)
	if what == "" {
		what = a.Blocked.Kind
	}
	s.blocked[k] = fmt.Sprintf("%s waits for you: %s (answer it with `orcr agent answer %s …`)", who, what, a.Path)
}

// notePrompt logs when coder who begins and ends waiting for the user at a prompt
// (any block but a usage limit, which benches it), for the summary's time at a
// permission prompt. Only a change of what the milestone's record says is fed, so
// the log has one row each way, however often the agent's state is seen.
func (s *Service) notePrompt(ctx context.Context, rec Record, who string, a wire.Agent) {
	if !strings.HasPrefix(who, "coder-") {
		return
	}
	m, ok := rec.Run.Milestone(rec.Run.CoderOf(who))
	if !ok {
		return
	}
	prompt := a.State == wire.StateBlocked && a.Blocked != nil && a.Blocked.Kind != wire.BlockedLimit
	switch {
	case prompt && m.PromptAt.IsZero() && (m.State == Building || m.State == Fixing):
		s.feed(ctx, rec.Run.Name, Fact{Kind: FPrompt, M: m.ID, Coder: who, Text: a.Blocked.Kind + ": " + a.Blocked.Detail})
	case !prompt && !m.PromptAt.IsZero():
		s.feed(ctx, rec.Run.Name, Fact{Kind: FPromptDone, M: m.ID, Coder: who})
	}
}

// blockedOn is what agent who of run name waits for the user on, or "".
func (s *Service) blockedOn(name, who string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.blocked[name+"/"+who]
}

// noteTurn records the instant of a handled turn end of agent who.
func (s *Service) noteTurn(ctx context.Context, name, who string, at time.Time) {
	if _, err := s.runs.Update(ctx, name, func(r *Record) { r.Turns = setTime(r.Turns, who, at) }); err != nil && ctx.Err() == nil {
		s.log.Warn("runs: record a turn end", "run", name, "agent", who, "err", err)
	}
}

func (s *Service) coderLock(name, who string) *sync.Mutex {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := name + "/" + who
	if s.coderMu[k] == nil {
		s.coderMu[k] = &sync.Mutex{}
	}
	return s.coderMu[k]
}

// briefPending reports a brief for coder who still to perform: its agent is about
// to be replaced.
func briefPending(rec Record, who string) bool {
	for _, p := range rec.Outbox {
		if p.Action.Kind == ABrief && p.Action.Coder == who {
			return true
		}
	}
	return false
}

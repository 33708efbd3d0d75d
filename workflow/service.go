package workflow

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"orcr/core"
	"orcr/core/wire"
	"orcr/internal/outbox"
	wfapi "orcr/workflow/api"
)

// Options configure the feature.
type Options struct {
	Home   string // $ORCR_HOME: output files go under Home/workflows/RUN
	Logger *slog.Logger
	Now    func() time.Time
	// Keep and Retain bound the finished runs kept (retain.go); 0: the defaults.
	Keep   int
	Retain time.Duration
	// Settled, if set, is called once when a run finishes: before the fact of its
	// last item's end is stored when that is its last fact, or else before its end is
	// announced. The server's memory policy returns what the run's burst of agents
	// left to the OS.
	Settled func()
}

// Service is the workflows feature.
type Service struct {
	o    Options
	log  *slog.Logger
	k    core.Kernel
	runs *outbox.Log[Run, Fact, Action]
	st   outbox.Store
	// pruneNow wakes the pruner when a run finishes (retain.go).
	pruneNow chan struct{}

	// mu serialises the facts of every run with the actions they ask for, so a
	// run's fact is logged, stepped and performed before the next is taken.
	mu sync.Mutex

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns the feature.
func New(o Options) *Service {
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Now == nil {
		o.Now = func() time.Time { return time.Now().UTC() }
	}
	return &Service{o: o, log: o.Logger}
}

// runsBucket holds the run records; each run's log is in "runslog.ID".
const runsBucket = "runs"

func newLog(st outbox.Store) *outbox.Log[Run, Fact, Action] {
	return outbox.New(st, runsBucket, outbox.Machine[Run, Fact, Action]{
		Step:    Step,
		Perform: func(a Action) bool { return a.Kind != ANote },
	})
}

// Begin starts a run of workflow p.Workflow: the file is read and checked, the vars
// filled, and the run's first fact logged (its first steps' agents are asked for).
func (s *Service) Begin(ctx context.Context, p wfapi.RunParams) (Run, error) {
	if s.k == nil {
		return Run{}, errors.New("workflows are not started")
	}
	def, err := Load(ctx, p.Repo, p.Workflow)
	if errors.Is(err, ErrNoWorkflow) {
		return Run{}, wire.Errorf(wire.CodeNotFound, "%v", err)
	}
	if err != nil {
		return Run{}, wire.Errorf(wire.CodeInvalidParams, "%v", err)
	}
	vars := map[string]string{}
	for k, v := range def.Vars {
		vars[k] = v
	}
	for k, v := range p.Vars {
		if _, ok := def.Vars[k]; !ok {
			return Run{}, wire.Errorf(wire.CodeInvalidParams, "--var %s: workflow %s declares no such var (declare it in [vars] of %s)", k, def.Name, def.File)
		}
		vars[k] = v
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id, err := s.nextID(ctx, def.Name)
	if err != nil {
		return Run{}, err
	}
	r0 := Run{ID: id, Workflow: def.Name, Def: *def, Vars: vars, Repo: p.Repo, Dir: filepath.Join(s.o.Home, "workflows", id), Trigger: p.Trigger}
	if err := os.MkdirAll(r0.Dir, 0o700); err != nil {
		return Run{}, fmt.Errorf("workflow run %s: %w", id, err)
	}
	rec, pend, err := s.runs.Create(ctx, id, r0, Fact{Kind: FBegin}, s.o.Now())
	if err != nil {
		return Run{}, err
	}
	s.publish(ctx, rec.State)
	s.perform(ctx, id, pend)
	rec, err = s.runs.Get(ctx, id)
	return rec.State, err
}

// apply logs f for run id, steps it and performs what it asks for. The caller holds
// s.mu.
func (s *Service) apply(ctx context.Context, id string, f Fact) (Run, error) {
	before, _ := s.runs.Get(ctx, id)
	// The end of the run's last item: the burst of agents the run was is over, so
	// what it left goes back to the OS before the fact is stored, and so before
	// anyone can read the run's end (Options.Settled).
	settled := f.Kind == FEnded && lastToFinish(before.State) && s.settle()
	rec, pend, err := s.runs.Apply(ctx, id, f, s.o.Now())
	if err != nil {
		return rec.State, err
	}
	s.publishChange(ctx, before.State, rec.State, settled)
	s.perform(ctx, id, pend)
	return rec.State, nil
}

// perform does the pending actions of run id in order, records each as done, and
// applies the facts they bring back.
func (s *Service) perform(ctx context.Context, id string, pend []outbox.Pending[Action]) {
	for _, p := range pend {
		f, err := s.do(ctx, p.Action)
		errText := ""
		if err != nil {
			errText = err.Error()
			s.log.Warn("workflows: action", "run", id, "kind", p.Action.Kind, "step", p.Action.Step, "err", err)
		}
		// The outcome is logged before the action is recorded as done: a crash
		// between the two performs the action again, which finds what it did (the
		// agent at its path) and reports the same fact, which Step takes once.
		var added []outbox.Pending[Action]
		before, _ := s.runs.Get(ctx, id)
		if f != nil {
			var err error
			if _, added, err = s.runs.Apply(ctx, id, *f, s.o.Now()); err != nil {
				s.log.Warn("workflows: fact", "run", id, "kind", f.Kind, "err", err)
			}
		}
		if f != nil && f.Kind == FStarted {
			faultPoint(FaultStarted)
		}
		rec, derr := s.runs.Did(ctx, id, p, errText, s.o.Now())
		if derr != nil {
			s.log.Warn("workflows: record action", "run", id, "err", derr)
			return
		}
		if f != nil {
			s.publishChange(ctx, before.State, rec.State, false)
			s.perform(ctx, id, added)
		}
	}
}

// do performs one action. Every action is safe to perform twice: a spawn performed
// again after a restart finds the agent it started at its path.
func (s *Service) do(ctx context.Context, a Action) (*Fact, error) {
	switch a.Kind {
	case ASpawn:
		return s.spawn(ctx, a), nil
	case ASend:
		return nil, s.k.Send(ctx, wire.SendParams{Target: a.Agent, Text: a.Text, Enter: true})
	case AStop:
		ag, err := s.k.Get(ctx, a.Agent)
		if err != nil || ag.State.Terminal() {
			return nil, nil
		}
		return nil, s.k.StopAgent(ctx, a.Agent, "workflow step finished")
	}
	return nil, nil
}

// spawn starts an item's agent, or finds the one a server that died started.
func (s *Service) spawn(ctx context.Context, a Action) *Fact {
	if ag, err := s.k.Get(ctx, a.Path); err == nil && ag.Path == a.Path {
		return &Fact{Kind: FStarted, Step: a.Step, I: a.I, Agent: ag.ID}
	}
	if err := os.MkdirAll(filepath.Dir(a.Output), 0o700); err != nil {
		return &Fact{Kind: FStartFailed, Step: a.Step, I: a.I, Text: err.Error()}
	}
	_ = os.Remove(a.Output) // nothing of another attempt is taken for this one's
	rp := wire.RunParams{Path: a.Path, Provider: a.Provider, Model: a.Model, Role: a.Role, Vars: a.Vars,
		Prompt: a.Prompt, Argv: a.Argv, Cwd: a.Cwd, Keep: true, Identity: a.Identity,
		Env: map[string]string{"ORCR_OUTPUT": a.Output}, HardTimeoutSeconds: a.TimeoutSeconds}
	if a.Provider == "claude" {
		// The output file is outside the agent's folder: claude asks before it
		// writes there unless the folder is added, and a workflow has nobody to
		// answer an edit's prompt (as a run's coders, edits are accepted; commands
		// still prompt).
		rp.Argv = append(rp.Argv, "--add-dir", filepath.Dir(a.Output), "--permission-mode", "acceptEdits")
	}
	ag, err := s.k.Run(ctx, rp)
	if err != nil {
		return &Fact{Kind: FStartFailed, Step: a.Step, I: a.I, Text: err.Error()}
	}
	faultPoint(FaultSpawned)
	return &Fact{Kind: FStarted, Step: a.Step, I: a.I, Agent: ag.ID}
}

// readOutput reads an item's output file: no symlink followed, at most max bytes.
func readOutput(path string, max int64) (string, string) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errors.Is(err, syscall.ENOENT) {
		return "", "no output was written to $ORCR_OUTPUT (" + path + ")"
	}
	if err != nil {
		return "", fmt.Sprintf("the output file %s cannot be read: %v", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Sprintf("the output file %s: %v", path, err)
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Sprintf("the output %s is not a regular file", path)
	}
	if st.Size() > max {
		return "", fmt.Sprintf("the output is %d bytes, over the limit of %d (max_output_bytes)", st.Size(), max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return "", fmt.Sprintf("the output file %s: %v", path, err)
	}
	if int64(len(b)) > max {
		return "", fmt.Sprintf("the output is over the limit of %d bytes (max_output_bytes)", max)
	}
	return string(b), ""
}

// follow feeds the agents' ends to their runs: it takes the events of agents under
// workflows/, and at (re)start looks at every run that is under way.
func (s *Service) follow() {
	defer s.wg.Done()
	ctx := s.ctx
	for ctx.Err() == nil {
		after := s.k.LastSeq()
		s.resume(ctx)
		ch, err := s.k.Subscribe(ctx, wire.SubscribeParams{After: after, Paths: []string{"workflows/**"}})
		if err != nil {
			s.log.Warn("workflows: subscribe", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
				continue
			}
		}
		for ev := range ch {
			if ev.Event != wire.EventAgentState || ev.Agent == nil {
				continue
			}
			s.seen(ctx, *ev.Agent)
		}
	}
}

// resume performs what every run left in its outbox and looks at the agents of its
// running items: one that ended while no server watched is fed now.
func (s *Service) resume(ctx context.Context) {
	names, err := s.runs.Names(ctx)
	if err != nil {
		s.log.Warn("workflows: list runs", "err", err)
		return
	}
	for _, id := range names {
		s.mu.Lock()
		rec, err := s.runs.Get(ctx, id)
		if err == nil {
			s.perform(ctx, id, rec.Outbox)
			rec, err = s.runs.Get(ctx, id)
		}
		if err == nil && rec.State.State == RunRunning {
			for _, sr := range rec.State.Steps {
				for i, it := range sr.Items {
					if it.State != Running || it.Agent == "" {
						continue
					}
					if ag, err := s.k.Get(ctx, it.Agent); err == nil {
						s.seenLocked(ctx, ag)
					} else if errors.Is(err, wire.ErrNotFound) {
						s.applyLogged(ctx, id, Fact{Kind: FEnded, Step: sr.Name, I: i, Agent: it.Agent, AgentState: "lost", NoOutput: "its agent is gone"})
					}
				}
			}
		}
		s.mu.Unlock()
		if err != nil {
			s.log.Warn("workflows: resume", "run", id, "err", err)
		}
	}
}

// seen looks at an agent of a workflow: when it has finished a turn or ended, its
// item's run is told.
func (s *Service) seen(ctx context.Context, a wire.Agent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seenLocked(ctx, a)
}

func (s *Service) seenLocked(ctx context.Context, a wire.Agent) {
	id, step, i, ok := parsePath(a.Path)
	if !ok {
		return
	}
	if a.State.Terminal() && a.PaneID != "" {
		// Its output file is read below (or was, when it ended): the pane has nothing
		// more to give, so it goes now rather than after gc.exited_grace (a 1,000-item
		// for_each kept 1,000 exited panes; the record keeps the last screen).
		defer func() {
			if err := s.k.CloseEnded(ctx, a.ID, "workflow item ended; its output was read"); err != nil && ctx.Err() == nil {
				s.log.Warn("workflows: close an ended item's pane", "agent", a.ID, "err", err)
			}
		}()
	}
	shell := a.Provider == "shell"
	ended := a.State.Terminal() || !shell && (a.State == wire.StateDone || a.State == wire.StateIdle && !a.StateAt.IsZero() && a.Prompt != "" && a.LastMessage != "")
	if !ended {
		return
	}
	rec, err := s.runs.Get(ctx, id)
	if err != nil {
		return
	}
	r := rec.State
	var it *Item
	for k := range r.Steps {
		if r.Steps[k].Name == step && i < len(r.Steps[k].Items) {
			it = &r.Steps[k].Items[i]
		}
	}
	if it == nil || it.State != Running || it.Agent != a.ID {
		return
	}
	f := Fact{Kind: FEnded, Step: step, I: i, Agent: a.ID, AgentState: string(a.State), ExitCode: a.ExitCode, At: a.StateAt, Reason: a.StateReason}
	if (f.AgentState == "done" || f.AgentState == "idle") && !it.Sent.IsZero() && !f.At.After(it.Sent) {
		return // the turn before the error went back
	}
	d, _ := r.Def.Step(step)
	if d != nil && len(d.Outputs) > 0 {
		f.Output, f.NoOutput = readOutput(OutputFile(r.Dir, step, i), r.Def.MaxOutput)
	}
	s.applyLogged(ctx, id, f)
}

func (s *Service) applyLogged(ctx context.Context, id string, f Fact) {
	if _, err := s.apply(ctx, id, f); err != nil && ctx.Err() == nil {
		s.log.Warn("workflows: fact", "run", id, "kind", f.Kind, "err", err)
	}
}

// parsePath reads workflows/ID/STEP[/I].
func parsePath(p string) (id, step string, i int, ok bool) {
	parts := strings.Split(p, "/")
	if len(parts) < 3 || len(parts) > 4 || parts[0] != "workflows" {
		return "", "", 0, false
	}
	if len(parts) == 4 {
		n, err := strconv.Atoi(parts[3])
		if err != nil || n < 0 {
			return "", "", 0, false
		}
		i = n
	}
	return parts[1], parts[2], i, true
}

// Stop stops run target (an id, or a workflow's newest run).
func (s *Service) Stop(ctx context.Context, target, why string) (Run, error) {
	id, err := s.resolve(ctx, target)
	if err != nil {
		return Run{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.apply(ctx, id, Fact{Kind: FStop, Text: why})
	if err != nil {
		return r, wire.Errorf(wire.CodeInvalidParams, "%v", err)
	}
	return r, nil
}

// Get returns run target (an id, or a workflow's newest run).
func (s *Service) Get(ctx context.Context, target string) (Run, error) {
	id, err := s.resolve(ctx, target)
	if err != nil {
		return Run{}, err
	}
	rec, err := s.runs.Get(ctx, id)
	return rec.State, err
}

// Runs lists every run, newest first per workflow.
func (s *Service) Runs(ctx context.Context) ([]Run, error) {
	names, err := s.runs.Names(ctx)
	if err != nil {
		return nil, err
	}
	var out []Run
	for _, id := range names {
		rec, err := s.runs.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, rec.State)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Started.After(out[j].Started) })
	return out, nil
}

// resolve finds a run by id, or the newest run of a workflow by its name.
func (s *Service) resolve(ctx context.Context, target string) (string, error) {
	if _, err := s.runs.Get(ctx, target); err == nil {
		return target, nil
	}
	runs, err := s.Runs(ctx)
	if err != nil {
		return "", err
	}
	for _, r := range runs {
		if r.Workflow == target {
			return r.ID, nil
		}
	}
	return "", wire.Errorf(wire.CodeNotFound, "no workflow run %s (see `orcr workflow status`)", target)
}

// Events returns run target's log entries after seq after, at most limit.
func (s *Service) Events(ctx context.Context, target string, after uint64, limit int) (string, []outbox.Entry[Fact, Action], error) {
	id, err := s.resolve(ctx, target)
	if err != nil {
		return "", nil, err
	}
	es, err := s.runs.Entries(ctx, id, after, limit)
	return id, es, err
}

// publishChange publishes r when a step or the run changed state: one event per
// fact would be a thousand for a 1,000-item for_each. A run that finished tells
// Options.Settled first, unless settled says that was done before its last fact.
func (s *Service) publishChange(ctx context.Context, before, r Run, settled bool) {
	finished := before.State == RunRunning && r.State != RunRunning
	if finished && !settled {
		s.settle()
	}
	if summary(before) != summary(r) {
		s.publish(ctx, r)
	}
	if finished {
		// A run finished: one more finished run may put the oldest past keep.
		select {
		case s.pruneNow <- struct{}{}:
		default:
		}
	}
}

// settle calls Options.Settled, if set, and reports whether it did.
func (s *Service) settle() bool {
	if s.o.Settled == nil {
		return false
	}
	s.o.Settled()
	return true
}

// lastToFinish reports whether r is running with one unfinished item left in all:
// that item's end is the run's last fact, unless it makes more work (a failure's
// retry, a step that waited on it). A wrong guess costs one collection more.
func lastToFinish(r Run) bool {
	if r.State != RunRunning {
		return false
	}
	left := 0
	for _, sr := range r.Steps {
		if Finished(sr.State) {
			continue
		}
		if len(sr.Items) == 0 {
			return false // waiting: its items are not made yet
		}
		for _, it := range sr.Items {
			if !Finished(it.State) {
				left++
			}
		}
	}
	return left == 1
}

func summary(r Run) string {
	var b strings.Builder
	b.WriteString(r.State)
	for _, sr := range r.Steps {
		b.WriteString(" " + sr.State)
	}
	return b.String()
}

// publish announces a run's change to subscribers (the dashboard).
func (s *Service) publish(ctx context.Context, r Run) {
	done, total := 0, len(r.Steps)
	for _, sr := range r.Steps {
		if Finished(sr.State) {
			done++
		}
	}
	_, err := s.k.Publish(ctx, wire.Event{Event: wfapi.EventWorkflowChanged, Data: map[string]any{
		"id": r.ID, "workflow": r.Workflow, "state": r.State, "stepsDone": done, "steps": total}})
	if err != nil {
		s.log.Warn("workflows: publish", "run", r.ID, "err", err)
	}
}

package workflow

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The workflow run's state machine: a pure Step(run, fact, now) → (run, actions),
// kept durable by internal/outbox (every fact logged before it is stepped, every
// action stored as intent before it is performed and confirmed after). Step does no
// I/O: the Service starts agents, types into them, reads their output files and stops
// them, and tells Step what happened as facts. So a kill -9 at any moment resumes
// where the run was: the facts logged say how far it got, and the outbox what was
// asked for and not yet done.

// Run states.
const (
	RunRunning = "running"
	RunDone    = "done"
	RunFailed  = "failed"
	RunStopped = "stopped"
)

// Step and item states.
const (
	Waiting  = "waiting"  // a step: its needs have not finished
	Pending  = "pending"  // an item: not started (max_parallel)
	Starting = "starting" // an item: its agent is asked for
	Running  = "running"  // a step, an item: its agent works
	Done     = "done"
	Skipped  = "skipped" // a step: when was false, or a need did not finish done
	Failed   = "failed"
)

// Run is one run of a workflow: the definition as it was read when the run began
// (an edit of the file changes the next run, not this one), the values of its vars,
// and each step's progress.
type Run struct {
	ID       string            `json:"id"`
	Workflow string            `json:"workflow"`
	Def      Def               `json:"def"`
	Vars     map[string]string `json:"vars,omitempty"`
	Repo     string            `json:"repo,omitempty"` // where steps run
	Dir      string            `json:"dir"`            // where output files are written
	Trigger  string            `json:"trigger,omitempty"`
	State    string            `json:"state"`
	Why      string            `json:"why,omitempty"`
	Steps    []StepRun         `json:"steps"`
	Started  time.Time         `json:"started,omitzero"`
	Ended    time.Time         `json:"ended,omitzero"`
}

// StepRun is one step's progress.
type StepRun struct {
	Name    string         `json:"name"`
	State   string         `json:"state"`
	Why     string         `json:"why,omitempty"`
	Each    bool           `json:"each,omitempty"`
	Items   []Item         `json:"items,omitempty"`
	Outputs map[string]any `json:"outputs,omitempty"`
	Started time.Time      `json:"started,omitzero"`
	Ended   time.Time      `json:"ended,omitzero"`
}

// Item is one agent of a step: the step's only one, or one per for_each element.
// Short JSON names: a 1,000-item step is written with every fact.
type Item struct {
	State  string         `json:"s"`
	Value  any            `json:"v,omitempty"`
	Agent  string         `json:"a,omitempty"`
	Output map[string]any `json:"o,omitempty"`
	// Sent is when the validation error went back to the agent (once).
	Sent time.Time `json:"r,omitzero"`
	Err  string    `json:"e,omitempty"`
}

// Fact kinds.
const (
	FBegin       = "begin"        // the run begins
	FStarted     = "started"      // Step/I's agent is Agent
	FStartFailed = "start-failed" // Step/I's agent could not be started (Text)
	FEnded       = "ended"        // Step/I's agent finished a turn or ended
	FStop        = "stop"         // stop the run (Text: why)
)

// Fact is what happened.
type Fact struct {
	Kind  string `json:"kind"`
	Step  string `json:"step,omitempty"`
	I     int    `json:"i,omitempty"`
	Agent string `json:"agent,omitempty"`
	// AgentState is the agent's state when it was seen finished: done or idle (a turn
	// ended), or exited, killed, failed, lost; ExitCode an exited program's.
	AgentState string    `json:"agentState,omitempty"`
	ExitCode   *int      `json:"exitCode,omitempty"`
	At         time.Time `json:"at,omitzero"` // when the agent reached AgentState
	// Output is the output file's text; NoOutput why there is none to check (not
	// written, too large, unreadable).
	Output   string `json:"output,omitempty"`
	NoOutput string `json:"noOutput,omitempty"`
	Text     string `json:"text,omitempty"`
}

// Action kinds.
const (
	ASpawn = "spawn" // start Step/I's agent
	ASend  = "send"  // type Text into Agent
	AStop  = "stop"  // stop Agent
	ANote  = "note"  // a line for the run's events: nothing to perform
)

// Action is what Step asks the Service to do.
type Action struct {
	Kind     string            `json:"kind"`
	Step     string            `json:"step,omitempty"`
	I        int               `json:"i,omitempty"`
	Agent    string            `json:"agent,omitempty"`
	Path     string            `json:"path,omitempty"`
	Provider string            `json:"provider,omitempty"`
	Model    string            `json:"model,omitempty"`
	Role     string            `json:"role,omitempty"`
	Identity string            `json:"identity,omitempty"`
	Prompt   string            `json:"prompt,omitempty"`
	Argv     []string          `json:"argv,omitempty"`
	Vars     map[string]string `json:"vars,omitempty"`
	Output   string            `json:"output,omitempty"` // the file $ORCR_OUTPUT names
	Cwd      string            `json:"cwd,omitempty"`
	Text     string            `json:"text,omitempty"`
}

// AgentPath is the agent path of a step's item: workflows/ID/STEP, or
// workflows/ID/STEP/I for a for_each's.
func AgentPath(id, step string, each bool, i int) string {
	p := "workflows/" + id + "/" + step
	if each {
		p += "/" + strconv.Itoa(i)
	}
	return p
}

// OutputFile is where a step's item writes its output.
func OutputFile(dir, step string, i int) string {
	return filepath.Join(dir, step, strconv.Itoa(i)+".json")
}

// Finished reports whether a step or item state is final.
func Finished(state string) bool { return state == Done || state == Skipped || state == Failed }

type stepper struct {
	r       Run
	now     time.Time
	actions []Action
}

// Step applies fact f to run r at now. It returns the new run and the actions to
// perform; an error refuses the fact and leaves the run as it was.
func Step(r Run, f Fact, now time.Time) (Run, []Action, error) {
	s := &stepper{r: clone(r), now: now}
	if f.Kind != FBegin && len(s.r.Steps) == 0 {
		return r, nil, fmt.Errorf("workflow run %s has not begun", r.ID)
	}
	var err error
	switch f.Kind {
	case FBegin:
		err = s.begin()
	case FStarted:
		err = s.started(f)
	case FStartFailed:
		err = s.startFailed(f)
	case FEnded:
		err = s.ended(f)
	case FStop:
		err = s.stop(f)
	default:
		err = fmt.Errorf("unknown fact %q", f.Kind)
	}
	if err != nil {
		return r, nil, err
	}
	s.advance()
	return s.r, s.actions, nil
}

// clone copies what Step changes: the steps and their items (values and outputs are
// never changed in place).
func clone(r Run) Run {
	r.Steps = slices.Clone(r.Steps)
	for i := range r.Steps {
		r.Steps[i].Items = slices.Clone(r.Steps[i].Items)
	}
	return r
}

func (s *stepper) note(format string, args ...any) {
	s.actions = append(s.actions, Action{Kind: ANote, Text: fmt.Sprintf(format, args...)})
}

func (s *stepper) emit(a Action) { s.actions = append(s.actions, a) }

func (s *stepper) step(name string) (*StepRun, *StepDef) {
	for i := range s.r.Steps {
		if s.r.Steps[i].Name == name {
			d, _ := s.r.Def.Step(name)
			return &s.r.Steps[i], d
		}
	}
	return nil, nil
}

func (s *stepper) item(f Fact) (*StepRun, *StepDef, *Item, error) {
	sr, d := s.step(f.Step)
	if sr == nil || d == nil {
		return nil, nil, nil, fmt.Errorf("workflow run %s has no step %q", s.r.ID, f.Step)
	}
	if f.I < 0 || f.I >= len(sr.Items) {
		return nil, nil, nil, fmt.Errorf("step %s has no item %d", f.Step, f.I)
	}
	return sr, d, &sr.Items[f.I], nil
}

func (s *stepper) begin() error {
	if len(s.r.Steps) > 0 {
		return fmt.Errorf("workflow run %s has begun already", s.r.ID)
	}
	s.r.State, s.r.Started = RunRunning, s.now
	for _, d := range s.r.Def.Steps {
		s.r.Steps = append(s.r.Steps, StepRun{Name: d.Name, State: Waiting, Each: d.ForEach != ""})
	}
	return nil
}

func (s *stepper) started(f Fact) error {
	sr, _, it, err := s.item(f)
	if err != nil {
		return err
	}
	if it.Agent == f.Agent {
		return nil // the start performed again after a restart found the same agent
	}
	if it.State != Starting {
		// Its agent was asked for before the run stopped or the item failed: it
		// is not wanted now.
		s.note("%s: agent %s started after the item was %s; stopping it", itemName(sr, f.I), f.Agent, it.State)
		s.emit(Action{Kind: AStop, Agent: f.Agent, Step: f.Step, I: f.I})
		return nil
	}
	it.State, it.Agent = Running, f.Agent
	return nil
}

func (s *stepper) startFailed(f Fact) error {
	sr, _, it, err := s.item(f)
	if err != nil {
		return err
	}
	if it.State != Starting {
		return nil
	}
	s.failItem(sr, f.I, "could not start: "+f.Text)
	return nil
}

func (s *stepper) ended(f Fact) error {
	sr, d, it, err := s.item(f)
	if err != nil {
		return err
	}
	if it.State != Running || it.Agent != f.Agent {
		s.note("%s: the end of agent %s ignored: the item is %s", itemName(sr, f.I), f.Agent, it.State)
		return nil
	}
	turnEnded := f.AgentState == "done" || f.AgentState == "idle"
	if turnEnded && !it.Sent.IsZero() && !f.At.After(it.Sent) {
		return nil // the turn before the validation error went back
	}
	if d.Shell() {
		if turnEnded {
			return nil // a shell program is done when it exits
		}
		if f.AgentState != "exited" || f.ExitCode == nil || *f.ExitCode != 0 {
			s.failItem(sr, f.I, "the program "+endWord(f))
			return nil
		}
	}
	out, verr := s.validate(d, f)
	switch {
	case verr == nil:
		it.State, it.Output, it.Err = Done, out, ""
		if !d.Shell() && turnEnded {
			s.emit(Action{Kind: AStop, Agent: it.Agent, Step: f.Step, I: f.I}) // its slot is free for the next
		}
	case turnEnded && it.Sent.IsZero():
		it.Sent = s.now
		s.note("%s: %v; sent back to the agent once", itemName(sr, f.I), verr)
		s.emit(Action{Kind: ASend, Agent: it.Agent, Step: f.Step, I: f.I,
			Text: "Your output is not accepted: " + verr.Error() + ". Write it again as one JSON object to the file in $ORCR_OUTPUT (" + OutputFile(s.r.Dir, f.Step, f.I) + ") with " + fieldList(d.Outputs) + "."})
	default:
		if !d.Shell() && turnEnded {
			s.emit(Action{Kind: AStop, Agent: it.Agent, Step: f.Step, I: f.I})
		}
		why := verr.Error()
		if !turnEnded && !d.Shell() {
			why = "the agent " + endWord(f) + " without a valid output: " + why
		}
		s.failItem(sr, f.I, why)
	}
	return nil
}

func endWord(f Fact) string {
	switch {
	case f.AgentState == "exited" && f.ExitCode != nil:
		return fmt.Sprintf("exited with code %d", *f.ExitCode)
	case f.AgentState == "":
		return "ended"
	}
	return f.AgentState
}

// validate checks the output of f against the step's outputs. A step that declares
// none needs no output file.
func (s *stepper) validate(d *StepDef, f Fact) (map[string]any, error) {
	if len(d.Outputs) == 0 {
		return nil, nil
	}
	if f.NoOutput != "" {
		return nil, fmt.Errorf("%s", f.NoOutput)
	}
	return Validate(f.Output, d.Outputs)
}

func (s *stepper) stop(f Fact) error {
	if s.r.State != RunRunning {
		return fmt.Errorf("workflow run %s is %s already", s.r.ID, s.r.State)
	}
	why := f.Text
	if why == "" {
		why = "stopped"
	}
	s.end(RunStopped, why)
	return nil
}

// failItem fails item i of sr.
func (s *stepper) failItem(sr *StepRun, i int, why string) {
	it := &sr.Items[i]
	it.State, it.Err = Failed, why
	s.note("%s failed: %s", itemName(sr, i), why)
}

// end ends the run: the agents still working are stopped, nothing more starts.
func (s *stepper) end(state, why string) {
	s.r.State, s.r.Why, s.r.Ended = state, why, s.now
	for i := range s.r.Steps {
		sr := &s.r.Steps[i]
		for j := range sr.Items {
			it := &sr.Items[j]
			if Finished(it.State) {
				continue
			}
			if it.Agent != "" {
				s.emit(Action{Kind: AStop, Agent: it.Agent, Step: sr.Name, I: j})
			}
			it.State, it.Err = Failed, why
		}
		switch sr.State {
		case Waiting:
			sr.State, sr.Why, sr.Ended = Skipped, why, s.now
		case Running:
			sr.State, sr.Why, sr.Ended = Failed, why, s.now
		}
	}
	s.note("workflow run %s %s: %s", s.r.ID, state, why)
}

// advance starts what may start and finishes what has finished, until nothing
// changes.
func (s *stepper) advance() {
	for changed := true; changed && s.r.State == RunRunning; {
		changed = false
		for i := range s.r.Steps {
			if s.r.State != RunRunning {
				return
			}
			sr := &s.r.Steps[i]
			d, _ := s.r.Def.Step(sr.Name)
			switch sr.State {
			case Waiting:
				if s.open(sr, d) {
					changed = true
				}
			case Running:
				s.launch(sr, d)
				if s.finish(sr, d) {
					changed = true
				}
			}
		}
	}
	if s.r.State != RunRunning {
		return
	}
	failed := ""
	for _, sr := range s.r.Steps {
		if !Finished(sr.State) {
			return
		}
		if sr.State == Failed && failed == "" {
			failed = sr.Name
		}
	}
	if failed != "" {
		s.end(RunFailed, "step "+failed+" failed")
		return
	}
	s.r.State, s.r.Ended = RunDone, s.now
	s.note("workflow run %s done", s.r.ID)
}

// open looks at a waiting step: once its needs have finished it is skipped, or its
// items are made and it runs. It reports whether the step left waiting.
func (s *stepper) open(sr *StepRun, d *StepDef) bool {
	for _, n := range d.Needs {
		o, _ := s.step(n)
		if !Finished(o.State) {
			return false
		}
	}
	for _, n := range d.Needs {
		if o, _ := s.step(n); o.State != Done {
			s.skip(sr, "it needs "+n+", which "+map[string]string{Skipped: "was skipped", Failed: "failed"}[o.State])
			return true
		}
	}
	env := s.env(nil)
	if d.When != "" {
		v, err := eval(d.When, env)
		if err != nil {
			s.failStep(sr, d, "when: "+err.Error())
			return true
		}
		b, ok := v.(bool)
		if !ok {
			s.failStep(sr, d, fmt.Sprintf("when %q gave %s, not true or false", d.When, typeName(v)))
			return true
		}
		if !b {
			s.skip(sr, fmt.Sprintf("when %q is false", d.When))
			return true
		}
	}
	sr.Items = []Item{{State: Pending}}
	if d.ForEach != "" {
		v, err := eval(d.ForEach, env)
		if err != nil {
			s.failStep(sr, d, "for_each: "+err.Error())
			return true
		}
		list, ok := asList(v)
		if !ok {
			s.failStep(sr, d, fmt.Sprintf("for_each %q gave %s, not a list", d.ForEach, typeName(v)))
			return true
		}
		if len(list) > s.r.Def.MaxItems {
			s.failStep(sr, d, fmt.Sprintf("for_each %q gave %d items, over the limit of %d (max_items in the workflow file)", d.ForEach, len(list), s.r.Def.MaxItems))
			return true
		}
		sr.Items = make([]Item, len(list))
		for i, v := range list {
			sr.Items[i] = Item{State: Pending, Value: v}
		}
	}
	sr.State, sr.Started = Running, s.now
	s.note("step %s runs (%d %s)", sr.Name, len(sr.Items), plural(len(sr.Items), "agent", "agents"))
	return true
}

func (s *stepper) skip(sr *StepRun, why string) {
	sr.State, sr.Why, sr.Ended = Skipped, why, s.now
	s.note("step %s skipped: %s", sr.Name, why)
}

// failStep fails a step that could not begin.
func (s *stepper) failStep(sr *StepRun, d *StepDef, why string) {
	sr.State, sr.Why, sr.Ended = Failed, why, s.now
	s.note("step %s failed: %s", sr.Name, why)
	if d.OnFailure != "continue" {
		s.end(RunFailed, "step "+sr.Name+" failed: "+why)
	}
}

// launch starts pending items while fewer than the step's bound are under way.
func (s *stepper) launch(sr *StepRun, d *StepDef) {
	limit := 1
	if sr.Each {
		limit = d.MaxParallel
	}
	active := 0
	for _, it := range sr.Items {
		if it.State == Starting || it.State == Running {
			active++
		}
	}
	for i := range sr.Items {
		if active >= limit {
			return
		}
		if sr.Items[i].State != Pending {
			continue
		}
		a, err := s.spawn(sr, d, i)
		if err != nil {
			s.failItem(sr, i, err.Error())
			continue
		}
		sr.Items[i].State = Starting
		s.emit(a)
		active++
	}
}

// spawn is the action that starts item i of step sr.
func (s *stepper) spawn(sr *StepRun, d *StepDef, i int) (Action, error) {
	env := s.env(sr.Items[i].Value)
	a := Action{Kind: ASpawn, Step: sr.Name, I: i, Path: AgentPath(s.r.ID, sr.Name, sr.Each, i),
		Provider: d.Provider, Model: d.Model, Role: d.Role, Identity: d.Identity, Cwd: s.r.Repo,
		Output: OutputFile(s.r.Dir, sr.Name, i)}
	var err error
	if d.Prompt != "" {
		if a.Prompt, err = render(d.Prompt, env); err != nil {
			return a, fmt.Errorf("prompt: %w", err)
		}
	}
	for _, t := range d.Argv {
		v, err := render(t, env)
		if err != nil {
			return a, fmt.Errorf("argv: %w", err)
		}
		a.Argv = append(a.Argv, v)
	}
	if !d.Shell() && len(d.Outputs) > 0 {
		a.Prompt = strings.TrimSpace(a.Prompt + "\n\nWhen you have finished, write your result as one JSON object to the file " + a.Output +
			" (its path is also in $ORCR_OUTPUT) with " + fieldList(d.Outputs) + ". The step is done when that file holds a valid object.")
	}
	if d.Role != "" {
		// The role's own {{var}}s: the workflow's vars, and the item.
		a.Vars = map[string]string{}
		for k, v := range s.r.Vars {
			a.Vars[k] = v
		}
		if sr.Each {
			a.Vars["item"] = text(sr.Items[i].Value)
		}
	}
	return a, nil
}

// finish ends a running step whose items have all finished; it reports whether it
// did.
func (s *stepper) finish(sr *StepRun, d *StepDef) bool {
	firstErr := ""
	for i, it := range sr.Items {
		if !Finished(it.State) {
			return false
		}
		if it.State == Failed && firstErr == "" {
			firstErr = itemName(sr, i) + ": " + it.Err
		}
	}
	sr.Ended = s.now
	if firstErr != "" {
		sr.State, sr.Why = Failed, firstErr
		s.note("step %s failed: %s", sr.Name, firstErr)
		if d.OnFailure != "continue" {
			s.end(RunFailed, "step "+sr.Name+" failed")
		}
		return true
	}
	sr.State = Done
	if sr.Each {
		sr.Outputs = map[string]any{}
		for name := range d.Outputs {
			vals := make([]any, len(sr.Items))
			for i, it := range sr.Items {
				vals[i] = it.Output[name]
			}
			sr.Outputs[name] = vals
		}
	} else {
		sr.Outputs = sr.Items[0].Output
	}
	s.note("step %s done", sr.Name)
	return true
}

// env is what expressions and templates of the run see now.
func (s *stepper) env(item any) exprEnv {
	e := exprEnv{Vars: map[string]any{}, Steps: map[string]any{}, Item: item}
	for k, v := range s.r.Vars {
		e.Vars[k] = v
	}
	for _, sr := range s.r.Steps {
		if sr.State == Done {
			out := map[string]any{}
			for k, v := range sr.Outputs {
				out[k] = v
			}
			e.Steps[sr.Name] = out
		}
	}
	return e
}

func itemName(sr *StepRun, i int) string {
	if sr.Each {
		return fmt.Sprintf("%s[%d]", sr.Name, i)
	}
	return sr.Name
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// asList turns any slice or array an expression gave into []any of JSON values
// (numbers float64, objects map[string]any): what the run reads back from the store
// is then what it had.
func asList(v any) ([]any, bool) {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() || rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return nil, false
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	var out []any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, false
	}
	return out, true
}

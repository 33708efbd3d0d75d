package workflow

import (
	"context"
	"fmt"
	"strings"
	"time"

	"orcr/core/wire"
	"orcr/internal/outbox"
	wfapi "orcr/workflow/api"
)

// maxItemViews is how many agents of one step a view lists (a 1,000-item for_each
// is counted, not listed).
const maxItemViews = 50

// Methods are the workflow.* socket methods (core.Feature).
func (s *Service) Methods() []wire.Handler {
	return []wire.Handler{
		wire.Handle(wfapi.WorkflowRun, func(ctx context.Context, p *wfapi.RunParams) (wfapi.RunResult, error) {
			if p.Trigger == "" {
				p.Trigger = "cli"
			}
			r, err := s.Begin(ctx, *p)
			if err != nil {
				return wfapi.RunResult{}, err
			}
			return wfapi.RunResult{Run: s.view(ctx, r)}, nil
		}),
		wire.Handle(wfapi.WorkflowList, func(ctx context.Context, p *wfapi.ListParams) (wfapi.ListResult, error) {
			runs, err := s.Runs(ctx)
			if err != nil {
				return wfapi.ListResult{}, err
			}
			var out wfapi.ListResult
			for _, f := range List(ctx, p.Repo) {
				wi := wfapi.WorkflowInfo{Name: f.Name, File: f.File}
				if f.Err != nil {
					wi.Error = f.Err.Error()
				} else {
					wi.Steps = len(f.Def.Steps)
				}
				for _, r := range runs {
					if r.Workflow == f.Name {
						wi.LastRun, wi.LastState = r.ID, r.State
						break
					}
				}
				out.Workflows = append(out.Workflows, wi)
			}
			return out, nil
		}),
		wire.Handle(wfapi.WorkflowShow, func(ctx context.Context, p *wfapi.ShowParams) (wfapi.ShowResult, error) {
			d, err := Load(ctx, p.Repo, p.Name)
			if err != nil {
				return wfapi.ShowResult{}, wire.Errorf(wire.CodeInvalidParams, "%v", err)
			}
			return showDef(d), nil
		}),
		wire.Handle(wfapi.WorkflowStatus, func(ctx context.Context, p *wfapi.StatusParams) (wfapi.StatusResult, error) {
			var out wfapi.StatusResult
			if p.Name != "" {
				r, err := s.Get(ctx, p.Name)
				if err != nil {
					return out, err
				}
				out.Runs = []wfapi.RunView{s.view(ctx, r)}
				return out, nil
			}
			runs, err := s.Runs(ctx)
			if err != nil {
				return out, err
			}
			for _, r := range runs {
				out.Runs = append(out.Runs, s.view(ctx, r))
			}
			return out, nil
		}),
		wire.Handle(wfapi.WorkflowEvents, func(ctx context.Context, p *wfapi.EventsParams) (wfapi.EventsResult, error) {
			limit := p.Limit
			if limit == 0 {
				limit = 1000
			}
			id, es, err := s.Events(ctx, p.Name, p.After, limit+1)
			if err != nil {
				return wfapi.EventsResult{}, err
			}
			out := wfapi.EventsResult{ID: id}
			if len(es) > limit {
				es = es[:limit]
				out.Next = es[len(es)-1].Seq
			}
			for _, e := range es {
				out.Entries = append(out.Entries, entryView(e))
			}
			return out, nil
		}),
		wire.Handle(wfapi.WorkflowStop, func(ctx context.Context, p *wfapi.StopParams) (wfapi.RunResult, error) {
			r, err := s.Stop(ctx, p.Name, "stopped by request")
			if err != nil {
				return wfapi.RunResult{}, err
			}
			return wfapi.RunResult{Run: s.view(ctx, r)}, nil
		}),
	}
}

func runParams(name, repo string, vars map[string]string, trigger string) wfapi.RunParams {
	return wfapi.RunParams{Workflow: name, Repo: repo, Vars: vars, Trigger: trigger}
}

// view is run r as clients see it.
func (s *Service) view(ctx context.Context, r Run) wfapi.RunView {
	v := wfapi.RunView{ID: r.ID, Workflow: r.Workflow, File: r.Def.File, Repo: r.Repo, Vars: r.Vars, Trigger: r.Trigger,
		State: r.State, Why: r.Why, StartedAt: r.Started, EndedAt: timePtr(r.Ended)}
	if rec, err := s.runs.Get(ctx, r.ID); err == nil {
		v.Pending = len(rec.Outbox)
	}
	for _, sr := range r.Steps {
		d, _ := r.Def.Step(sr.Name)
		sv := wfapi.StepView{Name: sr.Name, State: sr.State, Why: sr.Why, Items: len(sr.Items), Outputs: sr.Outputs,
			StartedAt: timePtr(sr.Started), EndedAt: timePtr(sr.Ended)}
		if d != nil {
			sv.Kind = stepKind(*d)
		}
		for i, it := range sr.Items {
			switch it.State {
			case Done:
				sv.Done++
			case Failed:
				sv.Failed++
			case Starting, Running:
				sv.Running++
			}
			if i < maxItemViews {
				sv.Agents = append(sv.Agents, wfapi.ItemView{I: i, State: it.State, Agent: it.Agent, Error: it.Err})
			}
		}
		v.Steps = append(v.Steps, sv)
	}
	return v
}

func stepKind(d StepDef) string {
	switch {
	case d.Shell():
		return "shell"
	case d.Role != "":
		return "role " + d.Role
	}
	return strings.TrimSuffix(d.Provider+":"+d.Model, ":")
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func showDef(d *Def) wfapi.ShowResult {
	out := wfapi.ShowResult{Name: d.Name, File: d.File, Vars: d.Vars, MaxItems: d.MaxItems, MaxOutput: d.MaxOutput}
	for _, st := range d.Steps {
		out.Steps = append(out.Steps, wfapi.StepDef{Name: st.Name, Role: st.Role, Provider: st.Provider, Model: st.Model,
			Prompt: st.Prompt, Argv: st.Argv, Outputs: st.Outputs, ForEach: st.ForEach, MaxParallel: st.MaxParallel,
			When: st.When, Identity: st.Identity, OnFailure: st.OnFailure, Needs: st.Needs})
	}
	return out
}

// entryView is a log entry as `orcr workflow events` prints it.
func entryView(e outbox.Entry[Fact, Action]) wfapi.Entry {
	v := wfapi.Entry{Seq: e.Seq, At: e.At, Type: e.Type, Text: e.Text}
	if e.Type == outbox.EntryDid {
		v.Text = strings.TrimSpace("action " + e.Ref + " done " + e.Text)
	}
	if f := e.Fact; f != nil {
		v.Kind, v.Step, v.I, v.Agent = f.Kind, f.Step, f.I, f.Agent
		switch f.Kind {
		case FEnded:
			t := "agent " + endWord(*f)
			if f.NoOutput != "" {
				t += "; " + f.NoOutput
			} else if f.Output != "" {
				t += fmt.Sprintf("; output %d bytes", len(f.Output))
			}
			if v.Text != "" {
				t += "; refused: " + v.Text
			}
			v.Text = t
		case FStartFailed, FStop:
			if v.Text == "" {
				v.Text = f.Text
			}
		}
	}
	for _, a := range e.Actions {
		v.Actions = append(v.Actions, actionLine(a))
	}
	return v
}

func actionLine(a Action) string {
	switch a.Kind {
	case ANote:
		return a.Text
	case ASpawn:
		what := a.Provider
		if a.Role != "" {
			what = "role " + a.Role
		}
		return fmt.Sprintf("start %s (%s)", a.Path, what)
	case ASend:
		return "send the validation error to " + a.Agent
	case AStop:
		return "stop agent " + a.Agent
	}
	return a.Kind
}

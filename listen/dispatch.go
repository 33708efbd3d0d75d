package listen

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"orcr/core/wire"
	listenapi "orcr/listen/api"
	planapi "orcr/orchestrate/api"
)

// Carrying out an event's action: spawn its agent through the kernel's agent service
// (a role is resolved there, exactly as for `orcr agent run --role`), or draft its
// plan through the plan service.

// Plans is the part of the plan service a plan action uses.
type Plans interface {
	PlanNew(ctx context.Context, p planapi.PlanNewParams) (planapi.Plan, error)
	PlanGet(ctx context.Context, name string) (planapi.PlanGetResult, error)
}

// Env names set on every agent a listener spawns: how Done recognises, after a
// restart, a spawn that took effect.
const (
	EnvListener      = "ORCR_LISTENER"
	EnvListenerEvent = "ORCR_LISTENER_EVENT"
)

// maxPrompt is the longest prompt an agent can be given: it travels as one command-line
// argument (or, for a shell agent, one environment string), which Linux refuses over
// 128 KiB; the same bound as roles.MaxArg. A prompt over it is the event's (a long
// issue body), so it fails that event alone.
const maxPrompt = 120 << 10

// dispatcher is the service's Dispatcher.
type dispatcher struct{ s *Service }

func (d *dispatcher) Dispatch(ctx context.Context, l Listener, e Event, target string) error {
	if l.Action.IsWorkflow() {
		return d.workflow(ctx, l, e)
	}
	if l.Action.IsPlan() {
		return d.plan(ctx, l, e, target)
	}
	return d.agent(ctx, l, e, target)
}

// workflowTrigger is what a listener's workflow run records as its trigger: it names
// the event, so Done finds the run a dispatch started.
func workflowTrigger(listener, event string) string {
	return "listener " + listener + " event " + event
}

func (d *dispatcher) workflow(ctx context.Context, l Listener, e Event) error {
	wf := d.s.workflows()
	if wf == nil {
		return errors.New("this server runs no workflows")
	}
	repo := ""
	if l.Action.Repo.Text != "" {
		var err error
		if repo, err = l.Action.Repo.Render(e.Vars); err != nil {
			return Permanent(err)
		}
		if rest, ok := strings.CutPrefix(repo, "~/"); ok {
			home, _ := os.UserHomeDir()
			repo = filepath.Join(home, rest)
		}
		if !filepath.IsAbs(repo) {
			return Permanent(fmt.Errorf("repo %q (from %q) is not an absolute path", repo, l.Action.Repo.Text))
		}
	}
	id, err := wf.StartWorkflow(ctx, l.Action.Workflow, repo, e.Vars, workflowTrigger(l.Name, e.ID))
	if err != nil {
		if c := wire.CodeOf(err); c == wire.CodeNotFound || c == wire.CodeInvalidParams {
			return Permanent(err) // the file is missing or does not load: not this event's fault, but no retry fixes it
		}
		return err
	}
	d.s.publish(l.Name, listenapi.EventListenerDispatched, "listener."+l.Source.Type,
		map[string]any{"event": e.ID, "target": l.Action.Workflow, "workflowRun": id})
	return nil
}

func (d *dispatcher) agent(ctx context.Context, l Listener, e Event, target string) error {
	a := l.Action
	prompt := ""
	if a.Prompt.Text != "" {
		var err error
		if prompt, err = a.Prompt.Render(e.Vars); err != nil {
			return Permanent(err)
		}
		if len(prompt) > maxPrompt {
			return Permanent(fmt.Errorf("the prompt this event renders is %d bytes, over the %d-byte limit of one command-line argument; put the long var (e.g. {{body}}) in a file the agent reads, or leave it out of the prompt",
				len(prompt), maxPrompt))
		}
	}
	env := map[string]string{EnvListener: l.Name, EnvListenerEvent: e.ID}
	p := wire.RunParams{Path: target, Provider: a.Provider, Model: a.Model, Prompt: prompt,
		Priority: a.Priority, Cwd: a.Cwd, Env: env, Identity: a.Identity}
	if a.Role != "" {
		// The role's prompt template (when the listener gives no prompt) and its
		// worktree read the event's vars, as they read --var.
		p.Role, p.Vars = a.Role, maps.Clone(e.Vars)
	}
	if a.Command != "" {
		// A shell agent's command is fixed; the event reaches it only through the
		// environment, never spliced into the command line.
		p.Argv = []string{"sh", "-c", a.Command}
		if prompt != "" {
			env["ORCR_PROMPT"] = prompt
		}
		for _, k := range slices.Sorted(maps.Keys(e.Vars)) {
			env["ORCR_EVENT_"+strings.ToUpper(k)] = e.Vars[k]
		}
	}
	ag, err := d.s.k.Run(ctx, p)
	if wire.CodeOf(err) == wire.CodeInvalidPath {
		// The path is the event's (RenderPath makes every rendering valid, so this is
		// a kernel rule it does not know): no retry makes it valid.
		return Permanent(err)
	}
	if err != nil {
		return roleError(a.Role, e, err)
	}
	d.s.publish(l.Name, listenapi.EventListenerDispatched, "listener."+l.Source.Type,
		map[string]any{"event": e.ID, "target": target, "agentId": ag.ID})
	return nil
}

// roleError adds to a role prompt's missing variable which ones the event has: the
// role's own hint names --var, which a listener cannot pass.
func roleError(role string, e Event, err error) error {
	if role == "" || wire.CodeOf(err) != wire.CodeBadRole || !strings.Contains(err.Error(), "not given") {
		return err
	}
	have := make([]string, 0, len(e.Vars))
	for _, k := range slices.Sorted(maps.Keys(e.Vars)) {
		have = append(have, "{{"+k+"}}")
	}
	return fmt.Errorf("%w (this listener's events carry %s: use those in the role's prompt, or give the listener a prompt)",
		err, strings.Join(have, ", "))
}

func (d *dispatcher) plan(ctx context.Context, l Listener, e Event, name string) error {
	plans := d.s.plans()
	if plans == nil {
		return errors.New("this server runs no plan service")
	}
	a := l.Action
	req, err := a.Request.Render(e.Vars)
	if err != nil {
		return Permanent(err)
	}
	repo, err := a.Repo.Render(e.Vars)
	if err != nil {
		return Permanent(err)
	}
	if rest, ok := strings.CutPrefix(repo, "~/"); ok {
		home, _ := os.UserHomeDir()
		repo = filepath.Join(home, rest)
	}
	if !filepath.IsAbs(repo) {
		return Permanent(fmt.Errorf("repo %q (from %q) is not an absolute path", repo, a.Repo.Text))
	}
	p, err := plans.PlanNew(ctx, planapi.PlanNewParams{Name: name, Request: req, Repo: filepath.Clean(repo), Lead: a.Lead})
	if err != nil {
		if wire.CodeOf(err) != wire.CodeNameTaken {
			return err
		}
		// The plan is there already. If it is this event's (the same request), the
		// action took effect before (a processed mark pruned, a listener re-added):
		// done, not a second plan. Another request's plan holds the event until the
		// name template tells them apart.
		old, gerr := plans.PlanGet(ctx, name)
		if gerr != nil || old.Plan.Request != req {
			return fmt.Errorf("plan %s exists already for another request: make [action] plan give each event its own name (e.g. add {{number}} or {{id}}); the event is held until then: %w", name, err)
		}
		p = old.Plan
	}
	d.s.publish(l.Name, listenapi.EventListenerDispatched, "listener."+l.Source.Type,
		map[string]any{"event": e.ID, "target": name, "plan": name, "leadPath": p.LeadPath})
	return nil
}

// Done says whether a dispatch begun before a restart took effect: an agent at its
// target carrying its event in the environment, or a plan of its name made since the
// dispatch began.
func (d *dispatcher) Done(ctx context.Context, dp Dispatch) (bool, error) {
	if dp.Workflow {
		wf := d.s.workflows()
		if wf == nil {
			return false, nil
		}
		return wf.Triggered(ctx, workflowTrigger(dp.Event.Vars["listener"], dp.Event.ID))
	}
	if dp.Plan {
		plans := d.s.plans()
		if plans == nil {
			return false, nil
		}
		r, err := plans.PlanGet(ctx, dp.Target)
		if wire.CodeOf(err) == wire.CodeNotFound {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return !r.Plan.CreatedAt.Before(dp.At.Add(-time.Second)), nil
	}
	as, err := d.s.k.List(ctx, wire.ListParams{Glob: dp.Target, All: true})
	if err != nil {
		if wire.CodeOf(err) == wire.CodeNotFound {
			return false, nil
		}
		return false, err
	}
	for _, a := range as {
		if a.Env[EnvListenerEvent] == dp.Event.ID && a.Env[EnvListener] == dp.Event.Vars["listener"] {
			return true, nil
		}
	}
	return false, nil
}

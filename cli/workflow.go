package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"orcr/core/wire"
	wfapi "orcr/workflow/api"
)

// workflowCommand is `orcr workflow run|ls|show|status|events|stop` (DESIGN §18).
func (app *app) workflowCommand() *cli.Command {
	repoFlag := &cli.StringFlag{Name: "repo", Usage: "the repository whose .orcr/workflows is read first (default: this folder)"}
	return &cli.Command{
		Name:  "workflow",
		Usage: "multi-step workflows of agents with typed outputs (.orcr/workflows/NAME.toml)",
		Commands: []*cli.Command{
			{
				Name: "run", Usage: "start a run of a workflow", ArgsUsage: "NAME",
				Flags: []cli.Flag{
					&cli.StringSliceFlag{Name: "var", Usage: "K=V replacing a [vars] default (repeatable)"},
					repoFlag,
					// A string flag: the CLI rewrites a bare --wait to --wait=settled (agent run's).
					&cli.StringFlag{Name: "wait", Usage: "return when the run has ended (exit 1 unless it is done)"},
					jsonFlag(),
				},
				Action: func(ctx context.Context, c *cli.Command) error { return app.workflowRun(ctx, c) },
			},
			{
				Name: "ls", Usage: "workflow files and their newest runs", Flags: []cli.Flag{repoFlag, jsonFlag()},
				Action: func(ctx context.Context, c *cli.Command) error {
					repo, err := repoDir(c)
					if err != nil {
						return err
					}
					r, err := wire.Call(ctx, service(ctx), wfapi.WorkflowList, wfapi.ListParams{Repo: repo})
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(app.out, r)
					}
					if len(r.Workflows) == 0 {
						fmt.Fprintf(app.out, "no workflows: write one in .orcr/workflows/NAME.toml\n")
						return nil
					}
					tw := newTabWriter(app.out)
					fmt.Fprintln(tw, "NAME\tSTEPS\tLAST RUN\tSTATE\tFILE")
					for _, w := range r.Workflows {
						steps := fmt.Sprint(w.Steps)
						if w.Error != "" {
							steps = "error"
						}
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", w.Name, steps, dash(w.LastRun), dash(w.LastState), w.File)
					}
					if err := tw.Flush(); err != nil {
						return err
					}
					for _, w := range r.Workflows {
						if w.Error != "" {
							fmt.Fprintf(app.out, "\n%s does not load:\n%s\n", w.Name, w.Error)
						}
					}
					return nil
				},
			},
			{
				Name: "show", Usage: "a workflow file as read: vars, steps and what each needs", ArgsUsage: "NAME",
				Flags: []cli.Flag{repoFlag, jsonFlag()},
				Action: func(ctx context.Context, c *cli.Command) error {
					repo, err := repoDir(c)
					if err != nil {
						return err
					}
					n, err := workflowName(c)
					if err != nil {
						return err
					}
					r, err := wire.Call(ctx, service(ctx), wfapi.WorkflowShow, wfapi.ShowParams{Name: n, Repo: repo})
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(app.out, r)
					}
					app.printDef(r)
					return nil
				},
			},
			{
				Name: "status", Usage: "workflow runs, or one run's steps, agents and outputs", ArgsUsage: "[RUN|NAME]",
				Flags: []cli.Flag{jsonFlag()},
				Action: func(ctx context.Context, c *cli.Command) error {
					r, err := wire.Call(ctx, service(ctx), wfapi.WorkflowStatus, wfapi.StatusParams{Name: c.Args().First()})
					if err != nil {
						return err
					}
					if c.Bool("json") {
						if c.Args().First() != "" && len(r.Runs) == 1 {
							return printJSON(app.out, r.Runs[0])
						}
						return printJSON(app.out, r)
					}
					if c.Args().First() != "" && len(r.Runs) == 1 {
						app.printRun(r.Runs[0])
						return nil
					}
					if len(r.Runs) == 0 {
						fmt.Fprintln(app.out, "no workflow runs: start one with orcr workflow run NAME")
						return nil
					}
					tw := newTabWriter(app.out)
					fmt.Fprintln(tw, "RUN\tSTATE\tSTEPS\tSTARTED\tTRIGGER")
					for _, v := range r.Runs {
						done := 0
						for _, s := range v.Steps {
							if s.State == "done" || s.State == "skipped" || s.State == "failed" {
								done++
							}
						}
						fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%s\t%s\n", v.ID, v.State, done, len(v.Steps), v.StartedAt.Local().Format(time.DateTime), dash(v.Trigger))
					}
					return tw.Flush()
				},
			},
			{
				Name: "events", Usage: "a workflow run's stored log", ArgsUsage: "RUN|NAME",
				Flags: []cli.Flag{&cli.Uint64Flag{Name: "after", Usage: "entries after this seq"}, jsonFlag()},
				Action: func(ctx context.Context, c *cli.Command) error {
					n, err := workflowName(c)
					if err != nil {
						return err
					}
					return app.workflowEvents(ctx, n, c.Uint64("after"), c.Bool("json"))
				},
			},
			{
				Name: "stop", Usage: "stop a workflow run: its agents are stopped, nothing more starts", ArgsUsage: "RUN|NAME",
				Action: func(ctx context.Context, c *cli.Command) error {
					n, err := workflowName(c)
					if err != nil {
						return err
					}
					r, err := wire.Call(ctx, service(ctx), wfapi.WorkflowStop, wfapi.StopParams{Name: n})
					if err != nil {
						return err
					}
					fmt.Fprintf(app.out, "workflow run %s %s\n", r.Run.ID, r.Run.State)
					return nil
				},
			},
		},
	}
}

func workflowName(c *cli.Command) (string, error) {
	n := c.Args().First()
	if n == "" && (c.Name == "run" || c.Name == "show") {
		return "", fmt.Errorf("%s needs a workflow's name (see orcr workflow ls)", c.FullName())
	}
	if n == "" {
		return "", fmt.Errorf("%s needs a workflow run or name (see orcr workflow status)", c.FullName())
	}
	return n, nil
}

func repoDir(c *cli.Command) (string, error) {
	dir := c.String("repo")
	if dir == "" {
		return os.Getwd()
	}
	return filepath.Abs(dir)
}

func (app *app) workflowRun(ctx context.Context, c *cli.Command) error {
	n, err := workflowName(c)
	if err != nil {
		return err
	}
	repo, err := repoDir(c)
	if err != nil {
		return err
	}
	p := wfapi.RunParams{Workflow: n, Repo: repo, Trigger: "cli"}
	if sc := os.Getenv("ORCR_SCHEDULE"); sc != "" {
		p.Trigger = "schedule " + sc // `orcr schedule add NAME … -- orcr workflow run W`
	}
	for _, kv := range c.StringSlice("var") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("--var %q: use KEY=VALUE", kv)
		}
		if p.Vars == nil {
			p.Vars = map[string]string{}
		}
		p.Vars[k] = v
	}
	r, err := wire.Call(ctx, service(ctx), wfapi.WorkflowRun, p)
	if err != nil {
		return err
	}
	v := r.Run
	if c.String("wait") != "" {
		for v.State == "running" {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
			s, err := wire.Call(ctx, service(ctx), wfapi.WorkflowStatus, wfapi.StatusParams{Name: v.ID})
			if err != nil {
				return err
			}
			if len(s.Runs) == 1 {
				v = s.Runs[0]
			}
		}
	}
	if c.Bool("json") {
		return printJSON(app.out, v)
	}
	if !(c.String("wait") != "") {
		fmt.Fprintf(app.out, "workflow run %s started (orcr workflow status %s)\n", v.ID, v.ID)
		return nil
	}
	app.printRun(v)
	if v.State != "done" {
		return fmt.Errorf("workflow run %s %s: %s", v.ID, v.State, v.Why)
	}
	return nil
}

func (app *app) printRun(v wfapi.RunView) {
	fmt.Fprintf(app.out, "%s  %s", v.ID, v.State)
	if v.Why != "" {
		fmt.Fprintf(app.out, ": %s", v.Why)
	}
	fmt.Fprintf(app.out, "\nfile %s\n", v.File)
	if len(v.Vars) > 0 {
		fmt.Fprintf(app.out, "vars %s\n", kvList(v.Vars))
	}
	tw := newTabWriter(app.out)
	fmt.Fprintln(tw, "STEP\tKIND\tSTATE\tAGENTS\tNOTE")
	for _, s := range v.Steps {
		agents := "-"
		if s.Items > 0 {
			agents = fmt.Sprintf("%d done", s.Done)
			if s.Items > 1 || s.Failed > 0 || s.Running > 0 {
				agents = fmt.Sprintf("%d/%d done, %d running, %d failed", s.Done, s.Items, s.Running, s.Failed)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Name, s.Kind, s.State, agents, dash(s.Why))
	}
	_ = tw.Flush()
	for _, s := range v.Steps {
		if len(s.Outputs) == 0 {
			continue
		}
		fmt.Fprintf(app.out, "%s:\n", s.Name)
		for _, k := range sortedKeysOf(s.Outputs) {
			fmt.Fprintf(app.out, "  %s = %s\n", k, jsonText(s.Outputs[k], 200))
		}
	}
}

func (app *app) printDef(d wfapi.ShowResult) {
	fmt.Fprintf(app.out, "%s  (%s)\n", d.Name, d.File)
	if len(d.Vars) > 0 {
		fmt.Fprintf(app.out, "vars %s\n", kvList(d.Vars))
	}
	for _, s := range d.Steps {
		kind := s.Provider
		switch {
		case s.Role != "":
			kind = "role " + s.Role
		case s.Model != "":
			kind += ":" + s.Model
		}
		fmt.Fprintf(app.out, "\n[%s] %s", s.Name, kind)
		if len(s.Needs) > 0 {
			fmt.Fprintf(app.out, ", needs %s", strings.Join(s.Needs, ", "))
		}
		fmt.Fprintln(app.out)
		if s.When != "" {
			fmt.Fprintf(app.out, "  when      %s\n", s.When)
		}
		if s.ForEach != "" {
			fmt.Fprintf(app.out, "  for_each  %s (max_parallel %d)\n", s.ForEach, s.MaxParallel)
		}
		if len(s.Outputs) > 0 {
			fmt.Fprintf(app.out, "  outputs   %s\n", kvList(s.Outputs))
		}
		if len(s.Argv) > 0 {
			fmt.Fprintf(app.out, "  argv      %s\n", jsonText(s.Argv, 200))
		}
		if s.Prompt != "" {
			fmt.Fprintf(app.out, "  prompt    %s\n", oneLineOf(s.Prompt, 200))
		}
		if s.Identity != "" {
			fmt.Fprintf(app.out, "  identity  %s\n", s.Identity)
		}
		fmt.Fprintf(app.out, "  on_failure %s\n", s.OnFailure)
	}
}

// workflowEvents prints run name's log page by page.
func (app *app) workflowEvents(ctx context.Context, name string, after uint64, asJSON bool) error {
	all := wfapi.EventsResult{Entries: []wfapi.Entry{}}
	tw := newTabWriter(app.out)
	for {
		r, err := wire.Call(ctx, service(ctx), wfapi.WorkflowEvents, wfapi.EventsParams{Name: name, After: after, Limit: 1000})
		if err != nil {
			return err
		}
		all.ID = r.ID
		if asJSON {
			all.Entries = append(all.Entries, r.Entries...)
		} else {
			for _, e := range r.Entries {
				what := e.Type
				if e.Kind != "" {
					what = e.Kind
					if e.Type == "refused" {
						what += " (refused)"
					}
				}
				who := e.Step
				if e.Step != "" && e.I > 0 {
					who = fmt.Sprintf("%s[%d]", e.Step, e.I)
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", e.Seq, e.At.Local().Format("15:04:05.000"), what, dash(who), oneLineOf(e.Text, 300))
				for _, a := range e.Actions {
					fmt.Fprintf(tw, "\t\t\t\t→ %s\n", oneLineOf(a, 300))
				}
			}
		}
		if r.Next == 0 {
			break
		}
		if r.Next <= after {
			return fmt.Errorf("workflow.events did not move past seq %d", after)
		}
		after = r.Next
	}
	if asJSON {
		return printJSON(app.out, all)
	}
	return tw.Flush()
}

func kvList[V any](m map[string]V) string {
	var parts []string
	for _, k := range sortedKeysOf(m) {
		parts = append(parts, fmt.Sprintf("%s=%v", k, m[k]))
	}
	return strings.Join(parts, " ")
}

func sortedKeysOf[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func jsonText(v any, max int) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	s := fmt.Sprint(v)
	if err := enc.Encode(v); err == nil {
		s = b.String()
	}
	return oneLineOf(s, max)
}

func oneLineOf(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		s = string(r[:max]) + "…"
	}
	return s
}

package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"orcr/core"
	"orcr/core/wire"
	planapi "orcr/orchestrate/api"
	"orcr/planning"
)

// catalogCommand is `orcr catalog`.
func (app *app) catalogCommand() *cli.Command {
	return &cli.Command{
		Name:  "catalog",
		Usage: "models, ratings, the tier each qualifies for, premium marked",
		Flags: []cli.Flag{jsonFlag()},
		Action: func(ctx context.Context, c *cli.Command) error {
			res, err := wire.Call(ctx, service(ctx), planapi.CatalogGet, wire.Empty{})
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(app.out, res)
			}
			_, err = io.WriteString(app.out, res.Table)
			return err
		},
	}
}

// planCommand is `orcr plan new|ls|show|edit|approve|reject`.
func (app *app) planCommand() *cli.Command {
	return &cli.Command{
		Name:  "plan",
		Usage: "plans: a lead agent writes a Markdown plan you edit, approve or reject",
		Commands: []*cli.Command{
			{
				Name: "new", Usage: "start a plan: a lead agent writes .orcr/plans/NAME.md", ArgsUsage: `NAME "request"`,
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "repo", Usage: "a folder of the git repository the plan is for (default: current)"},
					&cli.StringFlag{Name: "lead", Usage: "PROVIDER[:MODEL] of the lead (default: a high-tier catalog model); none: you wrote .orcr/plans/NAME.md yourself; self: the calling agent (run from inside it) leads"},
					jsonFlag(),
				},
				Action: app.planNew,
			},
			{
				Name: "format", Usage: "print the plan format (what a lead writes to .orcr/plans/NAME.md), with an example",
				// It needs no server.
				Before: func(ctx context.Context, c *cli.Command) (context.Context, error) { return ctx, nil },
				Action: func(ctx context.Context, c *cli.Command) error {
					_, err := fmt.Fprint(app.out, planning.FormatText())
					return err
				},
			},
			{
				Name: "ls", Usage: "list plans: name, state, lead, age", Flags: []cli.Flag{jsonFlag()},
				Action: app.planLs,
			},
			{
				Name: "show", Usage: "a plan's milestones: id, title, depends, tier, estimate, model-why", ArgsUsage: "NAME",
				Flags: []cli.Flag{jsonFlag()}, Action: app.planShow,
			},
			{
				Name: "edit", Usage: "edit a plan's file in $EDITOR; it is checked again on save", ArgsUsage: "NAME",
				Action: app.planEdit,
			},
			{
				Name: "approve", Usage: "approve a drafted plan (its sha256 is recorded)", ArgsUsage: "NAME",
				Flags: []cli.Flag{jsonFlag()},
				Action: func(ctx context.Context, c *cli.Command) error {
					name, err := oneArg(c, "plan approve NAME")
					if err != nil {
						return err
					}
					pRes, err := wire.Call(ctx, service(ctx), planapi.PlanApprove, planapi.PlanNameParams{Name: name})
					p := pRes.Plan
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(app.out, planapi.PlanResult{Plan: p})
					}
					fmt.Fprintf(app.out, "plan %s approved (sha256 %s); a later edit of %s is recorded as an event\n", p.Name, p.ApprovedHash, p.File)
					return nil
				},
			},
			{
				Name: "reject", Usage: "reject a drafted plan; the lead redrafts from the reason", ArgsUsage: `NAME "reason"`,
				Flags: []cli.Flag{jsonFlag()},
				Action: func(ctx context.Context, c *cli.Command) error {
					if c.Args().Len() != 2 {
						return fmt.Errorf(`usage: orcr plan reject NAME "reason" (the reason goes to the lead)`)
					}
					pRes, err := wire.Call(ctx, service(ctx), planapi.PlanReject, planapi.PlanRejectParams{Name: c.Args().Get(0), Reason: c.Args().Get(1)})
					p := pRes.Plan
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(app.out, planapi.PlanResult{Plan: p})
					}
					fmt.Fprintf(app.out, "plan %s rejected; the reason went to %s for round %d\n", p.Name, p.LeadPath, p.Rounds)
					return nil
				},
			},
		},
	}
}

func oneArg(c *cli.Command, usage string) (string, error) {
	if c.Args().Len() != 1 {
		return "", fmt.Errorf("usage: orcr %s", usage)
	}
	return c.Args().First(), nil
}

func (app *app) planNew(ctx context.Context, c *cli.Command) error {
	if c.Args().Len() != 2 {
		return fmt.Errorf(`usage: orcr plan new NAME "request" [--repo DIR] [--lead PROVIDER[:MODEL]|none]`)
	}
	repo := c.String("repo")
	if repo == "" {
		repo = "."
	}
	repo, err := filepath.Abs(repo)
	if err != nil {
		return fmt.Errorf("repo: %w", err)
	}
	pRes, err := wire.Call(ctx, service(ctx), planapi.PlanNew, planapi.PlanNewParams{Name: c.Args().Get(0), Request: c.Args().Get(1), Repo: repo, Lead: c.String("lead")})
	p := pRes.Plan
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(app.out, planapi.PlanResult{Plan: p})
	}
	if p.Lead == "none" {
		fmt.Fprintf(app.out, "plan %s: %s from %s (no lead)\n", p.Name, p.State, p.File)
		fmt.Fprintf(app.out, "review it with `orcr plan show %s`, then `orcr plan approve %s`\n", p.Name, p.Name)
		return nil
	}
	if p.Lead == "self" {
		fmt.Fprintf(app.out, "plan %s: %s; you (%s) lead it: write %s and end your turn (it is read then)\n", p.Name, p.State, p.LeadPath, p.File)
		fmt.Fprintf(app.out, "the format: `orcr plan format`; the models: `orcr catalog`; problems: `orcr plan show %s`\n", p.Name)
		return nil
	}
	fmt.Fprintf(app.out, "plan %s: %s; lead %s on %s writes %s\n", p.Name, p.State, p.LeadPath, p.Lead, p.File)
	fmt.Fprintf(app.out, "follow it with `orcr plan ls`, watch the lead with `orcr agent attach %s`\n", p.LeadPath)
	return nil
}

func (app *app) planLs(ctx context.Context, c *cli.Command) error {
	psRes, err := wire.Call(ctx, service(ctx), planapi.PlanList, wire.Empty{})
	ps := psRes.Plans
	if err != nil {
		return err
	}
	if c.Bool("json") {
		if ps == nil {
			ps = []planapi.Plan{}
		}
		return printJSON(app.out, planapi.PlanListResult{Plans: ps})
	}
	if len(ps) == 0 {
		fmt.Fprintln(app.out, `no plans; start one with orcr plan new NAME "request"`)
		return nil
	}
	tw := newTabWriter(app.out)
	fmt.Fprintln(tw, "NAME\tSTATE\tLEAD\tAGE")
	now := time.Now()
	for _, p := range ps {
		lead := p.Lead
		if lead == "self" {
			lead = "self: " + p.LeadPath // the session that leads it
		}
		fmt.Fprintf(tw, "%s\t%s\tlead %s\t%s\n", p.Name, p.State, lead, core.FormatAge(now.Sub(p.CreatedAt)))
	}
	return tw.Flush()
}

func (app *app) planShow(ctx context.Context, c *cli.Command) error {
	name, err := oneArg(c, "plan show NAME")
	if err != nil {
		return err
	}
	res, err := wire.Call(ctx, service(ctx), planapi.PlanGet, planapi.PlanNameParams{Name: name})
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(app.out, res)
	}
	WritePlan(app.out, res)
	return nil
}

// WritePlan prints plan.get's answer as `orcr plan show` does: the record, the
// problems by line, then one row per milestone.
func WritePlan(w io.Writer, res planapi.PlanGetResult) {
	p := res.Plan
	bw := newTabWriter(w)
	fmt.Fprintf(bw, "plan:\t%s\n", p.Name)
	fmt.Fprintf(bw, "state:\t%s\n", p.State)
	fmt.Fprintf(bw, "request:\t%s\n", p.Request)
	fmt.Fprintf(bw, "file:\t%s\n", p.File)
	fmt.Fprintf(bw, "lead:\t%s (%s)\n", p.LeadPath, p.Lead)
	if res.Check != "" {
		fmt.Fprintf(bw, "check:\t%s\n", res.Check)
	}
	if p.ApprovedHash != "" {
		fmt.Fprintf(bw, "approved:\tsha256 %s\n", p.ApprovedHash)
	}
	if p.Reason != "" && p.State != "approved" {
		fmt.Fprintf(bw, "rejected because:\t%s\n", p.Reason)
	}
	bw.Flush()
	if len(res.Problems) > 0 {
		fmt.Fprintf(w, "\n%d problems:\n", len(res.Problems))
		for _, pr := range res.Problems {
			fmt.Fprintf(w, "  %s [%s]\n", pr.Message, pr.Code)
		}
	}
	if len(res.Milestones) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := newTabWriter(w)
	fmt.Fprintln(tw, "ID\tTITLE\tDEPENDS\tTIER\tESTIMATE\tMODEL-WHY")
	total := 0
	for _, m := range res.Milestones {
		deps := strings.Join(m.Depends, ",")
		total += m.EstimateSeconds
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", m.ID, m.Title, core.Dash(deps), m.Tier,
			core.FormatEstimate(m.EstimateSeconds), core.Dash(m.ModelWhy))
	}
	tw.Flush()
	fmt.Fprintf(w, "\n%d milestones, %s estimated in all\n", len(res.Milestones), core.FormatEstimate(total))
}

// planEdit opens the plan's file in the user's editor, then asks the server to look
// at it again: the answer shows the problems, and for an approved plan the change is
// an event.
func (app *app) planEdit(ctx context.Context, c *cli.Command) error {
	name, err := oneArg(c, "plan edit NAME")
	if err != nil {
		return err
	}
	svc := service(ctx)
	before, err := wire.Call(ctx, svc, planapi.PlanGet, planapi.PlanNameParams{Name: name})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(before.Plan.File), 0o755); err != nil {
		return fmt.Errorf("plan folder: %w", err)
	}
	cmd := core.EditorCommand(before.Plan.File)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = app.in, app.out, app.err
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("editor %s: %w", strings.Join(cmd.Args, " "), err)
	}
	after, err := wire.Call(ctx, svc, planapi.PlanGet, planapi.PlanNameParams{Name: name})
	if err != nil {
		return err
	}
	return app.editOutcome(before, after)
}

func (app *app) editOutcome(before, after planapi.PlanGetResult) error {
	p := after.Plan
	if len(after.Problems) > 0 {
		for _, pr := range after.Problems {
			fmt.Fprintf(app.err, "%s [%s]\n", pr.Message, pr.Code)
		}
		n := fmt.Sprintf("%d problems", len(after.Problems))
		if len(after.Problems) == 1 {
			n = "a problem"
		}
		return exitErr{code: ExitError, msg: fmt.Sprintf("plan %s has %s; fix it with `orcr plan edit %s`", p.Name, n, p.Name)}
	}
	switch {
	case before.Source == after.Source:
		fmt.Fprintf(app.out, "plan %s: unchanged\n", p.Name)
	case p.State == "approved" && p.FileHash != p.ApprovedHash:
		fmt.Fprintf(app.out, "plan %s: parses (%d milestones); changed after approval, recorded as an event\n", p.Name, len(after.Milestones))
	default:
		fmt.Fprintf(app.out, "plan %s: parses (%d milestones), %s\n", p.Name, len(after.Milestones), p.State)
	}
	return nil
}

package cli

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"orcr/core/wire"
	schedapi "orcr/schedule/api"
)

// scheduleCommand is `orcr schedule add|ls|rm|run|runs`.
func (app *app) scheduleCommand() *cli.Command {
	return &cli.Command{
		Name:  "schedule",
		Usage: "durable schedules: commands the server runs on a cadence",
		Commands: []*cli.Command{
			{
				Name: "add", Usage: "create a schedule", ArgsUsage: "NAME (--every D | --cron EXPR) -- CMD [ARGS…]",
				Flags: []cli.Flag{
					&cli.DurationFlag{Name: "every", Usage: "run every D (e.g. 10m, 1h)"},
					&cli.StringFlag{Name: "cron", Usage: "cron expression: minute hour day-of-month month day-of-week"},
					&cli.StringFlag{Name: "missed", Value: "skip", Usage: "runs missed while the server was down: skip | run-once"},
					jsonFlag(),
				},
				Action: func(ctx context.Context, c *cli.Command) error { return app.scheduleAdd(ctx, c) },
			},
			{
				Name: "ls", Usage: "list schedules: cadence, next run, last run, owner", Flags: []cli.Flag{jsonFlag()},
				Action: func(ctx context.Context, c *cli.Command) error { return app.scheduleLs(ctx, c.Bool("json")) },
			},
			{
				Name: "rm", Usage: "remove a schedule and its history", ArgsUsage: "NAME",
				Action: func(ctx context.Context, c *cli.Command) error {
					cl := service(ctx)
					if err := wire.Do(ctx, cl, schedapi.ScheduleRemove, schedapi.ScheduleNameParams{Name: c.Args().First()}); err != nil {
						return err
					}
					fmt.Fprintf(app.out, "removed schedule %s\n", c.Args().First())
					return nil
				},
			},
			{
				Name: "run", Usage: "run a schedule now and print its result", ArgsUsage: "NAME",
				Flags: []cli.Flag{&cli.BoolFlag{Name: "no-wait", Usage: "return once it has started"}, jsonFlag()},
				Action: func(ctx context.Context, c *cli.Command) error {
					return app.scheduleRunNow(ctx, c.Args().First(), !c.Bool("no-wait"), c.Bool("json"))
				},
			},
			{
				Name: "runs", Usage: "a schedule's run history", ArgsUsage: "NAME", Flags: []cli.Flag{jsonFlag()},
				Action: func(ctx context.Context, c *cli.Command) error {
					return app.scheduleRuns(ctx, c.Args().First(), c.Bool("json"))
				},
			},
		},
	}
}

func (app *app) scheduleAdd(ctx context.Context, c *cli.Command) error {
	args := c.Args().Slice()
	if len(args) == 0 {
		return fmt.Errorf("schedule add needs a NAME, e.g. orcr schedule add poll --every 10m -- ./check.sh")
	}
	cmd := args[1:]
	if len(cmd) > 0 && cmd[0] == "--" {
		cmd = cmd[1:]
	}
	if len(cmd) == 0 {
		// Said here with the fix: the server's required-param check would only name
		// the missing field.
		return fmt.Errorf("schedule %s needs a command: orcr schedule add %s --every 10m -- CMD [ARGS…]", args[0], args[0])
	}
	every, err := positiveDuration(c, "every")
	if err != nil {
		return err
	}
	if every%time.Second != 0 {
		return fmt.Errorf("--every %s: use whole seconds", every)
	}
	cwd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("current directory: %w", err)
	}
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	cl := service(ctx)
	sRes, err := wire.Call(ctx, cl, schedapi.ScheduleAdd, schedapi.ScheduleAddParams{Name: args[0], EverySeconds: int(every / time.Second),
		Cron: c.String("cron"), Command: cmd, Cwd: cwd, Env: env, MissedPolicy: c.String("missed")})
	s := sRes.Schedule
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(app.out, schedapi.ScheduleResult{Schedule: s})
	}
	fmt.Fprintf(app.out, "schedule %s: %s, next %s\n", s.Name, cadence(s), when(s.NextAt))
	return nil
}

func cadence(s schedapi.Schedule) string {
	if s.EverySeconds > 0 {
		return "every " + (time.Duration(s.EverySeconds) * time.Second).String()
	}
	return "cron " + s.Cron
}

func when(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

// runSummary is "2026-… exit 0", "2026-… running" or "2026-… failed: why".
func runSummary(r *schedapi.ScheduleRun) string {
	if r == nil {
		return "never"
	}
	s := when(&r.StartedAt)
	switch {
	case r.EndedAt == nil:
		return s + " running"
	case r.Error != "":
		msg := r.Error
		if len(msg) > 60 {
			msg = msg[:57] + "..."
		}
		return s + " failed: " + msg
	case r.ExitCode != nil:
		return fmt.Sprintf("%s exit %d", s, *r.ExitCode)
	}
	return s
}

func (app *app) scheduleLs(ctx context.Context, asJSON bool) error {
	cl := service(ctx)
	ssRes, err := wire.Call(ctx, cl, schedapi.ScheduleList, wire.Empty{})
	ss := ssRes.Schedules
	if err != nil {
		return err
	}
	if asJSON {
		if ss == nil {
			ss = []schedapi.Schedule{}
		}
		return printJSON(app.out, schedapi.ScheduleListResult{Schedules: ss})
	}
	if len(ss) == 0 {
		fmt.Fprintln(app.out, "no schedules — add one with: orcr schedule add NAME --every 10m -- CMD")
		return nil
	}
	tw := newTabWriter(app.out)
	fmt.Fprintln(tw, "NAME\tCADENCE\tMISSED\tNEXT\tLAST\tOWNER\tCOMMAND")
	for _, s := range ss {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, cadence(s), s.MissedPolicy, when(s.NextAt),
			runSummary(s.LastRun), s.Owner, strings.Join(s.Command, " "))
	}
	return tw.Flush()
}

func (app *app) scheduleRunNow(ctx context.Context, name string, wait, asJSON bool) error {
	cl := service(ctx)
	rRes, err := wire.Call(ctx, cl, schedapi.ScheduleRunNow, schedapi.ScheduleRunParams{Name: name, Wait: wait})
	r := rRes.Run
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(app.out, schedapi.ScheduleRunResult{Run: r})
	}
	if !wait {
		fmt.Fprintf(app.out, "schedule %s started at %s\n", name, when(&r.StartedAt))
		return nil
	}
	if r.OutputTail != "" {
		fmt.Fprint(app.out, r.OutputTail)
		if !strings.HasSuffix(r.OutputTail, "\n") {
			fmt.Fprintln(app.out)
		}
	}
	fmt.Fprintf(app.err, "schedule %s: %s\n", name, runSummary(&r))
	switch {
	case r.Error != "":
		return exitErr{code: ExitError}
	case r.ExitCode != nil && *r.ExitCode != 0:
		return exitErr{code: ExitError}
	}
	return nil
}

func (app *app) scheduleRuns(ctx context.Context, name string, asJSON bool) error {
	cl := service(ctx)
	rsRes, err := wire.Call(ctx, cl, schedapi.ScheduleRuns, schedapi.ScheduleNameParams{Name: name})
	rs := rsRes.Runs
	if err != nil {
		return err
	}
	if asJSON {
		if rs == nil {
			rs = []schedapi.ScheduleRun{}
		}
		return printJSON(app.out, schedapi.ScheduleRunsResult{Runs: rs})
	}
	tw := newTabWriter(app.out)
	fmt.Fprintln(tw, "STARTED\tTRIGGER\tTOOK\tRESULT")
	for i := range rs {
		r := &rs[i]
		took := "-"
		if r.EndedAt != nil {
			took = r.EndedAt.Sub(r.StartedAt).Round(time.Millisecond).String()
		}
		res := "running"
		switch {
		case r.Error != "":
			res = "failed: " + r.Error
		case r.ExitCode != nil:
			res = fmt.Sprintf("exit %d", *r.ExitCode)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", when(&r.StartedAt), r.Trigger, took, res)
	}
	return tw.Flush()
}

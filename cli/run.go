package cli

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v3"

	"orcr/core/wire"
	runapi "orcr/orchestrate/run/api"
)

// runCommand is `orcr run …` (DESIGN §8): start, watch and steer orchestration runs.
func (app *app) runCommand() *cli.Command {
	cmd := app.runCommands()
	hideSaidDefaults(cmd)
	return cmd
}

// hideSaidDefaults keeps urfave's "(default: 0)" off a flag whose usage says its
// default in words: `--coders` is 2 (1 in shared mode) when not given, not 0, and
// the help listed both.
func hideSaidDefaults(cmd *cli.Command) {
	for _, f := range cmd.Flags {
		switch f := f.(type) {
		case *cli.IntFlag:
			f.HideDefault = f.HideDefault || strings.Contains(f.Usage, "(default")
		case *cli.DurationFlag:
			f.HideDefault = f.HideDefault || strings.Contains(f.Usage, "(default")
		case *cli.StringFlag:
			f.HideDefault = f.HideDefault || strings.Contains(f.Usage, "(default")
		}
	}
	for _, c := range cmd.Commands {
		hideSaidDefaults(c)
	}
}

func (app *app) runCommands() *cli.Command {
	name := func(c *cli.Command) (string, error) {
		if c.Args().Len() == 0 {
			return "", fmt.Errorf("%s needs the run's NAME (the plan's name); see `orcr run status`", c.FullName())
		}
		return c.Args().First(), nil
	}
	ms := func(c *cli.Command) (string, []string, error) {
		if c.Args().Len() < 2 {
			return "", nil, fmt.Errorf("%s needs NAME and milestones, e.g. %s csv-import M1 M2", c.FullName(), c.FullName())
		}
		return c.Args().First(), c.Args().Slice()[1:], nil
	}
	text := func(c *cli.Command) (runapi.RunTextParams, error) {
		a := c.Args().Slice()
		if len(a) < 3 || strings.TrimSpace(strings.Join(a[2:], " ")) == "" {
			return runapi.RunTextParams{}, fmt.Errorf("%s needs NAME, a milestone and the text, e.g. %s csv-import M2 \"skip empty rows\"", c.FullName(), c.FullName())
		}
		return runapi.RunTextParams{Name: a[0], Milestone: a[1], Text: strings.Join(a[2:], " ")}, nil
	}
	show := func(ctx context.Context, c *cli.Command, v runapi.RunView, err error) error {
		if err != nil {
			return err
		}
		if c.Bool("json") {
			return printJSON(app.out, runapi.RunResult{Run: v})
		}
		writeRun(app.out, v, time.Now())
		return nil
	}
	return &cli.Command{
		Name:  "run",
		Usage: "orchestration runs: an autopilot drives coders through checks, review and merge to feature/NAME",
		Commands: []*cli.Command{
			{
				Name: "start", Usage: "start the run of an approved plan", ArgsUsage: "NAME",
				Flags: []cli.Flag{
					&cli.IntFlag{Name: "coders", Usage: "coders in the pool (default 2; shared mode 1)"},
					&cli.StringFlag{Name: "mode", Usage: "worktree | shared (default: the plan's)"},
					&cli.StringFlag{Name: "check", Usage: "check command (default: the plan's)"},
					&cli.DurationFlag{Name: "check-timeout", Usage: "bound on one check run (default 10m)"},
					&cli.StringFlag{Name: "reviewer", Usage: "reviewer P[:MODEL] (default: no review)"},
					&cli.StringFlag{Name: "coder", Usage: "run every coder on P[:MODEL] instead of the catalog's pick per tier"},
					&cli.StringFlag{Name: "lead", Usage: "the run's lead P[:MODEL] (default: the plan's lead; none: no lead; self: the calling agent, run from inside it)"},
					&cli.StringFlag{Name: "base", Usage: "base branch (default: the repository's current branch)"},
					&cli.StringSliceFlag{Name: "node", Usage: "run coders on this node (repeat: in turn); each works in a clone there, merging stays here"},
					&cli.BoolFlag{Name: "fresh", Usage: "start anew a run of this name that exists (its worktrees, branches and log are removed); without it a stopped run is resumed"},
					jsonFlag(),
				},
				Action: func(ctx context.Context, c *cli.Command) error {
					n, err := name(c)
					if err != nil {
						return err
					}
					checkTimeout, err := positiveDuration(c, "check-timeout")
					if err != nil {
						return err
					}
					p := runapi.RunStartParams{Name: n, Coders: int(c.Int("coders")), Mode: c.String("mode"), Check: c.String("check"),
						CheckTimeoutSeconds: seconds(checkTimeout), Reviewer: c.String("reviewer"),
						Coder: c.String("coder"), Lead: c.String("lead"), Base: c.String("base"), Fresh: c.Bool("fresh"), Nodes: c.StringSlice("node")}
					if rest := c.Args().Slice()[1:]; len(rest) > 0 {
						if rest[0] == "--" {
							rest = rest[1:]
						}
						p.CoderArgv = rest
					}
					vRes, err := wire.Call(ctx, service(ctx), runapi.RunStartM, p)
					v := vRes.Run
					return show(ctx, c, v, err)
				},
			},
			{
				Name: "status", Usage: "per milestone: state, coder/model, rounds, time; what waits on whom", ArgsUsage: "[NAME]",
				Flags: []cli.Flag{jsonFlag()},
				Action: func(ctx context.Context, c *cli.Command) error {
					if c.Args().Len() == 0 {
						rsRes, err := wire.Call(ctx, service(ctx), runapi.RunListM, wire.Empty{})
						rs := rsRes.Runs
						if err != nil {
							return err
						}
						if c.Bool("json") {
							return printJSON(app.out, runapi.RunListResult{Runs: rs})
						}
						if len(rs) == 0 {
							fmt.Fprintln(app.out, "no runs; start one with `orcr run start NAME` once its plan is approved")
						}
						for _, r := range rs {
							merged := 0
							for _, m := range r.Milestones {
								if m.State == "merged" {
									merged++
								}
							}
							fmt.Fprintf(app.out, "%s\t%s\t%d/%d merged\n", r.Name, r.State, merged, len(r.Milestones))
						}
						return nil
					}
					vRes, err := wire.Call(ctx, service(ctx), runapi.RunStatusM, runapi.RunNameParams{Name: c.Args().First()})
					v := vRes.Run
					return show(ctx, c, v, err)
				},
			},
			{
				Name: "events", Usage: "the run's stored event log, from 1", ArgsUsage: "NAME",
				Flags: []cli.Flag{&cli.Uint64Flag{Name: "after", Usage: "entries after this seq"}, jsonFlag()},
				Action: func(ctx context.Context, c *cli.Command) error {
					n, err := name(c)
					if err != nil {
						return err
					}
					if c.Bool("json") {
						all := runapi.RunEventsResult{Entries: []runapi.RunEntry{}}
						err := runEventPages(ctx, n, c.Uint64("after"), func(es []runapi.RunEntry) error {
							all.Entries = append(all.Entries, es...)
							return nil
						})
						if err != nil {
							return err
						}
						return printJSON(app.out, all)
					}
					// Each page is printed as it arrives, so a long log starts at once
					// and the client holds one page at a time.
					return runEventPages(ctx, n, c.Uint64("after"), func(es []runapi.RunEntry) error {
						tw := tabwriter.NewWriter(app.out, 0, 0, 2, ' ', 0)
						for _, e := range es {
							fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", e.Seq, e.At.Local().Format("15:04:05"), e.Type, e.Kind, e.M, firstLineOf(e.Text))
						}
						return tw.Flush()
					})
				},
			},
			{
				Name: "stop", Usage: "stop the run: open milestones are held, coders stopped", ArgsUsage: "NAME", Flags: []cli.Flag{jsonFlag()},
				Action: func(ctx context.Context, c *cli.Command) error {
					n, err := name(c)
					if err != nil {
						return err
					}
					vRes, err := wire.Call(ctx, service(ctx), runapi.RunStopM, runapi.RunNameParams{Name: n})
					v := vRes.Run
					return show(ctx, c, v, err)
				},
			},
			{
				Name: "finish", Usage: "remove worktrees and refs (feature/NAME stays), push, open the pull request", ArgsUsage: "NAME", Flags: []cli.Flag{jsonFlag()},
				Action: func(ctx context.Context, c *cli.Command) error {
					n, err := name(c)
					if err != nil {
						return err
					}
					res, err := wire.Call(ctx, service(ctx), runapi.RunFinishM, runapi.RunNameParams{Name: n})
					if err != nil {
						return err
					}
					if c.Bool("json") {
						if err := printJSON(app.out, res); err != nil {
							return err
						}
						return finishExit(n, res)
					}
					for _, d := range res.Done {
						fmt.Fprintf(app.out, "done: %s\n", d)
					}
					for _, d := range res.NotDone {
						fmt.Fprintf(app.out, "not done: %s\n", d)
					}
					return finishExit(n, res)
				},
			},
			{
				Name: "dispatch", Usage: "start ready milestones", ArgsUsage: "NAME M…", Flags: []cli.Flag{jsonFlag()},
				Action: func(ctx context.Context, c *cli.Command) error {
					n, m, err := ms(c)
					if err != nil {
						return err
					}
					vRes, err := wire.Call(ctx, service(ctx), runapi.RunDispatchM, runapi.RunMilestonesParams{Name: n, Milestones: m})
					v := vRes.Run
					return show(ctx, c, v, err)
				},
			},
			{
				Name: "hold", Usage: "hold milestones (their coders are freed); words after them are the reason", ArgsUsage: "NAME M… [REASON]",
				Flags: []cli.Flag{&cli.StringFlag{Name: "reason", Usage: "why (shown in status; or the words after the milestones)"}, jsonFlag()},
				Action: func(ctx context.Context, c *cli.Command) error {
					n, m, err := ms(c)
					if err != nil {
						return err
					}
					m, reason, err := holdArgs(ctx, service(ctx), n, m, c.String("reason"))
					if err != nil {
						return err
					}
					vRes, err := wire.Call(ctx, service(ctx), runapi.RunHoldM, runapi.RunMilestonesParams{Name: n, Milestones: m, Reason: reason})
					v := vRes.Run
					return show(ctx, c, v, err)
				},
			},
			{
				Name: "retry", Usage: "a fresh start of held or failed milestones", ArgsUsage: "NAME M…",
				Flags: []cli.Flag{&cli.StringFlag{Name: "tier", Usage: "small | medium | high"}, jsonFlag()},
				Action: func(ctx context.Context, c *cli.Command) error {
					n, m, err := ms(c)
					if err != nil {
						return err
					}
					vRes, err := wire.Call(ctx, service(ctx), runapi.RunRetryM, runapi.RunMilestonesParams{Name: n, Milestones: m, Tier: c.String("tier")})
					v := vRes.Run
					return show(ctx, c, v, err)
				},
			},
			{
				Name: "answer", Usage: "answer a coder's question (it goes back to the same coder)", ArgsUsage: "NAME M TEXT", Flags: []cli.Flag{jsonFlag()},
				Action: func(ctx context.Context, c *cli.Command) error {
					p, err := text(c)
					if err != nil {
						return err
					}
					vRes, err := wire.Call(ctx, service(ctx), runapi.RunAnswerM, p)
					v := vRes.Run
					return show(ctx, c, v, err)
				},
			},
			{
				Name: "fix", Usage: "one follow-up job for a merged milestone, checked and reviewed", ArgsUsage: "NAME M TEXT", Flags: []cli.Flag{jsonFlag()},
				Action: func(ctx context.Context, c *cli.Command) error {
					p, err := text(c)
					if err != nil {
						return err
					}
					vRes, err := wire.Call(ctx, service(ctx), runapi.RunFixM, p)
					v := vRes.Run
					return show(ctx, c, v, err)
				},
			},
			{
				Name: "done", Usage: "inside a coder's pane: the milestone is committed, check it", ArgsUsage: "M",
				Before: app.maybeLater,
				Action: func(ctx context.Context, c *cli.Command) error {
					if c.Args().Len() != 1 {
						return fmt.Errorf("run done takes the milestone, e.g. orcr run done M1")
					}
					var m runapi.RunMilestone
					p := runapi.RunCallerParams{Milestone: c.Args().First(), Call: rand.Text()} // one call, however often it is sent
					err := app.callThroughRestart(ctx, func(t wire.Transport) (err error) {
						m, err = wire.Call(ctx, t, runapi.RunDoneM, p)
						return err
					})
					if err != nil {
						return err
					}
					fmt.Fprintf(app.out, "%s: %s; %s\n", m.ID, m.State, m.Waits)
					return nil
				},
			},
			{
				Name: "ask", Usage: "inside a coder's pane: ask a question; the milestone waits for the answer", ArgsUsage: "M TEXT",
				Before: app.maybeLater,
				Action: func(ctx context.Context, c *cli.Command) error {
					a := c.Args().Slice()
					if len(a) < 2 {
						return fmt.Errorf("run ask takes the milestone and the question, e.g. orcr run ask M1 \"reject the file or skip bad rows?\"")
					}
					var m runapi.RunMilestone
					p := runapi.RunCallerParams{Milestone: a[0], Text: strings.Join(a[1:], " "), Call: rand.Text()}
					err := app.callThroughRestart(ctx, func(t wire.Transport) (err error) {
						m, err = wire.Call(ctx, t, runapi.RunAskM, p)
						return err
					})
					if err != nil {
						return err
					}
					fmt.Fprintf(app.out, "%s: %s; the answer comes back to you here — stop now\n", m.ID, m.State)
					return nil
				},
			},
		},
	}
}

func firstLineOf(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	if len(l) > 160 {
		l = l[:160] + "…"
	}
	return l
}

// writeRun prints a run: a header, then one row per milestone.
func writeRun(w io.Writer, v runapi.RunView, now time.Time) {
	fmt.Fprintf(w, "run %s: %s — %s at %s, from %s; check %q; %d coders", v.Name, v.State, v.Feature, shortSHA(v.Tip), v.Base, v.Check, v.Coders)
	if v.Reviewer != "" {
		fmt.Fprintf(w, ", reviewer %s", v.Reviewer)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MILESTONE\tSTATE\tTIER\tCODER\tMODEL\tROUNDS\tTIME\tWAITS ON")
	for _, m := range v.Milestones {
		tier := m.Tier
		if m.TierNow != m.Tier {
			tier += "→" + m.TierNow
		}
		t := "-"
		if m.ElapsedSeconds > 0 {
			t = (time.Duration(m.ElapsedSeconds) * time.Second).String()
			if m.EstimateSeconds > 0 {
				t += " / " + (time.Duration(m.EstimateSeconds) * time.Second).String()
			}
		}
		fmt.Fprintf(tw, "%s %s\t%s\t%s\t%s\t%s\t%d/%d/%d\t%s\t%s\n", m.ID, m.Title, m.State, tier, dash(m.Coder), dash(m.Model),
			m.Rounds.Check, m.Rounds.Review, m.Rounds.Conflict, t, m.Waits)
	}
	tw.Flush()
	for _, m := range v.Milestones {
		if m.Question != "" {
			fmt.Fprintf(w, "%s asks: %s\n", m.ID, m.Question)
		}
		if m.Undispatched != "" {
			fmt.Fprintln(w, m.Undispatched)
		}
	}
	if v.PlanEdit != "" {
		fmt.Fprintf(w, "plan edited: %s\n", v.PlanEdit)
	}
	if len(v.Inbox) > 0 {
		fmt.Fprintf(w, "waiting for the lead: %d message(s)\n", len(v.Inbox))
	}
	if v.Summary != "" {
		fmt.Fprintf(w, "summary: %s\n", v.Summary)
	}
}

func shortSHA(s string) string {
	if len(s) > 10 {
		return s[:10]
	}
	return s
}

// finishExit fails `run finish` when part of it was not done (nothing pushed, no pull
// request): a script that goes on to announce the pull request must not be told it
// exists. What was not done is printed already, so the error says what to do.
func finishExit(name string, res runapi.RunFinishResult) error {
	if len(res.NotDone) == 0 {
		return nil
	}
	return exitErr{code: ExitError, msg: fmt.Sprintf("run %s finished without all of it (see \"not done\" above); fix that and run `orcr run finish %s` again", name, name)}
}

// holdArgs splits `run hold NAME M2 "reason"`: the leading words that name milestones
// of the run are the milestones, the rest the reason (as `--reason` says it). The run
// is asked for its milestones, since a one-word reason looks like an id.
func holdArgs(ctx context.Context, t wire.Transport, name string, args []string, flag string) ([]string, string, error) {
	res, err := wire.Call(ctx, t, runapi.RunStatusM, runapi.RunNameParams{Name: name})
	if err != nil {
		return nil, "", err
	}
	known := map[string]bool{}
	for _, m := range res.Run.Milestones {
		known[m.ID] = true
	}
	i := 0
	for i < len(args) && known[args[i]] {
		i++
	}
	if i == 0 {
		return nil, "", fmt.Errorf("run %s has no milestone %q: name milestones first, e.g. orcr run hold %s M2 \"waiting for the API\"", name, args[0], name)
	}
	reason := strings.TrimSpace(strings.Join(args[i:], " "))
	switch {
	case reason != "" && flag != "":
		return nil, "", fmt.Errorf("run hold %s: give the reason once, after the milestones or with --reason", name)
	case reason == "":
		reason = flag
	}
	return args[:i], reason, nil
}

// ServerWait is how long `run done` and `run ask` (called by a coder, whose turn
// ends with them) wait for a server that is not running — restarting after a crash,
// say — before they fail. It stays under the two minutes claude's Bash tool gives a
// command.
var ServerWait = 100 * time.Second

// maybeLater is the Before hook of `run done` and `run ask`: it dials the server
// when one answers and leaves the waiting to callThroughRestart otherwise, so a
// coder's report is not lost to a server that is restarting.
func (app *app) maybeLater(ctx context.Context, c *cli.Command) (context.Context, error) {
	return app.mayConnect(ctx, c)
}

// callThroughRestart performs call over the server's transport, waiting up to
// ServerWait for a server that is not running and calling again when the server
// went away during the call. Calling again is safe: the call's params carry one id
// (runapi.RunCallerParams.Call) on every attempt, and a report the run took in once
// is taken in as a note the second time.
func (app *app) callThroughRestart(ctx context.Context, call func(wire.Transport) error) error {
	deadline := time.Now().Add(ServerWait)
	t := service(ctx)
	defer func() {
		if cl, ok := t.(io.Closer); ok && t != service(ctx) {
			cl.Close() // dialled here; the Before hook's the command's After closes
		}
	}()
	told := false
	for {
		var err error
		if t == nil {
			if t, err = app.connect(ctx); err != nil {
				t = nil // the failed dial's transport is a typed nil
			}
		}
		if err == nil {
			if err = call(t); err == nil || !serverGone(err) {
				return err
			}
			if cl, ok := t.(io.Closer); ok && t != service(ctx) {
				cl.Close()
			}
			t = nil
		}
		if !serverGone(err) || time.Now().After(deadline) {
			return err
		}
		if !told {
			fmt.Fprintf(app.err, "orcr: the server is not running; waiting up to %s for it to come back\n", ServerWait)
			told = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// serverGone reports an error of a server that is not there (any more): not
// running, or the connection broke during the call.
func serverGone(err error) bool {
	if err == nil {
		return false
	}
	var we *wire.Error
	if errors.As(err, &we) {
		return we.Code == wire.CodeUnavailable
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed)
}

// runEventPage is how many log entries one run.events answer holds.
const runEventPage = 1000

// runEventPages reads run name's log after seq after a page at a time, handing each
// page to take, as `orcr agent ls` pages agent.list.
func runEventPages(ctx context.Context, name string, after uint64, take func([]runapi.RunEntry) error) error {
	for {
		r, err := wire.Call(ctx, service(ctx), runapi.RunEventsM, runapi.RunEventsParams{Name: name, After: after, Limit: runEventPage})
		if err != nil {
			return err
		}
		if err := take(r.Entries); err != nil {
			return err
		}
		if r.Next == 0 {
			return nil
		}
		if r.Next <= after {
			return fmt.Errorf("run.events did not move past seq %d; read the log with --after", after)
		}
		after = r.Next
	}
}

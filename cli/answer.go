package cli

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v3"

	"orcr/core/wire"
)

// agentAnswerCommand is `orcr agent answer`: answer what a blocked agent waits for by
// the options it shows (DESIGN §3, §7).
func (app *app) agentAnswerCommand() *cli.Command {
	return &cli.Command{
		Name:  "answer",
		Usage: "answer what a blocked agent waits for: --allow | --always | --deny [--text WHY] | --option N | --text T",
		Description: "--allow, --always and --deny pick the program's option with that meaning, never a position;\n" +
			"when it has none the answer is refused with the options listed. The prompt is read again before\n" +
			"anything is sent: if the screen no longer shows it, nothing is sent (prompt_gone).",
		ArgsUsage: "TARGET",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "allow", Usage: "the option that allows once"},
			&cli.BoolFlag{Name: "always", Usage: "the option that allows and stops asking (don't ask again / always allow)"},
			&cli.BoolFlag{Name: "deny", Usage: "the option that refuses; with --text, what to do instead"},
			&cli.IntFlag{Name: "option", Usage: "the Nth option as shown (1-based)"},
			&cli.StringFlag{Name: "text", Usage: "a free-form answer, or the reason/feedback along with --deny"},
			&cli.BoolFlag{Name: "all", Usage: "answer every blocked agent TARGET's glob matches"},
			&cli.DurationFlag{Name: "timeout", Usage: "how long the state may take to leave blocked (default 5s)"},
			jsonFlag(),
		},
		Action: func(ctx context.Context, c *cli.Command) error {
			if c.Args().Len() != 1 {
				return fmt.Errorf("agent answer needs one TARGET (id, path or glob), e.g. orcr agent answer review/auth --deny")
			}
			p := wire.AnswerParams{Target: c.Args().First(), Allow: c.Bool("allow"), Always: c.Bool("always"),
				Deny: c.Bool("deny"), Option: int(c.Int("option")), Text: c.String("text"), All: c.Bool("all")}
			d, err := positiveDuration(c, "timeout")
			if err != nil {
				return err
			}
			p.TimeoutSeconds = seconds(d)
			cl := service(ctx)
			r, err := wire.Call(ctx, cl, wire.AgentAnswer, p)
			if err != nil {
				// Scripts match the stable code; it goes with the message.
				if code := wire.CodeOf(err); code != wire.CodeInternal {
					return fmt.Errorf("%w [%s]", err, code)
				}
				return err
			}
			if c.Bool("json") {
				return printJSON(app.out, r)
			}
			for _, a := range r.Answers {
				what := fmt.Sprintf("%q", a.Text)
				if a.Option != nil {
					what = fmt.Sprintf("%q [%s]", a.Option.Label, a.Option.Meaning)
					if a.Text != "" {
						what += fmt.Sprintf(" with %q", a.Text)
					}
				}
				fmt.Fprintf(app.out, "%s\tanswered %s\tnow %s\n", a.Agent.Path, what, a.Agent.State)
			}
			return nil
		},
	}
}

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/urfave/cli/v3"

	"orcr/core"
	"orcr/core/wire"
)

func agentCommand(io *streams) *cli.Command {
	return &cli.Command{
		Name:  "agent",
		Usage: "spawn, list, message, await, read and stop agents",
		Commands: []*cli.Command{
			{
				Name: "run", Usage: "spawn an agent", ArgsUsage: "PATH [-- ARGV…]",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "provider", Usage: "claude|codex|opencode|pi|shell (default shell with argv)"},
					&cli.StringFlag{Name: "model"},
					&cli.StringFlag{Name: "cwd", Usage: "working directory (default: current)"},
					&cli.StringSliceFlag{Name: "env", Usage: "K=V added to the agent's environment (repeatable)"},
					&cli.StringFlag{Name: "prompt", Usage: "initial prompt"},
					&cli.StringFlag{Name: "prompt-file", Usage: "read the initial prompt from a file"},
					&cli.IntFlag{Name: "priority", Usage: "queue priority (higher first)"},
					&cli.BoolFlag{Name: "keep", Usage: "never stop it for being idle"},
					&cli.StringFlag{Name: "worktree", Usage: "run in a git worktree on BRANCH"},
					&cli.StringFlag{Name: "wait", Usage: "wait until STATE (done|idle|blocked|exited|settled); bare --wait means settled"},
					jsonFlag(),
				},
				Action: func(ctx context.Context, c *cli.Command) error { return agentRun(ctx, io, c) },
			},
			{
				Name: "ls", Usage: "list agents", ArgsUsage: "[GLOB]",
				Flags: []cli.Flag{&cli.BoolFlag{Name: "all", Usage: "every record, also superseded ones"}, jsonFlag()},
				Action: func(ctx context.Context, c *cli.Command) error {
					cl, err := dial(ctx)
					if err != nil {
						return err
					}
					defer cl.Close()
					if c.Bool("json") {
						as, err := cl.List(ctx, wire.ListParams{Glob: c.Args().First(), All: c.Bool("all")})
						if err != nil {
							return err
						}
						if as == nil {
							as = []wire.Agent{}
						}
						return printJSON(io.out, wire.ListResult{Agents: as})
					}
					t, err := cl.ListTable(ctx, wire.ListParams{Glob: c.Args().First(), All: c.Bool("all")})
					if err != nil {
						return err
					}
					printTable(io.out, t)
					return nil
				},
			},
			{
				Name: "get", Usage: "one agent", ArgsUsage: "ID|PATH",
				Flags: []cli.Flag{jsonFlag(), &cli.BoolFlag{Name: "explain", Usage: "say which signal decided the state"}},
				Action: func(ctx context.Context, c *cli.Command) error {
					cl, err := dial(ctx)
					if err != nil {
						return err
					}
					defer cl.Close()
					a, err := cl.Get(ctx, c.Args().First())
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(io.out, wire.AgentResult{Agent: a})
					}
					printAgent(io.out, a, c.Bool("explain"))
					return nil
				},
			},
			{
				Name: "send", Usage: "type TEXT and press enter", ArgsUsage: "TARGET TEXT",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "no-enter", Usage: "type without pressing enter"},
					&cli.StringSliceFlag{Name: "keys", Usage: "named keys to press: enter,esc,tab,up,ctrl-c,…"},
				},
				Action: func(ctx context.Context, c *cli.Command) error {
					cl, err := dial(ctx)
					if err != nil {
						return err
					}
					defer cl.Close()
					text := strings.Join(c.Args().Tail(), " ")
					return cl.Send(ctx, wire.SendParams{Target: c.Args().First(), Text: text,
						Enter: !c.Bool("no-enter") && text != "", Keys: c.StringSlice("keys")})
				},
			},
			agentAnswerCommand(io),
			{
				Name: "read", Usage: "screen text, last message or transcript", ArgsUsage: "TARGET",
				Flags: []cli.Flag{
					&cli.IntFlag{Name: "lines", Usage: "last N lines including scrollback"},
					&cli.BoolFlag{Name: "last-message", Usage: "the assistant's last message"},
					&cli.BoolFlag{Name: "transcript", Usage: "the native transcript"},
					jsonFlag(),
				},
				Action: func(ctx context.Context, c *cli.Command) error {
					cl, err := dial(ctx)
					if err != nil {
						return err
					}
					defer cl.Close()
					r, err := cl.Read(ctx, wire.ReadParams{Target: c.Args().First(), Lines: int(c.Int("lines")),
						LastMessage: c.Bool("last-message"), Transcript: c.Bool("transcript")})
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(io.out, r)
					}
					fmt.Fprintln(io.out, strings.TrimRight(r.Text, "\n"))
					return nil
				},
			},
			{
				Name: "wait", Usage: "wait until every matching agent reaches a state", ArgsUsage: "GLOB",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "until", Value: "settled", Usage: "done|idle|blocked|exited|settled"},
					&cli.DurationFlag{Name: "timeout", Usage: "give up after this long (exit 3)"},
					jsonFlag(),
				},
				Action: func(ctx context.Context, c *cli.Command) error {
					return agentWait(ctx, io, c.Args().First(), c.String("until"), c.Duration("timeout"), c.Bool("json"))
				},
			},
			{
				Name: "kill", Usage: "stop every running agent matching GLOB", ArgsUsage: "GLOB",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "dry-run", Usage: "list what would be stopped"},
					&cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "no confirmation (kept for scripts; kill never prompts)"},
					jsonFlag(),
				},
				Action: func(ctx context.Context, c *cli.Command) error {
					cl, err := dial(ctx)
					if err != nil {
						return err
					}
					defer cl.Close()
					r, err := cl.Kill(ctx, wire.KillParams{Glob: c.Args().First(), DryRun: c.Bool("dry-run")})
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(io.out, r)
					}
					verb := "killed"
					if r.DryRun {
						verb = "would kill"
					}
					for _, a := range r.Agents {
						fmt.Fprintf(io.out, "%s %s (%s, %s)\n", verb, a.Path, shortID(a.ID), a.Provider)
					}
					return nil
				},
			},
			{
				Name: "attach", Usage: "take over the real TUI; detach returns (ctrl-] on the embedded host)", ArgsUsage: "TARGET",
				Action: func(ctx context.Context, c *cli.Command) error { return agentAttach(ctx, io, c.Args().First()) },
			},
		},
	}
}

func agentRun(ctx context.Context, io *streams, c *cli.Command) error {
	args := c.Args().Slice()
	if len(args) == 0 {
		return fmt.Errorf("agent run needs a PATH, e.g. orcr agent run demo/hello -- sh")
	}
	p := wire.RunParams{Path: args[0], Argv: args[1:], Provider: c.String("provider"), Model: c.String("model"),
		Prompt: c.String("prompt"), Priority: int(c.Int("priority")), Keep: c.Bool("keep"), Worktree: c.String("worktree")}
	if len(p.Argv) > 0 && p.Argv[0] == "--" {
		p.Argv = p.Argv[1:]
	}
	if f := c.String("prompt-file"); f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("read prompt file: %w", err)
		}
		p.Prompt = string(b)
	}
	if cwd := c.String("cwd"); cwd != "" {
		abs, err := filepath.Abs(cwd)
		if err != nil {
			return fmt.Errorf("cwd: %w", err)
		}
		p.Cwd = abs
	} else if os.Getenv("ORCR_ID") == "" {
		p.Cwd, _ = os.Getwd()
	}
	for _, kv := range c.StringSlice("env") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("--env %q: use KEY=VALUE", kv)
		}
		if p.Env == nil {
			p.Env = map[string]string{}
		}
		p.Env[k] = v
	}
	cl, err := dial(ctx)
	if err != nil {
		return err
	}
	defer cl.Close()
	a, err := cl.Run(ctx, p)
	if err != nil {
		return err
	}
	if w := c.String("wait"); w != "" {
		return agentWait(ctx, io, a.ID, w, 0, c.Bool("json"))
	}
	if c.Bool("json") {
		return printJSON(io.out, wire.AgentResult{Agent: a})
	}
	fmt.Fprintf(io.out, "%s %s %s\n", a.ID, a.Path, a.State)
	return nil
}

func agentWait(ctx context.Context, io *streams, glob, until string, timeout time.Duration, asJSON bool) error {
	cl, err := dial(ctx)
	if err != nil {
		return err
	}
	defer cl.Close()
	secs := 0
	if timeout > 0 {
		secs = int((timeout + time.Second - 1) / time.Second)
	}
	r, err := cl.Wait(ctx, wire.WaitParams{Glob: glob, Until: until, TimeoutSeconds: secs})
	if err != nil {
		return err
	}
	if asJSON {
		if err := printJSON(io.out, r); err != nil {
			return err
		}
	} else {
		for _, a := range r.Agents {
			fmt.Fprintf(io.out, "%s\t%s%s\n", a.Path, a.State, exitSuffix(a))
		}
	}
	if r.TimedOut {
		return exitErr{code: exitTimeout, msg: fmt.Sprintf("timed out after %s waiting for %s to be %s", timeout, glob, until)}
	}
	return nil
}

func exitSuffix(a wire.Agent) string { return core.ExitSuffix(a) }

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func shortID(id string) string { return core.ShortID(id) }

// printTable prints display rows with aligned columns.
func printTable(w io.Writer, t *wire.Table) {
	tw := newTabWriter(w)
	fmt.Fprintln(tw, strings.Join(t.Columns, "\t"))
	for _, r := range t.Rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

func printAgent(w io.Writer, a wire.Agent, explain bool) {
	tw := newTabWriter(w)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", k, v)
		}
	}
	row("id", a.ID)
	row("path", a.Path)
	row("state", string(a.State)+exitSuffix(a))
	if a.Blocked != nil {
		b := a.Blocked.Kind + ": " + a.Blocked.Detail
		if a.Blocked.ResetsAt != nil {
			b += " (resets " + a.Blocked.ResetsAt.Format("15:04 MST") + ")"
		}
		row("blocked", b)
		for _, l := range blockedLines(a.Blocked) {
			fmt.Fprintf(tw, "\t%s\n", l)
		}
	}
	if explain {
		row("decided by", a.StateSource)
		row("because", a.StateReason)
		row("since", a.StateAt.Format(time.RFC3339))
	}
	row("provider", a.Provider)
	row("model", a.Model)
	row("parent", strings.TrimSpace(a.ParentPath+" "+a.ParentID))
	row("argv", strings.Join(a.Argv, " "))
	row("cwd", a.Cwd)
	row("host", strings.TrimSpace(a.Host+" "+a.PaneID))
	if a.PID > 0 {
		row("pid", fmt.Sprint(a.PID))
	}
	row("tokens", core.FormatTokens(a.Usage))
	row("cost", core.FormatCost(a))
	row("session", a.SessionID)
	row("transcript", a.Transcript)
	row("error", a.Error)
	row("created", a.CreatedAt.Format(time.RFC3339))
	tw.Flush()
}

// agentAttach runs the host's native attach, or a raw passthrough on the embedded host
// with ctrl-] to detach.
func agentAttach(ctx context.Context, io *streams, target string) error {
	cl, err := dial(ctx)
	if err != nil {
		return err
	}
	defer cl.Close()
	r, err := cl.Attach(ctx, wire.AttachParams{Target: target})
	if err != nil {
		return err
	}
	if len(r.Argv) > 0 {
		cmd := exec.CommandContext(ctx, r.Argv[0], r.Argv[1:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		cmd.Env = withoutVar(os.Environ(), "TMUX")
		return cmd.Run()
	}
	fd := os.Stdin.Fd()
	cols, rows := 0, 0
	if term.IsTerminal(fd) {
		cols, rows, _ = term.GetSize(fd)
		state, err := term.MakeRaw(fd)
		if err != nil {
			return fmt.Errorf("raw terminal: %w", err)
		}
		defer term.Restore(fd, state)
	}
	fmt.Fprintf(io.err, "attached to %s — press ctrl-] to detach\r\n", r.Agent.Path)
	in := newDetachReader(ctx, os.Stdin, 0x1d)
	err = cl.AttachStream(in.ctx, wire.AttachParams{Target: r.Agent.ID, Cols: cols, Rows: rows}, in, io.out)
	// Undo the modes the program may have switched on (alternate screen, hidden cursor,
	// application keys, mouse reporting, bracketed paste, styles) before the shell returns.
	fmt.Fprint(io.out, "\x1b[?1049l\x1b[?25h\x1b[?1l\x1b>\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?2004l\x1b[0m")
	fmt.Fprintf(io.err, "\r\ndetached from %s\r\n", r.Agent.Path)
	return err
}

func withoutVar(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// detachReader passes input through until the detach byte, then ends the attach. It
// also reports terminal resizes (SIGWINCH) to the stream.
type detachReader struct {
	r      io.Reader
	key    byte
	ctx    context.Context
	cancel context.CancelFunc
	sizes  chan [2]int
}

func newDetachReader(ctx context.Context, r io.Reader, key byte) *detachReader {
	ctx, cancel := context.WithCancel(ctx)
	d := &detachReader{r: r, key: key, ctx: ctx, cancel: cancel, sizes: make(chan [2]int, 1)}
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	go func() {
		defer signal.Stop(winch)
		for {
			select {
			case <-winch:
				if c, r, err := term.GetSize(os.Stdin.Fd()); err == nil {
					select {
					case d.sizes <- [2]int{c, r}:
					default:
					}
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return d
}

func (d *detachReader) Resizes() <-chan [2]int { return d.sizes }

func (d *detachReader) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	for i := 0; i < n; i++ {
		if p[i] == d.key {
			d.cancel()
			return i, io.EOF
		}
	}
	return n, err
}

func sortedKeys(m map[string]int) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func dash(s string) string { return core.Dash(s) }

// tabWriter aligns columns and buffers the output: tabwriter writes cell by cell, and
// unbuffered that is one syscall per cell.
type tabWriter struct {
	*tabwriter.Writer
	bw *bufio.Writer
}

func newTabWriter(w io.Writer) *tabWriter {
	bw := bufio.NewWriterSize(w, 64<<10)
	return &tabWriter{Writer: tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0), bw: bw}
}

// Flush writes out the aligned table.
func (t *tabWriter) Flush() error {
	if err := t.Writer.Flush(); err != nil {
		return err
	}
	return t.bw.Flush()
}

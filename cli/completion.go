package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"orcr/core/wire"
	planapi "orcr/orchestrate/api"
	runapi "orcr/orchestrate/run/api"
)

// Shell completion, as gh and kubectl do it: `orcr completion bash|zsh|fish` prints a
// script that hands the words typed so far to the hidden `orcr __complete WORD… CUR`,
// which answers with one candidate per line. Commands and flags come from the command
// tree; agent paths and plan and run names from the running server, asked quietly:
// with no server the answer is only what the tree knows, and never an error.

// completeCommand is the hidden `orcr __complete`.
func (app *app) completeCommand(o Options) *cli.Command {
	return &cli.Command{
		Name:            "__complete",
		Hidden:          true,
		SkipFlagParsing: true,
		Action: func(ctx context.Context, c *cli.Command) error {
			// The tree this command runs in may have been cut down to its own path
			// (prune.go); completion walks a whole one.
			root := NewApp(o)
			for _, s := range app.complete(ctx, root, c.Args().Slice()) {
				fmt.Fprintln(app.out, s)
			}
			return nil
		},
	}
}

// completionCommand is `orcr completion SHELL`.
func (app *app) completionCommand() *cli.Command {
	cmd := &cli.Command{
		Name:  "completion",
		Usage: "print the shell completion script for bash, zsh or fish",
		Description: "bash:  source <(orcr completion bash)         (in ~/.bashrc)\n" +
			"zsh:   source <(orcr completion zsh)          (in ~/.zshrc, after compinit)\n" +
			"fish:  orcr completion fish > ~/.config/fish/completions/orcr.fish\n" +
			"Agent paths and plan and run names are completed from the running server.",
	}
	for _, sh := range []string{"bash", "zsh", "fish"} {
		cmd.Commands = append(cmd.Commands, &cli.Command{
			Name: sh, Usage: "the " + sh + " completion script",
			Action: func(ctx context.Context, c *cli.Command) error {
				_, err := io.WriteString(app.out, completionScripts[sh])
				return err
			},
		})
	}
	return cmd
}

// completionScripts are the scripts; each calls the orcr the user typed (a path
// works too), drops its errors and completes files when orcr offers nothing.
var completionScripts = map[string]string{
	"bash": `# orcr completion for bash: source <(orcr completion bash)
_orcr_complete() {
    local IFS=$'\n'
    local cur="${COMP_WORDS[COMP_CWORD]}"
    COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" __complete "${COMP_WORDS[@]:1:COMP_CWORD-1}" "$cur" 2>/dev/null)" -- "$cur"))
}
complete -o default -F _orcr_complete orcr
`,
	"zsh": `#compdef orcr
# orcr completion for zsh: source <(orcr completion zsh), after compinit
_orcr() {
    local -a cands
    cands=("${(@f)$(${words[1]} __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    cands=(${cands:#})
    if (( ${#cands} )); then
        compadd -Q -- "${cands[@]}"
    else
        _files
    fi
}
compdef _orcr orcr
`,
	"fish": `# orcr completion for fish: orcr completion fish > ~/.config/fish/completions/orcr.fish
function __orcr_complete
    set -l words (commandline -opc)
    set -l cur (commandline -ct)
    $words[1] __complete $words[2..-1] "$cur" 2>/dev/null
end
complete -c orcr -f -a '(__orcr_complete)'
`,
}

// complete answers one completion: words are what follows "orcr", the last the word
// being typed (maybe empty).
func (app *app) complete(ctx context.Context, root *cli.Command, words []string) []string {
	if len(words) == 0 {
		words = []string{""}
	}
	cur, done := words[len(words)-1], words[:len(words)-1]
	cmd, group, pos, valueOf, dashed := root, "", 0, "", false
	for _, w := range done {
		switch {
		case valueOf != "":
			valueOf = ""
		case dashed:
			pos++
		case w == "--":
			dashed = true
		case strings.HasPrefix(w, "-"):
			if f := findFlag(cmd, strings.TrimLeft(w, "-")); f != nil && takesValue(f) && !strings.Contains(w, "=") {
				valueOf = strings.TrimLeft(w, "-")
			}
		default:
			if sub := cmd.Command(w); sub != nil && pos == 0 && sub.Name != "help" && !sub.Hidden {
				group, cmd = cmd.Name, sub
				continue
			}
			pos++
		}
	}
	var cands []string
	switch {
	case valueOf != "":
		cands = app.flagValues(ctx, valueOf)
	case strings.HasPrefix(cur, "-") && !dashed:
		for _, f := range cmd.Flags {
			for _, n := range f.Names() {
				if len(n) > 1 {
					cands = append(cands, "--"+n)
				}
			}
		}
		cands = append(cands, "--help")
	case pos == 0 && hasSubcommands(cmd):
		for _, sub := range cmd.Commands {
			if !sub.Hidden && sub.Name != "help" {
				cands = append(cands, sub.Name)
			}
		}
	default:
		cands = app.argValues(ctx, group, cmd, pos)
	}
	out := cands[:0]
	for _, c := range cands {
		if strings.HasPrefix(c, cur) && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

func hasSubcommands(c *cli.Command) bool {
	return slices.ContainsFunc(c.Commands, func(s *cli.Command) bool { return s.Name != "help" })
}

func findFlag(c *cli.Command, name string) cli.Flag {
	name, _, _ = strings.Cut(name, "=")
	for _, f := range c.Flags {
		if slices.Contains(f.Names(), name) {
			return f
		}
	}
	return nil
}

// takesValue is whether a flag is followed by its value (every flag but a bool).
func takesValue(f cli.Flag) bool {
	_, isBool := f.(*cli.BoolFlag)
	return !isBool
}

// flagValues are the values of the flags whose values are known: states, providers.
func (app *app) flagValues(ctx context.Context, flag string) []string {
	switch flag {
	case "state":
		var out []string
		for _, s := range wire.AllStates {
			out = append(out, string(s))
		}
		for g := range stateGroups {
			out = append(out, g)
		}
		slices.Sort(out)
		return out
	case "until", "wait":
		return []string{"done", "idle", "blocked", "exited", "settled"}
	case "provider":
		var out []string
		app.quietly(ctx, func(ctx context.Context, cl wire.Transport) error {
			info, err := wire.Call(ctx, cl, wire.Info, wire.Empty{})
			out = info.Providers
			return err
		})
		return out
	}
	return nil
}

// argValues are the candidates for the pos-th argument of cmd (under group), by what
// its usage names there: agents for TARGET, ID|PATH and GLOB, plans and runs for NAME.
func (app *app) argValues(ctx context.Context, group string, cmd *cli.Command, pos int) []string {
	words := strings.Fields(strings.NewReplacer("[", "", "]", "").Replace(cmd.ArgsUsage))
	if pos >= len(words) {
		return nil
	}
	var out []string
	switch kind := words[pos]; {
	case kind == "TARGET" || kind == "ID|PATH" || kind == "GLOB":
		app.quietly(ctx, func(ctx context.Context, cl wire.Transport) error {
			as, err := wire.ListAgents(ctx, cl, wire.ListParams{})
			for _, a := range as {
				out = append(out, a.Path)
				if kind == "GLOB" {
					for d := a.Path; strings.Contains(d, "/"); {
						d = d[:strings.LastIndexByte(d, '/')]
						out = append(out, d+"/**")
					}
				}
			}
			return err
		})
		slices.Sort(out)
	case kind == "NAME" && group == "plan":
		app.quietly(ctx, func(ctx context.Context, cl wire.Transport) error {
			r, err := wire.Call(ctx, cl, planapi.PlanList, wire.Empty{})
			for _, p := range r.Plans {
				out = append(out, p.Name)
			}
			return err
		})
	case kind == "NAME" && group == "run":
		app.quietly(ctx, func(ctx context.Context, cl wire.Transport) error {
			r, err := wire.Call(ctx, cl, runapi.RunListM, wire.Empty{})
			for _, v := range r.Runs {
				out = append(out, v.Name)
			}
			if cmd.Name == "start" {
				// A run starts from an approved plan that has none yet.
				pr, perr := wire.Call(ctx, cl, planapi.PlanList, wire.Empty{})
				for _, p := range pr.Plans {
					out = append(out, p.Name)
				}
				err = perr
			}
			return err
		})
	}
	return out
}

// quietly calls f with a connection to the server, within a short deadline, and says
// nothing when there is no server or it does not answer: a completion never prints an
// error or hangs the shell.
func (app *app) quietly(ctx context.Context, f func(ctx context.Context, cl wire.Transport) error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	cl, err := app.connect(ctx)
	if err != nil {
		return
	}
	if c, ok := cl.(io.Closer); ok {
		defer c.Close()
	}
	_ = f(ctx, cl)
}

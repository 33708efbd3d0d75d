package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/urfave/cli/v3"
)

// The command line's manners, as gh and kubectl have them: a word that names no
// command suggests the nearest one, a missing or extra argument is refused before the
// server is dialled with the command's usage line, instead of the server's "missing
// required param; see orcr api schema" or an argument silently ignored.

// argSpec is how many positional arguments a leaf command takes; max < 0 is any number.
type argSpec struct{ min, max int }

// argOverrides are the commands whose arguments ArgsUsage does not say exactly:
// `agent send` may press only --keys, `run start` passes what follows NAME to the
// coders, and `hook` must never fail an agent whose CLI passes more than it expects.
var argOverrides = map[string]argSpec{
	"orcr agent send": {1, -1},
	"orcr run start":  {1, -1},
	"orcr hook":       {0, -1},
	"orcr __complete": {0, -1},
}

// specOf reads a command's ArgsUsage: a bare word is one required argument, a word in
// brackets an optional one, "…" any number, a final TEXT the rest of the line, and
// flags ("--every D") and parenthesised flag groups are not arguments.
func specOf(c *cli.Command) (argSpec, []string) {
	var s argSpec
	var names []string
	usage := c.ArgsUsage
	for {
		i := strings.IndexByte(usage, '(')
		j := strings.IndexByte(usage, ')')
		if i < 0 || j < i {
			break
		}
		usage = usage[:i] + usage[j+1:]
	}
	optional := false
	words := strings.Fields(usage)
	for k := 0; k < len(words); k++ {
		w := words[k]
		if strings.HasPrefix(w, "[") {
			optional = true
		}
		bare := strings.Trim(w, "[]\"")
		switch {
		case w == "--" || w == "[--":
		case strings.HasPrefix(bare, "-"):
			k++ // a flag's value follows it
		case strings.Contains(w, "…") || strings.Contains(w, "..."):
			if !optional {
				s.min++
				names = append(names, strings.Trim(bare, "….."))
			}
			s.max = -1
		case optional:
			if s.max >= 0 {
				s.max++
			}
		default:
			s.min++
			names = append(names, bare)
			if s.max >= 0 {
				s.max++
			}
			if bare == "TEXT" && k == len(words)-1 {
				s.max = -1
			}
		}
		if strings.HasSuffix(w, "]") {
			optional = false
		}
	}
	if o, ok := argOverrides[c.FullName()]; ok {
		s = o
	}
	return s, names
}

// usageLine is "orcr plan show NAME": how the command is typed.
func usageLine(c *cli.Command) string {
	return strings.TrimSpace(c.FullName() + " " + c.ArgsUsage)
}

// checkArgs is a Before hook's first step: refuse a wrong number of arguments, and a
// word under a group that names none of its commands.
func checkArgs(c *cli.Command) error {
	n := c.Args().Len()
	s, names := specOf(c)
	if n < s.min {
		return fmt.Errorf("missing %s; usage: %s", strings.Join(names[n:min(s.min, len(names))], " "), usageLine(c))
	}
	if s.max >= 0 && n > s.max {
		extra := c.Args().Slice()[s.max:]
		what := "argument"
		if len(extra) > 1 {
			what = "arguments"
		}
		return fmt.Errorf("unexpected %s %s; usage: %s", what, quoteAll(extra), usageLine(c))
	}
	return nil
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, " ")
}

// unknownCommand is the error for a word under c that names none of its commands: the
// nearest command when one is close, else where the list of commands is.
func unknownCommand(c *cli.Command, word string) error {
	if s := nearestCommand(c, word); s != "" {
		return fmt.Errorf("unknown command %q for %q; did you mean %s?", word, c.FullName(), s)
	}
	return fmt.Errorf("unknown command %q for %q; see `%s --help`", word, c.FullName(), c.FullName())
}

// nearestCommand is the visible subcommand of c closest to word by edit distance, when
// it is close enough to be a typo (at most a third of the word, at least one edit) or
// starts with word; "" otherwise.
func nearestCommand(c *cli.Command, word string) string {
	best, bestD := "", 1<<30
	for _, sub := range c.Commands {
		if sub.Hidden || sub.Name == "help" {
			continue
		}
		for _, name := range sub.Names() {
			d := editDistance(word, name)
			if strings.HasPrefix(name, word) && word != "" {
				d = min(d, 1)
			}
			if d < bestD {
				best, bestD = name, d
			}
		}
	}
	if bestD <= max(1, len(word)/3) {
		return best
	}
	return ""
}

// editDistance is the Damerau-Levenshtein distance (with adjacent transpositions) of
// a and b: "stauts" is one edit from "status".
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// mindArgs gives every command under root the argument check, run before its own
// Before (so a wrong call is refused without dialling the server), and every group
// without an action one that shows its help or refuses an unknown word.
func mindArgs(root *cli.Command) {
	var walk func(c *cli.Command)
	walk = func(c *cli.Command) {
		for _, sub := range c.Commands {
			walk(sub)
		}
		if c == root {
			return
		}
		if len(c.Commands) > 0 {
			// A group's Before runs before its subcommand is chosen, so the word is
			// looked at in its action, which runs only when no subcommand matched.
			action := c.Action
			c.Action = func(ctx context.Context, c *cli.Command) error {
				if c.Args().Len() > 0 {
					return unknownCommand(c, c.Args().First())
				}
				if action == nil {
					return cli.ShowSubcommandHelp(c)
				}
				return action(ctx, c)
			}
			// A group that dials (queue) refuses the unknown word before dialling: its
			// Before sees the subcommand's name first when there is one.
			if before := c.Before; before != nil {
				c.Before = func(ctx context.Context, c *cli.Command) (context.Context, error) {
					if w := c.Args().First(); w != "" && c.Command(w) == nil {
						return ctx, unknownCommand(c, w)
					}
					return before(ctx, c)
				}
			}
			return
		}
		if c.Action == nil {
			return
		}
		before := c.Before
		c.Before = func(ctx context.Context, c *cli.Command) (context.Context, error) {
			if err := checkArgs(c); err != nil {
				return ctx, err
			}
			if before == nil {
				return ctx, nil
			}
			return before(ctx, c)
		}
	}
	walk(root)
}

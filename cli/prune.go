package cli

import (
	"slices"

	"github.com/urfave/cli/v3"
)

// pruneTo cuts the command tree down to the one path args name, when their words
// before any flag name a leaf command exactly (`orcr agent get X`). urfave/cli sets up
// every command of the tree on each run (help commands, categories, a check of every
// flag name), which was a third of a CLI process's own work for `orcr agent get`; a
// leaf's run, its help and its errors never look at its siblings. Anything else (a
// flag or `help` before the leaf, a group, an unknown word that wants a suggestion)
// keeps the whole tree.
func pruneTo(root *cli.Command, args []string) {
	if len(args) < 2 {
		return
	}
	var path []*cli.Command
	cmd := root
	for _, a := range args[1:] {
		if len(cmd.Commands) == 0 {
			break
		}
		if a == "" || a[0] == '-' || a == "help" {
			return
		}
		i := slices.IndexFunc(cmd.Commands, func(c *cli.Command) bool { return c.HasName(a) })
		if i < 0 {
			return
		}
		path = append(path, cmd.Commands[i])
		cmd = cmd.Commands[i]
	}
	if len(cmd.Commands) != 0 || len(path) == 0 {
		return
	}
	parent := root
	for _, c := range path {
		parent.Commands = []*cli.Command{c}
		parent = c
	}
}

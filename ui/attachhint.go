package ui

import (
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
)

// Attaching hands the terminal to the host's own attach (tmux, herdr, or `orcr agent
// attach` on the embedded host). One line goes out first saying where the user is going
// and how to come back, since the way back is the host's key, not orcr's. In orcr's own
// tmux server the status line then says it too (tmux.AttachStatus). Inside the user's
// own tmux with the same prefix, C-b d would detach the user's outer client, so the
// hint says to press the prefix twice (tmux's send-prefix) to reach orcr's server.

// attachHint is the line printed before attaching to path with argv.
func attachHint(path string, argv []string, inTmux bool) string {
	switch {
	case len(argv) == 0:
		return "" // `orcr agent attach` says its own (ctrl-] detaches)
	case filepath.Base(argv[0]) == "tmux":
		if inTmux {
			return fmt.Sprintf("orcr: attaching to %s — detach with C-b C-b d (inside your tmux, C-b d would detach your own client)", path)
		}
		return fmt.Sprintf("orcr: attaching to %s — detach with C-b d (tmux prefix, then d)", path)
	case strings.Contains(strings.Join(argv, " "), "herdr"):
		return fmt.Sprintf("orcr: opening herdr on %s — leave herdr with its own quit key to come back", path)
	}
	return fmt.Sprintf("orcr: attaching to %s", path)
}

// hintedCmd is an exec.Cmd that prints a line on the terminal before it runs
// (tea.ExecCommand).
type hintedCmd struct {
	*exec.Cmd
	hint string
}

func (c *hintedCmd) SetStdin(r io.Reader) {
	if c.Stdin == nil {
		c.Stdin = r
	}
}

func (c *hintedCmd) SetStdout(w io.Writer) {
	if c.Stdout == nil {
		c.Stdout = w
	}
}

func (c *hintedCmd) SetStderr(w io.Writer) {
	if c.Stderr == nil {
		c.Stderr = w
	}
}

// Run prints the hint, then runs the command.
func (c *hintedCmd) Run() error {
	if c.hint != "" && c.Stdout != nil {
		fmt.Fprint(c.Stdout, c.hint+"\r\n")
	}
	return c.Cmd.Run()
}

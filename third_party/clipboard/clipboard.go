// Package clipboard is orcr's own code standing in for github.com/atotto/clipboard
// through a replace in orcr's go.mod: the bubbles text inputs of the dashboard call
// ReadAll on paste and WriteAll on copy, and nothing else. atotto's package searched
// PATH for its tools in an init (52 stat calls and ~180 allocations at the start of
// every orcr process, every CLI command included); this one looks when it is asked, and copies through the terminal (OSC 52) where no tool is installed, which
// also reaches the user's own clipboard over SSH.
package clipboard

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Unsupported is always false: where no tool is found, WriteAll still copies through
// the terminal (OSC 52), and ReadAll says which tools it looked for.
var Unsupported bool

// timeout bounds one run of a clipboard tool (an X tool with no reachable display can
// hang waiting for it).
const timeout = 5 * time.Second

// tool is one clipboard program's copy and paste commands.
type tool struct {
	env        string // the tool only applies when this variable is set ("" = always)
	copy, past []string
}

// tools in the order they are tried: Wayland's first where a Wayland session is
// running, then the X tools, macOS and Termux.
var tools = []tool{
	{env: "WAYLAND_DISPLAY", copy: []string{"wl-copy"}, past: []string{"wl-paste", "--no-newline"}},
	{copy: []string{"xclip", "-in", "-selection", "clipboard"}, past: []string{"xclip", "-out", "-selection", "clipboard"}},
	{copy: []string{"xsel", "--input", "--clipboard"}, past: []string{"xsel", "--output", "--clipboard"}},
	{copy: []string{"pbcopy"}, past: []string{"pbpaste"}},
	{copy: []string{"termux-clipboard-set"}, past: []string{"termux-clipboard-get"}},
}

// found is the first installed tool, nil when none is. It looks at each copy and paste
// rather than once: a paste is rare, and a tool installed while the dashboard runs is
// then found.
func found() *tool {
	for i := range tools {
		t := &tools[i]
		if t.env != "" && os.Getenv(t.env) == "" {
			continue
		}
		if _, err := exec.LookPath(t.copy[0]); err != nil {
			continue
		}
		if _, err := exec.LookPath(t.past[0]); err != nil {
			continue
		}
		return t
	}
	return nil
}

// errNoTool is ReadAll's answer where no tool is installed.
var errNoTool = errors.New("clipboard: no clipboard tool found: install wl-clipboard, xclip or xsel (copying works without one, through the terminal)")

// ReadAll returns the clipboard's text.
func ReadAll() (string, error) {
	t := found()
	if t == nil {
		return "", errNoTool
	}
	out, err := run(t.past, nil)
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// WriteAll puts text on the clipboard: through the installed tool, or, where there is
// none, as an OSC 52 sequence to the controlling terminal.
func WriteAll(text string) error {
	if t := found(); t != nil {
		_, err := run(t.copy, strings.NewReader(text))
		return err
	}
	tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("clipboard: no clipboard tool found and no terminal to copy through: %w", err)
	}
	defer tty.Close()
	return WriteOSC52(tty, text)
}

// WriteOSC52 writes the terminal sequence that sets the clipboard to text, in one
// write so it cannot interleave with another writer's output to the same terminal.
func WriteOSC52(w io.Writer, text string) error {
	seq := "\x1b]52;c;" + base64.StdEncoding.EncodeToString([]byte(text)) + "\x07"
	if _, err := io.WriteString(w, seq); err != nil {
		return fmt.Errorf("clipboard: writing OSC 52: %w", err)
	}
	return nil
}

// run runs argv with stdin and returns its standard output; a failure says what the
// tool printed on its standard error.
func run(argv []string, stdin io.Reader) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(errb.String()); msg != "" {
			return nil, fmt.Errorf("clipboard: %s: %w: %s", argv[0], err, msg)
		}
		return nil, fmt.Errorf("clipboard: %s: %w", argv[0], err)
	}
	return out.Bytes(), nil
}

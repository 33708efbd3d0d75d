// Package ui is orcr's full-screen dashboard: a bubbletea root model that owns focus,
// layout and a dialog stack, and the panes it lays out (agent tree, preview, the
// queue/usage/schedules/events panel, status bar). It sees the engine only through
// wire.Transport, so it works the same in-process and against a remote `orcr serve`.
// Update never does I/O: every call runs in a command that returns a typed
// message, and core events arrive through one re-arming subscription command. View
// never changes state: layout happens in Update and SetSize. README.md says how the
// pieces fit and how tests drive them.
package ui

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	tea "charm.land/bubbletea/v2"

	"orcr/core/wire"
	"orcr/keymaps"
	"orcr/themes"
)

// Options configure the dashboard.
type Options struct {
	Mode         string                       // "in-process" or "connected" — shown in the status bar
	Theme        string                       // "dark" (default), "light", "high-contrast", or a user theme name
	UserThemes   map[string]map[string]string // from config [themes.NAME] token = "#rrggbb"
	Keymap       string                       // "default" or "vim"
	KeyOverrides map[string][]string          // from config [keys] action = ["k1","k2"]
	Logger       *slog.Logger
	Self         string // path of the orcr binary (attach runs `Self agent attach ID` for stream hosts)
	// EmbeddedHost is true when the dashboard hosts the server in-process with agents on
	// the embedded pty host; quitting then asks keep/stop/cancel and Run returns the choice.
	EmbeddedHost bool
	// Notify says how the dashboard tells about blocked agents, drafted plans and runs
	// that ask or fail (config [notify]; tell.go).
	Notify NotifyOptions
	// InTmux is true when the dashboard runs inside the user's own tmux ($TMUX): the
	// hint before attaching to orcr's tmux then says to press the prefix twice.
	InTmux bool
}

// QuitChoice is what the user chose on quit.
type QuitChoice int

// Quit choices.
const (
	QuitPlain            QuitChoice = iota // nothing to decide: just exit
	QuitKeepInBackground                   // hand embedded agents to a background orcr serve
	QuitStopAgents                         // stop the embedded agents
)

func (q QuitChoice) String() string {
	switch q {
	case QuitKeepInBackground:
		return "keep"
	case QuitStopAgents:
		return "stop"
	}
	return "plain"
}

// Run shows the dashboard until the user quits or ctx ends. After a plain quit while
// agents keep running it prints one line on stderr saying so and how to get back.
func Run(ctx context.Context, svc wire.Transport, opts Options) (QuitChoice, error) {
	m, err := New(ctx, svc, opts)
	if err != nil {
		return QuitPlain, err
	}
	defer m.Close()
	p := tea.NewProgram(m, tea.WithContext(ctx))
	final, err := p.Run()
	if err != nil {
		if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
			return QuitPlain, nil // the caller ended the dashboard
		}
		return QuitPlain, fmt.Errorf("dashboard: %w", err)
	}
	fm, ok := final.(*Model)
	if !ok {
		fm = m
	}
	if fm.farewell != "" {
		fmt.Fprintln(os.Stderr, fm.farewell) // the terminal is ours again
	}
	return fm.quit, nil
}

// resolveLook builds the styles and keys the options ask for.
func resolveLook(opts Options) (themes.Styles, keymaps.KeyMap, error) {
	pal, err := themes.Resolve(opts.Theme, opts.UserThemes)
	if err != nil {
		return themes.Styles{}, keymaps.KeyMap{}, fmt.Errorf("theme: %w", err)
	}
	km, err := keymaps.ByName(opts.Keymap)
	if err != nil {
		return themes.Styles{}, keymaps.KeyMap{}, fmt.Errorf("keymap: %w", err)
	}
	if err := km.Apply(opts.KeyOverrides); err != nil {
		return themes.Styles{}, keymaps.KeyMap{}, err
	}
	return themes.Build(pal), km, nil
}

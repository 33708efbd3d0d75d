package ui

import (
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/textarea"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"charm.land/huh/v2"

	"orcr/core/wire"
)

// ---- steer ----

// steerDialog types a message into the selected agent: one line (enter sends) or
// multi-line (enter is a newline, the send-multi key sends).
type steerDialog struct {
	size
	c     *common
	id    string
	path  string
	multi bool
	in    textinput.Model
	area  textarea.Model
}

func newSteerDialog(c *common, a *wire.Agent, multi bool, w int) *steerDialog {
	d := &steerDialog{c: c, id: a.ID, path: a.Path, multi: multi}
	if multi {
		d.area = textarea.New()
		d.area.SetWidth(max(10, w))
		d.area.SetHeight(6)
		d.area.ShowLineNumbers = false
		d.area.Placeholder = "message…"
	} else {
		d.in = textinput.New()
		d.in.Prompt = "› "
		d.in.Placeholder = "message…"
		d.in.SetWidth(max(10, w-2))
	}
	return d
}

func (d *steerDialog) Init() tea.Cmd {
	if d.multi {
		return d.area.Focus()
	}
	return d.in.Focus()
}

func (d *steerDialog) Update(msg tea.Msg) (tea.Cmd, action) {
	km := d.c.keys.Dialog
	if k, ok := msg.(tea.KeyPressMsg); ok {
		switch {
		case km.Cancel.Matches(k):
			return nil, closeAction{}
		case !d.multi && km.Submit.Matches(k), d.multi && km.SendMulti.Matches(k):
			text := d.in.Value()
			if d.multi {
				text = d.area.Value()
			}
			if strings.TrimSpace(text) == "" {
				return nil, closeAction{}
			}
			return nil, sendAction{wire.SendParams{Target: d.id, Text: text, Enter: true}}
		}
	}
	var cmd tea.Cmd
	if d.multi {
		d.area, cmd = d.area.Update(msg)
	} else {
		d.in, cmd = d.in.Update(msg)
	}
	return cmd, nil
}

func (d steerDialog) View() string {
	st := &d.c.styles
	hint := d.c.keys.Dialog.Submit.Label() + " send"
	view := d.in.View()
	if d.multi {
		hint = d.c.keys.Dialog.SendMulti.Label() + " send · ⏎ newline"
		view = d.area.View()
	}
	lines := []string{st.Muted.Render("to " + d.path), ""}
	lines = append(lines, strings.Split(view, "\n")...)
	lines = append(lines, "", st.Subtle.Render(hint+" · "+d.c.keys.Dialog.Cancel.Label()+" cancel"))
	return dialogBox(d.c, "steer", lines, d.width, d.height, 64)
}

// ---- spawn ----

// newSpawnDialog is the spawn form. providers are the server's (server.info): the
// form offers what that server runs, claude first when it is there; before the
// server's info arrives it offers the shell alone.
func newSpawnDialog(c *common, under string, w int, providers []string) *formDialog {
	var path, provider, model, cwd, command, prompt string
	if under != "" {
		path = under + "/"
	}
	if len(providers) == 0 {
		providers = []string{"shell"}
	}
	provider = providers[0]
	if slices.Contains(providers, "claude") {
		provider = "claude"
	}
	form := newFormDialog(c, "spawn agent", min(w, 70), func() action {
		argv, _ := splitWords(command) // the field validates it
		p := wire.RunParams{Path: strings.TrimSpace(path), Provider: provider, Model: strings.TrimSpace(model),
			Cwd: strings.TrimSpace(cwd), Argv: argv, Prompt: prompt}
		return runAction{p}
	}, huh.NewGroup(
		huh.NewInput().Title("path     ").Inline(true).Placeholder("review/auth").Value(&path).Validate(validPath),
		huh.NewSelect[string]().Title("provider ").Inline(true).Options(huh.NewOptions(providers...)...).Value(&provider),
		huh.NewInput().Title("model    ").Inline(true).Placeholder("provider default").Value(&model),
		huh.NewInput().Title("cwd      ").Inline(true).Placeholder("server's cwd").Value(&cwd),
		huh.NewInput().Title("command  ").Inline(true).Placeholder("argv as in sh: the program for shell, else extra flags").Value(&command).
			Validate(validCommand),
		huh.NewText().Title("prompt").Lines(2).Value(&prompt),
	))
	return form
}

// validCommand checks that the command splits into words (see splitWords).
func validCommand(s string) error {
	_, err := splitWords(s)
	return err
}

// validPath checks the path rules of DESIGN §1 early, so the form can say what is wrong
// before a round trip; the server checks again.
func validPath(p string) error {
	p = strings.TrimSpace(p)
	if p == "" {
		return fmt.Errorf("a path is required, e.g. review/auth")
	}
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	if len(segs) > 16 {
		return fmt.Errorf("at most 16 segments")
	}
	for _, s := range segs {
		if s == "" || len(s) > 64 {
			return fmt.Errorf("empty or long segment in %q", p)
		}
		for i, r := range s {
			ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || i > 0 && (r == '.' || r == '_' || r == '-')
			if !ok {
				return fmt.Errorf("segment %q: use a-z 0-9 . _ -", s)
			}
		}
	}
	return nil
}

package ui

import (
	"fmt"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"orcr/core/wire"
)

// killDialog selects agents by glob, shows the live list of matches (a dry-run kill per
// change, at most one in flight), and kills only after an explicit confirmation key.
type killDialog struct {
	c       *common
	in      textinput.Model
	matches []wire.Agent
	shown   string // glob the matches belong to
	asked   string // glob of the dry run in flight ("" when none)
	err     string
	confirm bool
}

func newKillDialog(c *common, glob string) *killDialog {
	in := textinput.New()
	in.Prompt = "glob › "
	in.Placeholder = "demo/**"
	in.SetValue(glob)
	in.CursorEnd()
	return &killDialog{c: c, in: in}
}

func (d *killDialog) Init() tea.Cmd { return d.in.Focus() }

// query asks for the matches of the current glob unless a dry run is already in flight;
// the result handler asks again if the glob moved on meanwhile.
func (d *killDialog) query() action {
	g := d.in.Value()
	if g == "" || d.asked != "" || g == d.shown {
		return nil
	}
	d.asked = g
	return dryRunAction{g}
}

func (d *killDialog) Update(msg tea.Msg) (tea.Cmd, action) {
	km := d.c.keys.Dialog
	switch msg := msg.(type) {
	case dryRunMsg:
		d.asked = ""
		d.shown, d.matches, d.err = msg.glob, msg.agents, ""
		if msg.err != nil {
			d.matches, d.err = nil, msg.err.Error()
		}
		return nil, d.query()
	case tea.KeyPressMsg:
		if d.confirm {
			switch {
			case km.Confirm.Matches(msg):
				return nil, killAction{d.shown}
			case km.Cancel.Matches(msg), msg.String() == "n":
				d.confirm = false
			}
			return nil, nil
		}
		switch {
		case km.Cancel.Matches(msg):
			return nil, closeAction{}
		case km.Submit.Matches(msg):
			if d.shown == d.in.Value() && len(d.matches) > 0 {
				d.confirm = true
			}
			return nil, nil
		}
	}
	var cmd tea.Cmd
	d.in, cmd = d.in.Update(msg)
	if d.in.Value() != d.shown && d.in.Value() == "" {
		d.shown, d.matches = "", nil
	}
	return cmd, d.query()
}

func (d *killDialog) View(w, h int) string {
	st := &d.c.styles
	lines := []string{d.in.View(), ""}
	switch {
	case d.err != "":
		lines = append(lines, st.Error.Render(oneLine(d.err)))
	case d.in.Value() == "":
		lines = append(lines, st.Muted.Render("type a glob: review/*, demo/**, */tests"))
	case d.shown != d.in.Value():
		lines = append(lines, st.Muted.Render("matching…"))
	case len(d.matches) == 0:
		lines = append(lines, st.Muted.Render("no live agent matches"))
	default:
		lines = append(lines, st.Text.Render(fmt.Sprintf("%s match:", plural(len(d.matches), "agent", "agents"))))
		room := max(1, h-12)
		for i, a := range d.matches {
			if i == room && len(d.matches) > room+1 {
				lines = append(lines, st.Muted.Render(fmt.Sprintf("  … and %d more", len(d.matches)-room)))
				break
			}
			lines = append(lines, "  "+d.c.agentStyle(&a).Render(glyph(a.State))+" "+st.Text.Render(a.Path)+st.Muted.Render("  "+string(a.State)))
		}
	}
	lines = append(lines, "")
	if d.confirm {
		lines = append(lines, st.Danger.Render(fmt.Sprintf("kill %s matching %s? ", plural(len(d.matches), "agent", "agents"), d.shown))+
			st.KeyDestructive.Render(d.c.keys.Dialog.Confirm.Label())+st.Muted.Render(" yes · n/"+d.c.keys.Dialog.Cancel.Label()+" no"))
	} else {
		lines = append(lines, st.Subtle.Render(d.c.keys.Dialog.Submit.Label()+" review kill · "+d.c.keys.Dialog.Cancel.Label()+" cancel"))
	}
	return dialogBox(d.c, "kill by glob", lines, w, h, 64)
}

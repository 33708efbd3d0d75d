package ui

import (
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"
	"charm.land/huh/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"orcr/core"
	"orcr/core/wire"
)

// A dialog sits on the root's dialog stack and takes every key while it is on top. It
// never does I/O: it returns an action, and the root turns the action into a command.
type dialog interface {
	Init() tea.Cmd
	// Update handles a message; a non-nil action tells the root what the user chose.
	Update(msg tea.Msg) (tea.Cmd, action)
	// SetSize gives the dialog the cells it may draw in. The root calls it when the
	// dialog opens and on every resize; a dialog that scrolls lays itself out here and
	// in Update.
	SetSize(w, h int)
	// View draws the dialog box within its size. It changes nothing.
	View() string
}

// size is a dialog's room on the screen, as the root last gave it (SetSize).
type size struct{ width, height int }

func (s *size) SetSize(w, h int) { s.width, s.height = w, h }

// Actions a dialog can return.
type (
	action      interface{}
	closeAction struct{}
	sendAction  struct{ p wire.SendParams }
	runAction   struct{ p wire.RunParams }
	// dryRunAction asks for the live match list of a glob; the result comes back to the
	// dialog as a dryRunMsg.
	dryRunAction struct{ glob string }
	// killAction kills the agents the user confirmed (the dialog's matches of glob).
	killAction struct {
		glob   string
		agents []wire.Agent
	}
	quitAction struct{ choice QuitChoice }
)

// dialogBox frames a dialog's lines, at most w×h, sized to its content.
func dialogBox(c *common, title string, lines []string, w, h, prefW int) string {
	bw := min(w, prefW)
	for _, l := range lines {
		bw = max(bw, min(w, ansi.StringWidth(l)+4))
	}
	bw = min(bw, w)
	bh := min(h, len(lines)+4)
	body := make([]string, 0, len(lines)+2)
	body = append(body, "")
	for _, l := range lines {
		body = append(body, " "+l)
	}
	return c.frame(&c.styles.DialogBorder, &c.styles.DialogTitle, title, body, bw, bh)
}

// huhTheme feeds our palette to huh so forms match the dashboard.
func huhTheme(c *common) huh.Theme {
	p := c.styles.Palette
	return huh.ThemeFunc(func(isDark bool) *huh.Styles {
		t := huh.ThemeBase(isDark)
		col := lipgloss.Color
		t.Focused.Title = t.Focused.Title.Foreground(col(p.Accent)).Bold(true)
		t.Focused.Base = t.Focused.Base.BorderForeground(col(p.Accent))
		t.Focused.SelectSelector = t.Focused.SelectSelector.Foreground(col(p.Accent))
		t.Focused.Option = t.Focused.Option.Foreground(col(p.Fg))
		t.Focused.Description = t.Focused.Description.Foreground(col(p.Muted))
		t.Focused.ErrorMessage = t.Focused.ErrorMessage.Foreground(col(p.Danger))
		t.Focused.ErrorIndicator = t.Focused.ErrorIndicator.Foreground(col(p.Danger))
		t.Focused.TextInput.Prompt = t.Focused.TextInput.Prompt.Foreground(col(p.Accent))
		t.Focused.TextInput.Text = t.Focused.TextInput.Text.Foreground(col(p.Fg))
		t.Blurred = t.Focused
		t.Blurred.Base = t.Blurred.Base.BorderForeground(col(p.Subtle))
		t.Blurred.Title = t.Blurred.Title.Foreground(col(p.Muted))
		return t
	})
}

// formDialog hosts a huh form. done turns the completed form into an action.
type formDialog struct {
	size
	c     *common
	title string
	form  *huh.Form
	done  func() action
	formW int
}

func newFormDialog(c *common, title string, w int, done func() action, groups ...*huh.Group) *formDialog {
	f := huh.NewForm(groups...).WithTheme(huhTheme(c)).WithShowHelp(false).WithWidth(w)
	return &formDialog{c: c, title: title, form: f, done: done, formW: w}
}

func (d *formDialog) Init() tea.Cmd { return d.form.Init() }

func (d *formDialog) Update(msg tea.Msg) (tea.Cmd, action) {
	if k, ok := msg.(tea.KeyPressMsg); ok && d.c.keys.Dialog.Cancel.Matches(k) {
		return nil, closeAction{}
	}
	if ws, ok := msg.(tea.WindowSizeMsg); ok {
		msg = tea.WindowSizeMsg{Width: d.formW, Height: ws.Height}
	}
	m, cmd := d.form.Update(msg)
	if f, ok := m.(*huh.Form); ok {
		d.form = f
	}
	switch d.form.State {
	case huh.StateCompleted:
		return nil, d.done()
	case huh.StateAborted:
		return nil, closeAction{}
	}
	return cmd, nil
}

func (d formDialog) View() string {
	w, h := d.width, d.height
	view := strings.TrimRight(d.form.View(), "\n")
	lines := strings.Split(view, "\n")
	if len(lines) > h-5 {
		lines = lines[:max(0, h-5)]
	}
	lines = append(lines, "", d.c.styles.Subtle.Render("enter next/submit · "+d.c.keys.Dialog.Cancel.Label()+" cancel"))
	return dialogBox(d.c, d.title, lines, w, h, d.formW+4)
}

// ---- help ----

// helpDialog lists the active bindings, generated from the key map itself, in as many
// columns as fit; up/down scroll when even that is too tall.
type helpDialog struct {
	size
	c      *common
	scroll int
}

func (d *helpDialog) Init() tea.Cmd { return nil }

func (d *helpDialog) SetSize(w, h int) {
	d.size.SetSize(w, h)
	d.scroll = min(d.scroll, d.maxScroll())
}

func (d *helpDialog) Update(msg tea.Msg) (tea.Cmd, action) {
	if k, ok := msg.(tea.KeyPressMsg); ok {
		switch {
		case d.c.keys.Dialog.Cancel.Matches(k) || d.c.keys.Global.Help.Matches(k) || k.String() == "q":
			return nil, closeAction{}
		case d.c.keys.Panel.Down.Matches(k) || d.c.keys.Tree.Down.Matches(k):
			d.scroll = min(d.scroll+1, d.maxScroll())
		case d.c.keys.Panel.Up.Matches(k) || d.c.keys.Tree.Up.Matches(k):
			d.scroll = max(0, d.scroll-1)
		}
	}
	return nil, nil
}

// room is how many lines of bindings fit.
func (d helpDialog) room() int { return max(1, d.height-5) }

// maxScroll is how far the bindings scroll: the lines beyond the room.
func (d helpDialog) maxScroll() int {
	lines, _ := d.lines()
	return max(0, len(lines)-d.room())
}

func (d helpDialog) View() string {
	st := &d.c.styles
	lines, ncols := d.lines()
	room := d.room()
	lines = lines[min(d.scroll, max(0, len(lines)-room)):]
	if len(lines) > room {
		lines = append(lines[:room-1], st.Subtle.Render("↓ more"))
	}
	return dialogBox(d.c, "keys — "+d.c.keys.Name, lines, d.width, d.height, ncols*(helpColW+2)+2)
}

// helpColW is the width of a column of bindings.
const helpColW = 35

// lines lays the bindings out in as many columns as fit (ncols).
func (d helpDialog) lines() (lines []string, ncols int) {
	st := &d.c.styles
	var all []string
	for i, s := range d.c.keys.Sections() {
		if i > 0 {
			all = append(all, "")
		}
		all = append(all, st.Accent.Render(s.Title))
		for _, b := range s.Bindings {
			ks := st.KeyName
			desc := b.Desc
			if b.Destructive {
				ks = st.KeyDestructive
				desc += " (confirms)"
			}
			all = append(all, ks.Render(fit(b.Label(), 11))+" "+st.KeyDesc.Render(desc))
		}
	}
	ncols = max(1, min(3, (d.width-2)/(helpColW+2)))
	rows := (len(all) + ncols - 1) / ncols
	lines = make([]string, rows)
	for i, l := range all {
		if i/rows < ncols-1 {
			l = fit(l, helpColW) + "  "
		}
		lines[i%rows] += l
	}
	return lines, ncols
}

// ---- quit ----

// quitStops is what stops when an in-process dashboard quits.
type quitStops struct {
	host                               string // the server's host: "pty" means the agents stop too
	agents, listeners, schedules, runs int
}

func (q quitStops) any() bool { return q.agents+q.listeners+q.schedules+q.runs > 0 }

// lines says what stops, one thing a line.
func (q quitStops) lines() []string {
	var out []string
	add := func(n int, one, many string) {
		if n > 0 {
			out = append(out, "  · "+plural(n, one, many))
		}
	}
	add(q.agents, "agent on the embedded host", "agents on the embedded host")
	add(q.listeners, "listener", "listeners")
	add(q.schedules, "schedule", "schedules")
	add(q.runs, "run's autopilot", "runs' autopilots")
	return out
}

// quitDialog says what stops when a dashboard that hosts the server quits, and offers
// to keep it all running under a background orcr serve instead.
type quitDialog struct {
	size
	c     *common
	stops quitStops
	pick  int
}

type quitChoice struct {
	key, label string
	choice     QuitChoice
}

// choices are the dialog's options: on the embedded host "stop" stops the agents;
// on any other host the agents live on in it and only the server stops.
func (d quitDialog) choices() []quitChoice {
	stop := quitChoice{"s", "stop them and quit", QuitStopAgents}
	if d.stops.agents == 0 {
		stop = quitChoice{"s", "stop the server and quit (agents keep running in " + core.Dash(d.stops.host) + ")", QuitPlain}
	}
	return []quitChoice{
		{"k", "keep running in the background (a background orcr serve)", QuitKeepInBackground},
		stop,
		{"c", "cancel", -1},
	}
}

func (d *quitDialog) Init() tea.Cmd { return nil }

func (d *quitDialog) Update(msg tea.Msg) (tea.Cmd, action) {
	k, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return nil, nil
	}
	cs := d.choices()
	choose := func(i int) action {
		if cs[i].choice < 0 {
			return closeAction{}
		}
		return quitAction{cs[i].choice}
	}
	switch s := k.String(); {
	case d.c.keys.Dialog.Cancel.Matches(k):
		return nil, closeAction{}
	case s == "up" || s == "shift+tab":
		d.pick = (d.pick + len(cs) - 1) % len(cs)
	case s == "down" || s == "tab":
		d.pick = (d.pick + 1) % len(cs)
	case d.c.keys.Dialog.Submit.Matches(k):
		return nil, choose(d.pick)
	default:
		for i, c := range cs {
			if s == c.key {
				return nil, choose(i)
			}
		}
	}
	return nil, nil
}

func (d quitDialog) View() string {
	st := &d.c.styles
	lines := []string{st.Text.Render("This dashboard runs the orcr server; quitting stops:")}
	for _, l := range d.stops.lines() {
		lines = append(lines, st.Text.Render(l))
	}
	lines = append(lines, "")
	for i, c := range d.choices() {
		mark := "  "
		if i == d.pick {
			mark = st.Accent.Render("› ")
		}
		ks := st.KeyName
		if c.key == "s" {
			ks = st.KeyDestructive
		}
		lines = append(lines, mark+ks.Render(c.key)+" "+st.Text.Render(c.label))
	}
	return dialogBox(d.c, "quit", lines, d.width, d.height, 70)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

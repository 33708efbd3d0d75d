package ui

import (
	"context"
	"fmt"
	"strings"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"orcr/core/wire"
)

// Restart and fork (agent.restart, agent.fork): the selected agent's spec started
// again — on its own path after stopping it (ctrl+r, asked first when it still runs:
// its work in progress ends), or on a new path beside it (F, the path typed with a
// free one suggested). The server builds the spawn from the stored record, env values
// included, so the dashboard only names the agent.

// againDialog asks for a restart's confirmation, or a fork's or a rename's new path.
type againDialog struct {
	size
	c      *common
	fork   bool // a path is asked for
	rename bool // …to move the agent to (agent.rename), not to copy it to
	agent  wire.Agent
	in     textinput.Model
	err    string
}

// againMsg answers a restart or a fork.
type againMsg struct {
	verb  string // "restarted", "forked" or "renamed"
	from  string // the agent's path
	agent wire.Agent
	err   error
}

func newAgainDialog(c *common, a wire.Agent, fork bool, suggest string, w int) *againDialog {
	d := &againDialog{c: c, fork: fork, agent: a}
	if fork {
		d.in = textinput.New()
		d.in.Prompt = "› "
		d.in.SetValue(suggest)
		d.in.SetWidth(max(10, w-2))
	}
	return d
}

func (d *againDialog) Init() tea.Cmd {
	if d.fork {
		return d.in.Focus()
	}
	return nil
}

func (d *againDialog) Update(msg tea.Msg) (tea.Cmd, action) {
	km := d.c.keys.Dialog
	k, isKey := msg.(tea.KeyPressMsg)
	switch {
	case isKey && km.Cancel.Matches(k):
		return nil, closeAction{}
	case isKey && (km.Submit.Matches(k) || !d.fork && k.String() == "y"):
		if !d.fork {
			return nil, callAction{restartCall(d.agent)}
		}
		path := strings.TrimSpace(d.in.Value())
		if path == "" || path == d.agent.Path {
			d.err = "give the " + d.title() + " a path of its own"
			return nil, nil
		}
		if d.rename {
			return nil, callAction{renameCall(d.agent, path)}
		}
		return nil, callAction{forkCall(d.agent, path)}
	case !d.fork:
		return nil, nil
	}
	var cmd tea.Cmd
	d.in, cmd = d.in.Update(msg)
	d.err = ""
	return cmd, nil
}

func restartCall(a wire.Agent) func(context.Context, wire.Transport) tea.Msg {
	return func(ctx context.Context, svc wire.Transport) tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, callTimeout*3) // the stop may wait out a kill grace
		defer cancel()
		res, err := wire.Call(ctx, svc, wire.AgentRestart, wire.TargetParams{Target: a.ID})
		return againMsg{"restarted", a.Path, res.Agent, err}
	}
}

func forkCall(a wire.Agent, path string) func(context.Context, wire.Transport) tea.Msg {
	return func(ctx context.Context, svc wire.Transport) tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		res, err := wire.Call(ctx, svc, wire.AgentFork, wire.ForkParams{Target: a.ID, Path: path})
		return againMsg{"forked", a.Path, res.Agent, err}
	}
}

func renameCall(a wire.Agent, path string) func(context.Context, wire.Transport) tea.Msg {
	return func(ctx context.Context, svc wire.Transport) tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		res, err := wire.Call(ctx, svc, wire.AgentRename, wire.RenameParams{Target: a.ID, Path: path})
		return againMsg{"renamed", a.Path, res.Agent, err}
	}
}

func (d againDialog) title() string {
	switch {
	case d.rename:
		return "rename"
	case d.fork:
		return "fork"
	}
	return "restart"
}

func (d againDialog) View() string {
	st := &d.c.styles
	cancel := d.c.keys.Dialog.Cancel.Label() + " cancel"
	if !d.fork {
		what := "It has ended; it starts again"
		if d.agent.State.Live() {
			what = "It is " + string(d.agent.State) + ": it is stopped, then starts again"
		}
		lines := []string{st.Text.Render("Restart " + d.agent.Path + "?"),
			st.Muted.Render(what + " with the same spec"),
			st.Muted.Render("(" + strings.TrimSpace(d.agent.Provider+" "+d.agent.Model) + ", same folder, env and prompt)."), "",
			st.Subtle.Render("y/" + d.c.keys.Dialog.Submit.Label() + " restart · " + cancel)}
		return dialogBox(d.c, "restart", lines, d.width, d.height, 64)
	}
	what := "a new agent with the spec of " + d.agent.Path + " at:"
	if d.rename {
		what = "move " + d.agent.Path + " (same id, pane and history) to:"
	}
	lines := []string{st.Muted.Render(what), ""}
	lines = append(lines, d.in.View())
	if d.err != "" {
		lines = append(lines, st.Error.Render(d.err))
	}
	lines = append(lines, "", st.Subtle.Render(d.c.keys.Dialog.Submit.Label()+" "+d.title()+" · "+cancel))
	return dialogBox(d.c, d.title(), lines, d.width, d.height, 64)
}

// forkPath suggests a free path for a fork of path: path-2, path-3, …
func (m *Model) forkPath(path string) string {
	taken := map[string]bool{}
	for _, n := range m.idx.byID {
		if n.agent != nil {
			taken[n.agent.Path] = true
		}
	}
	for i := 2; ; i++ {
		if p := fmt.Sprintf("%s-%d", path, i); !taken[p] {
			return p
		}
	}
}

// updateAgain handles a restart's or a fork's answer: the new agent is selected.
func (m *Model) updateAgain(msg againMsg) tea.Cmd {
	if len(m.dialogs) > 0 {
		if _, ok := m.dialogs[len(m.dialogs)-1].(*againDialog); ok {
			m.popDialog()
		}
	}
	if msg.err != nil {
		verb := map[string]string{"restarted": "restart", "forked": "fork", "renamed": "rename"}[msg.verb]
		m.status.notify(m.c.now, verb+" "+msg.from+": "+msg.err.Error(), true)
		return nil
	}
	m.upsert(msg.agent)
	before := m.selectedID()
	if n, ok := m.idx.byID[msg.agent.ID]; ok {
		m.tree.selectNode(n)
	}
	if msg.verb != "restarted" {
		m.status.notify(m.c.now, msg.verb+" "+msg.from+" → "+msg.agent.Path, false)
	} else {
		m.status.notify(m.c.now, "restarted "+msg.from, false)
	}
	return m.afterSelection(before)
}
